package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/faultline/faultline/rule"
)

// watchRules reloads the rules whenever a rule directory changes or a
// reload is asked for (cfg.Reload). It polls a digest of names, sizes and
// modification times: this is portable, needs no extra dependency, and a
// rule edit a fraction of a second late is fine. A set that fails to load
// is rejected with its file:line:col problems and the running rules stay.
// last is the digest the running rules were loaded at (taken at start, not
// when this goroutine gets to run: an edit in between was missed).
func (s *server) watchRules(ctx context.Context, last [32]byte) {
	var tick <-chan time.Time
	if len(s.cfg.RuleDirs) > 0 {
		t := time.NewTicker(s.cfg.ReloadInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-s.cfg.Reload:
			if !ok {
				s.cfg.Reload = nil // closed: no more asks
				continue
			}
			last = dirsDigest(s.cfg.RuleDirs)
			s.reload("signal")
		case <-tick:
			d := dirsDigest(s.cfg.RuleDirs)
			if d == last {
				continue
			}
			last = d
			s.reload("rule files changed")
		}
	}
}

func (s *server) reload(why string) {
	rules, err := rule.Load(s.cfg.RuleDirs, s.cfg.RulesOnly)
	if err != nil {
		var le *rule.LoadError
		if errors.As(err, &le) {
			for _, p := range le.Problems {
				s.log.Error("rule rejected, keeping the running rules", "problem", p.String())
			}
		} else {
			s.log.Error("rules rejected, keeping the running rules", "err", err)
		}
		return
	}
	for _, e := range s.engines() {
		e.SetRules(rules)
	}
	s.log.Info("rules reloaded", "rules", len(rules), "why", why)
}

// dirsDigest hashes what identifies the state of the rule files.
func dirsDigest(dirs []string) [32]byte {
	h := sha256.New()
	for _, d := range dirs {
		filepath.WalkDir(d, func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return nil
			}
			if info, err := os.Stat(path); err == nil {
				fmt.Fprintf(h, "%s\x00%d\x00%d\n", path, info.Size(), info.ModTime().UnixNano())
			}
			return nil
		})
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}
