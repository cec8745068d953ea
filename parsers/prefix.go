package parsers

import (
	"regexp"
	"strconv"
	"strings"
)

// Prefix is one process prefix that Ray, vLLM or torch put before a line,
// e.g. "(RayWorkerWrapper pid=223, ip=192.168.141.7)", "(pid=12)",
// "(raylet, ip=10.0.0.2)", "(autoscaler +7s)", "(VllmWorker rank=1 pid=219)",
// "[rank0]:". Prefixes nest; SplitPrefixes returns them outermost first.
type Prefix struct {
	Raw     string // the prefix as written, without the trailing space
	Process string // RayWorkerWrapper, raylet, autoscaler, VllmWorker, ...
	PID     int
	IP      string
	Rank    int // -1 when absent
}

var (
	// (Name pid=N, ip=A) (pid=N) (Name pid=N) (raylet, ip=A) (VllmWorker rank=1 pid=219) (VllmWorker TP1 pid=5) (autoscaler +7s)
	reParenPrefix = regexp.MustCompile(`^\(([A-Za-z_][\w.:\-]*(?: (?:rank=\d+|TP\d+|DP\d+|PP\d+|[A-Z]{2}\d+))?)?(?:,? ?pid=(\d+))?(?:, ip=([0-9a-fA-F.:]+))?(?: \+(?:[\d.]+[smh])+)?\) `)
	reRankPrefix  = regexp.MustCompile(`^\[rank(\d+)\]: ?`)
	reRankInName  = regexp.MustCompile(`rank=(\d+)`)
)

// SplitPrefixes strips the process prefixes from the start of text and returns
// them (outermost first) together with the rest of the line. A parenthesised
// text that is not a recognisable prefix (no pid=, ip= or known component) is
// left in place.
func SplitPrefixes(text string) ([]Prefix, string) {
	var out []Prefix
	for len(text) > 0 {
		if text[0] == '(' {
			m := reParenPrefix.FindStringSubmatchIndex(text)
			if m == nil {
				break
			}
			raw := text[:m[1]-1]
			name := ""
			if m[2] >= 0 {
				name = text[m[2]:m[3]]
			}
			p := Prefix{Raw: raw, Process: name, Rank: -1}
			if m[4] >= 0 {
				p.PID, _ = strconv.Atoi(text[m[4]:m[5]])
			}
			if m[6] >= 0 {
				p.IP = text[m[6]:m[7]]
			}
			if rm := reRankInName.FindStringSubmatch(name); rm != nil {
				p.Rank, _ = strconv.Atoi(rm[1])
			}
			if i := strings.IndexByte(name, ' '); i > 0 {
				p.Process = name[:i]
			}
			// Only accept what is surely a prefix: a pid, an ip, or a known
			// prefix-only component. "(base) root@host" or "(most recent call
			// last)" must stay text.
			if m[4] < 0 && m[6] < 0 && !knownPrefixComponent(p.Process, raw) {
				break
			}
			out = append(out, p)
			text = text[m[1]:]
			continue
		}
		if strings.HasPrefix(text, "[rank") {
			m := reRankPrefix.FindStringSubmatch(text)
			if m == nil {
				break
			}
			r, _ := strconv.Atoi(m[1])
			out = append(out, Prefix{Raw: strings.TrimRight(m[0], " "), Process: "rank" + m[1], Rank: r})
			text = text[len(m[0]):]
			continue
		}
		break
	}
	return out, text
}

func knownPrefixComponent(name, raw string) bool {
	switch name {
	case "raylet", "gcs_server", "autoscaler", "monitor", "dashboard", "log_monitor":
		return true
	}
	return strings.Contains(raw, " +") && name == "autoscaler"
}
