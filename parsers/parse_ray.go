package parsers

import (
	"regexp"
	"strings"
)

// parseRayPython parses Ray's Python logger format (docs/log-formats.md §3.1):
//
//	2026-04-08 23:35:09,880\tINFO worker.py:2007 -- msg
//	2024-04-02 01:39:28,327\tSUCC scripts.py:781 -- Ray runtime started.
//	2024-04-01 10:00:00,000\tINFO (dashboard) head.py:123 -- msg
//
// Some copies show a space instead of the tab; both are accepted.
func parseRayPython(p *lineParse, s string) bool {
	t, n, ok := parseDateTimeFrac(s)
	if !ok || n >= len(s) || (s[n] != '\t' && s[n] != ' ') {
		return false
	}
	rest := s[n+1:]
	lvl, ln := levelWord(rest, ' ')
	if lvl == "" {
		return false
	}
	rest = rest[ln+1:]
	comp := ""
	if len(rest) > 0 && rest[0] == '(' {
		j := strings.IndexByte(rest, ')')
		if j < 0 || j+1 >= len(rest) || rest[j+1] != ' ' {
			return false
		}
		comp, rest = rest[1:j], rest[j+2:]
	}
	j := strings.Index(rest, " -- ")
	msg := ""
	if j < 0 {
		// A message that ends with " --" has lost its trailing blank.
		if !strings.HasSuffix(rest, " --") {
			return false
		}
		j = len(rest) - 3
	} else {
		msg = rest[j+4:]
	}
	loc := rest[:j]
	if _, _, ok := fileLine(loc); !ok {
		return false
	}
	ev := &p.ev
	ev.Source = SourceRay
	ev.Level = normLevel(lvl)
	ev.Component = loc
	p.fullTime = t
	p.msg = msg
	if comp != "" {
		p.set("ray_component", comp)
	}
	rayMessageFields(p, msg)
	return true
}

// parseRayCpp parses Ray's C++ (spdlog) format (docs/log-formats.md §3.2):
//
//	[2025-07-23 10:05:49,679 W 51000 51000] gcs_rpc_client.h:151: msg
//	[2023-06-01 08:47:47,457 I 31009 225171] (gcs_server) gcs_node_manager.cc:42: msg
func parseRayCpp(p *lineParse, s string) bool {
	if len(s) < 30 || s[0] != '[' {
		return false
	}
	t, n, ok := parseDateTimeFrac(s[1:])
	if !ok || n != 23 {
		return false
	}
	rest := s[1+n:]
	// " L pid tid] "
	if len(rest) < 4 || rest[0] != ' ' || rest[2] != ' ' {
		return false
	}
	letter := rest[1:2]
	lvl := normLevel(letter)
	if lvl == "" {
		return false
	}
	rest = rest[3:]
	pid := leadingDigits(rest)
	if pid == "" || len(rest) <= len(pid) || rest[len(pid)] != ' ' {
		return false
	}
	rest = rest[len(pid)+1:]
	tid := leadingDigits(rest)
	if tid == "" || len(rest) <= len(tid) || rest[len(tid)] != ']' {
		return false
	}
	rest = rest[len(tid)+1:]
	if len(rest) > 0 && rest[0] == ' ' {
		rest = rest[1:]
	}
	ev := &p.ev
	ev.Source = SourceRay
	ev.Level = lvl
	ev.PID = atoi(pid)
	p.fullTime = t
	p.set("tid", tid)
	if len(rest) > 0 && rest[0] == '(' {
		if j := strings.IndexByte(rest, ')'); j > 0 && j+1 < len(rest) && rest[j+1] == ' ' {
			p.set("ray_component", rest[1:j])
			rest = rest[j+2:]
		}
	}
	if j := strings.Index(rest, ": "); j > 0 {
		if _, _, ok := fileLine(rest[:j]); ok {
			ev.Component = rest[:j]
			rest = rest[j+2:]
		}
	} else if strings.HasSuffix(rest, ":") {
		if _, _, ok := fileLine(rest[:len(rest)-1]); ok {
			ev.Component = rest[:len(rest)-1]
			rest = ""
		}
	}
	p.msg = rest
	return true
}

// parseBracketRay recognises "[autoscaler] ..." lines.
func parseBracketRay(p *lineParse, s string) bool {
	if !strings.HasPrefix(s, "[autoscaler]") {
		return false
	}
	p.ev.Source = SourceRay
	p.ev.Component = "autoscaler"
	p.msg = strings.TrimLeft(s[len("[autoscaler]"):], " ")
	p.ev.Level = autoscalerLevel(p.msg)
	return true
}

// autoscalerLevel derives a level from autoscaler event text, which Ray
// itself colours by "Error:" / "Warning:".
func autoscalerLevel(s string) string {
	switch {
	case strings.HasPrefix(s, "Error:"):
		return LevelError
	case strings.HasPrefix(s, "Warning:"):
		return LevelWarning
	}
	return ""
}

