package server

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// earlyHTTP listens from the first moment of Run: loading the rules,
// recovering the NATS store and opening the index take seconds on a big
// data dir, and a probe must not take that for a dead process. Until the
// full handler is set, /healthz says warming and every other route 503.
type earlyHTTP struct {
	ln    net.Listener
	hs    *http.Server
	h     atomic.Pointer[http.Handler]
	done  chan struct{}
	token bool // an HTTP token is set: tell token-less callers only "ok"
}

// listenEarly starts serving cfg.HTTP (nil, nil when HTTP is off).
func listenEarly(cfg Config) (*earlyHTTP, error) {
	if cfg.HTTP == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", cfg.HTTP)
	if err != nil {
		return nil, fmt.Errorf("--http: %w", err)
	}
	e := &earlyHTTP{ln: ln, done: make(chan struct{}), token: cfg.HTTPToken != ""}
	e.hs = &http.Server{Handler: e, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(e.done)
		e.hs.Serve(ln)
	}()
	return e, nil
}

func (e *earlyHTTP) addr() string { return e.ln.Addr().String() }

// serve hands every later request to h.
func (e *earlyHTTP) serve(h http.Handler) { e.h.Store(&h) }

func (e *earlyHTTP) close() {
	if e == nil {
		return
	}
	e.hs.Close()
	<-e.done
}

func (e *earlyHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := e.h.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	if r.URL.Path != "/healthz" {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "starting", http.StatusServiceUnavailable)
		return
	}
	// Up, not ready: what /healthz says during the warm-up (nothing
	// replayed yet), or only "ok" to a caller that may lack the token.
	body := map[string]any{"status": "warming", "warm_up": map[string]uint64{"from": 0, "seq": 0, "last": 0}}
	if e.token {
		body = map[string]any{"status": "ok"}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(body)
}
