package nats

import (
	"context"
	"errors"
	"fmt"
	"regexp"
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
	switch {
	case strings.HasPrefix(key, sessionPrefix), strings.HasPrefix(key, lockPrefix), strings.HasPrefix(key, memberPrefix):
		return 0, fmt.Errorf("%w: nats: fence: key %q is the backend's own", backends.ErrInvalid, key)
	case !validKey(key):
		return 0, fmt.Errorf("%w: nats: fence: %q is not a valid key", backends.ErrInvalid, key)
	case token == 0:
		return 0, fmt.Errorf("%w: nats: %q under token 0", backends.ErrNotHeld, name)
	case ctx.Err() != nil:
		return 0, fmt.Errorf("%w: nats: fence: %w", backends.ErrUnavailable, ctx.Err())
	}
	m := &nats.Msg{Subject: b.b.subj + key, Data: value, Header: nats.Header{}}
	rev, err := b.b.publish(ctx, m, jetstream.WithExpectLastSequenceForSubject(uint64(token), b.b.subj+LockKey(name)))
	switch {
	case errors.Is(err, record.ErrConflict):
		return 0, fmt.Errorf("%w: nats: %q under token %d", backends.ErrNotHeld, name, token)
	case err != nil && !errors.Is(err, backends.ErrInvalid) && !errors.Is(err, backends.ErrUnavailable):
		return 0, fmt.Errorf("%w: nats: fence: %w", backends.ErrUnavailable, err)
	}
	return rev, err
}

// validKey matches a KV key: tokens of [-/_=A-Za-z0-9] separated by
// single dots.
var validKey = regexp.MustCompile(`^[-/_=A-Za-z0-9]+(\.[-/_=A-Za-z0-9]+)*$`).MatchString
