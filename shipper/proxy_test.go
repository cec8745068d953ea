package shipper_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/testutil"
)

// ackHolder is a TCP proxy in front of a NATS server that can hold what the
// server sends back (PubAcks among it) while the client's publishes still
// reach the server: batches stored by JetStream, never acknowledged to the
// shipper, as when a shipper dies between publish and ack.
type ackHolder struct {
	ln     net.Listener
	target string

	mu   sync.Mutex
	cond *sync.Cond
	held bool
}

func newAckHolder(t *testing.T, target string) *ackHolder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &ackHolder{ln: ln, target: strings.TrimPrefix(target, "nats://")}
	h.cond = sync.NewCond(&h.mu)
	t.Cleanup(func() { ln.Close(); h.hold(false) })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go h.serve(c)
		}
	}()
	return h
}

func (h *ackHolder) url() string { return "nats://" + h.ln.Addr().String() }

// hold starts (true) or stops holding the server's replies.
func (h *ackHolder) hold(on bool) {
	h.mu.Lock()
	h.held = on
	h.mu.Unlock()
	h.cond.Broadcast()
}

func (h *ackHolder) serve(c net.Conn) {
	s, err := net.Dial("tcp", h.target)
	if err != nil {
		c.Close()
		return
	}
	go func() { io.Copy(s, c); s.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := s.Read(buf)
		h.mu.Lock()
		for h.held {
			h.cond.Wait()
		}
		h.mu.Unlock()
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	c.Close()
	s.Close()
}

// metricsAddr is the address a shipper started with --metrics-addr
// 127.0.0.1:0 logged.
func metricsAddr(t *testing.T, p *proc) string {
	t.Helper()
	var addr string
	testutil.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		for _, l := range strings.Split(p.stderr.String(), "\n") {
			if i := strings.Index(l, "msg=metrics addr="); i >= 0 {
				addr = strings.TrimSpace(l[i+len("msg=metrics addr="):])
				return nil
			}
		}
		return fmt.Errorf("metrics address not logged")
	})
	return addr
}

// scrape returns the value of the metric series (name with its labels, as
// exposed) from a shipper's /metrics; 0 when absent.
func scrape(t *testing.T, addr, series string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("metric %s: %v", l, err)
			}
			return f
		}
	}
	return 0
}
