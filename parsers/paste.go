package parsers

import (
	"strings"
	"time"
)

// Pastes. A log pasted into a bug report or a chat is the text a container
// tool printed, not the file its writer wrote: each line may start with the
// tool's own prefix, and the prefixes of one paste may differ from line to
// line (two commands' output pasted together). The tools' prefixes are part
// of the framing, like a json-file record's braces: the Decoder removes them
// from every plain line that starts with one, and a tool's timestamp becomes
// the line's container time.
//
//   - `docker compose logs`: "NAME  | " (the container name, padded to the
//     longest one plus a blank; docker/compose cmd/formatter/logs.go), and
//     with -t a timestamp after it;
//   - `kubectl logs --prefix`: "[pod/NAME/CONTAINER] " (kubectl
//     pkg/cmd/logs/logs.go addPrefixIfNeeded), before --timestamps' stamp;
//   - `docker logs -t`, `docker compose logs -t`, `kubectl logs
//     --timestamps`: RFC 3339 with a fixed nine-digit fraction
//     ("2006-01-02T15:04:05.000000000Z07:00", moby's RFC3339NanoFixed and
//     the kubelet's output format), then a blank. A writer's own times are
//     never written with exactly nine fraction digits by the programs we
//     read, so a line of theirs keeps its time in its text;
//   - Open MPI's `mpirun --tag-output` (and --output tag): "[1,0]<stdout>:"
//     ("[jobid,rank]<stream>:" with no blank after it; Open MPI's
//     orte_iof_base_write_output in orte/mca/iof/base/iof_base_output.c,
//     PRRTE's prte_iof_base_write_output in Open MPI 5), see mpirunTagLen;
//   - a Markdown quote ("> ", see quotePrefixLen), outside any other;
//   - a logger that re-logs a process's own stdout/stderr line by line
//     ("2024-09-26 06:12:44 | ERROR | stderr | ", FastChat's and its forks'
//     StreamToLogger): see streamLoggerPrefixLen.

// maxPastePrefixes bounds the prefixes taken from one line (a name, then a
// timestamp, then a stream logger's: three in practice).
const maxPastePrefixes = 4

// splitPastePrefixes removes the container tools' prefixes from the start of
// s. It returns the rest, the tool's timestamp (zero if none) and the bytes
// removed.
func splitPastePrefixes(s string) (string, time.Time, int) {
	var t time.Time
	n := 0
	for range maxPastePrefixes {
		var k int
		if s != "" && s[0] == '>' {
			if k = quotePrefixLen(s); k == 0 {
				break
			}
			s, n = s[k:], n+k
			continue
		}
		if len(s) < 4 {
			break
		}
		switch c := s[0]; {
		case c >= '0' && c <= '9':
			var ts time.Time
			if ts, k = toolTime(s); k > 0 {
				t = ts
			} else if ts, k = streamLoggerPrefixLen(s); k > 0 {
				t = ts
			} else {
				k = composePrefixLen(s)
			}
		case c == '[':
			if k = kubectlPrefixLen(s); k == 0 {
				k = mpirunTagLen(s)
			}
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			k = composePrefixLen(s)
		}
		if k == 0 {
			break
		}
		s, n = s[k:], n+k
	}
	return s, t, n
}

// quotePrefixLen is the length of a Markdown quote's "> " at the start of s
// (a log quoted in a GitHub issue or a chat: every line of it, and ">"
// alone for an empty one), or 0. ">>> " (a Python prompt) and ">foo" are
// text.
func quotePrefixLen(s string) int {
	switch {
	case s == ">":
		return 1
	case len(s) > 1 && s[1] == ' ':
		return 2 // (a quote in a quote is two)
	}
	return 0
}

