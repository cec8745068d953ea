package lane

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/transport"
)

// Shippers tells when two shipper processes publish under one node name:
// two shippers left at the default --node (the host name) on hosts cloned
// with one name, or two compose stacks given the same FAULTLINE_NODE. Their
// records read as one node's, so a fix would say "on vm: VLLM_HOST_IP=..."
// twice. Each batch names the process that published it
// (transport.HeaderShipper, new at every start); a restarted shipper is a
// new process whose batches all come after the old one's, whereas two
// processes publishing at once interleave: that is what is said — logged
// once, counted by Conflicts (serve's faultline_node_shippers) and noted
// on the findings of that node (Annotate).
//
// Times are the stream's (when JetStream stored each batch), so a replay
// after a restart finds the same. One Shippers serves every lane of a
// process; it is safe for concurrent use.
type Shippers struct {
	// Window: a process not seen for this long (stream time) no longer
	// counts, and its span is forgotten after twice as long.
	window time.Duration
	log    *slog.Logger

	mu     sync.Mutex
	latest time.Time // the latest batch time seen
	nodes  map[nodeName]*nodeShippers
	noted  map[string]string // finding ID and node → the note it was given once
}

// DefaultShippersWindow is how long a shipper process counts after its
// last batch.
const DefaultShippersWindow = 5 * time.Minute

type nodeName struct{ cluster, node string }

type nodeShippers struct {
	spans map[string]*span // by process identity
	// busy are the processes found publishing at once, sorted (nil: none).
	busy []string
}

// span is when one process published under a node name (stream times).
type span struct{ first, last time.Time }

// NewShippers returns a tracker with window (DefaultShippersWindow when 0).
func NewShippers(window time.Duration, log *slog.Logger) *Shippers {
	if window <= 0 {
		window = DefaultShippersWindow
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Shippers{window: window, log: log, nodes: map[nodeName]*nodeShippers{}, noted: map[string]string{}}
}

// Conflict is a node name under which several processes publish at once.
type Conflict struct {
	Cluster, Node string
	Shippers      []string // their identities, sorted
}

// Observe notes batch b's publisher for each node its records name. It
// returns the node names whose conflict is new or grew with b (once per
// change: the caller re-offers the findings those nodes are in).
func (s *Shippers) Observe(b *transport.Batch) []Conflict {
	if s == nil || b.Shipper == "" || len(b.Records) == 0 {
		return nil
	}
	t := b.Stored
	if t.IsZero() {
		t = time.Now()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.After(s.latest) {
		s.latest = t
	}
	var out []Conflict
	var last nodeName
	for i := range b.Records {
		k := nodeName{b.Records[i].Cluster, b.Records[i].Node}
		if i > 0 && k == last {
			continue
		}
		last = k
		if c, grew := s.see(k, b.Shipper, t); grew && !slices.ContainsFunc(out, func(o Conflict) bool { return o.Cluster == c.Cluster && o.Node == c.Node }) {
			out = append(out, c)
		}
	}
	for _, c := range out {
		s.log.Warn("two shipper processes publish under one node name: their records read as one node's, so facts of different machines are attributed to one; give each shipper its own --node",
			"cluster", c.Cluster, "node", c.Node, "shippers", strings.Join(c.Shippers, ", "))
	}
	return out
}

// see records that process id published under k at t; it says whether
// the processes found publishing at once under k grew.
func (s *Shippers) see(k nodeName, id string, t time.Time) (Conflict, bool) {
	n := s.nodes[k]
	if n == nil {
		n = &nodeShippers{spans: map[string]*span{}}
		s.nodes[k] = n
	}
	sp := n.spans[id]
	if sp == nil {
		sp = &span{first: t, last: t}
		n.spans[id] = sp
	} else if t.After(sp.last) {
		sp.last = t
	}
	for other, o := range n.spans {
		if o.last.Before(s.latest.Add(-2 * s.window)) {
			delete(n.spans, other) // a process long gone (a restart's predecessor)
		}
	}
	before := n.busy
	s.refresh(n)
	grew := slices.ContainsFunc(n.busy, func(id string) bool { return !slices.Contains(before, id) })
	return Conflict{Cluster: k.cluster, Node: k.node, Shippers: slices.Clone(n.busy)}, grew
}

// refresh recomputes n.busy at the latest time and returns it.
func (s *Shippers) refresh(n *nodeShippers) []string {
	n.busy = s.busyLocked(n)
	return n.busy
}

// busyLocked lists the processes of n seen within the window whose spans
// overlap another's: each published after the other had begun.
func (s *Shippers) busyLocked(n *nodeShippers) []string {
	var busy []string
	since := s.latest.Add(-s.window)
	for id, a := range n.spans {
		if a.last.Before(since) {
			continue
		}
		for other, b := range n.spans {
			if other != id && !b.last.Before(since) && a.first.Before(b.last) && b.first.Before(a.last) {
				busy = append(busy, id)
				break
			}
		}
	}
	if len(busy) < 2 {
		return nil
	}
	slices.Sort(busy)
	return busy
}

// Conflicts are the node names under which several processes publish at
// once now (within the window of the latest batch).
func (s *Shippers) Conflicts() []Conflict {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Conflict
	for k, n := range s.nodes {
		if len(s.refresh(n)) > 0 {
			out = append(out, Conflict{Cluster: k.cluster, Node: k.node, Shippers: slices.Clone(n.busy)})
		}
	}
	slices.SortFunc(out, func(a, b Conflict) int {
		return strings.Compare(a.Cluster+"\x00"+a.Node, b.Cluster+"\x00"+b.Node)
	})
	return out
}

// Note is what a finding on node k says of the conflict.
func (c Conflict) Note() string {
	return fmt.Sprintf("node %s: %d shipper processes publish under this name at once (%s), so the records of different machines read as one node's and a fact may belong to another machine; give each shipper its own --node",
		c.Node, len(c.Shippers), strings.Join(c.Shippers, ", "))
}

// Annotate adds to each finding (in place: fs are the engine's copies) the
// note of every node of it under which several processes publish now. A
// finding noted once keeps the note in later versions (its evidence was
// read while they did) for the life of the process.
func (s *Shippers) Annotate(fs []finding.Finding) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range fs {
		f := &fs[i]
		var notes []string
		for _, node := range f.Nodes {
			key := f.ID + "\x00" + node
			if n := s.nodes[nodeName{f.Cluster, node}]; n != nil && len(s.refresh(n)) > 0 {
				if len(s.noted) >= maxNoted {
					clear(s.noted)
				}
				s.noted[key] = Conflict{Cluster: f.Cluster, Node: node, Shippers: n.busy}.Note()
			}
			if note, ok := s.noted[key]; ok {
				notes = append(notes, note)
			}
		}
		if len(notes) > 0 {
			f.Notes = append(slices.Clone(f.Notes), notes...)
		}
	}
}

// maxNoted bounds the notes kept for findings noted once.
const maxNoted = 10000
