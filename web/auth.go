package web

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	_ "embed"
	"encoding/base64"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"
)

// Route is a route served by the handler beside its own, behind the same
// token check (serve adds /api/rules, /version and its /healthz).
type Route struct {
	// Pattern is an http.ServeMux pattern with its method, such as
	// "GET /api/rules". A route with the pattern of a built-in one
	// replaces it.
	Pattern string
	Handler http.Handler
	// Open routes answer without the token too (health probes); the
	// handler tells who holds it with Authorized.
	Open bool
}

// The session cookie: set by the login form or ?token= on a page, sent by
// the browser's fetch and EventSource (which cannot send headers).
const tokenCookie = "faultline_token"

// Patterns of the UI's pages: the ones that take ?token= and answer the
// login form, not a JSON 401, to a request without the token.
const (
	uiPattern    = "GET /"
	loginPattern = "GET /login"
	loginPost    = "POST /login"
)

type authKey struct{}

// Authorized reports whether r came through the handler with the token
// (or no token is configured). Open routes use it to decide how much to
// say.
func Authorized(r *http.Request) bool {
	ok, _ := r.Context().Value(authKey{}).(bool)
	return ok
}

// Routes lists every route the handler serves: built-in, added and the
// login page, with whether it answers without the token. Tests walk it so
// that no route escapes the token check unnoticed.
func (h *Handler) Routes() []Route {
	out := make([]Route, 0, len(h.s.patterns))
	for _, p := range h.s.patterns {
		out = append(out, Route{Pattern: p, Open: h.s.open[p]})
	}
	return out
}

// ServeHTTP is the one auth middleware: every request, of whichever
// route, passes here. The credential is, first found: the header
// "Authorization: Bearer TOKEN"; ?token=TOKEN on a page (which becomes
// the cookie, then a redirect to the same URL without it); the cookie.
// A wrong one is never passed over for the next: the request is refused.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := h.s
	// Log text is data; the UI never needs inline scripts, frames or
	// foreign origins, so the browser is told to refuse them.
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; frame-ancestors 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	_, pattern := s.mux.Handler(r)
	page := pattern == uiPattern || pattern == loginPattern
	ok, queryToken := true, false
	if s.cfg.Token != "" {
		var cred string
		var found bool
		switch q := r.URL.Query(); {
		case r.Header.Get("Authorization") != "":
			cred, found = BearerToken(r)
		case page && q.Has("token"):
			cred, found, queryToken = q.Get("token"), true, true
		default:
			if c, err := r.Cookie(tokenCookie); err == nil {
				cred, found = c.Value, true
			}
		}
		ok = found && s.tokenOK(cred)
		if ok && queryToken {
			s.setCookie(w, r)
			q := r.URL.Query()
			q.Del("token")
			u := *r.URL
			u.RawQuery = q.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
	}
	switch {
	case ok || (s.open[pattern] && !queryToken):
		s.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), authKey{}, ok)))
		return
	case page:
		s.loginPage(w, r, http.StatusUnauthorized, queryToken)
	default:
		hd.Set("WWW-Authenticate", `Bearer realm="faultline"`)
		writeError(w, http.StatusUnauthorized, errUnauthorized)
	}
	// Refused requests are counted too (a flood of them is worth a look);
	// served ones are counted by instrument.
	route := "unmatched"
	if _, p, found := strings.Cut(pattern, " "); found {
		route = p
	} else if pattern != "" {
		route = pattern
	}
	s.reqs.WithLabelValues(route, "401").Inc()
}

var errUnauthorized = errors.New("unauthorized: send the token as Authorization: Bearer TOKEN (a browser signs in at /login)")

// tokenOK compares digests in constant time: the time taken tells
// neither where v differs from the token nor how long the token is.
func (s *server) tokenOK(v string) bool {
	sum := sha256.Sum256([]byte(v))
	return subtle.ConstantTimeCompare(sum[:], s.tokenSum[:]) == 1
}

// setCookie makes the token the browser's session cookie: not readable by
// scripts, not sent by other sites' requests, and over TLS only when the
// page came over TLS (directly or through a proxy that says so).
func (s *server) setCookie(w http.ResponseWriter, r *http.Request) {
	secure := r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
	http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: s.cfg.Token, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: secure})
}

// login takes the login form's token: right, it becomes the cookie and the
// browser goes on to the page it came for; wrong, the form again (401).
func (s *server) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	switch {
	case Authorized(r): // signed in already, or no token is set
	case s.tokenOK(r.PostForm.Get("token")):
		s.setCookie(w, r)
	default:
		s.log.Info("login with a wrong token", "remote", r.RemoteAddr)
		s.loginPage(w, r, http.StatusUnauthorized, true)
		return
	}
	http.Redirect(w, r, localPath(r.PostForm.Get("next")), http.StatusSeeOther)
}

// showLogin is GET /login: the form, or straight on when the request
// already holds the token.
func (s *server) showLogin(w http.ResponseWriter, r *http.Request) {
	if Authorized(r) {
		http.Redirect(w, r, localPath(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	s.loginPage(w, r, http.StatusOK, false)
}

// localPath is next if it is a path on this server, else "/": the login
// form must not send the browser to another site.
func localPath(next string) string {
	u, err := url.Parse(next)
	if err != nil || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, `/\`) ||
		u.Scheme != "" || u.Host != "" {
		return "/"
	}
	return next
}

//go:embed login.html
var loginHTML string

var loginTmpl = template.Must(template.New("login").Parse(loginHTML))

// loginCSS is the login page's style, inline so that the page needs
// nothing that wants the token; the CSP admits exactly it by its hash.
const loginCSS = `body{font:15px/1.4 system-ui,sans-serif;background:#f6f7f9;color:#1d2430;margin:0}` +
	`main{max-width:22rem;margin:12vh auto;padding:1.5rem 1.75rem;background:#fff;border:1px solid #d5dae1;border-radius:8px}` +
	`h1{font-size:1.3rem;margin:0 0 .75rem}label{display:block;margin:.75rem 0 .25rem}` +
	`input[type=password]{width:100%;box-sizing:border-box;padding:.45rem;font:inherit}` +
	`button{margin-top:1rem;padding:.45rem 1.2rem;font:inherit}.error{color:#b3261e}.hint{color:#5b6472;font-size:.9em}`

var loginCSP = func() string {
	sum := sha256.Sum256([]byte(loginCSS))
	return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
		"'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
}()

// loginPage writes the login form with code; next is the page to go on to
// (the one asked for, or /login's ?next=).
func (s *server) loginPage(w http.ResponseWriter, r *http.Request, code int, wrong bool) {
	next := r.URL.Query().Get("next")
	if r.Method == http.MethodPost {
		next = r.PostForm.Get("next")
	} else if p := r.URL.Path; p != "/login" {
		q := r.URL.Query()
		q.Del("token")
		u := url.URL{Path: p, RawQuery: q.Encode()}
		next = u.RequestURI()
	}
	h := w.Header()
	h.Set("Content-Security-Policy", loginCSP)
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	if code == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="faultline"`)
	}
	w.WriteHeader(code)
	if err := loginTmpl.Execute(w, map[string]any{"CSS": template.CSS(loginCSS), "Next": localPath(next), "Wrong": wrong}); err != nil {
		s.log.Warn("login page", "err", err)
	}
}

// JSON returns a handler that answers with v() as JSON, the way the
// built-in routes do.
func JSON[T any](v func() T) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeJSON(w, v()) })
}
