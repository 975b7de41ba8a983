package consul

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/internal/record"
)

// feedWait is how long one blocking query of the feed waits for a
// change before Consul answers it unchanged.
const feedWait = 5 * time.Minute

// Notify runs the backend's feed: blocking queries on the whole prefix,
// each answered with every key under it once one changed (Consul's
// blocking queries return the whole result). It tells changes apart by
// comparing each answer's ModifyIndexes with the last answer's: a lock
// key written or deleted is Changed, a session key deleted is Ended.
func (d *driver) Notify(ctx context.Context, f *record.Feed) error {
	seen := map[string]uint64{} // key → ModifyIndex, as last answered
	var index uint64
	for first := true; ; first = false {
		q := (&api.QueryOptions{WaitIndex: index, WaitTime: feedWait}).WithContext(ctx)
		kvs, meta, err := d.c.KV().List(d.prefix, q)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			return fmt.Errorf("%w: consul: the feed's blocking query: %w", backends.ErrUnavailable, err)
		}
		if meta.LastIndex == index && !first {
			continue // answered unchanged at the wait's end
		}
		d.deliver(f, seen, kvs, meta.LastIndex, first)
		if first {
			f.Ready()
		}
		// An index that went back (a restored snapshot, a reaped
		// tombstone) starts the blocking over, as Consul asks.
		index = meta.LastIndex
		if index == 0 {
			index = 1
		}
	}
}

// deliver reports what changed from seen to kvs (answered at index) and
// makes seen kvs; the first answer only fills seen.
func (d *driver) deliver(f *record.Feed, seen map[string]uint64, kvs api.KVPairs, index uint64, first bool) {
	now := make(map[string]bool, len(kvs))
	for _, kv := range kvs {
		now[kv.Key] = true
		if v, ok := seen[kv.Key]; ok && v == kv.ModifyIndex {
			continue
		}
		seen[kv.Key] = kv.ModifyIndex
		if name, ok := d.lockName(kv.Key); ok && !first {
			l, _ := decodeLock(name, kv)
			f.Changed(l)
		}
	}
	for key, v := range seen {
		if now[key] {
			continue
		}
		delete(seen, key)
		if name, ok := d.lockName(key); ok {
			f.Changed(record.Lock{Name: name, Version: max(index, v+1)})
		} else if sid, ok := strings.CutPrefix(key, d.prefix+sessionDir); ok {
			f.Ended(sid)
		}
	}
}

// lockName returns the lock name of a lock key.
func (d *driver) lockName(key string) (string, bool) {
	seg, ok := strings.CutPrefix(key, d.prefix+lockDir)
	if !ok || strings.Contains(seg, "/") {
		return "", false
	}
	return unescape(seg), true
}