// toolTime parses a container tool's timestamp and its blank at the start
// of s: "2006-01-02T15:04:05.000000000Z " or with a "+07:00" offset.
func toolTime(s string) (time.Time, int) {
	const stamp = len("2006-01-02T15:04:05.000000000")
	if len(s) < stamp+2 || s[10] != 'T' || s[19] != '.' || !digitsAt(s, 20, 21, 22, 23, 24, 25, 26, 27, 28) {
		return time.Time{}, 0
	}
	end := stamp + 1 // "Z"
	if s[stamp] != 'Z' {
		if len(s) < stamp+7 || (s[stamp] != '+' && s[stamp] != '-') || s[stamp+3] != ':' {
			return time.Time{}, 0
		}
		end = stamp + 6
	}
	if end >= len(s) || s[end] != ' ' {
		return time.Time{}, 0
	}
	var t time.Time
	var ok bool
	if s[stamp] == 'Z' {
		t, ok = parseUTCFast(s[:end])
	} else if pt, err := time.Parse(time.RFC3339Nano, s[:end]); err == nil {
		t, ok = pt.UTC(), true
	}
	if !ok {
		return time.Time{}, 0
	}
	return t, end + 1
}

// maxToolName bounds a compose container name or a pod/container path.
const maxToolName = 128

// composePrefixLen is the length of a `docker compose logs` prefix at the
// start of s ("worker-1  | ", "proj_worker_1 | "), or 0.
func composePrefixLen(s string) int {
	i, lower := 0, false
	for i < len(s) && i <= maxToolName && composeNameByte(s[i]) {
		lower = lower || s[i] >= 'a' && s[i] <= 'z'
		i++
	}
	// A name in capitals is a level ("INFO | message", a format some
	// loggers use); container names are lower-case in practice.
	if i == 0 || i > maxToolName || !lower {
		return 0
	}
	j := i
	for j < len(s) && s[j] == ' ' {
		j++
	}
	if j == i || j+1 >= len(s) || s[j] != '|' || s[j+1] != ' ' {
		return 0
	}
	return j + 2
}

func composeNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
}

// kubectlPrefixLen is the length of a `kubectl logs --prefix` prefix
// ("[pod/NAME/CONTAINER] ") at the start of s, or 0.
func kubectlPrefixLen(s string) int {
	const head = "[pod/"
	if !strings.HasPrefix(s, head) {
		return 0
	}
	slashes := 0
	for i := len(head); i < len(s) && i <= maxToolName; i++ {
		switch c := s[i]; {
		case c == '/':
			slashes++
		case c == ']':
			if slashes != 1 || s[i-1] == '/' || i+1 >= len(s) || s[i+1] != ' ' {
				return 0
			}
			return i + 2
		case !composeNameByte(c):
			return 0
		}
	}
	return 0
}

// mpirunTagLen is the length of Open MPI's --tag-output tag at the start of
// s ("[1,0]<stdout>:", "[12,3]<stderr>:", "[1,0]<stddiag>:": the job's local
// id, the process's rank, its stream, then the line itself without a
// blank), or 0. Without it an NCCL line's "host:pid:tid" reads as the host
// "[1,0]<stdout>", one host per rank.
func mpirunTagLen(s string) int {
	i := 1
	for i < len(s) && i < 12 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 1 || i >= len(s) || s[i] != ',' {
		return 0
	}
	j := i + 1
	for j < len(s) && j < i+12 && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j == i+1 {
		return 0
	}
	for _, tag := range [...]string{"]<stdout>:", "]<stderr>:", "]<stddiag>:"} {
		if strings.HasPrefix(s[j:], tag) {
			return j + len(tag)
		}
	}
	return 0
}

// Squashed pastes. A paste whose newlines were lost (a form or a chat that
// joins lines with a blank) arrives as one long physical line holding many
// log entries. The Joiner cuts such a line back into its entries before
// anything else: at each blank followed by the start of an entry that
// nothing but a log line starts with (a log header with a date and a
// fraction of a second, a vLLM or glog header, an NCCL "host:pid:tid [dev]",
// a Ray or torch process prefix), and, in the pieces after a traceback
// header, at its frames and its exception line. Only a line holding at least
// squashMinEntries such starts after a blank is taken for a squashed paste:
// a log line that quotes a time or two stays whole.
const (
	squashMinBytes   = 256
	squashMinEntries = 3
)

