package shipper_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/faultline/faultline/internal/testutil"
)

// testCA is a certificate authority made at test time, whose certificate is
// written to file.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string
	dir  string
}

func newTestCA(t *testing.T, dir, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &testCA{cert: cert, key: key, file: filepath.Join(dir, name+".pem"), dir: dir}
	writePEM(t, ca.file, "CERTIFICATE", der)
	return ca
}

// issue signs a server (127.0.0.1, localhost) or client certificate and
// returns the files of the certificate and its key.
func (ca *testCA) issue(t *testing.T, name string, server bool) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.DNSNames = []string{"localhost"}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile = filepath.Join(ca.dir, name+".pem")
	keyFile = filepath.Join(ca.dir, name+"-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", keyDER)
	return certFile, keyFile
}

func writePEM(t *testing.T, file, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// The shipper verifies the server with --tls-ca and presents its client
// certificate (--tls-cert, --tls-key) to a server that requires and verifies
// one. Without the certificate, with a certificate of another CA, or
// trusting the wrong CA, it ships nothing and says why.
func TestNATSTLS(t *testing.T) {
	pki := t.TempDir()
	ca := newTestCA(t, pki, "ca")
	srvCert, srvKey := ca.issue(t, "server", true)
	cliCert, cliKey := ca.issue(t, "client", false)
	other := newTestCA(t, pki, "other-ca")
	otherCert, otherKey := other.issue(t, "other-client", false)

	tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: srvCert, KeyFile: srvKey, CaFile: ca.file, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	const refused = `not connected: (remote error: tls: certificate required|nats: tls error: connection closed by remote after TLS handshake)`
	tests := []struct {
		name string
		args []string
		err  string // regexp of the error logged when the shipper cannot connect; "" when it ships
	}{
		{"ca-and-client-cert", []string{"--tls-ca", ca.file, "--tls-cert", cliCert, "--tls-key", cliKey}, ""},
		// The server's alert may arrive before or after the client's first
		// write fails.
		{"no-client-cert", []string{"--tls-ca", ca.file}, refused},
		// Go's client sends no certificate the server's CAs did not sign.
		{"client-cert-of-other-ca", []string{"--tls-ca", ca.file, "--tls-cert", otherCert, "--tls-key", otherKey}, refused},
		{"wrong-ca", []string{"--tls-ca", other.file, "--tls-cert", cliCert, "--tls-key", cliKey}, `not connected: .*tls: .*x509: certificate signed by unknown authority`},
		// tls:// without --tls-ca verifies against the system roots.
		{"no-tls-options", nil, `not connected: .*x509: certificate signed by unknown authority`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testutil.RunJetStreamServerWith(t, &server.Options{Port: -1, TLS: true, TLSVerify: true, TLSConfig: tc, TLSTimeout: 2})
			dir := t.TempDir()
			log := filepath.Join(dir, "a.log")
			appendLines(t, log, "a", 0, 100)
			p := startShipper(t, append(shipperArgs(s.ClientURL(), "spark-1", filepath.Join(dir, "state"), "--path", log), tt.args...)...)
			read := func() *contents {
				return readStreamWith(t, s.ClientURL(), nats.RootCAs(ca.file), nats.ClientCert(cliCert, cliKey))
			}
			if tt.err != "" {
				re := regexp.MustCompile(`level=WARN msg="stream not ready, retrying" .*err="` + tt.err)
				testutil.CheckFor(t, 5*time.Second, 50*time.Millisecond, func() error {
					if !re.MatchString(p.stderr.String()) {
						return fmt.Errorf("no %q error logged yet", tt.err)
					}
					return nil
				})
				if c := read(); c.distinct() != 0 {
					t.Fatalf("%d records shipped over a rejected TLS connection", c.distinct())
				}
				return
			}
			testutil.CheckFor(t, 5*time.Second, 50*time.Millisecond, func() error {
				if c := read(); c.distinct() != 100 {
					return fmt.Errorf("%d records", c.distinct())
				}
				return nil
			})
		})
	}
}

// TLS files that cannot work are configuration errors, reported at once
// and naming the file, not retried.
func TestTLSConfigErrors(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, dir, "ca")
	cert, key := ca.issue(t, "client", false)
	garbage := filepath.Join(dir, "garbage.pem")
	os.WriteFile(garbage, []byte("not PEM\n"), 0o600)
	missing := filepath.Join(dir, "missing.pem")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"cert-without-key", []string{"--tls-cert", cert}, "--tls-cert and --tls-key go together"},
		{"key-without-cert", []string{"--tls-key", key}, "--tls-cert and --tls-key go together"},
		{"missing-ca", []string{"--tls-ca", missing}, missing},
		{"garbage-ca", []string{"--tls-ca", garbage}, garbage},
		{"missing-cert", []string{"--tls-cert", missing, "--tls-key", key}, missing},
		{"garbage-key", []string{"--tls-cert", cert, "--tls-key", garbage}, "client certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			configError(t, tt.want, tt.args...)
		})
	}
}
