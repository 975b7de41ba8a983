package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hustings/hustings/backends/postgres/pgtest"
)

// listen returns a connection LISTENing on the default schema's channel.
func listen(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	if _, err := conn.Exec(t.Context(), `LISTEN "hustings.hustings"`); err != nil {
		t.Fatal(err)
	}
	return conn
}

// notified returns the next notification's payload, or "" if none comes
// within wait.
func notified(t *testing.T, conn *pgx.Conn, wait time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	n, err := conn.WaitForNotification(ctx)
	if err != nil {
		if ctx.Err() != nil && t.Context().Err() == nil {
			return ""
		}
		t.Fatal(err)
	}
	return n.Payload
}

// TestUnwatchedLocksNotifyNobody: acquires and releases of a lock that no
// Watch marked send no NOTIFY, but for the acquire that inserts its row.
// Notifications of one channel arrive in commit order, so the one sent
// once a Watch marked the row (a release with a hold, whose payload no
// other change has) must be the next to arrive.
func TestUnwatchedLocksNotifyNobody(t *testing.T) {
	srv := pgtest.Start(t)
	b := newBackend(t, srv.DSN())
	conn := listen(t, srv.DSN())
	s, err := b.Open(t.Context(), "a", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	tok, err := s.Acquire(t.Context(), "quiet", 0)
	if err != nil {
		t.Fatal(err)
	}
	if p := notified(t, conn, 2*time.Second); len(p) == 0 || p[0] != '+' {
		t.Fatalf("the acquire that inserted the row notified %q; want a payload signed '+'", p)
	}
	for range 3 {
		if err := s.Release(t.Context(), "quiet", tok, 0); err != nil {
			t.Fatal(err)
		}
		if tok, err = s.Acquire(t.Context(), "quiet", 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Watch(t.Context(), "quiet"); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(t.Context(), "quiet", tok, 1234*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if p := notified(t, conn, 5*time.Second); p != "1234 quiet" {
		t.Fatalf("after changes of a lock nobody watched, then a hold once it was watched, the next notification is %q; want the hold's \"1234 quiet\"", p)
	}
}

// TestWatchSurvivesADeletedRow: a watched lock whose row was deleted (by
// hand, or by a crash of the server) is marked again once an acquire
// inserts the row, so its later releases still wake the watch.
func TestWatchSurvivesADeletedRow(t *testing.T) {
	srv := pgtest.Start(t)
	pool := pgtest.Pool(t, srv.DSN())
	b := newBackend(t, srv.DSN())
	holder := newBackend(t, srv.DSN())
	ch, err := b.Watch(t.Context(), "kept")
	if err != nil {
		t.Fatal(err)
	}
	s, err := holder.Open(t.Context(), "h", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	if _, err := s.Acquire(t.Context(), "kept", 0); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, ch, "the acquire")
	deleteLock(t, pool, "kept")
	tok, err := s.Acquire(t.Context(), "kept", 0)
	if err != nil {
		t.Fatal(err)
	}
	waitSignal(t, ch, "the acquire that inserted the row")
	waitFor(t, pool, `SELECT watched_until > clock_timestamp() FROM hustings.locks WHERE name = $1`, "kept")
	if err := s.Release(t.Context(), "kept", tok, 0); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, ch, "the release")
}

func waitSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case _, ok := <-ch:
		if !ok {
			t.Fatalf("the watch ended before %s", what)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no signal for %s", what)
	}
}
