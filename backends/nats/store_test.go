package nats_test

// The behaviours of JetStream's key-value store that the backend is built
// on, held against the real server: if an upgrade changes one, these fail
// before the contract suite does.

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hustings/hustings/backends/nats/natstest"
	"github.com/hustings/hustings/internal/testserver"
)

// bucket makes a bucket with per-key TTLs (limit markers kept markerTTL)
// on a server of its own, or on srv if given.
func bucket(t *testing.T, srv *natstest.Server) (jetstream.JetStream, jetstream.KeyValue, *natstest.Server) {
	t.Helper()
	if srv == nil {
		srv = natstest.Start(t)
	}
	js, err := jetstream.New(natstest.Conn(t, srv.URL()))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: "facts", LimitMarkerTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return js, kv, srv
}

// ttlPublish writes key with a TTL, conditioned on its last revision (0:
// none), as KeyValue.Update cannot: it sends no TTL.
func ttlPublish(ctx context.Context, js jetstream.JetStream, key string, last uint64, ttl time.Duration) (uint64, error) {
	m := &nats.Msg{Subject: "$KV.facts." + key, Data: []byte("v")}
	ack, err := js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(last), jetstream.WithMsgTTL(ttl))
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// wrongLast reports whether err is JetStream's "wrong last sequence", the
// answer to every failed condition on a key's revision.
func wrongLast(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// TestStoreCompareAndSwap: Create takes an absent key and refuses a
// present one; Update and Delete with LastRevision apply only on the
// key's last revision; a Create over a delete marker succeeds.
func TestStoreCompareAndSwap(t *testing.T) {
	_, kv, _ := bucket(t, nil)
	ctx := t.Context()
	r1, err := kv.Create(ctx, "k", []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Create(ctx, "k", []byte("b")); !errors.Is(err, jetstream.ErrKeyExists) || !wrongLast(err) {
		t.Fatalf("second Create: %v, want ErrKeyExists (wrong last sequence)", err)
	}
	if _, err := kv.Update(ctx, "k", []byte("b"), r1+100); !errors.Is(err, jetstream.ErrKeyRevisionMismatch) || !wrongLast(err) {
		t.Fatalf("Update on a wrong revision: %v, want ErrKeyRevisionMismatch", err)
	}
	r2, err := kv.Update(ctx, "k", []byte("b"), r1)
	if err != nil || r2 <= r1 {
		t.Fatalf("Update on the last revision = %d, %v; want > %d", r2, err, r1)
	}
	if err := kv.Delete(ctx, "k", jetstream.LastRevision(r1)); !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		t.Fatalf("Delete on a stale revision: %v, want ErrKeyRevisionMismatch", err)
	}
	if err := kv.Delete(ctx, "k", jetstream.LastRevision(r2)); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctx, "k"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("Get after Delete: %v, want ErrKeyNotFound", err)
	}
	r3, err := kv.Create(ctx, "k", []byte("c"))
	if err != nil || r3 <= r2 {
		t.Fatalf("Create over the delete marker = %d, %v; want > %d", r3, err, r2)
	}
}

