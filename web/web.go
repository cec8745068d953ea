// Package web is Faultline's one HTTP surface: the HTTP API and the
// embedded web UI (search with facets, a time histogram and highlights,
// context around an event, findings with their evidence, a per-node
// timeline, a live stream of events and findings as Server-Sent Events),
// Prometheus metrics, and the routes serve adds (Config.Routes), all on
// one mux behind one token check (auth.go): a bearer header for scripts, a
// cookie from the login page or ?token= for browsers.
//
// The UI is plain HTML, CSS and JavaScript under ui/, embedded in the
// binary; it builds every piece of log text into the page with textContent,
// so a log line is always shown, never run.
package web

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/index"
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/report"
)

//go:embed ui
var uiFS embed.FS

// Config is what the handler serves.
type Config struct {
	// Index is searched; required. Bleve's *index.Index is one; any
	// index.Searcher (another backend, a fan-out) serves the same API.
	Index index.Searcher
	// Local answers the requests with local=1 (search, context, timeline):
	// in cluster mode Index fans out to every analyzer, which answer
	// their part from Local (their own index, their own partitions). Nil:
	// Index.
	Local index.Searcher
	// Findings returns the current findings (root causes first). Nil: the
	// index's stored findings.
	Findings func() []finding.Finding
	// LiveEvents and LiveFindings feed /api/stream; nil hubs send nothing
	// (an offline index has no live feed).
	LiveEvents   *Hub[*parsers.Event]
	LiveFindings *Hub[finding.Finding]
	// Token, when set, is required on every route but the open ones
	// (/healthz, the login page): as "Authorization: Bearer TOKEN", or the
	// cookie a browser gets from the login page or ?token=TOKEN on a page.
	Token string
	// Routes are served beside the built-in ones, behind the same check.
	Routes []Route
	// Registry receives the HTTP and index metrics and is served on
	// /metrics. Nil: a new registry with the Go and process collectors.
	Registry *prometheus.Registry
	Logger   *slog.Logger
}

// Handler is the HTTP handler of the API, UI, metrics and added routes;
// its ServeHTTP checks the token (auth.go).
type Handler struct{ s *server }

type server struct {
	cfg      Config
	log      *slog.Logger
	mux      *http.ServeMux
	patterns []string        // every route, in registration order
	open     map[string]bool // patterns served without the token
	tokenSum [sha256.Size]byte
	reqs     *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	sse      prometheus.Gauge
}

// NewHandler returns the HTTP handler of the API, UI, metrics and
// cfg.Routes.
func NewHandler(cfg Config) (*Handler, error) {
	if cfg.Index == nil {
		return nil, errors.New("web: Config.Index is required")
	}
	if cfg.Findings == nil {
		cfg.Findings = cfg.Index.Findings
	}
	if cfg.Local == nil {
		cfg.Local = cfg.Index
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
		cfg.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	s := &server{cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), open: map[string]bool{}, tokenSum: sha256.Sum256([]byte(cfg.Token))}
	if err := s.registerMetrics(); err != nil {
		return nil, err
	}
	ui, err := fs.Sub(uiFS, "ui")
	if err != nil {
		return nil, fmt.Errorf("web: embedded ui: %w", err)
	}
	added := map[string]Route{}
	for _, r := range cfg.Routes {
		added[r.Pattern] = r
	}
	for _, r := range []Route{
		{Pattern: "GET /api/search", Handler: http.HandlerFunc(s.search)},
		{Pattern: "GET /api/context/{id}", Handler: http.HandlerFunc(s.context)},
		{Pattern: "GET /api/findings", Handler: http.HandlerFunc(s.findings)},
		{Pattern: "GET /api/timeline", Handler: http.HandlerFunc(s.timeline)},
		{Pattern: "GET /api/syntax", Handler: http.HandlerFunc(s.syntax)},
		{Pattern: "GET /api/stream", Handler: http.HandlerFunc(s.stream)},
		{Pattern: "GET /healthz", Open: true, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })},
		{Pattern: "GET /metrics", Handler: promhttp.HandlerFor(cfg.Registry, promhttp.HandlerOpts{})},
		{Pattern: loginPattern, Open: true, Handler: http.HandlerFunc(s.showLogin)},
		{Pattern: loginPost, Open: true, Handler: http.HandlerFunc(s.login)},
		{Pattern: uiPattern, Handler: http.FileServerFS(ui)},
	} {
		if a, ok := added[r.Pattern]; ok {
			r = a
			delete(added, r.Pattern)
		}
		s.handle(r)
	}
	for _, r := range cfg.Routes {
		if _, ok := added[r.Pattern]; ok {
			s.handle(r)
		}
	}
	return &Handler{s: s}, nil
}

