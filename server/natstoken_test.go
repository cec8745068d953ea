package server

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/faultline/faultline/transport"
)

// Given no credentials, serve's embedded NATS requires a token of its own,
// made once per data dir and kept there for local shippers (0600): a process
// of the host without it cannot publish into the log stream; serve started
// again on the same data dir keeps it. Given a token, that one is required
// and no file is written.
func TestEmbeddedNATSRequiresItsToken(t *testing.T) {
	data := t.TempDir()
	r := startServer(t, Config{DataDir: data})
	u, err := url.Parse(r.addrs.NATS)
	if err != nil {
		t.Fatal(err)
	}
	bare := "nats://" + u.Host
	if _, err := nats.Connect(bare, nats.MaxReconnects(0)); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("connected without the token: %v", err)
	}
	file := filepath.Join(data, natsTokenFile)
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s is %v, want 0600", file, fi.Mode().Perm())
	}
	b, _ := os.ReadFile(file)
	tok := strings.TrimSpace(string(b))
	if len(tok) < 32 {
		t.Fatalf("token %q is too short", tok)
	}
	nc, err := nats.Connect(bare, nats.Token(tok))
	if err != nil {
		t.Fatalf("the token of %s: %v", file, err)
	}
	nc.Close()
	if u.User.Username() != tok {
		t.Errorf("Ready's NATS address carries %q, want the token", u.User.Username())
	}
	if strings.Contains(r.log.String(), tok) {
		t.Errorf("the token is in serve's log")
	}
	r.stop()

	r = startServer(t, Config{DataDir: data})
	if b2, _ := os.ReadFile(file); string(b2) != string(b) {
		t.Errorf("restarted on the same data dir, the token changed")
	}
	if nc, err := nats.Connect(r.addrs.NATS); err != nil {
		t.Errorf("after the restart: %v", err)
	} else {
		nc.Close()
	}
	r.stop()

	other := t.TempDir()
	r = startServer(t, Config{DataDir: other, NATS: transport.NATSOptions{Token: "given-token-0123456789"}})
	if _, err := os.Stat(filepath.Join(other, natsTokenFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a token file was written although a token was given: %v", err)
	}
	u, _ = url.Parse(r.addrs.NATS)
	if _, err := nats.Connect("nats://"+u.Host, nats.MaxReconnects(0), nats.Timeout(2*time.Second)); !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("connected without the given token: %v", err)
	}
	if nc, err := nats.Connect("nats://"+u.Host, nats.Token("given-token-0123456789")); err != nil {
		t.Errorf("the given token: %v", err)
	} else {
		nc.Close()
	}
}