// squashCuts returns where the entries of a squashed paste start in text
// (each just after the blank that replaced a newline), appended to buf; nil
// when text is not a squashed paste.
func squashCuts(text string, buf []int) []int {
	cuts := buf[:0]
	last := 0
	for i := 1; i < len(text); i++ {
		if text[i-1] != ' ' || text[i] == ' ' {
			continue
		}
		// An entry starts here if something was said since the last one:
		// "(A pid=1) (B pid=2) ERROR 06-09 ..." is one entry's prefixes.
		if !squashEntryAt(text[i:]) && !ncclHeadlessAt(text, i) {
			continue
		}
		if hasPayload(text[last:i]) {
			cuts = append(cuts, i)
			last = i
		}
		if toolPrefixAt(text[i:]) {
			// The entry starts with the tools' prefixes, all of them.
			_, _, n := splitPastePrefixes(text[i:])
			i += n - 1
		}
	}
	if len(cuts) < squashMinEntries && !headlessTraceback(text) {
		return nil
	}
	cuts = hostLabels(text, cuts)
	// Tracebacks: their header, then each frame ("  File ..." whose indent
	// followed the blank) and the exception line, within the piece that
	// holds the header.
	n := len(cuts)
	for k := -1; k < n; k++ {
		start, end := 0, len(text)
		if k >= 0 {
			start = cuts[k]
		}
		if k+1 < n {
			end = cuts[k+1]
		}
		cuts = tracebackCuts(text, start, end, cuts)
	}
	if len(cuts) > n {
		sortInts(cuts)
		cuts = dedupSorted(cuts)
	}
	return cuts
}

// hostLabels moves each cut back over a "host: " label before it when most
// entries have the same one (pdsh and clush put it before every line).
func hostLabels(text string, cuts []int) []int {
	label := func(i int) int { // where the label before cut i starts, or -1
		if i < 2 {
			return -1
		}
		w := strings.LastIndexByte(text[:i-1], ' ') + 1
		if w < i-1 && labelLen(text[w:i]) == i-1-w {
			return w
		}
		return -1
	}
	var first string
	same := 0
	for _, c := range cuts {
		if w := label(c); w >= 0 {
			if first == "" {
				first = text[w:c]
			}
			if text[w:c] == first {
				same++
			}
		}
	}
	if 2*same < len(cuts) {
		return cuts
	}
	out := cuts[:0]
	for k, c := range cuts {
		if w := label(c); w >= 0 && text[w:c] == first && (k == 0 || w > cuts[k-1]) {
			c = w
		}
		if c > 0 {
			out = append(out, c) // (at 0: the line's own first entry)
		}
	}
	return out
}

// squashEntryAt reports whether s starts a log entry surely (see squashCuts).
func squashEntryAt(s string) bool {
	if toolPrefixAt(s) {
		return true
	}
	switch c := s[0]; {
	case c >= '0' && c <= '9':
		if len(s) > 23 && s[4] == '-' && (s[10] == ' ' || s[10] == 'T') {
			// 2024-04-01 10:49:31,995 (Python logging, Ray),
			// 2024-04-01T10:49:31.995Z, then what a logger puts next: a
			// tab, a level, a "-" or a bracket (a time a message quotes
			// is followed by words).
			_, n, ok := parseDateTimeFrac(s[:10] + " " + s[11:min(len(s), 40)])
			if !ok || n <= 20 {
				return false
			}
			if n < len(s) && s[n] == 'Z' {
				n++
			}
			return n < len(s) && (s[n] == '\t' || s[n] == ' ' && logHeadAfterTime(s[n+1:]))
		}
	case c == '[':
		if len(s) > 21 && s[1] >= '0' && s[1] <= '9' && s[5] == '-' {
			// [2024-04-01 10:49:31,995 I 1 2] (Ray C++), [2026-11-29
			// 20:00:53] (NCCL >= 2.26), [2025-06-23 15:07:01 TP6] (SGLang)
			_, n, ok := parseDateTimeFrac(s[1:min(len(s), 40)])
			return ok && 1+n < len(s) && (s[1+n] == ']' || s[1+n] == ' ')
		}
		if strings.HasPrefix(s, "[rank") {
			_, n := rankPrefix(s)
			return n > 0
		}
		return false
	case c == '(':
		p, n := parenPrefix(s)
		return n > 0 && (p.PID != 0 || p.IP != "")
	case c == 'I' || c == 'W' || c == 'E' || c == 'F':
		if glogHeader(s) {
			return true
		}
	}
	if vllmLogHeader(s) != "" {
		return true
	}
	// "host:pid:tid [dev] NCCL ..." (a time "17:58:55 [x.py:1]" has the
	// shape of a writer key too).
	if k := ncclWriterKey(s); k != "" {
		rest := s[len(k):]
		if strings.HasPrefix(rest, " [") {
			if e := strings.IndexByte(rest, ']'); e > 0 && e < 8 {
				rest = rest[e+1:]
			}
		}
		// a WARN names its source: "[0] include/shm.h:48 NCCL WARN ..."
		if sp := strings.IndexByte(rest[min(1, len(rest)):], ' '); sp > 0 && sp < 64 && strings.Contains(rest[1:1+sp], ".") {
			if c := strings.LastIndexByte(rest[1:1+sp], ':'); c > 0 && allDigits(rest[2+c:1+sp]) {
				rest = rest[1+sp:]
			}
		}
		return strings.HasPrefix(rest, " NCCL ")
	}
	return false
}

