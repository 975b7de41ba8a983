package nats

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/internal/record"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/validate"
)

// Fence writes value under key in the backend's bucket if, and only if,
// the lock name's record is still the one its term's take wrote, token
// being that write's revision: the write is conditioned on the last
// revision of the lock's subject (JetStream's
// Nats-Expected-Last-Subject-Sequence-Subject), so the check and the
// write are one atomic step of the stream. A term that ended (released,
// with or without a hold; taken over; its lease or record gone) gets an
// error matching backends.ErrNotHeld and writes nothing; so does token 0.
// It returns the write's revision. Concurrent Fence calls of one term do
// not conflict.
//
// key is any valid KV key outside the backend's own (session., lock.,
// member.), else backends.ErrInvalid; read it back with the bucket's
// KeyValue. Fence does not judge whether the holder's session still
// lives: a write it admits lands while no later term exists, since a
// later term's take changes the lock's record first.
func (b *Backend) Fence(ctx context.Context, name string, token events.Token, key string, value []byte) (uint64, error) {
	if err := validate.Name(name); err != nil {
		return 0, err
	}
	for _, p := range []string{sessionPrefix, lockPrefix, memberPrefix} {
		if strings.HasPrefix(key, p) {
			return 0, fmt.Errorf("%w: nats: fence: key %q is the backend's own", backends.ErrInvalid, key)
		}
	}
	if !validKey(key) {
		return 0, fmt.Errorf("%w: nats: fence: %q is not a valid key", backends.ErrInvalid, key)
	}
	if token == 0 {
		return 0, fmt.Errorf("%w: nats: %q under token 0", backends.ErrNotHeld, name)
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("%w: nats: fence: %w", backends.ErrUnavailable, err)
	}
	bk := b.d.b
	m := &nats.Msg{Subject: bk.subj + key, Data: value, Header: nats.Header{}}
	rev, err := bk.publish(ctx, m,
		jetstream.WithExpectLastSequenceForSubject(uint64(token), bk.subj+LockKey(name)))
	switch err = b.d.failed(err); {
	case errors.Is(err, record.ErrConflict):
		return 0, fmt.Errorf("%w: nats: %q under token %d", backends.ErrNotHeld, name, token)
	case errors.Is(err, backends.ErrInvalid), errors.Is(err, backends.ErrUnavailable):
		return 0, err
	case err != nil:
		return 0, fmt.Errorf("%w: nats: fence: %w", backends.ErrUnavailable, err)
	}
	return rev, nil
}

// validKey reports whether key is a KV key: tokens of [-/_=A-Za-z0-9]
// separated by single dots.
func validKey(key string) bool {
	if key == "" || key[0] == '.' || key[len(key)-1] == '.' || strings.Contains(key, "..") {
		return false
	}
	for i := range len(key) {
		c := key[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-/_=.", c) >= 0) {
			return false
		}
	}
	return true
}
