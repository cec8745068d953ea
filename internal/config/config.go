// Package config gives a command one settings file whose keys are the
// command's flags: `analyzer serve --config FILE` and `shipper --config
// FILE` read the same YAML keys as their flags, from one definition.
//
// A command's settings are one struct with a RegisterFlags method (Loki's
// pattern): every setting is a field, registered there as a flag with its
// name, default and help. The flag's name is also the setting's key in the
// file, so the struct defines both and nothing repeats them:
//
//	func (c *settings) RegisterFlags(fs *pflag.FlagSet) {
//		fs.DurationVar(&c.BatchWait, "batch-wait", 25*time.Millisecond, "close a batch after this long")
//	}
//
// To add a setting, add the field and its line in RegisterFlags: the flag,
// the --config key, --print-config and `analyzer config check` all have it
// from there. A secret (a token, a password) is marked with Secret, so that
// Print never writes it; flags that are not settings (--config itself,
// --version) with NotInFile.
//
// Apply runs after the command line is parsed: a flag given on the command
// line wins over the file, a key of the file over the flag's default. A
// list flag given on the command line replaces the file's list.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/spf13/pflag"
)

// Flag is the name of the flag that names the file.
const Flag = "config"

const (
	secretKey    = "faultline.secret"
	notInFileKey = "faultline.not-in-file"
)

// Secret marks the named flags as secrets: Print leaves their values out
// (they come from the environment or a file, as the flags' help says).
func Secret(fs *pflag.FlagSet, names ...string) {
	for _, n := range names {
		if err := fs.SetAnnotation(n, secretKey, []string{"true"}); err != nil {
			panic(err) // a programming error: no such flag
		}
	}
}

// NotInFile marks flags that are no setting (--config, --version,
// --print-config): a file may not give them and Print leaves them out.
func NotInFile(fs *pflag.FlagSet, names ...string) {
	for _, n := range names {
		if err := fs.SetAnnotation(n, notInFileKey, []string{"true"}); err != nil {
			panic(err)
		}
	}
}

func annotated(f *pflag.Flag, key string) bool { return len(f.Annotations[key]) > 0 }

// Apply reads the YAML file and sets, for each of its keys, the flag of
// that name, unless the command line set it already (fs.Changed): flags
// win. The file is a mapping of flag names to values: a string, number or
// boolean as the flag takes it, a list for a repeatable flag, a duration as
// a string such as 25ms or 168h; a key with no value leaves the flag alone.
// Errors name the file, line and column: "--config FILE:2:13: ...".
func Apply(fs *pflag.FlagSet, file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("--%s: %w", Flag, err)
	}
	return ApplyBytes(fs, file, b)
}

// ApplyBytes is Apply on the file's content b; file names it in errors.
func ApplyBytes(fs *pflag.FlagSet, file string, b []byte) error {
	f, err := parser.ParseBytes(b, 0)
	if err != nil {
		var ye yaml.Error
		if errors.As(err, &ye) && ye.GetToken() != nil {
			return posErr(file, ye.GetToken().Position.Line, ye.GetToken().Position.Column, "%s", ye.GetMessage())
		}
		return fmt.Errorf("--%s %s: %w", Flag, file, err)
	}
	for _, doc := range f.Docs {
		var pairs []*ast.MappingValueNode
		switch body := doc.Body.(type) {
		case nil, *ast.CommentGroupNode:
			continue
		case *ast.MappingNode:
			pairs = body.Values
		case *ast.MappingValueNode:
			pairs = []*ast.MappingValueNode{body}
		default:
			return nodeErr(file, body, "want a mapping of settings (flag names) to values, not a %s", kind(body))
		}
		for _, kv := range pairs {
			if err := apply(fs, file, kv); err != nil {
				return err
			}
		}
	}
	return nil
}

func apply(fs *pflag.FlagSet, file string, kv *ast.MappingValueNode) error {
	key := strings.TrimSpace(kv.Key.String())
	fl := fs.Lookup(key)
	if fl == nil || annotated(fl, notInFileKey) || fl.Name == "help" {
		hint := ""
		if alt := strings.ReplaceAll(key, "_", "-"); alt != key && fs.Lookup(alt) != nil {
			hint = fmt.Sprintf(" (did you mean %s?)", alt)
		}
		return nodeErr(file, kv.Key, "unknown key %q: not a setting of %s%s", key, fs.Name(), hint)
	}
	v := unwrap(kv.Value)
	if _, null := v.(*ast.NullNode); null || v == nil {
		return nil // "key:" with no value: not set
	}
	if fs.Changed(key) {
		return nil // the command line wins
	}
	if seq, ok := v.(*ast.SequenceNode); ok {
		sv, isList := fl.Value.(pflag.SliceValue)
		if !isList {
			return nodeErr(file, v, "%s takes one value, not a list", key)
		}
		if len(seq.Values) == 0 && len(sv.GetSlice()) == 0 {
			return nil // [] for a list that is empty already
		}
		items := make([]string, 0, len(seq.Values))
		for _, it := range seq.Values {
			s, err := scalar(fl, file, key, unwrap(it))
			if err != nil {
				return err
			}
			items = append(items, s)
		}
		if err := sv.Replace(items); err != nil {
			return nodeErr(file, v, "%s: %v", key, err)
		}
		fl.Changed = true
		return nil
	}
	s, err := scalar(fl, file, key, v)
	if err != nil {
		return err
	}
	if _, isList := fl.Value.(pflag.SliceValue); !isList && s == fl.DefValue {
		// The default written out (as --print-config does) is no setting:
		// the flag stays unchanged, as checks of fs.Changed expect.
		return nil
	}
	// One value for a list flag is a list of one (a comma-separated
	// flag splits it as on the command line): the flag was not set, so
	// Set replaces its default.
	if err := fs.Set(key, s); err != nil {
		return nodeErr(file, v, "%s: %v", key, cleanSetErr(err))
	}
	return nil
}