// ncclHeadlessAt reports whether text[i:] starts one of NCCL's lines that
// a paste without the "host:pid:tid [dev]" prefix still marks as NCCL's: a
// WARN ("transport/nvls.cc:251 NCCL WARN ...", 2.30.7+ with "(function)"
// after the line) or an error-propagation
// trace ("init.cc:1138 -> 1", src/include/checks.h). After "NCCL INFO " or
// a "[0] " the same words are the rest of a prefixed line, not an entry.
func ncclHeadlessAt(text string, i int) bool {
	s := text[i:]
	sp := strings.IndexByte(s, ' ')
	if sp <= 0 || sp > 96 {
		return false
	}
	file, c := s[:sp], strings.LastIndexByte(s[:sp], ':')
	if c <= 0 || !allDigits(file[c+1:]) || strings.IndexByte(file[:c], '.') < 0 || strings.ContainsAny(file[:c], ":[]()\"'") {
		return false
	}
	ext := file[strings.LastIndexByte(file[:c], '.')+1 : c]
	if ext != "cc" && ext != "cu" && ext != "h" && ext != "c" && ext != "cpp" {
		return false
	}
	rest := s[sp:]
	if strings.HasPrefix(rest, " (") { // 2.30.7+: "file.cc:N (function) NCCL WARN"
		if e := strings.IndexByte(rest, ')'); e > 2 && e < 80 && !strings.ContainsAny(rest[2:e], " ()") {
			rest = rest[e+1:]
		}
	}
	switch {
	case strings.HasPrefix(rest, " NCCL WARN "):
	case strings.HasPrefix(rest, " -> "):
		code := rest[4:]
		if e := strings.IndexByte(code, ' '); e >= 0 {
			code = code[:e]
		}
		if code == "" || !allDigits(code) {
			return false
		}
	default:
		return false
	}
	before := strings.TrimRight(text[:i], " ")
	if strings.HasSuffix(before, "NCCL INFO") || strings.HasSuffix(before, "NCCL WARN") {
		return false
	}
	if o := strings.LastIndexByte(before, '['); o >= 0 && strings.HasSuffix(before, "]") && allDigits(before[o+1:len(before)-1]) {
		return false // "host:pid:tid [0] transport/..." is a prefixed WARN
	}
	return true
}

// toolPrefixAt reports whether s starts with a container tool's prefix
// that nothing but a tool writes (see splitPastePrefixes): a timestamp
// with nine fraction digits, a kubectl, mpirun --tag-output or stream
// logger's prefix, or a compose prefix whose name ends in the container's index ("web-1  | ",
// "proj_web_1 | "; a table's "name | " does not).
func toolPrefixAt(s string) bool {
	if len(s) < 8 {
		return false
	}
	switch c := s[0]; {
	case c >= '0' && c <= '9':
		if _, k := toolTime(s); k > 0 {
			return true
		}
		_, k := streamLoggerPrefixLen(s)
		return k > 0
	case c == '[':
		return kubectlPrefixLen(s) > 0 || mpirunTagLen(s) > 0
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		k := composePrefixLen(s)
		if k == 0 {
			return false
		}
		name := strings.TrimRight(s[:k-2], " ")
		d := len(name)
		for d > 0 && name[d-1] >= '0' && name[d-1] <= '9' {
			d--
		}
		return d < len(name) && d > 1 && (name[d-1] == '-' || name[d-1] == '_')
	}
	return false
}

