package web

import (
	"context"
	"sync"
)

// Hub fans values out to live subscribers (the SSE clients). Publish
// never blocks: a subscriber that cannot keep up loses values (and is told
// so by the handler), which is better than stalling the analyzer's
// pipeline behind a slow browser.
type Hub[T any] struct {
	mu     sync.Mutex
	subs   map[chan T]struct{}
	buffer int
}

// NewHub returns a hub whose subscribers each buffer up to buffer values.
func NewHub[T any](buffer int) *Hub[T] {
	return &Hub[T]{subs: map[chan T]struct{}{}, buffer: max(buffer, 1)}
}

// Publish sends v to every subscriber that has room for it.
func (h *Hub[T]) Publish(v T) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.subs {
		select {
		case c <- v:
		default:
		}
	}
}

// Subscribe returns a channel of published values until ctx ends.
func (h *Hub[T]) Subscribe(ctx context.Context) <-chan T {
	c := make(chan T, h.buffer)
	h.mu.Lock()
	h.subs[c] = struct{}{}
	h.mu.Unlock()
	go func() {
		<-ctx.Done()
		h.mu.Lock()
		delete(h.subs, c)
		h.mu.Unlock()
	}()
	return c
}

// Subscribers returns the number of current subscribers.
func (h *Hub[T]) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}