// TestStoreCreateOverMarkerRacingDelete is nats-server #5162: Create over
// a delete marker is two writes (on revision 0, then on the marker's
// revision), and a delete between them makes it fail with "wrong last
// sequence" although the key is absent. The backend's create must treat
// that as "changed, read again", never as a failure of the server.
func TestStoreCreateOverMarkerRacingDelete(t *testing.T) {
	js, kv, _ := bucket(t, nil)
	ctx := t.Context()
	if _, err := kv.Create(ctx, "k", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	// Create's second step, by hand: the marker as its get saw it...
	history, err := kv.History(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	marker := history[len(history)-1]
	if marker.Operation() != jetstream.KeyValueDelete {
		t.Fatalf("last entry %v, want a delete marker", marker.Operation())
	}
	// ...a delete in between (a new marker, a new revision)...
	if err := kv.Delete(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	// ...and the write on the marker's revision fails, the key absent.
	_, err = ttlPublish(ctx, js, "k", marker.Revision(), time.Hour)
	if !wrongLast(err) {
		t.Fatalf("write on the stale marker's revision: %v, want wrong last sequence", err)
	}
	if _, err := kv.Get(ctx, "k"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("Get: %v, want ErrKeyNotFound: the key is absent all along", err)
	}

	// Under load, many creators and deleters of one key: every answer is
	// a revision or "wrong last sequence", and no two creators hold the
	// key at once (each deletes on the revision it created).
	var mu sync.Mutex
	holder := 0
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 1; w <= 8; w++ {
		wg.Go(func() {
			for range 50 {
				rev, err := kv.Create(ctx, "race", []byte("x"))
				if err != nil {
					if !wrongLast(err) {
						errs <- err
						return
					}
					continue
				}
				mu.Lock()
				if holder != 0 {
					mu.Unlock()
					errs <- errors.New("two creators hold the key at once")
					return
				}
				holder = w
				mu.Unlock()
				mu.Lock()
				holder = 0
				mu.Unlock()
				if err := kv.Delete(ctx, "race", jetstream.LastRevision(rev)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestStoreKeyTTL: a key written with a TTL is removed by the server no
// earlier than its TTL after the write (both times on the server's
// clock), and the removal leaves a marker that a watch sees; a Create
// over that marker succeeds. KeyValue.Update drops the TTL (it sends
// none), so a renewal must be a conditional publish with the TTL header.
func TestStoreKeyTTL(t *testing.T) {
	js, kv, _ := bucket(t, nil)
	ctx := t.Context()
	w, err := kv.Watch(ctx, "k", jetstream.UpdatesOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	rev, err := ttlPublish(ctx, js, "k", 0, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	put := next(t, w)
	if put.Revision() != rev || put.Operation() != jetstream.KeyValuePut {
		t.Fatalf("watch: %v at %d, want the put at %d", put.Operation(), put.Revision(), rev)
	}
	gone := next(t, w)
	if gone.Operation() != jetstream.KeyValuePurge || gone.Revision() <= rev {
		t.Fatalf("watch: %v at %d, want the expiry's marker after %d", gone.Operation(), gone.Revision(), rev)
	}
	late := gone.Created().Sub(put.Created())
	if late < time.Second {
		t.Fatalf("key removed %v after its write, before its TTL of 1s", late)
	}
	t.Logf("a key of TTL 1s removed %v after its write (server clock)", late)
	if _, err := kv.Create(ctx, "k", []byte("again")); err != nil {
		t.Fatalf("Create over the expiry's marker: %v", err)
	}

	// Renewed with the TTL, a key outlives its first TTL; updated
	// without, it never expires. A witness key written with the same TTL
	// just after the renewed key's first write tells when that first TTL
	// is over on the server's clock.
	r1, err := ttlPublish(ctx, js, "renewed", 0, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ttlPublish(ctx, js, "witness", 0, time.Second); err != nil {
		t.Fatal(err)
	}
	// Kept as a sleep: the renewal is to come mid-TTL, as a keep-alive's
	// does; nothing happens before it to wait on.
	time.Sleep(600 * time.Millisecond)
	if _, err := ttlPublish(ctx, js, "renewed", r1, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	u1, err := ttlPublish(ctx, js, "updated", 0, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Update(ctx, "updated", []byte("v"), u1); err != nil {
		t.Fatal(err)
	}
	testserver.Eventually(t, "the witness key expired", 30*time.Second, func() bool { return keyGone(t, kv, "witness") })
	if _, err := kv.Get(ctx, "renewed"); err != nil {
		t.Fatalf("renewed key after its first TTL (the witness's) ran out: %v", err)
	}
	// The renewed TTL ends 2.6s after the first write; the updated key's,
	// had Update kept it, 1.6s after.
	testserver.Eventually(t, "the renewed key expired after its renewed TTL", 10*time.Second, func() bool { return keyGone(t, kv, "renewed") })
	if _, err := kv.Get(ctx, "updated"); err != nil {
		t.Fatalf("key updated without a TTL, after the renewed key's 2s TTL ran out: %v (Update kept the TTL?)", err)
	}
}

// keyGone reports whether kv has no key k.
func keyGone(t *testing.T, kv jetstream.KeyValue, k string) bool {
	t.Helper()
	_, err := kv.Get(t.Context(), k)
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("Get(%q): %v", k, err)
	}
	return err != nil
}

// TestStoreTTLIsWholeSeconds: the server keeps a message TTL in whole
// seconds, truncated, and refuses one under a second; the backend rounds
// TTLs up.
func TestStoreTTLIsWholeSeconds(t *testing.T) {
	js, _, _ := bucket(t, nil)
	if _, err := ttlPublish(t.Context(), js, "short", 0, 500*time.Millisecond); err == nil {
		t.Fatal("a TTL of 500ms was accepted")
	}
}

// TestStoreRevisionsSurviveRestart: revisions strictly increase per
// bucket, across keys, deletes and expiries, and across a crash of the
// server even when every key had expired (an empty stream) before it.
func TestStoreRevisionsSurviveRestart(t *testing.T) {
	js, kv, srv := bucket(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var last uint64
	up := func(rev uint64, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if rev <= last {
			t.Fatalf("revision %d after %d", rev, last)
		}
		last = rev
	}
	up(kv.Create(ctx, "a", []byte("1")))
	up(kv.Create(ctx, "b", []byte("1")))
	up(kv.Put(ctx, "a", []byte("2")))
	up(ttlPublish(ctx, js, "c", 0, time.Second))
	if err := kv.Purge(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	// Wait until c expired and its marker (kept 1s) went too, and drop
	// the purge markers: the stream is empty.
	testserver.Eventually(t, "the stream empty", 30*time.Second, func() bool {
		if err := kv.PurgeDeletes(ctx, jetstream.DeleteMarkersOlderThan(-1)); err != nil {
			t.Fatal(err)
		}
		st, err := kv.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.Values() == 0
	})
	srv.Kill()
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	testserver.Eventually(t, "a Create after the restart", time.Minute, func() bool { // reconnecting
		rev, err := kv.Create(ctx, "d", []byte("1"))
		if err != nil && ctx.Err() == nil {
			return false
		}
		up(rev, err)
		return true
	})
}

// next returns the watch's next entry, failing the test after 30 s.
func next(t *testing.T, w jetstream.KeyWatcher) jetstream.KeyValueEntry {
	t.Helper()
	select {
	case e, ok := <-w.Updates():
		if !ok || e == nil {
			t.Fatalf("watch ended or sent its initial-values marker: %v", e)
		}
		return e
	case <-time.After(30 * time.Second):
		t.Fatal("nothing on the watch within 30s")
		return nil
	}
}
