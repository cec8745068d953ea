package config

import (
	"io"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// settings is a command's settings as the commands write them.
type settings struct {
	Name    string
	Count   int
	Size    int64
	On      bool
	Wait    time.Duration
	Paths   []string
	Routes  []string
	Token   string
	Version bool
}

func (s *settings) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&s.Name, "name", "default", "`NAME` of it")
	fs.IntVar(&s.Count, "count", 16, "how many")
	fs.Int64Var(&s.Size, "size", 1<<20, "bytes")
	fs.BoolVar(&s.On, "on", false, "switch")
	fs.DurationVar(&s.Wait, "wait", 25*time.Millisecond, "how long")
	fs.StringArrayVar(&s.Paths, "path", nil, "repeatable")
	fs.StringSliceVar(&s.Routes, "routes", nil, "comma-separated")
	fs.StringVar(&s.Token, "token", "", "secret")
	fs.BoolVar(&s.Version, "version", false, "print the version")
	fs.String(Flag, "", "file")
	Secret(fs, "token")
	NotInFile(fs, "version", Flag)
}

func parse(t *testing.T, args []string, file string) (settings, error) {
	t.Helper()
	var s settings
	fs := pflag.NewFlagSet("cmd", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	s.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return s, err
	}
	return s, ApplyBytes(fs, "f.yaml", []byte(file))
}

func TestApply(t *testing.T) {
	defaults := settings{Name: "default", Count: 16, Size: 1 << 20, Wait: 25 * time.Millisecond}
	for _, c := range []struct {
		name string
		args []string
		file string
		want func(*settings)
	}{
		{"empty", nil, "", func(*settings) {}},
		{"comments only", nil, "# nothing\n", func(*settings) {}},
		{"null leaves the default", nil, "wait:\ncount: ~\n", func(*settings) {}},
		{"every type", nil, "name: x\ncount: 3\nsize: 0x10\non: true\nwait: 2s\npath: [a, 'b c']\nroutes:\n  - r1\n  - r2\ntoken: t\n",
			func(s *settings) {
				s.Name, s.Count, s.Size, s.On, s.Wait, s.Paths, s.Routes, s.Token = "x", 3, 16, true, 2*time.Second, []string{"a", "b c"}, []string{"r1", "r2"}, "t"
			}},
		{"one value for a list", nil, "path: a.log\nroutes: r1,r2\n", func(s *settings) { s.Paths, s.Routes = []string{"a.log"}, []string{"r1", "r2"} }},
		{"number for a string", nil, "name: 12\n", func(s *settings) { s.Name = "12" }},
		{"flags win", []string{"--name", "flag", "--count=16", "--path", "p"}, "name: file\ncount: 3\npath: [a, b]\nwait: 1s\n",
			func(s *settings) { s.Name, s.Count, s.Paths, s.Wait = "flag", 16, []string{"p"}, time.Second }},
		{"document marker", nil, "---\nname: x\n", func(s *settings) { s.Name = "x" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parse(t, c.args, c.file)
			if err != nil {
				t.Fatal(err)
			}
			want := defaults
			c.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestApplyErrors(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"name: a\nnames: b\n", `^--config f.yaml:2:1: unknown key "names": not a setting of cmd$`},
		{"na_me: a\n", `^--config f.yaml:1:1: unknown key "na_me": not a setting of cmd$`},
		{"routes: a\npa_th: b\n", `^--config f.yaml:2:1: unknown key "pa_th": not a setting of cmd \(did you mean pa-th\?\)$|unknown key`},
		{"version: true\n", `^--config f.yaml:1:1: unknown key "version"`},
		{"config: other.yaml\n", `^--config f.yaml:1:1: unknown key "config"`},
		{"name: a\npath: [a\n", `^--config f.yaml:2:7: `},
		{"- name\n- x\n", `^--config f.yaml:1:1: want a mapping`},
		{"name: a\nname: b\n", `^--config f.yaml:2:1: mapping key "name" already defined`},
		{"wait: forever\n", `^--config f.yaml:1:7: wait: must be a duration`},
		{"wait: 25\n", `^--config f.yaml:1:7: 25 is not a duration`},
		{"count: lots\n", `^--config f.yaml:1:8: count must be a whole number, not lots$`},
		{"count: 1.5\n", `^--config f.yaml:1:8: count must be a whole number, not 1.5$`},
		{"on: yes please\n", `^--config f.yaml:1:5: on must be true or false`},
		{"name: [a, b]\n", `^--config f.yaml:1:7: name takes one value, not a list$`},
		{"name:\n  inner: x\n", `^--config f.yaml:2:\d+: name wants a value, not a mapping$`},
		{"path: [[a]]\n", `^--config f.yaml:1:8: path wants a value, not a list$`},
	} {
		_, err := parse(t, nil, c.file)
		if err == nil || !regexp.MustCompile(c.want).MatchString(err.Error()) {
			t.Errorf("%q:\n got %v\nwant %s", c.file, err, c.want)
		}
	}
}

// Print writes every setting, and what it writes reads back to the same
// values; a secret is left out.
func TestPrintRoundTrip(t *testing.T) {
	in := "name: \"with \\\"quotes\\\" and: colon\"\ncount: 3\non: true\nwait: 1m30s\npath: [a, \"#b\"]\ntoken: s3cret\n"
	var s settings
	fs := pflag.NewFlagSet("cmd", pflag.ContinueOnError)
	s.RegisterFlags(fs)
	if err := ApplyBytes(fs, "in.yaml", []byte(in)); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := Print(&out, fs); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "s3cret") {
		t.Errorf("the secret was printed:\n%s", out.String())
	}
	for _, key := range []string{"name:", "count:", "size:", "on:", "wait:", "path:", "routes:"} {
		if !regexp.MustCompile(`(?m)^` + key + ` `).MatchString(out.String()) {
			t.Errorf("%s missing from\n%s", key, out.String())
		}
	}
	if regexp.MustCompile(`(?m)^(version|config):`).MatchString(out.String()) {
		t.Errorf("a flag that is no setting was printed:\n%s", out.String())
	}
	var back settings
	fs2 := pflag.NewFlagSet("cmd", pflag.ContinueOnError)
	back.RegisterFlags(fs2)
	if err := ApplyBytes(fs2, "printed.yaml", []byte(out.String())); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	s.Token = ""
	if !reflect.DeepEqual(back, s) {
		t.Errorf("read back %+v\nwant      %+v\n%s", back, s, out.String())
	}
}
