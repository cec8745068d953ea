package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/index"
)

// searcher is what search needs of an index: the local one (*index.Index)
// or a running serve's HTTP API (remoteIndex).
type searcher interface {
	Search(ctx context.Context, q index.Query) (index.Result, error)
	Context(ctx context.Context, id string, n int) (index.Context, error)
}

// remoteIndex searches through the HTTP API of `analyzer serve` (or `ui`),
// whose process holds the index's lock: a second process cannot open it.
type remoteIndex struct {
	base   string // http://host:port, no trailing slash
	token  string // bearer token, "" when the server wants none
	client *http.Client
}

func newRemoteIndex(server, token string) (*remoteIndex, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--server %q: want a URL such as http://127.0.0.1:8080", server)
	}
	return &remoteIndex{base: strings.TrimRight(u.String(), "/"), token: token, client: &http.Client{Timeout: time.Minute}}, nil
}

// Search sends q as the query parameters web.ParseQuery reads.
func (r *remoteIndex) Search(ctx context.Context, q index.Query) (index.Result, error) {
	v := url.Values{}
	v.Set("q", q.Text)
	for k, vs := range map[string][]string{"node": q.Nodes, "container": q.Containers, "source": q.Sources, "level": q.Levels, "file": q.Files} {
		for _, s := range vs {
			v.Add(k, s)
		}
	}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.UTC().Format(time.RFC3339Nano))
	}
	if !q.Until.IsZero() {
		v.Set("until", q.Until.UTC().Format(time.RFC3339Nano))
	}
	v.Set("size", strconv.Itoa(q.Size))
	if q.Sort != "" {
		v.Set("sort", q.Sort)
	}
	if q.Facets {
		v.Set("facets", "1")
	}
	if q.Highlight {
		v.Set("highlight", "1")
	}
	if q.After != "" {
		v.Set("after", q.After)
	}
	var res index.Result
	err := r.get(ctx, "/api/search?"+v.Encode(), &res)
	return res, err
}

func (r *remoteIndex) Context(ctx context.Context, id string, n int) (index.Context, error) {
	var c index.Context
	err := r.get(ctx, "/api/context/"+url.PathEscape(id)+"?n="+strconv.Itoa(n), &c)
	return c, err
}

func (r *remoteIndex) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+path, nil)
	if err != nil {
		return err
	}
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("--server: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		return fmt.Errorf("%s wants its HTTP token: set FAULTLINE_HTTP_TOKEN or --http-token-file", r.base)
	}
	if resp.StatusCode != http.StatusOK {
		// The API says why in {"error": ...}; anything else is shown as is.
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		var e struct{ Error string }
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return fmt.Errorf("%s: %s", r.base, e.Error)
		}
		return fmt.Errorf("%s: %s: %s", r.base, resp.Status, strings.TrimSpace(string(b)))
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("%s: bad answer: %w", r.base, err)
	}
	return nil
}
