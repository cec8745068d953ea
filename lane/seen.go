package lane

import "sync"

// Seen remembers the last n record IDs, so a redelivered record is not
// evaluated twice. Bounded: older IDs fall out in insertion order.
type Seen struct {
	mu   sync.Mutex
	ids  map[string]struct{}
	ring []string
	next int
}

// NewSeen remembers n IDs.
func NewSeen(n int) *Seen {
	return &Seen{ids: make(map[string]struct{}, n), ring: make([]string, n)}
}

// Add reports whether id is new.
func (s *Seen) Add(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.ids[id]; ok {
		return false
	}
	if old := s.ring[s.next]; old != "" {
		delete(s.ids, old)
	}
	s.ring[s.next] = id
	s.ids[id] = struct{}{}
	s.next = (s.next + 1) % len(s.ring)
	return true
}
