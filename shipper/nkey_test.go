package shipper_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/faultline/faultline/internal/testutil"
)

// newUserKey makes a user nkey and writes its seed to dir/name.nk.
func newUserKey(t *testing.T, dir, name string) (kp nkeys.KeyPair, pub, seedFile string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ = kp.PublicKey()
	seed, _ := kp.Seed()
	seedFile = filepath.Join(dir, name+".nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	return kp, pub, seedFile
}

// shipOrRefuse starts the shipper on a 100-line file with args and waits
// until every record is in the stream (refused == "") or until the shipper
// logged refused, then checks nothing was shipped.
func shipOrRefuse(t *testing.T, url string, args []string, refused string, read ...nats.Option) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "a.log")
	appendLines(t, log, "a", 0, 100)
	p := startShipper(t, append(shipperArgs(url, "spark-1", filepath.Join(dir, "state"), "--path", log), args...)...)
	if refused != "" {
		testutil.CheckFor(t, 5*time.Second, 50*time.Millisecond, func() error {
			if !strings.Contains(strings.ToLower(p.stderr.String()), refused) {
				return fmt.Errorf("no %q logged yet", refused)
			}
			return nil
		})
		if c := readStreamWith(t, url, read...); c.distinct() != 0 {
			t.Fatalf("%d records shipped although refused", c.distinct())
		}
		return
	}
	testutil.CheckFor(t, 5*time.Second, 50*time.Millisecond, func() error {
		if c := readStreamWith(t, url, read...); c.distinct() != 100 {
			return fmt.Errorf("%d records", c.distinct())
		}
		return nil
	})
}

// The shipper authenticates with an nkey seed file (--nkey); an nkey the
// server does not know is refused, and a file that is no seed is a
// configuration error naming the file.
func TestNATSNKey(t *testing.T) {
	dir := t.TempDir()
	_, pub, seed := newUserKey(t, dir, "shipper")
	_, _, unknown := newUserKey(t, dir, "stranger")
	reader, err := nats.NkeyOptionFromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		seed    string
		refused string
	}{
		{"known", seed, ""},
		{"unknown", unknown, "authorization violation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testutil.RunJetStreamServerWith(t, &server.Options{Port: -1, Nkeys: []*server.NkeyUser{{Nkey: pub}}})
			shipOrRefuse(t, s.ClientURL(), []string{"--nkey", tt.seed}, tt.refused, reader)
		})
	}
	t.Run("not-a-seed", func(t *testing.T) {
		bad := filepath.Join(dir, "bad.nk")
		os.WriteFile(bad, []byte("not a seed\n"), 0o600)
		configError(t, "nkey "+bad, "--nkey", bad)
	})
	t.Run("missing-file", func(t *testing.T) {
		missing := filepath.Join(dir, "missing.nk")
		configError(t, "nkey "+missing, "--nkey", missing)
	})
}

// operator is a NATS operator with a system account, for a server in
// operator mode (decentralized JWT auth) with a memory resolver.
type operator struct {
	kp       nkeys.KeyPair
	claims   *jwt.OperatorClaims
	sysPub   string
	resolver *server.MemAccResolver
}

func newOperator(t *testing.T) *operator {
	t.Helper()
	kp, _ := nkeys.CreateOperator()
	pub, _ := kp.PublicKey()
	oc := jwt.NewOperatorClaims(pub)
	oc.Name = "faultline-test"
	ojwt, err := oc.Encode(kp)
	if err != nil {
		t.Fatal(err)
	}
	claims, err := jwt.DecodeOperatorClaims(ojwt)
	if err != nil {
		t.Fatal(err)
	}
	op := &operator{kp: kp, claims: claims, resolver: &server.MemAccResolver{}}
	_, op.sysPub = op.account(t, "SYS", false)
	return op
}

// account creates an account signed by the operator, stores it in the
// resolver (unless the server must not know it) and returns its key.
func (op *operator) account(t *testing.T, name string, jetStream bool) (nkeys.KeyPair, string) {
	t.Helper()
	kp, _ := nkeys.CreateAccount()
	pub, _ := kp.PublicKey()
	ac := jwt.NewAccountClaims(pub)
	ac.Name = name
	if jetStream {
		ac.Limits.JetStreamLimits = jwt.JetStreamLimits{DiskStorage: jwt.NoLimit, MemoryStorage: jwt.NoLimit}
	}
	ajwt, err := ac.Encode(op.kp)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.resolver.Store(pub, ajwt); err != nil {
		t.Fatal(err)
	}
	return kp, pub
}

// creds writes a .creds file (user JWT and seed) of a new user of the
// account.
func creds(t *testing.T, dir, name string, account nkeys.KeyPair) string {
	t.Helper()
	ukp, _ := nkeys.CreateUser()
	upub, _ := ukp.PublicKey()
	useed, _ := ukp.Seed()
	uc := jwt.NewUserClaims(upub)
	uc.Name = name
	ujwt, err := uc.Encode(account)
	if err != nil {
		t.Fatal(err)
	}
	b, err := jwt.FormatUserConfig(ujwt, useed)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, name+".creds")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// In operator mode the shipper authenticates with a .creds file (--creds)
// of a user of a JetStream-enabled account and creates the stream there. A
// user of an account the operator did not sign is refused; a creds file that
// cannot be read is a configuration error naming the file.
func TestNATSCreds(t *testing.T) {
	dir := t.TempDir()
	op := newOperator(t)
	logs, _ := op.account(t, "LOGS", true)
	good := creds(t, dir, "shipper", logs)
	// An account of another operator: its users' JWTs do not chain to ours.
	stranger := newOperator(t)
	strangerAcc, _ := stranger.account(t, "ELSEWHERE", true)
	bad := creds(t, dir, "stranger", strangerAcc)

	tests := []struct {
		name    string
		creds   string
		refused string
	}{
		{"signed-account", good, ""},
		{"unknown-account", bad, "authorization violation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testutil.RunJetStreamServerWith(t, &server.Options{
				Port:             -1,
				TrustedOperators: []*jwt.OperatorClaims{op.claims},
				AccountResolver:  op.resolver,
				SystemAccount:    op.sysPub,
			})
			shipOrRefuse(t, s.ClientURL(), []string{"--creds", tt.creds}, tt.refused, nats.UserCredentials(good))
		})
	}
	// A creds file that cannot work is reported at once, not retried.
	for _, c := range []struct{ name, content string }{
		{"missing-file", ""},
		{"garbage", "not a creds file\n"},
		{"jwt-only", jwtOnly(t, good)},
		{"seed-only", seedOnly(t, good)},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(dir, c.name+".creds")
			if c.content != "" {
				os.WriteFile(file, []byte(c.content), 0o600)
			}
			configError(t, "creds "+file, "--creds", file)
		})
	}
}

// jwtOnly and seedOnly return the JWT part and the seed part of a .creds
// file.
func jwtOnly(t *testing.T, file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), "************************* IMPORTANT")
	if i < 0 {
		t.Fatalf("%s: no seed section:\n%s", file, b)
	}
	return string(b[:i])
}

func seedOnly(t *testing.T, file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b[len(jwtOnly(t, file)):])
}