// rayMessageFields extracts fields from Ray messages that rules need.
func rayMessageFields(p *lineParse, msg string) {
	if strings.HasPrefix(msg, "Local node IP: ") {
		p.set("node_ip", strings.TrimSpace(msg[len("Local node IP: "):]))
	}
}

// rayStartLines are the beginnings of the lines that "ray start" (pretty
// output), "ray status" and Ray's bookkeeping write without any header.
var rayStartLines = [...]string{
	"Local node IP:",
	"Ray runtime started.",
	"Next steps",
	"To add another node to this Ray cluster",
	"ray start --address=",
	"To connect to this Ray cluster",
	"To submit a Ray job",
	"RAY_API_SERVER_ADDRESS=",
	"To terminate the Ray runtime",
	"To view the status of the cluster",
	"To monitor and debug Ray",
	"If connection to the dashboard fails",
	"Usage stats collection",
	"Enable usage stats collection?",
	"This command will now block forever",
	"Running subprocesses are monitored",
	"Some Ray subprocesses exited unexpectedly",
	"Remaining processes will be killed",
	"Ray is trying to start at",
	"`--address` is a required flag",
	"*** StackTrace Information ***",
	"*** SIGTERM received",
	"*** SIGSEGV received",
	"*** SIGABRT received",
}

// rayStatusLines are the headings of "ray status" output.
var rayStatusLines = [...]string{
	"Node status", "Resources", "Active:", "Pending:", "Idle:", "Recent failures:", "Usage:",
	"Demands:", "Constraints:", "Total Usage:", "Total Demands:", "Total Constraints:",
	"(no pending nodes)", "(no failures)", "(no resource demands)", "(no requests)",
}

var (
	// " 0.0/112.0 CPU", " 0B/337.53GiB memory", " 1 node_9ce4...", " {'GPU': 1.0} * 8 (STRICT_PACK): 1+ pending placement groups"
	reRayStatusLine = regexp.MustCompile(`^ (?:[\d.]+[KMGTP]?i?B?/[\d.]+[KMGTP]?i?B? \S|\d+ node_[0-9a-f]+|\{.*\}(?: \* \d+)?(?: \([A-Z_]+\))?: \d+\+ )`)
)

// parseRayText recognises Ray output that has no log header: "ray start"
// pretty output, "ray status", the autoscaler status banner, and the raw
// worker-file bookkeeping lines (":actor_name:...").
func parseRayText(p *lineParse, s string) bool {
	ev := &p.ev
	if strings.HasPrefix(s, "======== Autoscaler status: ") {
		ev.Source = SourceRay
		ev.Component = "autoscaler"
		if t, _, ok := parseDateTimeFrac(s[len("======== Autoscaler status: "):]); ok {
			p.fullTime = t
		}
		return true
	}
	if len(s) > 1 && s[0] == ':' && (strings.HasPrefix(s, ":actor_name:") || strings.HasPrefix(s, ":task_name:") ||
		strings.HasPrefix(s, ":job_id:") || strings.HasPrefix(s, ":task_attempt_")) {
		ev.Source = SourceRay
		ev.Level = LevelDebug
		return true
	}
	t := strings.TrimLeft(s, " ")
	if len(t) == 0 {
		return false
	}
	switch t[0] {
	case 'L', 'R', 'N', 'T', 'r', 'U', 'E', 'S', '`', '*', 'I':
		for _, pre := range rayStartLines {
			if strings.HasPrefix(t, pre) {
				ev.Source = SourceRay
				if pre == "Some Ray subprocesses exited unexpectedly" || pre == "Remaining processes will be killed" {
					ev.Level = LevelError
				}
				rayMessageFields(p, t)
				return true
			}
		}
	}
	if len(t) == len(s) || len(s)-len(t) == 1 {
		for _, h := range rayStatusLines {
			if t == h {
				ev.Source = SourceRay
				ev.Component = "autoscaler"
				return true
			}
		}
	}
	if len(s) > 2 && s[0] == ' ' && s[1] != ' ' && reRayStatusLine.MatchString(s) {
		ev.Source = SourceRay
		ev.Component = "autoscaler"
		return true
	}
	return false
}

// rayTextAnchors are Ray messages that reach logs without a header (pasted,
// or printed by the driver); they are Ray's even when nothing else says so.
var rayTextAnchors = [...]string{
	"Ray killed this worker",
	"ray-oom-prevention",
	"killed due to memory pressure (OOM)",
	"Task was killed due to the node running low on memory",
	"The actor is dead because its worker process has died",
	"The actor died unexpectedly before finishing this task",
}

// rayTextHint attributes an otherwise unrecognised record to Ray when it
// contains one of Ray's own distinctive messages.
func rayTextHint(p *lineParse) {
	msg := p.ev.Message
	if !strings.Contains(msg, "emory") && !strings.Contains(msg, "actor") {
		return
	}
	for _, a := range rayTextAnchors {
		if strings.Contains(msg, a) {
			p.ev.Source = SourceRay
			return
		}
	}
}
