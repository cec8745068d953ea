package loggen_test

import (
	"fmt"
	"io"

	"github.com/faultline/faultline/internal/loggen"
)

func Example() {
	g := loggen.New(42, loggen.Options{})
	// 10,000 Docker json-file records; loggen.Plain gives plain lines.
	n, err := g.WriteLines(io.Discard, loggen.DockerJSON, 10000)
	fmt.Println(n > 1_500_000, err)
	// One line at a time, reusing the buffer.
	var buf []byte
	buf = g.Line(buf[:0])
	fmt.Println(len(buf) > 0)
	// Output:
	// true <nil>
	// true
}