// headlessTraceback reports whether text, a squashed paste, starts inside
// a traceback (an excerpt whose header was left out): with a frame, and
// holds more frames after it.
func headlessTraceback(text string) bool {
	t := strings.TrimLeft(text, " ")
	if !strings.HasPrefix(t, `File "`) || frameEnd(t[len(`File "`):]) == 0 {
		return false
	}
	return strings.Count(t, ` File "`) >= squashMinEntries-1
}

// logHeadAfterTime reports whether s, what follows a log line's time,
// starts as loggers go on: a level, a "-" or "|" separator, a bracket.
func logHeadAfterTime(s string) bool {
	if s == "" {
		return false
	}
	switch s[0] {
	case '-', '|', '[', '(':
		return true
	}
	for _, lv := range [...]string{"INFO", "DEBUG", "WARNING", "WARN", "ERROR", "CRITICAL", "FATAL", "TRACE"} {
		if strings.HasPrefix(s, lv) && (len(s) == len(lv) || s[len(lv)] == ' ' || s[len(lv)] == ':' || s[len(lv)] == ']') {
			return true
		}
	}
	return false
}

// hasPayload reports whether s holds more than process prefixes and a log
// header. A long s surely does (and is not parsed again and again).
func hasPayload(s string) bool {
	if len(s) > 512 {
		return true
	}
	var buf [4]Prefix
	_, rest := splitPrefixesFast(buf[:0], s)
	if h := vllmLogHeader(rest); h != "" {
		rest = rest[len(h):]
	}
	return !blankLine(rest)
}

// glogHeader matches glog's "I0408 22:41:07.123456  1234 file.cc:12] "
// (c10, Ray's C++ core), the date and time at least.
func glogHeader(s string) bool {
	return len(s) > 21 && digitsAt(s, 1, 2, 3, 4, 6, 7, 9, 10, 12, 13) && s[5] == ' ' && s[8] == ':' && s[11] == ':' && s[14] == '.'
}

// tracebackCuts appends the cuts inside text[start:end] that follow a
// traceback header there: the header itself, each "File" frame and chain
// marker, and the exception line after the last frame.
func tracebackCuts(text string, start, end int, cuts []int) []int {
	piece := text[start:end]
	i, lastFrame := 0, -1
	// Nothing is cut off the tools' prefixes that start the piece.
	_, _, pre := splitPastePrefixes(piece)
	cut := func(at int) {
		if at > pre {
			cuts = append(cuts, start+at)
		}
	}
	// frame takes the frame whose "File" is at i: its source line and
	// its carets, each indented: `File "x.py", line 3, in f     code()
	// ^^^^^^`.
	frame := func() {
		lastFrame = i
		i += len(`File "`)
		if k := frameEnd(piece[i:]); k > 0 {
			i += k
			for _, c := range indentedRuns(piece[i:end-start], 2) {
				cut(i + c)
			}
		}
	}
	switch h := strings.Index(piece, tracebackHeaderText); {
	case h >= 0:
		if h > 1 && piece[h-1] == ' ' && !strings.ContainsRune(":])|", rune(piece[h-2])) {
			// "... done. Traceback": a line of its own. A header or prefix
			// before it ("ERROR ... [x.py:1] ", "[rank0]: ", "| stderr | ") or a message
			// that ends in one ("exception: Traceback ...") was written on the
			// same line.
			cut(h)
		}
		i = h + len(tracebackHeaderText)
	case start == 0 && headlessTraceback(piece):
		// An excerpt that starts at a frame (its header left out).
		i = strings.Index(piece, `File "`)
		frame()
	default:
		return cuts
	}
	for i < len(piece) {
		sp := strings.IndexByte(piece[i:], ' ')
		if sp < 0 {
			break
		}
		i += sp + 1
		rest := piece[i:]
		trimmed := strings.TrimLeft(rest, " ")
		blanks := len(rest) - len(trimmed)
		switch {
		case strings.HasPrefix(trimmed, `File "`):
			cut(i)
			i += blanks
			frame()
		case chainMarker(rest):
			cut(i)
			lastFrame = -1
		case strings.HasPrefix(rest, tracebackHeaderText):
			cut(i)
			lastFrame = -1
			i += len(tracebackHeaderText)
		case blanks > 0 && lastFrame >= 0:
			// An indented code line of the frame stays with it: past
			// the blanks and its first word.
			i += blanks
		case blanks > 0:
			i += blanks - 1 // a run of blanks is looked at once
		case lastFrame >= 0 && exceptionLine(rest):
			cut(i)
			lastFrame = -1
		}
	}
	return cuts
}

