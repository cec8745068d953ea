package rule

import (
	"maps"
	"slices"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/parsers"
)

// Launch markers. A new `vllm serve` (its version banner) or a restarted Ray
// head begins a launch; the API server coming up marks the launch healthy;
// a failure signal marks it failed. The signals are data of the pack
// (rules/launch.yaml, compiled in launchdata.go) and are found by the same
// Aho-Corasick pass as the matchers' literals.
const (
	markRayHead = iota
	markVLLM
	markHealthy
	markFailed
)

// firstOpener is the opener of the launch that ev opens in a cluster without
// launches: the checkpoint's launch keeps the opener the checkpoint names
// (even when the stream lost that record); a checkpoint written before
// openers were kept names none, and the replay's first record is taken.
func (cs *clusterState) firstOpener(ev *parsers.Event) string {
	switch {
	case cs.restored.Opener != "":
		return cs.restored.Opener
	case cs.restored != (LaunchMark{}):
		return openerID(ev)
	}
	return firstLaunch
}

func (e *Engine) newLaunch(cs *clusterState, opener string, ev *parsers.Event, pos uint64) *launchState {
	cs.seq++
	start := ev.Time
	if len(cs.launches) == 0 && !cs.restored.Start.IsZero() {
		start = cs.restored.Start // the checkpoint's launch, reopened by a record of it
	}
	ls := &launchState{num: cs.seq, opener: opener, pos: pos, minPos: pos, start: start, facts: map[string]*factState{},
		findings: map[string]*finding.Finding{}, ruleOf: map[string]*Rule{}}
	cs.launches = append(cs.launches, ls)
	if n := len(cs.launches) - maxLaunchesKept; n > 0 {
		for _, old := range cs.launches[:n] {
			e.retire(cs, old)
		}
		cs.launches = slices.Delete(cs.launches, 0, n)
		cs.forgetKept(cs.launches[0].start)
	}
	return ls
}

// trackLaunch starts a new launch on a launch marker and resolves the
// findings of earlier launches when a launch comes up healthy; ls is the
// launch ev's time belongs to (the last one, for a launch marker: one that
// comes late is placed by rebuild).
func (e *Engine) trackLaunch(cluster string, cs *clusterState, ls *launchState, ev *parsers.Event, pos uint64, msg string, hits []int, marks uint8) []finding.Finding {
	switch {
	case marks&(1<<markRayHead) != 0 && e.idx.launch.confirmed(markRayHead, msg):
		if ls.marked {
			ls = e.newLaunch(cs, openerID(ev), ev, pos)
		}
		ls.marked = true
	case marks&(1<<markVLLM) != 0 && e.idx.launch.confirmed(markVLLM, msg):
		if ls.vllmSeen {
			ls = e.newLaunch(cs, openerID(ev), ev, pos)
		}
		ls.marked, ls.vllmSeen = true, true
	case marks&(1<<markFailed) != 0 && e.idx.confirmedHit(markFailed, msg, hits):
		ls.log.failure(ev)
		if ls.failed {
			return nil
		}
		ls.failed = true
		return e.reevaluateOutcome(cluster, ls, ev)
	case marks&(1<<markHealthy) != 0 && e.idx.launch.confirmed(markHealthy, msg):
		ls.log.ready(ev)
		if ls.healthy {
			return nil
		}
		ls.healthy = true
		out := e.reevaluateOutcome(cluster, ls, ev)
		resolve := func(f *finding.Finding) {
			if f.Status == finding.Active {
				f.Status = finding.Resolved
				f.Updates++
				out = append(out, e.snapshot(f))
			}
		}
		for _, f := range cs.unresolved {
			resolve(f)
		}
		cs.unresolved = nil
		for _, old := range cs.launches {
			if old.num >= ls.num {
				continue
			}
			for _, id := range sortedIDs(old.findings) {
				resolve(old.findings[id])
			}
		}
		return out
	}
	return nil
}

// reevaluateOutcome re-runs the rules whose conditions read the outcome, now
// that it changed.
func (e *Engine) reevaluateOutcome(cluster string, ls *launchState, ev *parsers.Event) []finding.Finding {
	var out []finding.Finding
	for _, r := range e.rules {
		if !r.usesOutcome {
			continue
		}
		if f := e.evaluate(r, cluster, ls, ev); f != nil {
			out = append(out, *f)
		}
	}
	return out
}

// outcome is how far the launch got: "ready" once the API server came up,
// else "failed" once a failure signal was seen, else "running".
func (ls *launchState) outcome() string {
	switch {
	case ls.healthy:
		return "ready"
	case ls.failed:
		return "failed"
	}
	return "running"
}

// sortedIDs are a launch's finding IDs in order (findings resolved together
// come out in the same order every time).
func sortedIDs(m map[string]*finding.Finding) []string {
	return slices.Sorted(maps.Keys(m))
}