func (s *server) registerMetrics() error {
	s.reqs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "faultline_http_requests_total", Help: "HTTP requests by route and status code.",
	}, []string{"route", "code"})
	s.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "faultline_http_request_duration_seconds", Help: "HTTP request latency by route (SSE excluded).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12),
	}, []string{"route"})
	s.sse = prometheus.NewGauge(prometheus.GaugeOpts{Name: "faultline_sse_clients", Help: "Connected live-stream clients."})
	// This process's index: a fan-out (Index on a cluster) would ask every
	// peer at each scrape, and wait on one that hangs.
	x := s.cfg.Local
	cs := []prometheus.Collector{s.reqs, s.latency, s.sse,
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "faultline_index_events_added_total",
			Help: "Events queued for indexing."}, func() float64 { return float64(x.Stats().Added) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "faultline_index_events_indexed_total",
			Help: "Events in executed index batches."}, func() float64 { return float64(x.Stats().Indexed) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "faultline_index_batches_total",
			Help: "Index batches executed."}, func() float64 { return float64(x.Stats().Batches) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "faultline_index_errors_total",
			Help: "Index batches or events that failed."}, func() float64 { return float64(x.Stats().Errors) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "faultline_index_documents",
			Help: "Documents in the index."}, func() float64 { n, _ := x.DocCount(); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "faultline_findings",
			Help: "Findings currently known."}, func() float64 { return float64(len(s.cfg.Findings())) }),
	}
	for _, c := range cs {
		if err := s.cfg.Registry.Register(c); err != nil {
			return fmt.Errorf("web: register metrics: %w", err)
		}
	}
	return nil
}

// handle registers r on the mux, counted in the metrics by its path.
func (s *server) handle(r Route) {
	_, path, _ := strings.Cut(r.Pattern, " ")
	s.mux.Handle(r.Pattern, s.instrument(path, r.Handler))
	s.patterns = append(s.patterns, r.Pattern)
	s.open[r.Pattern] = r.Open
}

// statusWriter records the status code for metrics; it passes Flush on
// for SSE.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (s *server) instrument(route string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(sw, r)
		s.reqs.WithLabelValues(route, strconv.Itoa(sw.code)).Inc()
		if route != "/api/stream" {
			s.latency.WithLabelValues(route).Observe(time.Since(start).Seconds())
		}
	})
}

