package ruletest_test

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/pipeline"
)

// A paste is what a user copies out of a terminal, an editor or a chat into
// a bug report: the text of a log, not its file. pastedLine is one line of
// that text with the time the pipeline gives it as written (for the
// transforms that add a container tool's timestamp).
type pastedLine struct {
	text string
	time time.Time
}

// pasteTransform turns the lines of one file of node into the bytes of a
// paste of them.
type pasteTransform struct {
	name  string
	apply func(node string, lines []pastedLine) []byte
	// minRecords is the share of the records that must read back with
	// their text as written (some cannot: a squashed paste joins lines
	// that have no header of their own).
	minRecords float64
}

// pasteTransforms are the ways a user's paste differs from the log a node
// wrote; each models a tool as it behaves:
//   - `fold -w N` or a terminal N columns wide: a hard cut every N columns,
//     mid-word and mid-address;
//   - an editor or a terminal that wraps at word boundaries and indents what
//     it wrapped (`fold -s` plus a hanging indent);
//   - `docker compose logs` ("svc-1  | "), `kubectl logs --prefix`
//     ("[pod/NAME/CONTAINER] "), `docker logs -t` (RFC 3339 with nine
//     fraction digits), and a paste that mixes them line by line;
//   - a form or a chat that lost the newlines (the whole paste on one line);
//   - a log quoted in a GitHub issue (Markdown "> " before every line, ">"
//     alone for an empty one; real cases 103, 121, 356 were quoted so);
//   - CRLF line ends (a Windows tool), some lines only (a paste that joined
//     a Windows tool's output to a Linux one's), and ANSI colours (a
//     coloured terminal).
var pasteTransforms = func() []pasteTransform {
	ts := []pasteTransform{}
	for _, w := range []int{80, 100, 120} {
		ts = append(ts, pasteTransform{fmt.Sprintf("cut at %d", w), func(_ string, ls []pastedLine) []byte {
			return eachPasted(ls, func(l pastedLine) string { return strings.Join(hardCut(l.text, w), "\n") })
		}, 0.9})
	}
	for _, v := range []struct {
		w      int
		indent string
	}{{80, "  "}, {100, "    "}, {120, "\t"}} {
		ts = append(ts, pasteTransform{fmt.Sprintf("indented wrap at %d", v.w), func(_ string, ls []pastedLine) []byte {
			return eachPasted(ls, func(l pastedLine) string { return strings.Join(wordWrap(l.text, v.w, v.indent), "\n") })
		}, 0.8})
	}
	ts = append(ts,
		pasteTransform{"docker compose logs", func(node string, ls []pastedLine) []byte {
			return eachPasted(ls, func(l pastedLine) string { return composePrefix(node, 2) + l.text })
		}, 0.95},
		pasteTransform{"kubectl logs --prefix", func(node string, ls []pastedLine) []byte {
			return eachPasted(ls, func(l pastedLine) string { return kubectlPrefix(node) + l.text })
		}, 0.95},
		pasteTransform{"docker logs -t", func(_ string, ls []pastedLine) []byte {
			return eachPasted(ls, func(l pastedLine) string { return dockerTime(l.time) + l.text })
		}, 0.95},
		pasteTransform{"prefixes varying by line", func(node string, ls []pastedLine) []byte {
			i := 0
			return eachPasted(ls, func(l pastedLine) string {
				i++
				switch (hashOf(l.text) + uint32(i)) % 6 {
				case 0:
					return l.text
				case 1:
					return composePrefix(node, 1) + l.text
				case 2:
					return composePrefix(node, 4) + dockerTime(l.time) + l.text
				case 3:
					return kubectlPrefix(node) + l.text
				case 4:
					return dockerTime(l.time) + l.text
				default:
					return kubectlPrefix(node) + dockerTime(l.time) + l.text
				}
			})
		}, 0.95},
		pasteTransform{"squashed onto one line", func(_ string, ls []pastedLine) []byte {
			texts := make([]string, len(ls))
			for i, l := range ls {
				texts[i] = l.text
			}
			return []byte(strings.Join(texts, " ") + "\n")
			// Lines with no header of their own (nccl-tests' result tables,
			// shell prompts, banners) cannot be told apart once squashed, so
			// the share depends on how many the corpus holds: 59.8% of 246
			// cases with the batches 350-425 (healthy nccl-tests runs among
			// them), 60-61% before; 57.3% before the batch 640-647, 57.0%
			// with it (a report that strips c10d's prefixes from ten identical
			// lines, TorchX's "ray/0 " before Ray's process prefix); 56.2%
			// before the batch 670-679 (with 690-709), 55.4% with it (two
			// healthy runs that are nccl-tests result tables only,
			// nvidia-smi's banner, an EFA package list, nccl-tests'
			// " .. host pid N: Test failure" traces); 54.7% with the batch
			// 680-688 too (two benchmark result tables, rccl-tests' "#"
			// banner and CANN's indented TraceBack lines, none with a header
			// of its own).
		}, 0.545},
		pasteTransform{"Markdown quote", func(_ string, ls []pastedLine) []byte {
			return eachPasted(ls, func(l pastedLine) string {
				if l.text == "" {
					return ">"
				}
				return "> " + l.text
			})
		}, 0.95},
		pasteTransform{"CRLF line ends", func(_ string, ls []pastedLine) []byte {
			return eachPasted(ls, func(l pastedLine) string { return l.text + "\r" })
		}, 0.99},
		pasteTransform{"CRLF and LF mixed", func(_ string, ls []pastedLine) []byte {
			i := 0
			return eachPasted(ls, func(l pastedLine) string {
				i++
				if (hashOf(l.text)+uint32(i))%2 == 0 {
					return l.text + "\r"
				}
				return l.text
			})
		}, 0.99},
		pasteTransform{"ANSI colours", func(_ string, ls []pastedLine) []byte {
			return eachPasted(ls, func(l pastedLine) string { return colour(l.text) })
		}, 0.99},
	)
	return ts
}()

