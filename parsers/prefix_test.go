package parsers

import "testing"

func TestSplitPrefixes(t *testing.T) {
	tests := []struct {
		in      string
		n       int
		process string
		pid     int
		ip      string
		rest    string
	}{
		{"(RayWorkerWrapper pid=223, ip=192.168.141.7) INFO x", 1, "RayWorkerWrapper", 223, "192.168.141.7", "INFO x"},
		{"(EngineCore_DP0 pid=479) (RayWorkerWrapper pid=223, ip=192.168.141.7) INFO x", 2, "EngineCore_DP0", 479, "", "INFO x"},
		{"(pid=12) hello", 1, "", 12, "", "hello"},
		{"(raylet, ip=10.1.230.181) msg", 1, "raylet", 0, "10.1.230.181", "msg"},
		{"(autoscaler +7s) Error: No available", 1, "autoscaler", 0, "", "Error: No available"},
		{"(VllmWorker rank=1 pid=219) INFO y", 1, "VllmWorker", 219, "", "INFO y"},
		{"[rank0]:   File \"x\"", 1, "rank0", 0, "", "  File \"x\""},
		{"(base) root@ubuntu22:~# docker images", 0, "", 0, "", "(base) root@ubuntu22:~# docker images"},
		{"(most recent call last):", 0, "", 0, "", "(most recent call last):"},
	}
	for _, tt := range tests {
		ps, rest := SplitPrefixes(tt.in)
		if len(ps) != tt.n || rest != tt.rest {
			t.Errorf("SplitPrefixes(%q) = %d prefixes, rest %q; want %d, %q", tt.in, len(ps), rest, tt.n, tt.rest)
			continue
		}
		if tt.n > 0 && (ps[0].Process != tt.process || ps[0].PID != tt.pid || ps[0].IP != tt.ip) {
			t.Errorf("SplitPrefixes(%q)[0] = %+v", tt.in, ps[0])
		}
	}
}