// BearerToken returns the token of an "Authorization: Bearer TOKEN" header.
// The scheme is matched in any case, as RFC 9110 says auth schemes are
// (clients and proxies send "bearer" too).
func BearerToken(r *http.Request) (string, bool) {
	scheme, token, found := strings.Cut(r.Header.Get("Authorization"), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, code int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
}

// ParseQuery reads an index.Query from URL parameters: q, node, container,
// source, level, file (repeatable), since, until (RFC 3339 or a duration
// back from now), from, size, sort, facets, histogram (bucket count),
// highlight, after (the next cursor of the previous page), histogram_since
// and histogram_until (the histogram's range where since or until is
// unset, see index.Query.HistogramSince).
func ParseQuery(v map[string][]string, now time.Time) (index.Query, error) {
	get := func(k string) string {
		if vs := v[k]; len(vs) > 0 {
			return vs[0]
		}
		return ""
	}
	multi := func(k string) []string {
		var out []string
		for _, s := range v[k] {
			for _, p := range strings.Split(s, ",") {
				if p = strings.TrimSpace(p); p != "" {
					out = append(out, p)
				}
			}
		}
		return out
	}
	q := index.Query{Text: get("q"), Nodes: multi("node"), Containers: multi("container"), Sources: multi("source"),
		Levels: multi("level"), Files: v["file"], Sort: get("sort"), After: get("after")}
	var err error
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"since", &q.Since}, {"until", &q.Until}, {"histogram_since", &q.HistogramSince}, {"histogram_until", &q.HistogramUntil}} {
		if s := get(p.name); s != "" {
			if *p.dst, err = index.ParseTime(s, now); err != nil {
				return q, fmt.Errorf("%s: %w", p.name, err)
			}
		}
	}
	for _, p := range []struct {
		name string
		dst  *int
	}{{"from", &q.From}, {"size", &q.Size}, {"histogram", &q.Histogram}} {
		if s := get(p.name); s != "" {
			if *p.dst, err = strconv.Atoi(s); err != nil {
				return q, fmt.Errorf("%s: %q is not a number", p.name, s)
			}
		}
	}
	q.Size = min(q.Size, 1000)
	q.Facets = truthy(get("facets"))
	q.Highlight = truthy(get("highlight"))
	return q, nil
}

func truthy(s string) bool { return s == "1" || s == "true" || s == "yes" }

// searcher is what answers r: Config.Local for local=1 (a peer's part of
// a fan-out, which must not fan out again), else Config.Index.
func (s *server) searcher(r *http.Request) index.Searcher {
	if truthy(r.URL.Query().Get("local")) {
		return s.cfg.Local
	}
	return s.cfg.Index
}

// searchAnswer is a search's result with a hint for a query written in
// another language (LogQL), which would otherwise answer 0 hits silently.
type searchAnswer struct {
	index.Result
	Hint *queryHint `json:"hint,omitempty"`
}

// queryHint offers the query in Faultline's syntax.
type queryHint struct {
	Language   string   `json:"language"`
	Equivalent string   `json:"equivalent"`
	Notes      []string `json:"notes,omitempty"`
}

func hintFor(text string) *queryHint {
	eq, notes, ok := logQLHint(text)
	if !ok {
		return nil
	}
	return &queryHint{Language: "LogQL", Equivalent: eq, Notes: notes}
}

func (s *server) search(w http.ResponseWriter, r *http.Request) {
	q, err := ParseQuery(r.URL.Query(), time.Now())
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	x := s.searcher(r)
	if err := followHits(r.Context(), x, &q); err != nil {
		writeQueryError(w, q.Text, err, http.StatusBadRequest)
		return
	}
	res, err := x.Search(r.Context(), q)
	if err != nil {
		writeQueryError(w, q.Text, err, http.StatusBadRequest)
		return
	}
	writeJSON(w, searchAnswer{Result: res, Hint: hintFor(q.Text)})
}

