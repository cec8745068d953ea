package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/faultline/faultline/cluster"
)

// ClusterStatus is GET /api/cluster: the cluster as its members see it
// (`analyzer cluster status`). With local=1, one member's own part.
type ClusterStatus struct {
	Member       string           `json:"member"`
	Partitions   int              `json:"partitions"`
	Draining     bool             `json:"draining,omitempty"`
	Connected    bool             `json:"nats_connected"`
	HeartbeatAge float64          `json:"heartbeat_age_seconds"`
	Members      []cluster.Member `json:"members"`
	// Leases are the partitions owned, by every member that answered.
	Leases []LeaseStatus `json:"leases"`
	// Unowned are the partitions no member that answered owns.
	Unowned []int `json:"unowned"`
	// Unreachable are the members that did not answer, and why.
	Unreachable []string `json:"unreachable,omitempty"`
}

// LeaseStatus is one partition owned.
type LeaseStatus struct {
	Partition int    `json:"partition"`
	Owner     string `json:"owner"`
	Epoch     uint64 `json:"epoch"`
	Lag       uint64 `json:"lag"` // messages not read yet
	// State: starting (its reader opening), re-indexing (the index does
	// not hold the partition up to where it was when taken), replaying
	// (the rules catching up), live.
	State   string `json:"state"`
	Indexed uint64 `json:"indexed_seq"`              // the index holds the partition up to this stream sequence
	Target  uint64 `json:"reindex_to_seq,omitempty"` // while re-indexing: up to where
}

// clusterStatus answers /api/cluster.
func (s *server) clusterStatus(w http.ResponseWriter, r *http.Request) {
	n := s.node.Load()
	if n == nil {
		http.Error(w, "not a cluster member (serve runs on one machine)", http.StatusNotFound)
		return
	}
	st := s.localStatus(n)
	if r.URL.Query().Get("local") != "1" {
		s.peerStatus(r.Context(), n, &st)
	}
	owned := map[int]bool{}
	for _, l := range st.Leases {
		owned[l.Partition] = true
	}
	st.Unowned = []int{}
	for p := range st.Partitions {
		if !owned[p] {
			st.Unowned = append(st.Unowned, p)
		}
	}
	slices.SortFunc(st.Leases, func(a, b LeaseStatus) int { return a.Partition - b.Partition })
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(st)
}

// localStatus is this member's own part.
func (s *server) localStatus(n *cluster.Node) ClusterStatus {
	st := ClusterStatus{Member: n.ID(), Partitions: n.Partitions(), Draining: n.Draining(),
		Connected: s.nc.IsConnected(), HeartbeatAge: n.SinceHeartbeat().Seconds(), Members: n.Members(), Leases: []LeaseStatus{}}
	epochs := n.Epochs()
	for _, p := range n.Owned() {
		l := LeaseStatus{Partition: p, Owner: n.ID(), Epoch: epochs[p], Indexed: s.progress.get(p), State: "starting"}
		if pl := s.lanes.get(p); pl != nil {
			l.Lag = pl.Pending()
			select {
			case <-pl.Ready():
				l.State = "live"
			default:
				l.State = "replaying"
			}
			if l.Indexed < pl.target {
				l.State, l.Target = "re-indexing", pl.target
			}
		}
		st.Leases = append(st.Leases, l)
	}
	return st
}

// peerStatus adds every other live member's own part to st.
func (s *server) peerStatus(ctx context.Context, n *cluster.Node, st *ClusterStatus) {
	client := &http.Client{Timeout: 5 * time.Second}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, m := range st.Members {
		if m.ID == n.ID() {
			continue
		}
		wg.Go(func() {
			peer, err := fetchStatus(ctx, client, m.HTTP, s.cfg.HTTPToken)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				st.Unreachable = append(st.Unreachable, fmt.Sprintf("%s: %v", m.ID, err))
				return
			}
			st.Leases = append(st.Leases, peer.Leases...)
		})
	}
	wg.Wait()
	slices.Sort(st.Unreachable)
}

func fetchStatus(ctx context.Context, client *http.Client, base, token string) (ClusterStatus, error) {
	var st ClusterStatus
	if base == "" {
		return st, fmt.Errorf("no HTTP address advertised")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/cluster?local=1", nil)
	if err != nil {
		return st, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("%s", resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// drain answers POST /api/cluster/drain: this member gives its partitions
// up and takes none, while it stays up (before maintenance).
func (s *server) drain(w http.ResponseWriter, _ *http.Request) {
	n := s.node.Load()
	if n == nil {
		http.Error(w, "not a cluster member (serve runs on one machine)", http.StatusNotFound)
		return
	}
	n.Drain()
	s.log.Info("draining: giving every partition up, taking none", "member", n.ID())
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"member": n.ID(), "draining": true, "owned": n.Owned()})
}
