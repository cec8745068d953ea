// Package secrets resolves a secret given on the command line, in a file or
// in the environment. Command lines are visible to every user of the host
// (ps, /proc, docker inspect), so the file and the environment are the ways
// to prefer; the flag stays for quick tries.
package secrets

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// Resolve returns the secret of the flag --name: its value when set, else
// the content of file (surrounding white space trimmed: files end with a
// newline), else the environment variable env. Setting both the value and
// the file is an error, and so is a file that is empty or unreadable.
func Resolve(name, value, file, env string) (string, error) {
	switch {
	case value != "" && file != "":
		return "", fmt.Errorf("--%s and --%s-file are both set: give one", name, name)
	case value != "":
		return value, nil
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--%s-file: %w", name, err)
		}
		s := strings.TrimSpace(string(b))
		if s == "" {
			return "", fmt.Errorf("--%s-file %s: %w", name, file, errEmpty)
		}
		return s, nil
	}
	return os.Getenv(env), nil
}

var errEmpty = errors.New("the file is empty")
