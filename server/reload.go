package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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

// reload loads the rules and hands them to every lane, which evaluates its
// running launches again with them (lane.Lane.Reload: a new rule looks at
// the launch already running, a finding no rule raises any more is
// retracted); the findings of rules removed are retracted, those of
// launches no longer running included.
func (s *server) reload(why string) {
	rules, err := rule.Load(s.cfg.RuleDirs, s.cfg.RulesOnly)
	if err != nil {
		s.reloads.failed(time.Now())
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
	var removed []string
	for _, r := range s.running.Rules() {
		if !slices.ContainsFunc(rules, func(n *rule.Rule) bool { return n.ID == r.ID }) {
			removed = append(removed, r.ID)
		}
	}
	s.running.SetRules(rules)
	for _, l := range s.allLanes() {
		l.Reload(rules)
	}
	retracted := 0
	if s.announcer != nil {
		retracted = s.announcer.RetractRules(removed)
	}
	s.reloads.succeeded(time.Now())
	s.log.Info("rules reloaded", "rules", len(rules), "why", why, "removed", removed, "retracted", retracted)
}

// reloadState is the outcome of the last reload, for /metrics.
type reloadState struct {
	mu       sync.Mutex
	ok       bool
	at, okAt time.Time // the last reload; the last that succeeded (the start's load counts)
}

func (r *reloadState) succeeded(at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ok, r.at, r.okAt = true, at, at
}

func (r *reloadState) failed(at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ok, r.at = false, at
}

// collectors are faultline_rules_last_reload_success (1 when the last
// reload loaded, 0 when it was rejected and older rules run) and the times
// of the last reload and of the last that succeeded, as Prometheus's own
// prometheus_config_last_reload_* are.
func (r *reloadState) collectors() []prometheus.Collector {
	get := func(f func() float64) func() float64 {
		return func() float64 {
			r.mu.Lock()
			defer r.mu.Unlock()
			return f()
		}
	}
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "faultline_rules_last_reload_success",
			Help: "Whether the last rule reload succeeded (1) or was rejected, the rules before it still running (0)."},
			get(func() float64 {
				if r.ok {
					return 1
				}
				return 0
			})),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "faultline_rules_last_reload_timestamp_seconds",
			Help: "Unix time of the last rule reload (or of the start's load)."},
			get(func() float64 { return float64(r.at.UnixNano()) / 1e9 })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "faultline_rules_last_reload_success_timestamp_seconds",
			Help: "Unix time of the last rule reload that succeeded (or of the start's load)."},
			get(func() float64 { return float64(r.okAt.UnixNano()) / 1e9 })),
	}
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
