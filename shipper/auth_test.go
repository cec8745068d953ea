package shipper_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/faultline/faultline/internal/testutil"
)

// The shipper authenticates with user/password and with a token; with wrong
// credentials it ships nothing and says why.
func TestNATSAuth(t *testing.T) {
	tests := []struct {
		name  string
		opts  server.Options
		args  []string
		works bool
	}{
		{"user-password", server.Options{Username: "ship", Password: "s3cret"}, []string{"--user", "ship", "--password", "s3cret"}, true},
		{"token", server.Options{Authorization: "tok3n"}, []string{"--token", "tok3n"}, true},
		{"wrong-password", server.Options{Username: "ship", Password: "s3cret"}, []string{"--user", "ship", "--password", "nope"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.opts
			o.Port = -1
			s := testutil.RunJetStreamServerWith(t, &o)
			dir := t.TempDir()
			log := filepath.Join(dir, "a.log")
			appendLines(t, log, "a", 0, 100)
			p := startShipper(t, append(shipperArgs(s.ClientURL(), "spark-1", filepath.Join(dir, "state"), "--path", log), tt.args...)...)
			url := fmt.Sprintf("nats://ship:s3cret@%s", s.Addr().String())
			if tt.opts.Authorization != "" {
				url = fmt.Sprintf("nats://%s@%s", tt.opts.Authorization, s.Addr().String())
			}
			if !tt.works {
				testutil.CheckFor(t, 10*time.Second, 100*time.Millisecond, func() error {
					if !strings.Contains(strings.ToLower(p.stderr.String()), "authorization violation") {
						return fmt.Errorf("no authorization error logged yet")
					}
					return nil
				})
				if c := readStream(t, url); c.distinct() != 0 {
					t.Fatalf("%d records shipped with wrong credentials", c.distinct())
				}
				return
			}
			testutil.CheckFor(t, 20*time.Second, 100*time.Millisecond, func() error {
				if c := readStream(t, url); c.distinct() != 100 {
					return fmt.Errorf("%d records", c.distinct())
				}
				return nil
			})
		})
	}
}
