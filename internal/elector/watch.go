package elector

import (
	"context"
	"sync"

	"github.com/hustings/hustings/backends"
)

// watchAll watches every name and merges the signals into one channel
// (buffer 1, coalescing). With one name it is the backend's own channel.
// With more, one goroutine per name forwards signals, tracked by wg; the
// first source to close cancels the rest (cancel ends ctx), and the merged
// channel closes when all have stopped, so the receiver sets the watch up
// again.
func watchAll(ctx context.Context, cancel context.CancelFunc, w backends.Watcher, names []string, wg *sync.WaitGroup) (<-chan struct{}, error) {
	if len(names) == 1 {
		return w.Watch(ctx, names[0])
	}
	sources := make([]<-chan struct{}, 0, len(names))
	for _, n := range names {
		ch, err := w.Watch(ctx, n)
		if err != nil {
			cancel() // closes the sources opened so far
			return nil, err
		}
		sources = append(sources, ch)
	}
	merged := make(chan struct{}, 1)
	var forwarders sync.WaitGroup
	for _, src := range sources {
		forwarders.Add(1)
		wg.Go(func() {
			defer forwarders.Done()
			for range src {
				select {
				case merged <- struct{}{}:
				default:
				}
			}
			cancel()
		})
	}
	wg.Go(func() {
		forwarders.Wait()
		close(merged)
	})
	return merged, nil
}