func hashOf(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

func eachPasted(ls []pastedLine, f func(pastedLine) string) []byte {
	var out bytes.Buffer
	for _, l := range ls {
		out.WriteString(f(l))
		out.WriteByte('\n')
	}
	return out.Bytes()
}

// hardCut cuts s every w columns (runes), as `fold -w` and a terminal do.
func hardCut(s string, w int) []string {
	var out []string
	for utf8.RuneCountInString(s) > w {
		i := runeOffset(s, w)
		out = append(out, s[:i])
		s = s[i:]
	}
	return append(out, s)
}

// wordWrap wraps s at w columns after the last blank that fits (a hard cut
// where none does), as `fold -s` does, and indents every wrapped piece.
func wordWrap(s string, w int, indent string) []string {
	var out []string
	width := w
	for utf8.RuneCountInString(s) > width {
		i := runeOffset(s, width)
		if sp := strings.LastIndexAny(s[:i], " \t"); sp > 0 {
			i = sp + 1 // the blank stays at the end of the line, as fold -s leaves it
		}
		out = append(out, s[:i])
		s = s[i:]
		width = w - len(strings.ReplaceAll(indent, "\t", "        "))
	}
	out = append(out, s)
	for i := 1; i < len(out); i++ {
		out[i] = indent + out[i]
	}
	return out
}

func runeOffset(s string, n int) int {
	i := 0
	for k := 0; k < n && i < len(s); k++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return i
}

// composePrefix is docker compose's "SERVICE-1  | " (the name padded to the
// longest service's, so its width differs between two runs).
func composePrefix(node string, pad int) string {
	return node + "-1" + strings.Repeat(" ", pad) + "| "
}

func kubectlPrefix(node string) string { return "[pod/" + node + "-0/main] " }

// dockerTime is the stamp `docker logs -t` and `kubectl logs --timestamps`
// put before a line: RFC 3339 with a fixed nine-digit fraction.
func dockerTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000000Z07:00") + " "
}

// colour paints the first word and every error or warning word the way a
// coloured terminal does.
func colour(s string) string {
	words := strings.Split(s, " ")
	for i, w := range words {
		if w != "" && (i == 0 || strings.Contains(w, "rror") || strings.Contains(w, "ARN")) {
			words[i] = "\x1b[1;31m" + w + "\x1b[0m"
		}
	}
	return strings.Join(words, " ")
}

// pasteOf reads a case's files as the lines a paste of each holds: a plain
// file line by line as written; a json-file or CRI file as `docker logs`
// and `kubectl logs` print it, its text without the framing. Every line
// gets the time of its event when the case is read as written, or the time
// of the line before it (the first ones the first time in the file, or the
// case's earliest time less a second): the time its writer's container
// tool would stamp it with.
func pasteOf(t *testing.T, files []pipeline.File) [][]pastedLine {
	t.Helper()
	type at struct {
		path string
		line int
	}
	times := map[at]time.Time{}
	var earliest time.Time
	if _, err := pipeline.ReplayFiles(context.Background(), files, pipeline.Options{}, func(ev *parsers.Event) error {
		if ev.Time.IsZero() {
			return nil
		}
		if earliest.IsZero() || ev.Time.Before(earliest) {
			earliest = ev.Time
		}
		for k := range max(ev.Lines, 1) {
			times[at{ev.File, ev.Line + k}] = ev.Time
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	base := earliest.Add(-time.Second)
	if earliest.IsZero() {
		base = time.Date(2026, 4, 8, 22, 0, 0, 0, time.UTC)
	}
	out := make([][]pastedLine, len(files))
	for i, f := range files {
		var ls []pastedLine
		if parsers.DetectFormat(f.Data) == parsers.FormatPlain {
			text := strings.TrimSuffix(string(f.Data), "\n")
			for k, s := range strings.Split(text, "\n") {
				ls = append(ls, pastedLine{text: s, time: times[at{f.Path, k + 1}]})
			}
		} else {
			rd := parsers.NewReader(bytes.NewReader(f.Data), parsers.ReaderOptions{EOFIsEnd: true})
			for {
				l, err := rd.Next()
				if err != nil {
					break
				}
				ls = append(ls, pastedLine{text: l.Text, time: l.Time})
			}
		}
		first := base
		for _, l := range ls {
			if !l.time.IsZero() {
				first = l.time
				break
			}
		}
		prev := first
		for k := range ls {
			if ls[k].time.IsZero() {
				ls[k].time = prev
			}
			prev = ls[k].time
		}
		out[i] = ls
	}
	return out
}

// caseFiles lists a case's files with their content loaded, as a paste
// (rather than a file on disk) is read: no modification time to fall back on.
func caseFiles(t *testing.T, path string) []pipeline.File {
	t.Helper()
	inputs, err := pipeline.ParseArgs([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	files, err := pipeline.Expand(inputs, func(err error) { t.Error(err) })
	if err != nil {
		t.Fatal(err)
	}
	for i := range files {
		if files[i].Data, err = os.ReadFile(files[i].Path); err != nil {
			t.Fatal(err)
		}
	}
	return files
}
