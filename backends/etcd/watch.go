package etcd

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hustings/hustings/internal/validate"
)

// Watch reads the current revision of name's key (one round trip), then
// watches the key and its guard key from the revision after it: a watch
// that starts at a revision the server has not yet written is in etcd's
// synced group, so a release is pushed at once rather than on etcd's next
// catch-up pass (~100 ms later). The channel receives a value (coalesced,
// buffer of one) on every change of the key or its guard. When the watch
// is compacted away, Watch reads the revision again, watches from there
// and sends a value, as changes may have been missed. The channel is
// closed when ctx ends, and also when the client is closed or the watch
// breaks otherwise; receivers then poll or watch again. A goroutine pumps
// the watch until then.
func (b *Backend) Watch(ctx context.Context, name string) (<-chan struct{}, error) {
	return b.watch(ctx, name, false)
}

// WatchReleases is Watch for a candidate waiting for name: it signals
// when the lock key or its guard key is deleted (a Release, the end of
// the holder's session or of the lock's lease), not when the lock is
// taken or a holder rebinds it to a hold. Call it after an Acquire found
// the lock held, then Acquire again before waiting: a release between the
// two Acquires is not missed.
func (b *Backend) WatchReleases(ctx context.Context, name string) (<-chan struct{}, error) {
	return b.watch(ctx, name, true)
}

// watch is Watch, or WatchReleases if releases.
func (b *Backend) watch(ctx context.Context, name string, releases bool) (<-chan struct{}, error) {
	if err := validate.Name(name); err != nil {
		return nil, err
	}
	if err := ctxErr(ctx, "watch"); err != nil {
		return nil, err
	}
	key := b.lockKey(name)
	rev, err := b.revision(ctx, key)
	if err != nil {
		return nil, err
	}
	out := make(chan struct{}, 1)
	go b.pump(ctx, key, rev, releases, out)
	return out, nil
}

// revision returns the store's revision, read with key's range.
func (b *Backend) revision(ctx context.Context, key string) (int64, error) {
	resp, err := b.client.Get(ctx, key, clientv3.WithRange(watchEnd(key)), clientv3.WithCountOnly())
	if err != nil {
		return 0, translate(ctx, "watch", err)
	}
	return resp.Header.Revision, nil
}

// pump signals out on each change of key after revision rev (each
// deletion, if releases) until ctx ends or the watch breaks, then closes
// out.
func (b *Backend) pump(ctx context.Context, key string, rev int64, releases bool, out chan<- struct{}) {
	defer close(out)
	for {
		next, ok := b.follow(ctx, key, rev, releases, out)
		if !ok {
			return
		}
		signal(out) // changes between rev and next may be lost
		rev = next
	}
}

// follow watches key from rev+1 and signals out on each change (each
// deletion, if releases). It returns the current revision and true when
// the watch was compacted away, and false when ctx ended or the watch
// broke.
func (b *Backend) follow(ctx context.Context, key string, rev int64, releases bool, out chan<- struct{}) (int64, bool) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the etcd watch when we stop following it
	opts := []clientv3.OpOption{clientv3.WithRange(watchEnd(key)), clientv3.WithRev(rev + 1)}
	if releases {
		opts = append(opts, clientv3.WithFilterPut()) // the server sends deletions alone
	}
	wch := b.client.Watch(wctx, key, opts...)
	for {
		select {
		case <-ctx.Done():
			return 0, false
		case resp, ok := <-wch:
			switch {
			case !ok:
				return 0, false
			case resp.CompactRevision != 0:
				next, err := b.revision(ctx, key)
				return next, err == nil
			case resp.Err() != nil || resp.Canceled:
				return 0, false
			case len(resp.Events) > 0:
				signal(out)
			}
		}
	}
}

// signal sends on out without blocking: a pending value already says
// that something changed.
func signal(out chan<- struct{}) {
	select {
	case out <- struct{}{}:
	default:
	}
}
