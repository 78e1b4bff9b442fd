package streams

import (
	"sync"

	"github.com/supplyplan/supplyplan"
)

// Bus is the in-process event bus: every published domain event goes to every subscriber, in
// publish order per publisher, synchronously (subscribers must hand work off, not block).
type Bus struct {
	mu   sync.RWMutex
	next int
	subs map[int]func(supplyplan.DomainEvent)
}

// NewBus returns an empty bus.
func NewBus() *Bus { return &Bus{subs: map[int]func(supplyplan.DomainEvent){}} }

// Publish delivers e to every subscriber.
func (b *Bus) Publish(e supplyplan.DomainEvent) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for _, fn := range b.subs {
		fn(e)
	}
}

// Subscribe registers fn and returns a function that removes it.
func (b *Bus) Subscribe(fn func(supplyplan.DomainEvent)) (unsubscribe func()) {
	b.mu.Lock()
	id := b.next
	b.next++
	b.subs[id] = fn
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		delete(b.subs, id)
		b.mu.Unlock()
	}
}
