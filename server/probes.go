package server

import (
	"net/http"
)

// readyz is the readiness probe (Kubernetes): 200 once serve consumes live
// (its NATS connected, the warm-up replay done), 503 before and while NATS
// is unreachable. /healthz stays the liveness probe: 200 while warming, so a
// long replay is not killed.
func (s *server) readyz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	switch {
	case !s.nc.IsConnected():
		http.Error(w, "not ready: NATS disconnected", http.StatusServiceUnavailable)
	case s.memberProblem() != "":
		http.Error(w, "not ready: "+s.memberProblem(), http.StatusServiceUnavailable)
	case s.warming.Load():
		http.Error(w, "not ready: replaying the stream into the rules", http.StatusServiceUnavailable)
	default:
		w.Write([]byte("ready\n"))
	}
}