// writeQueryError answers a failed search: a query that cannot be read
// says where (position, a 1-based column of the query) and, written in
// LogQL, what to write instead.
func writeQueryError(w http.ResponseWriter, text string, err error, other int) {
	body := map[string]any{"error": err.Error()}
	if qe, ok := index.AsQueryError(err); ok {
		body["position"] = qe.Column()
	}
	if h := hintFor(text); h != nil {
		body["hint"] = h
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(queryStatus(err, other))
	_ = json.NewEncoder(w).Encode(body)
}

// followHits sets the histogram's range to the span of the events q
// matches when q gives none: over the index's whole span, the hits of a
// narrow search fall in one bar at an edge. A fan-out's peer (local=1)
// gets the range from the fan-out and keeps it.
func followHits(ctx context.Context, x index.Searcher, q *index.Query) error {
	if q.Histogram <= 0 || !q.HistogramSince.IsZero() || !q.HistogramUntil.IsZero() || (!q.Since.IsZero() && !q.Until.IsZero()) {
		return nil
	}
	lo, hi, ok, err := hitSpan(ctx, x, *q)
	if err != nil || !ok {
		return err
	}
	q.HistogramSince, q.HistogramUntil = lo, hi
	return nil
}

// hitSpan is the time range [first, last+1ns) of the timed events q
// matches; ok is false when it matches none.
func hitSpan(ctx context.Context, x index.Searcher, q index.Query) (lo, hi time.Time, ok bool, err error) {
	sq := q
	sq.Size, sq.From, sq.After, sq.Facets, sq.Highlight, sq.Histogram = 1, 0, "", false, false, 0
	sq.HistogramSince, sq.HistogramUntil = time.Time{}, time.Time{}
	ends := [2]time.Time{}
	for i, order := range []string{"time", "-time"} {
		sq.Sort = order
		res, err := x.Search(ctx, sq)
		if err != nil {
			return lo, hi, false, err
		}
		if len(res.Hits) == 0 || res.Hits[0].Time.IsZero() {
			return lo, hi, false, nil
		}
		ends[i] = res.Hits[0].Time
	}
	lo, hi = ends[0], ends[1].Add(time.Nanosecond)
	if !q.Since.IsZero() {
		lo = q.Since
	}
	if !q.Until.IsZero() {
		hi = q.Until
	}
	return lo, hi, true, nil
}

// queryStatus is the HTTP status of a failed search: 400 when the query
// asks too much (a pattern of too many words, a page too deep), 503 at the
// search deadline (narrower, it may succeed), else other.
func queryStatus(err error, other int) int {
	switch {
	case index.IsBadQuery(err):
		return http.StatusBadRequest
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable
	}
	return other
}

func (s *server) context(w http.ResponseWriter, r *http.Request) {
	n := 10
	if v := r.URL.Query().Get("n"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			writeError(w, http.StatusBadRequest, fmt.Errorf("n: %q is not a number", v))
			return
		}
	}
	c, err := s.searcher(r).Context(r.Context(), r.PathValue("id"), n)
	if errors.Is(err, index.ErrNotFound) {
		writeError(w, http.StatusNotFound, err)
		return
	}
	if err != nil {
		writeError(w, queryStatus(err, http.StatusInternalServerError), err)
		return
	}
	writeJSON(w, c)
}

func (s *server) findings(w http.ResponseWriter, r *http.Request) {
	fs := s.cfg.Findings()
	views := make([]findingView, len(fs))
	for i, f := range fs {
		views[i] = viewOf(f)
	}
	writeJSON(w, views)
}

// findingView is a finding as the UI draws it: the finding (its schema
// unchanged, so a client that decodes a finding.Finding reads it) with
// what the terminal report computes for it, computed by the same code: the
// per-node table, the evidence the short view shows and where it failed.
type findingView struct {
	finding.Finding
	Table finding.Table `json:"table"`
	// EvidenceShown are the indexes into Evidence of the lines the short
	// view shows (report.ShownEvidence); FailurePoint the index of the
	// evidence where the launch failed, -1 if none.
	EvidenceShown []int `json:"evidence_shown"`
	FailurePoint  int   `json:"failure_point"`
}

func viewOf(f finding.Finding) findingView {
	v := findingView{Finding: f, Table: f.NodeTable(), EvidenceShown: []int{}, FailurePoint: report.FailurePoint(f.Evidence, f.FirstSeen)}
	if v.Table.Columns == nil {
		v.Table = finding.Table{Columns: []string{}, Rows: []finding.TableRow{}}
	}
	shown := report.ShownEvidence(f.Evidence, report.DefaultEvidence)
	for i, j := 0, 0; i < len(f.Evidence) && j < len(shown); i++ {
		if f.Evidence[i].RecordID == shown[j].RecordID && f.Evidence[i].Line == shown[j].Line {
			v.EvidenceShown = append(v.EvidenceShown, i)
			j++
		}
	}
	return v
}

func (s *server) syntax(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, map[string]any{"syntax": index.QuerySyntax, "fields": index.KnownFields()})
}

// Lane is one node's row of the timeline.
type Lane struct {
	Node    string         `json:"node"`
	Buckets []index.Bucket `json:"buckets"` // all events matching the query
	Errors  []index.Hit    `json:"errors"`  // error and critical events (at most 200)
}

