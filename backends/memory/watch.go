package memory

import (
	"context"

	"github.com/hustings/hustings/internal/validate"
)

// Watch returns a channel that receives a value (coalesced, buffer of one)
// whenever name is acquired or released, its holder's session closes, or a
// call finds that its holder's lease or session expired. An expiry nobody
// calls about is not signalled: receivers must also poll. The Backend
// closes the channel when ctx ends; that is the only way to stop a watch.
func (b *Backend) Watch(ctx context.Context, name string) (<-chan struct{}, error) {
	if err := validate.Name(name); err != nil {
		return nil, err
	}
	if err := b.reach(ctx, ""); err != nil {
		return nil, err
	}
	ch := make(chan struct{}, 1)
	b.mu.Lock()
	set := b.watches[name]
	if set == nil {
		set = make(map[chan struct{}]struct{})
		b.watches[name] = set
	}
	set[ch] = struct{}{}
	b.mu.Unlock()
	context.AfterFunc(ctx, func() { b.unwatch(name, ch) })
	return ch, nil
}

// unwatch deregisters ch and closes it. Sends happen under b.mu, so none
// can follow the close.
func (b *Backend) unwatch(name string, ch chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	set := b.watches[name]
	delete(set, ch)
	if len(set) == 0 {
		delete(b.watches, name)
	}
	close(ch)
}

// signal wakes every watcher of name without blocking. b.mu must be held.
func (b *Backend) signal(name string) {
	for ch := range b.watches[name] {
		select {
		case ch <- struct{}{}:
		default: // a signal is already pending; they coalesce
		}
	}
}
