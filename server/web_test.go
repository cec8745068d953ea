package server

import (
	"io"
	"net/http"
	"strings"
	"testing"
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
