package backendtest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/internal/validate"
)

// invalidInput: bad names, TTLs, IDs, leases and holds are ErrInvalid and
// change nothing; a name of exactly MaxNameLen bytes is fine.
func invalidInput(e *env) {
	a := e.open("a")
	held := e.name()
	tok := e.acquire(a, held, 0)
	bad := append([]string{
		"",
		"bad-\xff-utf8",
		"control-\x07-char",
		"new\nline",
		strings.Repeat("x", validate.MaxNameLen+1),
	}, e.h.BadNames...)
	for _, name := range bad {
		e.invalidName(a, name)
	}
	_, err := a.Acquire(e.ctx, e.name(), -time.Second)
	e.wantErr("Acquire with a lease < 0", err, backends.ErrInvalid)
	e.wantErr("Release with a hold < 0", a.Release(e.ctx, held, tok, -time.Second), backends.ErrInvalid)
	e.wantHolder(held, "a", tok)
	for _, c := range []struct {
		id  string
		ttl time.Duration
	}{{"a", 0}, {"a", -time.Second}, {"", e.h.TTL}} {
		if s, err := e.b.Open(e.ctx, c.id, c.ttl); !errors.Is(err, backends.ErrInvalid) {
			e.t.Errorf("Open(%q, %v): %v, want ErrInvalid", c.id, c.ttl, err)
			if err == nil {
				_ = s.Close(e.ctx)
			}
		}
	}
	longest := e.name()
	longest += strings.Repeat("x", validate.MaxNameLen-len(longest))
	e.wantHolder(longest, "a", e.acquire(a, longest, 0))
}

// invalidName checks that every call rejects name with ErrInvalid.
func (e *env) invalidName(s backends.Session, name string) {
	e.t.Helper()
	_, err := s.Acquire(e.ctx, name, 0)
	e.wantInvalid("Acquire", name, err)
	e.wantInvalid("Release", name, s.Release(e.ctx, name, 1, 0))
	_, err = e.b.Holder(e.ctx, name)
	e.wantInvalid("Holder", name, err)
	ctx, cancel := context.WithCancel(e.ctx)
	_, err = e.b.Watch(ctx, name)
	cancel()
	e.wantInvalid("Watch", name, err)
}

func (e *env) wantInvalid(call, name string, err error) {
	e.t.Helper()
	if !errors.Is(err, backends.ErrInvalid) {
		e.t.Errorf("%s(%.40q): %v, want ErrInvalid", call, name, err)
	}
}

// canceledContext: with a context that already ended, every call returns
// an error rather than hang, and the session still works afterwards.
func canceledContext(e *env) {
	a := e.open("a")
	name := e.name()
	tok := e.acquire(a, name, 0)
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	e.fails("Open", func() error { _, err := e.b.Open(ctx, "b", e.h.TTL); return err })
	other := e.name()
	e.fails("Acquire", func() error { _, err := a.Acquire(ctx, other, 0); return err })
	e.fails("KeepAlive", func() error { return a.KeepAlive(ctx) })
	e.fails("Release", func() error { return a.Release(ctx, name, tok, 0) })
	e.fails("Holder", func() error { _, err := e.b.Holder(ctx, name); return err })
	e.fails("Watch", func() error { return watchEnds(e.b, ctx, name) })
	e.keepAlive(a)
}

// watchEnds returns Watch's error, or, if it returned a channel, an error
// once the backend closes it.
func watchEnds(b backends.Backend, ctx context.Context, name string) error {
	ch, err := b.Watch(ctx, name)
	if err != nil {
		return err
	}
	for range ch {
	}
	return errors.New("watch channel closed")
}

// fails runs call in its own goroutine and fails the check unless it
// returns an error within wakeBound. A call that hangs is left behind.
func (e *env) fails(what string, call func() error) {
	e.t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		if err == nil {
			e.t.Errorf("%s with a canceled context: nil error", what)
		}
	case <-time.After(wakeBound):
		e.t.Errorf("%s with a canceled context: still running after %v", what, wakeBound)
	}
}

// ClosedClient checks a backend whose client the caller has closed: Open
// fails with ErrInvalid (not ErrUnavailable: no retry will cure it), or,
// for a backend whose Open sends nothing (Redis on one server), the
// session's first call does; and a campaign's Run returns an error
// matching campaign.ErrInvalid that says the client is closed, instead of
// retrying forever.
func ClosedClient(t testing.TB, b backends.Backend) {
	t.Helper()
	s, err := b.Open(t.Context(), "a", time.Second)
	if err == nil {
		_, err = s.Acquire(t.Context(), "closed-client", 0)
	}
	if !errors.Is(err, backends.ErrInvalid) {
		t.Fatalf("Open, then Acquire, on a closed client: %v, want ErrInvalid", err)
	}
	c, err := campaign.New(b, "closed-client", campaign.WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := c.Run(ctx); !errors.Is(err, campaign.ErrInvalid) || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("Run on a closed client = %v, want ErrInvalid naming the closed client", err)
	}
}
