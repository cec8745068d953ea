package rule

import (
	"net/netip"
	"strings"

	"github.com/expr-lang/expr"
)

// Expression helpers over structured values, so that rules compare things
// (addresses, subnets, interfaces) instead of strings. They are pure
// functions of their arguments; a value that does not parse is simply not
// what was asked ("<IP>" is neither loopback nor in a subnet).
var exprFuncs = []expr.Option{
	expr.Function("ip_loopback", func(p ...any) (any, error) { return ipTest(p[0], netip.Addr.IsLoopback), nil },
		new(func(string) bool)),
	expr.Function("ip_link_local", func(p ...any) (any, error) { return ipTest(p[0], netip.Addr.IsLinkLocalUnicast), nil },
		new(func(string) bool)),
	expr.Function("ip_private", func(p ...any) (any, error) { return ipTest(p[0], netip.Addr.IsPrivate), nil },
		new(func(string) bool)),
	expr.Function("ip_in", func(p ...any) (any, error) { return ipIn(p[0].(string), p[1].(string)), nil },
		new(func(string, string) bool)),
	expr.Function("same_subnet", func(p ...any) (any, error) {
		return sameSubnet(p[0].(string), p[1].(string), toInt(p[2])), nil
	}, new(func(string, string, int) bool)),
	expr.Function("ip_redacted", func(p ...any) (any, error) { return redacted(p[0].(string)), nil },
		new(func(string) bool)),
	expr.Function("iface_unroutable", func(p ...any) (any, error) {
		return ifaceUnroutable(p[0].(string), p[1].(string)), nil
	}, new(func(string, string) bool)),
}

// parseIP reads an address as logs print it: "10.0.0.5", "[::1]", "10.0.0.5:6379",
// "10.0.0.5<0>" (NCCL).
func parseIP(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '<'); i > 0 {
		s = s[:i]
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr(), true
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	a, err := netip.ParseAddr(s)
	return a, err == nil
}

func ipTest(v any, f func(netip.Addr) bool) bool {
	s, _ := v.(string)
	a, ok := parseIP(s)
	return ok && f(a.Unmap())
}

func ipIn(s, cidr string) bool {
	a, ok := parseIP(s)
	p, err := netip.ParsePrefix(cidr)
	return ok && err == nil && p.Contains(a.Unmap())
}

func sameSubnet(a, b string, bits int) bool {
	x, ok1 := parseIP(a)
	y, ok2 := parseIP(b)
	if !ok1 || !ok2 || x.Unmap().Is4() != y.Unmap().Is4() {
		return false
	}
	px, err1 := x.Unmap().Prefix(bits)
	py, err2 := y.Unmap().Prefix(bits)
	return err1 == nil && err2 == nil && px == py
}

// redacted reports whether a value is a user's redaction of an address
// ("<IP>", "10.0.***", "x.x.x.x", "REDACTED"): it names no address, so it
// proves neither a match nor a mismatch.
func redacted(s string) bool {
	if _, ok := parseIP(s); ok {
		return false
	}
	l := strings.ToLower(s)
	return strings.ContainsAny(s, "<>*") || strings.Contains(l, "redacted") || strings.Contains(l, "x.x") ||
		strings.Contains(l, "xxx") || strings.Contains(l, "ip_address") || strings.Contains(l, "...")
}

// ifaceUnroutable reports whether an interface that NCCL or Gloo picked can
// only be reached from its own host: loopback, link-local, Docker's default
// bridge (docker0, 172.17.0.0/16) or another virtual bridge. The gateway
// address of a user-defined Docker network is one too: dockerd's default
// address pools are 172.17.0.0/16 to 172.31.0.0/16 (moby
// libnetwork/ipamutils, then 192.168.0.0/16 in /20s, left out: home LANs use
// those), and the host side of the bridge br-<id> holds the first address,
// 172.N.0.1 (gpustack/gpustack#2275: a peer that advertised 172.21.0.1).
func ifaceUnroutable(name, addr string) bool {
	for _, p := range []string{"lo", "docker", "virbr", "br-", "veth", "cni", "flannel.1"} {
		if name == "lo" || (p != "lo" && strings.HasPrefix(name, p)) {
			return true
		}
	}
	a, ok := parseIP(addr)
	if !ok {
		return false
	}
	a = a.Unmap()
	if a.Is4() {
		if b := a.As4(); b[0] == 172 && b[1] >= 18 && b[1] <= 31 && b[2] == 0 && b[3] == 1 {
			return true
		}
	}
	return a.IsLoopback() || a.IsLinkLocalUnicast() || ipIn(addr, "172.17.0.0/16")
}

func toInt(v any) int {
	switch x := v.(type) {
	case int:
		return x
	case float64:
		return int(x)
	}
	return 0
}