// Timeline is the launch seen per node.
type Timeline struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Lanes []Lane    `json:"lanes"`
}

// timeline answers one lane per node: a histogram of the events matching
// the query and the error events, over the query's time range (or the
// index's). Findings' evidence is placed by the client from /api/findings.
func (s *server) timeline(w http.ResponseWriter, r *http.Request) {
	q, err := ParseQuery(r.URL.Query(), time.Now())
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	tl, err := BuildTimeline(r.Context(), s.searcher(r), q)
	if err != nil {
		writeQueryError(w, q.Text, err, http.StatusBadRequest)
		return
	}
	writeJSON(w, tl)
}

// BuildTimeline computes the per-node timeline of q (q.Histogram buckets,
// default 60).
func BuildTimeline(ctx context.Context, x index.Searcher, q index.Query) (Timeline, error) {
	if q.Histogram <= 0 {
		q.Histogram = 60
	}
	if q.Since.IsZero() || q.Until.IsZero() {
		// The span of what the query matches, as the search's histogram
		// (followHits); the index's when it matches nothing.
		lo, hi, ok, err := hitSpan(ctx, x, q)
		if err == nil && !ok {
			lo, hi, err = x.Bounds(ctx)
			hi = hi.Add(time.Nanosecond)
		}
		if err != nil {
			return Timeline{}, err
		}
		if q.Since.IsZero() {
			q.Since = lo
		}
		if q.Until.IsZero() {
			q.Until = hi
		}
	}
	tl := Timeline{Start: q.Since, End: q.Until, Lanes: []Lane{}}
	nodes := q.Nodes
	if len(nodes) == 0 {
		fq := q
		fq.Size, fq.Facets, fq.Histogram = -1, true, 0
		res, err := x.Search(ctx, fq)
		if err != nil {
			return tl, err
		}
		for _, t := range res.Facets[index.FieldNode] {
			nodes = append(nodes, t.Term)
		}
		slices.Sort(nodes)
	}
	for _, n := range nodes {
		lq := q
		lq.Nodes, lq.Size, lq.Facets, lq.Highlight, lq.From = []string{n}, -1, false, false, 0
		res, err := x.Search(ctx, lq)
		if err != nil {
			return tl, err
		}
		eq := lq
		eq.Histogram, eq.Size, eq.Sort = 0, 200, "time"
		eq.Levels = []string{parsers.LevelError, parsers.LevelCritical}
		errs, err := x.Search(ctx, eq)
		if err != nil {
			return tl, err
		}
		tl.Lanes = append(tl.Lanes, Lane{Node: n, Buckets: res.Histogram, Errors: errs.Hits})
	}
	return tl, nil
}

// stream sends live events ("event: log", data: an index.Hit; not with
// logs=0) and findings ("event: finding", data: a finding.Finding with the
// view's fields, see findingView) as Server-Sent Events, with a comment
// every 15s to keep proxies from closing it.
func (s *server) stream(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, errors.New("streaming unsupported"))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": faultline live stream\nretry: 2000\n\n")
	fl.Flush()
	s.sse.Inc()
	defer s.sse.Dec()

	ctx := r.Context()
	var evs <-chan *parsers.Event
	var fds <-chan finding.Finding
	// logs=0: findings only (the UI's findings panel, always on; the raw
	// lines only while "Live" is ticked).
	if s.cfg.LiveEvents != nil && r.URL.Query().Get("logs") != "0" {
		evs = s.cfg.LiveEvents.Subscribe(ctx)
	}
	if s.cfg.LiveFindings != nil {
		fds = s.cfg.LiveFindings.Subscribe(ctx)
	}
	ping := time.NewTicker(15 * time.Second)
	defer ping.Stop()
	send := func(event string, v any) bool {
		b, err := json.Marshal(v)
		if err != nil {
			s.log.Error("sse encode", "err", err)
			return true
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		fl.Flush()
		return true
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-evs:
			if !send("log", index.HitFromEvent(ev)) {
				return
			}
		case f := <-fds:
			if !send("finding", viewOf(f)) {
				return
			}
		case <-ping.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
	}
}
