package natstest

import (
	"net"
	"sync"
	"testing"
)

// Proxy forwards TCP connections to a server, and can freeze them (bytes
// held both ways, the connections left open: what a client sees of a
// SIGSTOPped server or a network that drops everything) or cut them.
type Proxy struct {
	ln     net.Listener
	target string

	mu       sync.Mutex
	frozen   bool
	thaw     *sync.Cond
	conns    []net.Conn
	stranded map[net.Conn]bool
}

// StartProxy listens on a random port of 127.0.0.1 and forwards to target
// (host:port) until the test ends.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("natstest: proxy: %v", err)
	}
	p := &Proxy{ln: ln, target: target}
	p.thaw = sync.NewCond(&p.mu)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		p.stranded = nil
		p.mu.Unlock()
		p.Thaw()
		p.Cut()
	})
	return p
}

// Addr is where the proxy listens.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL is the proxy as a NATS URL.
func (p *Proxy) URL() string { return "nats://" + p.Addr() }

// Freeze holds every byte in both directions until Thaw.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	p.frozen = true
	p.mu.Unlock()
}

// Thaw lets the bytes held go on.
func (p *Proxy) Thaw() {
	p.mu.Lock()
	p.frozen = false
	p.thaw.Broadcast()
	p.mu.Unlock()
}

// Strand freezes the connections open now for good and thaws the proxy
// for new ones: what a client sees when its address changes under it (its
// old connection silent, never closed; a new one works).
func (p *Proxy) Strand() {
	p.mu.Lock()
	if p.stranded == nil {
		p.stranded = map[net.Conn]bool{}
	}
	for _, c := range p.conns {
		p.stranded[c] = true
	}
	p.frozen = false
	p.thaw.Broadcast()
	p.mu.Unlock()
}

// Cut closes every connection through the proxy (new ones are taken).
func (p *Proxy) Cut() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go p.pipe(c, s)
		go p.pipe(s, c)
	}
}

func (p *Proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.frozen || p.stranded[src] || p.stranded[dst] {
				p.thaw.Wait()
			}
			p.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
