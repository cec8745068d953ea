package rule

import (
	"net/netip"
	"testing"
)

func TestExprFuncs(t *testing.T) {
	tests := []struct {
		name string
		got  bool
		want bool
	}{
		{"loopback", ipTest("127.0.1.1", netip.Addr.IsLoopback), true},
		{"loopback v6 in brackets", ipTest("[::1]", netip.Addr.IsLoopback), true},
		{"not loopback", ipTest("10.0.0.1", netip.Addr.IsLoopback), false},
		{"redacted is nothing", ipTest("<IP>", netip.Addr.IsLoopback), false},
		{"in cidr with port", ipIn("172.17.0.2:43311", "172.17.0.0/16"), true},
		{"nccl address form", ipIn("172.17.0.2<0>", "172.17.0.0/16"), true},
		{"AWS VPC is not the docker bridge", ipIn("172.31.5.9", "172.17.0.0/16"), false},
		{"same /24", sameSubnet("192.168.200.12", "192.168.200.13", 24), true},
		{"other /24", sameSubnet("10.1.230.180", "192.168.200.12", 24), false},
		{"v4 vs v6", sameSubnet("10.0.0.1", "::1", 8), false},
		{"redacted <IP>", redacted("<IP>"), true},
		{"redacted stars", redacted("10.0.***"), true},
		{"redacted word", redacted("REDACTED"), true},
		{"an address is not redacted", redacted("10.0.0.1"), false},
		{"docker0", ifaceUnroutable("docker0", "172.17.0.1"), true},
		{"lo", ifaceUnroutable("lo", "127.0.0.1"), true},
		{"link-local", ifaceUnroutable("eth1", "169.254.3.1"), true},
		{"bridge address on eth0 (container without host network)", ifaceUnroutable("eth0", "172.17.0.3"), true},
		{"a cluster NIC", ifaceUnroutable("enp1s0f1np1", "192.168.200.12"), false},
		{"a user-defined Docker bridge's gateway", ifaceUnroutable("", "172.21.0.1"), true},
		{"a host of a 172.21.0.0/16 cluster network", ifaceUnroutable("", "172.21.0.7"), false},
		{"a 172.16.0.0/12 address outside Docker's pools", ifaceUnroutable("", "172.16.0.1"), false},
		{"a name starting with lo is not lo", ifaceUnroutable("lowpan0", "10.0.0.1"), false},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

// The helpers are callable from conditions (and fail lint when misused).
func TestExprFuncsInConditions(t *testing.T) {
	e := NewEngine(mustParse(t, `
id: bridge
cause: nccl-socket-interface
title: t
summary: s
remediation: r
cases:
  - when: 'any(addr, iface_unroutable("", #)) && !any(addr, ip_redacted(#))'
    severity: critical
    confidence: high
`))
	if got := e.Observe(ev("a", 1, "Connect to 10.0.0.2<4444> failed")); len(got) != 0 {
		t.Fatalf("routable address fired: %v", got)
	}
	if got := e.Observe(ev("a", 2, "Connect to 172.17.0.2<4444> failed")); len(got) != 1 {
		t.Fatalf("docker bridge address did not fire")
	}
	if _, ps := Parse("x.yaml", []byte(`
id: bad
cause: cuda-oom
title: t
summary: s
remediation: r
cases:
  - when: same_subnet(oom, "10.0.0.1")
    severity: critical
    confidence: high
`)); len(ps) == 0 {
		t.Fatal("a helper called with the wrong arguments passed lint")
	}
}
