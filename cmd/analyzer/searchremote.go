package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/faultline/faultline/index"
	"github.com/faultline/faultline/index/fanout"
)

// searcher is what search needs of an index: the local one (*index.Index)
// or a running serve's HTTP API (remoteIndex).
type searcher interface {
	Search(ctx context.Context, q index.Query) (index.Result, error)
	Context(ctx context.Context, id string, n int) (index.Context, error)
}

// remoteIndex searches through the HTTP API of `analyzer serve` (or `ui`),
// whose process holds the index's lock: a second process cannot open it.
// It asks as any API client does (not local=1), so that a search through
// one analyzer of a cluster covers the whole cluster.
type remoteIndex struct {
	index.Searcher
	base string // http://host:port, no trailing slash
}

func newRemoteIndex(server, token string) (*remoteIndex, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--server %q: want a URL such as http://127.0.0.1:8080", server)
	}
	base := strings.TrimRight(u.String(), "/")
	s := fanout.NewRemote(base, fanout.RemoteOptions{Token: token, Client: &http.Client{Timeout: time.Minute}})
	return &remoteIndex{Searcher: s, base: base}, nil
}

func (r *remoteIndex) Search(ctx context.Context, q index.Query) (index.Result, error) {
	res, err := r.Searcher.Search(ctx, q)
	return res, r.hint(err)
}

func (r *remoteIndex) Context(ctx context.Context, id string, n int) (index.Context, error) {
	c, err := r.Searcher.Context(ctx, id, n)
	return c, r.hint(err)
}

// hint says where the token comes from when the server refuses the
// request for it.
func (r *remoteIndex) hint(err error) error {
	if errors.Is(err, fanout.ErrUnauthorized) {
		return fmt.Errorf("%s wants its HTTP token: set FAULTLINE_HTTP_TOKEN or --http-token-file", r.base)
	}
	return err
}
