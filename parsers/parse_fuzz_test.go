package parsers

import (
	"testing"
	"time"
)

// FuzzParse checks that Parse never panics, always names one of the six
// sources and a known level, and never returns a message longer than the text.
func FuzzParse(f *testing.F) {
	for _, s := range benchLines {
		f.Add(s)
	}
	for _, s := range []string{
		"", "\n", "(", "[", "[rank", "[rank0]:", "(pid=1) ", "[2025-07-23 10:05:49,679 W 1 1]",
		"[W1129 20:00:53.1 a.cc:1]", "[E a.cc:1]", "INFO 08-23 10:16:22 [", "NCCL INFO", "NCCL version ",
		"h:1:2 [0] x.cc:1 (f NCCL WARN", "Traceback (most recent call last):\n  File \"x\"\nE",
		"[2026-11-29 20:00:53] NCCL WARN", "======== Autoscaler status: 2025", "a.py:1: UserWarning",
		"(VllmWorker rank=0 pid=1) ERROR 05-17 01:58:02 [a.py:1] x\n(VllmWorker rank=0 pid=1) ERROR 05-17 01:58:02 [a.py:1] y",
		"2024-05-02T10:11:05.922016Z  INFO shard-manager: text_generation_launcher: Starting shard rank=0",
		"2025-05-27T10:39:56.402+02:00  WARN a{b=c}:d: e::f: x.rs:1: m", "ERROR a::b: ", "TRACE x_y: {", "2024-05-02T10:11:05Z",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		ev := Parse(Record{Text: text, Time: time.Time{}})
		switch ev.Source {
		case SourceRay, SourceVLLM, SourceNCCL, SourceTorch, SourcePython, SourceOther:
		default:
			t.Fatalf("source %q", ev.Source)
		}
		switch ev.Level {
		case "", LevelDebug, LevelInfo, LevelWarning, LevelError, LevelCritical:
		default:
			t.Fatalf("level %q", ev.Level)
		}
		if len(ev.Message) > len(text) {
			t.Fatalf("message %d bytes > text %d bytes", len(ev.Message), len(text))
		}
		if ev.Text != text {
			t.Fatal("record text changed")
		}
		if ev.Fields != nil && len(ev.Fields) == 0 {
			t.Fatal("empty fields map allocated")
		}
	})
}

// FuzzSplitPrefixesFast checks that the hand-written prefix parser agrees
// with SplitPrefixes.
func FuzzSplitPrefixesFast(f *testing.F) {
	for _, s := range []string{
		"(RayWorkerWrapper pid=223, ip=192.168.141.7) INFO x", "(EngineCore_DP0 pid=479) (RayWorkerWrapper pid=223, ip=192.168.141.7) x",
		"(pid=12) hello", "(raylet, ip=10.1.230.181) msg", "(raylet) x", "(autoscaler +7s) Error", "(VllmWorker rank=1 pid=219) INFO y",
		"[rank0]:   File", "[rank1]:[W623 x", "(base) root@ubuntu22:~#", "(most recent call last):", "() x", "(pid=0) x",
		"(a:b pid=1) x", "(x pid=1,ip=1) y", "(x, pid=1) y", "[rank12]x", "(gcs_server) (pid=3) x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var buf [4]Prefix
		got, gotRest := splitPrefixesFast(buf[:0], text)
		want, wantRest := SplitPrefixes(text)
		if gotRest != wantRest || len(got) != len(want) {
			t.Fatalf("%q: fast %d prefixes, rest %q; SplitPrefixes %d, rest %q", text, len(got), gotRest, len(want), wantRest)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%q: prefix %d: fast %+v, SplitPrefixes %+v", text, i, got[i], want[i])
			}
		}
	})
}
