package helpflag

import "testing"

func TestAsked(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"--help"}, true}, {[]string{"-h"}, true}, {[]string{"--json", "x", "--help"}, true},
		{[]string{"--", "--help"}, false}, {[]string{"--helpful"}, false}, {nil, false},
	} {
		if got := Asked(c.args); got != c.want {
			t.Errorf("Asked(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}
