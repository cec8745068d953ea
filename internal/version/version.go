// Package version tells which build of Faultline is running, from what the
// Go toolchain records in every binary (module version, VCS revision and
// time), so that a bug report can name it without a release process.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version, when set at link time (-ldflags "-X
// github.com/faultline/faultline/internal/version.Version=v1.2.3"), wins
// over the module version the toolchain recorded.
var Version string

// Info describes the running build.
type Info struct {
	Version  string `json:"version"`            // module version, "(devel)" for a plain go build
	Revision string `json:"revision,omitempty"` // VCS commit
	Time     string `json:"time,omitempty"`     // commit time, RFC 3339
	Modified bool   `json:"modified,omitempty"` // built from a tree with uncommitted changes
	Go       string `json:"go"`
}

// Get reads the build information of this binary.
func Get() Info {
	info := Info{Version: "(devel)", Go: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" {
			info.Version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Revision = s.Value
			case "vcs.time":
				info.Time = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	if Version != "" {
		info.Version = Version
	}
	return info
}

// String is the one line --version prints: version, then what is known of
// the commit, then the Go version.
func (i Info) String() string {
	s := i.Version
	if i.Revision != "" {
		rev := i.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		s += " (" + rev
		if i.Time != "" {
			s += " " + i.Time
		}
		if i.Modified {
			s += ", modified"
		}
		s += ")"
	}
	return fmt.Sprintf("%s %s", s, i.Go)
}