// scalar is a value node as the flag's Set takes it, checked against the
// flag's type where YAML would read something else silently (1.5 for a
// count, 25 for a duration).
func scalar(fl *pflag.Flag, file, key string, v ast.Node) (string, error) {
	var s string
	switch n := v.(type) {
	case *ast.StringNode:
		s = n.Value
	case *ast.LiteralNode:
		s = n.Value.Value
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		s = n.GetToken().Value
	default:
		return "", nodeErr(file, v, "%s wants a value, not a %s", key, kind(v))
	}
	typ := fl.Value.Type()
	if _, ok := fl.Value.(pflag.SliceValue); ok {
		typ = strings.TrimSuffix(strings.TrimSuffix(typ, "Slice"), "Array")
	}
	switch typ {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "count":
		if _, ok := v.(*ast.IntegerNode); !ok {
			return "", nodeErr(file, v, "%s must be a whole number, not %s", key, s)
		}
	case "bool":
		if _, ok := v.(*ast.BoolNode); !ok {
			return "", nodeErr(file, v, "%s must be true or false, not %s", key, s)
		}
	case "duration":
		if _, ok := v.(*ast.StringNode); !ok {
			return "", nodeErr(file, v, "%s is not a duration (write e.g. 25ms, 5s or 168h)", s)
		}
	}
	return s, nil
}

func unwrap(n ast.Node) ast.Node {
	for {
		switch t := n.(type) {
		case *ast.TagNode:
			n = t.Value
		case *ast.AnchorNode:
			n = t.Value
		default:
			return n
		}
	}
}

// cleanSetErr drops pflag's wrapping of a Set error (it names the value
// and the flag, which the position already says).
func cleanSetErr(err error) error {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && strings.HasPrefix(msg, "invalid argument") {
		return errors.New(msg[i+2:])
	}
	return err
}

func kind(n ast.Node) string {
	switch n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "mapping"
	case *ast.SequenceNode:
		return "list"
	}
	return n.Type().String()
}

func nodeErr(file string, n ast.Node, format string, args ...any) error {
	tok := n.GetToken()
	if tok == nil {
		return fmt.Errorf("--%s %s: %s", Flag, file, fmt.Sprintf(format, args...))
	}
	return posErr(file, tok.Position.Line, tok.Position.Column, format, args...)
}

func posErr(file string, line, col int, format string, args ...any) error {
	return fmt.Errorf("--%s %s:%d:%d: %s", Flag, file, line, col, fmt.Sprintf(format, args...))
}

// Print writes fs's settings as a file Apply reads back to the same
// values: each flag's help as a comment, then its key and current value.
// Secrets are written commented out, without their value.
func Print(w io.Writer, fs *pflag.FlagSet) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s settings: every key is a flag of the same name (flags on the command line win over this file).\n", fs.Name())
	fs.VisitAll(func(f *pflag.Flag) {
		if annotated(f, notInFileKey) || f.Name == "help" || f.Hidden {
			return
		}
		_, usage := pflag.UnquoteUsage(f)
		b.WriteString("\n")
		for _, l := range strings.Split(usage, "\n") {
			b.WriteString("# " + l + "\n")
		}
		if annotated(f, secretKey) {
			fmt.Fprintf(&b, "# %s: (a secret: not printed)\n", f.Name)
			return
		}
		fmt.Fprintf(&b, "%s: %s\n", f.Name, value(f))
	})
	_, err := io.WriteString(w, b.String())
	return err
}

// value is f's current value in YAML.
func value(f *pflag.Flag) string {
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		items := sv.GetSlice()
		q := make([]string, len(items))
		for i, s := range items {
			q[i] = quote(s)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	s := f.Value.String()
	switch f.Value.Type() {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "count", "bool":
		return s
	case "float32", "float64":
		if _, err := strconv.ParseFloat(s, 64); err == nil {
			return s
		}
	}
	return quote(s)
}

// quote writes s as a YAML double-quoted scalar (a JSON string is one).
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