// sortInts sorts a short list of cuts (insertion sort: mostly in order).
func sortInts(a []int) {
	for i := 1; i < len(a); i++ {
		for k := i; k > 0 && a[k] < a[k-1]; k-- {
			a[k], a[k-1] = a[k-1], a[k]
		}
	}
}

func dedupSorted(a []int) []int {
	out := a[:0]
	for i, v := range a {
		if i == 0 || v != a[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// frameEnd returns the length of the rest of a traceback frame line after
// its `File "`: the path, `", line N, in NAME`, up to the blank after NAME;
// 0 when it is not one.
func frameEnd(s string) int {
	q := strings.Index(s[:min(len(s), 1100)], `", line `)
	if q < 0 || q > 1024 {
		return 0
	}
	i := q + len(`", line `)
	d := leadingDigits(s[i:])
	if d == "" || !strings.HasPrefix(s[i+len(d):], ", in ") {
		return 0
	}
	i += len(d) + len(", in ")
	sp := strings.IndexByte(s[i:], ' ')
	if sp < 0 {
		return 0
	}
	return i + sp
}

// indentedRuns returns where a frame's source line and its carets start
// in s, the text just after the frame line's NAME: the source line after a
// blank that stood for a newline and at least minIndent more; its carets
// ("^^^^", "~~~^^^") after a run of blanks in it. Both keep their indent.
func indentedRuns(s string, minIndent int) []int {
	s = s[:min(len(s), 2048)] // a source line and its carets are short
	k := 1
	for k < len(s) && s[k] == ' ' {
		k++
	}
	if len(s) == 0 || s[0] != ' ' || k-1 < minIndent || k >= len(s) {
		return nil
	}
	out := []int{1}
	for j := k; j+3 < len(s); j++ {
		if s[j] != ' ' || s[j+1] != ' ' {
			continue
		}
		m := j + 1
		for m < len(s) && s[m] == ' ' {
			m++
		}
		e := m
		for e < len(s) && (s[e] == '^' || s[e] == '~') {
			e++
		}
		if e > m && (e == len(s) || s[e] == ' ') && s[e-1] != '~' || e > m+1 && (e == len(s) || s[e] == ' ') {
			out = append(out, j+1)
			break
		}
		j = m - 1
	}
	return out
}

// streamLoggerPrefixLen is the length of a logger's prefix put before each
// line of a redirected standard stream, at the start of s, with the time
// it gives: "2024-09-26 06:12:44 | ERROR | stderr | " (FastChat's and its
// forks' build_logger: sys.stdout and sys.stderr replaced by a
// StreamToLogger that logs every line of the stream as a record of the
// "stdout"/"stderr" logger, format "%(asctime)s | %(levelname)s |
// %(name)s | %(message)s"). Every line of a traceback gets it, with a
// time that changes within the traceback, so it is framing like a tool's
// prefix; a logger's own records ("| INFO | model_worker | ...") keep it.
func streamLoggerPrefixLen(s string) (time.Time, int) {
	t, n, ok := parseDateTimeFrac(s)
	if !ok || !strings.HasPrefix(s[n:], " | ") {
		return time.Time{}, 0
	}
	i := n + len(" | ")
	j := i
	for j < len(s) && s[j] >= 'A' && s[j] <= 'Z' {
		j++
	}
	if j == i || !strings.HasPrefix(s[j:], " | std") {
		return time.Time{}, 0
	}
	rest := s[j+len(" | "):]
	var name string
	switch {
	case strings.HasPrefix(rest, "stderr |"):
		name = "stderr |"
	case strings.HasPrefix(rest, "stdout |"):
		name = "stdout |"
	default:
		return time.Time{}, 0
	}
	end := j + len(" | ") + len(name)
	if end < len(s) {
		if s[end] != ' ' {
			return time.Time{}, 0
		}
		end++
	}
	return t, end
}
