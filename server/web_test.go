package server

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/faultline/faultline/shipper"
)

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// serve mounts the web UI and its API beside /api/findings and /healthz,
// and --http-token protects all of them.
func TestServeMountsWebUI(t *testing.T) {
	srv := startServer(t, Config{HTTPToken: "s3cret"})
	base := "http://" + srv.addrs.HTTP
	if code, _ := get(t, base+"/", ""); code != http.StatusUnauthorized {
		t.Errorf("GET / without the token: %d, want 401", code)
	}
	if code, _ := get(t, base+"/api/findings", ""); code != http.StatusUnauthorized {
		t.Errorf("GET /api/findings without the token: %d, want 401", code)
	}
	code, body := get(t, base+"/", "s3cret")
	if code != http.StatusOK || !strings.Contains(body, "<html") {
		t.Errorf("GET / = %d %.200q, want the UI", code, body)
	}
	if code, body := get(t, base+"/api/search?q=anything", "s3cret"); code != http.StatusOK {
		t.Errorf("GET /api/search = %d %.200q", code, body)
	}
	if code, body := get(t, base+"/api/findings", "s3cret"); code != http.StatusOK || strings.TrimSpace(body) != "[]" {
		t.Errorf("GET /api/findings = %d %q", code, body)
	}
}

// With --token, the embedded NATS server demands it: a shipper without the
// token is refused, one with it gets in.
func TestEmbeddedNATSToken(t *testing.T) {
	srv := startServer(t, Config{NATS: shipper.NATSOptions{Token: "t0k3n"}})
	if nc, err := nats.Connect(srv.addrs.NATS); err == nil {
		nc.Close()
		t.Fatal("connected without the token")
	}
	nc, err := nats.Connect(srv.addrs.NATS, nats.Token("t0k3n"))
	if err != nil {
		t.Fatalf("with the token: %v", err)
	}
	nc.Close()
	if !loopback("127.0.0.1:4222") || !loopback("localhost:1") || loopback("0.0.0.0:4222") || loopback("10.1.230.180:4222") {
		t.Error("loopback() is wrong")
	}
}
