package fanout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/index"
)

// Remote returns a Searcher over the HTTP API of the analyzer at baseURL
// (its --advertise URL), answering from that analyzer's own index and
// partitions (local=1), so that it never fans out again: a peer of a
// fan-out. token, when set, is sent as a bearer token, as the API wants
// it. client nil: the default client; each call is bounded by its
// context.
func Remote(baseURL, token string, client *http.Client) index.Searcher {
	return NewRemote(baseURL, RemoteOptions{Token: token, Client: client, Local: true})
}

// RemoteOptions say how a remote Searcher asks. The zero value asks as any
// client of the API does.
type RemoteOptions struct {
	// Token, when set, is sent as a bearer token.
	Token string
	// Client nil: http.DefaultClient. Each call is bounded by its context.
	Client *http.Client
	// Local asks for the analyzer's own index and partitions only
	// (local=1), as a peer of a fan-out must. False: the analyzer answers
	// as it does any API call, for its whole cluster when it is in one.
	Local bool
}

// NewRemote returns a Searcher over the HTTP API of the analyzer (serve or
// ui) at baseURL, asking as opts say: the one client of that API.
//
// The API returns at most 1000 hits a request (a larger Size gets those
// and Next); Stats are not served (zero), and Query.Partitions cannot be
// asked over HTTP. A refused token is ErrUnauthorized, an unknown event
// index.ErrNotFound (errors.Is).
func NewRemote(baseURL string, opts RemoteOptions) index.Searcher {
	if opts.Client == nil {
		opts.Client = http.DefaultClient
	}
	return &remote{base: strings.TrimRight(baseURL, "/"), token: opts.Token, client: opts.Client, local: opts.Local}
}

// ErrUnauthorized: the analyzer refused the request for its token (HTTP
// 401), none or a wrong one.
var ErrUnauthorized = errors.New("unauthorized")

type remote struct {
	base   string
	token  string
	client *http.Client
	local  bool // send local=1
}

// remoteTimeout bounds the calls whose signature has no context.
const remoteTimeout = 10 * time.Second

func (r *remote) String() string { return r.base }

// statusError is an answer other than 200 OK, told by the API's
// {"error": ...} (else its body); errors.Is knows 404 as
// index.ErrNotFound and 401 as ErrUnauthorized.
type statusError struct {
	msg  string
	code int
}

func (e *statusError) Error() string { return e.msg }

func (e *statusError) Is(target error) bool {
	return (target == index.ErrNotFound && e.code == http.StatusNotFound) ||
		(target == ErrUnauthorized && e.code == http.StatusUnauthorized)
}

// get fetches path?query as JSON into v.
func (r *remote) get(ctx context.Context, path string, query url.Values, v any) error {
	u := r.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", r.base, err)
	}
	req.Header.Set("Accept", "application/json")
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", r.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(b))
		}
		return &statusError{msg: fmt.Sprintf("%s%s: %s: %s", r.base, path, resp.Status, e.Error), code: resp.StatusCode}
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("%s%s: read the answer: %w", r.base, path, err)
	}
	return nil
}

// values are the URL parameters of every call: local=1 for a peer.
func (r *remote) values() url.Values {
	if r.local {
		return url.Values{"local": {"1"}}
	}
	return url.Values{}
}

func (r *remote) Search(ctx context.Context, q index.Query) (index.Result, error) {
	if q.Partitions != nil {
		return index.Result{}, errors.New("fanout: an analyzer answers for the partitions it owns; Query.Partitions cannot be sent")
	}
	v := r.values()
	addSearchValues(v, q)
	var res index.Result
	err := r.get(ctx, "/api/search", v, &res)
	return res, err
}

// addSearchValues adds q's URL parameters for /api/search to v: every
// field web.ParseQuery reads, left out when zero (as it reads them).
func addSearchValues(v url.Values, q index.Query) {
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	setTime := func(k string, t time.Time) {
		if !t.IsZero() {
			v.Set(k, t.UTC().Format(time.RFC3339Nano))
		}
	}
	setInt := func(k string, n int) {
		if n != 0 {
			v.Set(k, strconv.Itoa(n))
		}
	}
	set("q", q.Text)
	for k, vals := range map[string][]string{"node": q.Nodes, "container": q.Containers, "source": q.Sources, "level": q.Levels, "file": q.Files} {
		for _, s := range vals {
			v.Add(k, s)
		}
	}
	setTime("since", q.Since)
	setTime("until", q.Until)
	setTime("histogram_since", q.HistogramSince)
	setTime("histogram_until", q.HistogramUntil)
	setInt("from", q.From)
	setInt("size", q.Size)
	setInt("histogram", q.Histogram)
	set("sort", q.Sort)
	set("after", q.After)
	if q.Facets {
		v.Set("facets", "1")
	}
	if q.Highlight {
		v.Set("highlight", "1")
	}
}

func (r *remote) Context(ctx context.Context, id string, n int) (index.Context, error) {
	var c index.Context
	v := r.values()
	v.Set("n", strconv.Itoa(n))
	err := r.get(ctx, "/api/context/"+url.PathEscape(id), v, &c)
	return c, err
}

// Bounds are found by two searches: the API has no call of its own for
// them.
func (r *remote) Bounds(ctx context.Context) (lo, hi time.Time, err error) {
	return boundsBySearch(ctx, r)
}

// DocCount is the count of the analyzer's events: of its partitions for a
// peer (Local), else of all it answers for.
func (r *remote) DocCount() (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), remoteTimeout)
	defer cancel()
	res, err := r.Search(ctx, index.Query{Size: -1})
	return res.Total, err
}

// Findings are the peer's, nil when it does not answer.
func (r *remote) Findings() []finding.Finding {
	ctx, cancel := context.WithTimeout(context.Background(), remoteTimeout)
	defer cancel()
	var fs []finding.Finding
	if err := r.get(ctx, "/api/findings", nil, &fs); err != nil {
		return nil
	}
	return fs
}

func (r *remote) Stats() index.Stats { return index.Stats{} }
