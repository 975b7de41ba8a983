package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/ledger"
	"github.com/hustings/hustings/internal/validate"
)

// session is one Open: a row of the sessions table that KeepAlive renews,
// with the lock rows it holds.
type session struct {
	b   *Backend
	id  string // candidate ID
	sid string // session ID: 32 random hex digits

	mu     sync.Mutex
	closed bool

	ledger ledger.Ledger // what Acquire granted, and what KeepAlive found gone
}

// openSQL inserts the session row; it also deletes a few sessions that
// expired long ago (their rows only take room: nothing extends them), and
// a few free lock rows that nobody watches, left by releases (found
// through the index on session_id, empty in a free row). A lock row
// judged free and unwatched on its latest version, locked (FOR UPDATE
// rechecks the WHERE), cannot be taken or marked meanwhile, and an
// acquire that saw it inserts it again. Not in the release: there the
// scan walked the dead index entries that a loop of runs on one name
// leaves, and the releases slowed down as they grew.
const openSQL = `WITH gc AS (
  DELETE FROM {sessions} WHERE id IN (
    SELECT id FROM {sessions} WHERE expires_at < clock_timestamp() - interval '1 minute'
    LIMIT 8 FOR UPDATE SKIP LOCKED)
), freed AS (
  DELETE FROM {locks} WHERE name IN (
    SELECT name FROM {locks}
    WHERE session_id = '' AND expires_at < clock_timestamp() AND watched_until < clock_timestamp()
    LIMIT 8 FOR UPDATE SKIP LOCKED)
)
INSERT INTO {sessions} (id, candidate, ttl, expires_at)
VALUES ($1, $2, $3 * interval '1 millisecond', clock_timestamp() + $3 * interval '1 millisecond')`

// Open starts a session for candidate id: a new row of the sessions table
// that lives ttl (rounded up to a millisecond) after the server's clock_timestamp()
// at the INSERT, unless KeepAlive renews it. One round trip.
func (b *Backend) Open(ctx context.Context, id string, ttl time.Duration) (backends.Session, error) {
	if err := validate.Session(id, ttl); err != nil {
		return nil, err
	}
	var r [16]byte
	_, _ = rand.Read(r[:]) // never fails
	s := &session{b: b, id: id, sid: hex.EncodeToString(r[:])}
	err := b.run(ctx, "open", func() error {
		_, err := b.pool.Exec(ctx, b.t.expand(openSQL), s.sid, id, ms(ttl))
		return err
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// ID returns the candidate ID the session was opened for.
func (s *session) ID() string { return s.id }

// acquireSQL takes the lock if its row is missing, not live (see the
// locks table in SQL: its session expired or is gone, its lease or hold
// ended), or this session's (then it keeps its token and lease).
//
// It first reads the lock row and its holder's session row, plainly: a
// lock that another session visibly holds is reported held without a
// write, a row lock or a commit that waits for an fsync, and without
// waiting for anyone. A session seen alive in any snapshot is alive now
// (its expires_at only grows, and once passed never moves), so that read
// is sound; one seen expired may have been renewed since. Contenders used
// to lock the holder's row (ON CONFLICT locks the row even where it does
// not update it) while holding their own session row FOR SHARE, so each
// contender's keep-alive waited behind the holder's; beside two CPU
// burners those chains outlasted the TTL and lost every session at once
// (the chaos suite). A lock freed since that read is found by the
// caller's watch, as one freed just after would be.
//
// Otherwise it reads its own session row, plainly too: the lock lives
// only while the session does, so nothing is lost if the session expires
// as the row is written, and nothing orders the statement with the
// session's renewal. It used to take that row FOR SHARE, which starved
// the renewal's FOR UPDATE: a storm of acquires on one session kept the
// row share-locked by one statement or another (a new share lock does
// not queue behind a waiting FOR UPDATE), and a keep-alive waited 2 s of
// a 3 s TTL. If another session's row is found (prev), it locks that
// session's row FOR SHARE, and judges the holder dead only on the version
// it locked, with a clock read after the lock (a WHERE beside FOR SHARE
// is judged before the wait): a renewal of the holder committed before is
// seen (a row lock reads the latest version), and one not yet begun waits
// for this statement and then finds its session expired. So a holder
// never has a lock confirmed by its keep-alive that an acquire judged
// dead. A missing row is inserted ON CONFLICT DO NOTHING: when
// several waiters race for a lock just released, the losers take no lock
// on the winner's row. An existing row is taken by ON CONFLICT DO UPDATE,
// whose WHERE judges the row's latest version after locking it; a row
// changed since the first read (now another session's) is not taken. A
// change is NOTIFYed with the milliseconds the lock now lives (the
// session's expiry, or the lease's end if sooner), if the row is watched
// (its watched_until, as the write found it, has not passed: see Watch),
// and always, signed '+', by an acquire that inserted the row: a row that
// was missing (deleted by hand, emptied by a crash, or released by a
// version before watched_until) may have lost its mark, which the
// listeners that watch the lock write again when they see the '+'.
//
// Nothing is taken while the epoch row is missing (the server crashed
// and emptied the locks table: see the epoch table in SQL), nor, after
// it was restored, while a session that was alive then has neither
// expired nor renewed since (its holder may still believe it leads).
//
// $1 name, $2 session ID, $3 lease ms (0: none), $4 channel. Returns
// whether the session lives, the token if granted, the holder seen, and
// whether the epoch is there (NULL: missing) and still in its grace.
const acquireSQL = `WITH cur AS (
  SELECT l.session_id, l.candidate, l.expires_at > clock_timestamp() AND (l.hold OR (l.session_id <> $2
    AND EXISTS (SELECT 1 FROM {sessions} h WHERE h.id = l.session_id AND h.expires_at > clock_timestamp()))) AS other
  FROM {locks} l WHERE l.name = $1
), ep AS (
  SELECT reset_at, free_at FROM {epoch}
), live AS (
  SELECT id, candidate, expires_at FROM {sessions}
  WHERE id = $2 AND expires_at > clock_timestamp() AND NOT EXISTS (SELECT 1 FROM cur WHERE other)
    AND EXISTS (SELECT 1 FROM ep WHERE CASE WHEN ep.free_at <= clock_timestamp() THEN true
      ELSE NOT EXISTS (SELECT 1 FROM {sessions} o
        WHERE o.expires_at > clock_timestamp() AND o.expires_at - o.ttl < ep.reset_at) END)
), prev AS (
  SELECT id, expires_at FROM {sessions}
  WHERE id = (SELECT session_id FROM cur WHERE session_id <> $2) AND EXISTS (SELECT 1 FROM live)
  FOR SHARE
), v AS (
  SELECT $1::text AS name, live.id, live.candidate, nextval('{tokens}') AS token,
    CASE WHEN $3::bigint > 0 THEN clock_timestamp() + $3::bigint * interval '1 millisecond' END AS lease_end,
    NOT EXISTS (SELECT 1 FROM prev WHERE prev.expires_at > clock_timestamp()) AS prev_dead
  FROM live
), fresh AS (
  INSERT INTO {locks} (name, session_id, candidate, token, expires_at, lease_end, hold)
  SELECT name, id, candidate, token, COALESCE(lease_end, 'infinity'), lease_end, false FROM v WHERE NOT EXISTS (SELECT 1 FROM cur)
  ON CONFLICT (name) DO NOTHING
  RETURNING token, expires_at, watched_until, true AS fresh
), taken AS (
  INSERT INTO {locks} AS l (name, session_id, candidate, token, expires_at, lease_end, hold)
  SELECT name, id, candidate, token, COALESCE(lease_end, 'infinity'), lease_end, false FROM v WHERE EXISTS (SELECT 1 FROM cur)
  ON CONFLICT (name) DO UPDATE SET
    session_id = excluded.session_id,
    candidate = excluded.candidate,
    token = CASE WHEN l.session_id = excluded.session_id AND NOT l.hold AND l.expires_at > clock_timestamp() THEN l.token ELSE excluded.token END,
    lease_end = CASE WHEN l.session_id = excluded.session_id AND NOT l.hold AND l.expires_at > clock_timestamp() THEN l.lease_end ELSE excluded.lease_end END,
    expires_at = CASE WHEN l.session_id = excluded.session_id AND NOT l.hold AND l.expires_at > clock_timestamp() THEN l.expires_at ELSE excluded.expires_at END,
    hold = false
  WHERE (l.session_id = excluded.session_id AND NOT l.hold)
    OR l.expires_at <= clock_timestamp()
    OR (NOT l.hold AND l.session_id = (SELECT session_id FROM cur) AND (SELECT prev_dead FROM v))
  RETURNING l.token, l.expires_at, l.watched_until, false AS fresh
), a AS (
  SELECT token, LEAST(expires_at, (SELECT expires_at FROM live)) AS lives, watched_until, fresh FROM fresh
  UNION ALL SELECT token, LEAST(expires_at, (SELECT expires_at FROM live)), watched_until, fresh FROM taken
), w AS MATERIALIZED (
  SELECT lives, CASE WHEN fresh THEN '+' ELSE '' END AS sign FROM a WHERE fresh OR watched_until > clock_timestamp()
)
SELECT EXISTS (SELECT 1 FROM live)
    OR EXISTS (SELECT 1 FROM {sessions} WHERE id = $2 AND expires_at > clock_timestamp()),
  (SELECT token FROM a),
  (SELECT count(*) FROM w,
    pg_notify($4::text, w.sign || ceil(extract(epoch FROM w.lives - clock_timestamp()) * 1000)::bigint || ' ' || $1) n),
  (SELECT candidate FROM cur),
  (SELECT free_at > clock_timestamp() FROM ep)`

// Acquire takes name if it is free, held by this session (same token), or
// held by a session whose row expired: one statement, one round trip (a
// plain read when another session visibly holds it; else an INSERT ...
// ON CONFLICT, see acquireSQL). The ledger records what it grants, for
// KeepAlive to confirm.
func (s *session) Acquire(ctx context.Context, name string, lease time.Duration) (events.Token, error) {
	if err := s.usable(); err != nil {
		return 0, err
	}
	if err := validate.Acquire(name, lease); err != nil {
		return 0, err
	}
	var (
		alive  bool
		tok    *int64
		n      int64
		holder *string
		grace  *bool
	)
	for reset := false; ; reset = true {
		err := s.b.run(ctx, "acquire", func() error {
			return s.b.pool.QueryRow(ctx, s.b.t.acquire, name, s.sid, ms(lease), s.b.t.channel).
				Scan(&alive, &tok, &n, &holder, &grace)
		})
		if err != nil {
			return 0, err
		}
		if grace != nil || reset || !alive {
			break
		}
		if err := s.b.resetEpoch(ctx); err != nil {
			return 0, err
		}
	}
	switch {
	case !alive:
		return 0, s.lost()
	case tok == nil && holder == nil && (grace == nil || *grace):
		return 0, fmt.Errorf("%w: %q: the server lost its locks in a crash, and no lock is taken until every session alive then has renewed or expired", backends.ErrHeld, name)
	case tok == nil:
		who := "another session"
		if holder != nil {
			who = *holder
		}
		return 0, fmt.Errorf("%w: %q by %s", backends.ErrHeld, name, who)
	}
	s.ledger.Granted(name, events.Token(*tok))
	return events.Token(*tok), nil
}

// keepAliveSQL calls the renew_session function of the schema (see SQL).
const keepAliveSQL = `SELECT alive, names, tokens FROM {renew_session}($1)`

// KeepAlive renews the session row to the server's clock_timestamp() +
// TTL, which keeps every lock of the session live, and reads the
// session's live locks: one statement (a call of the schema's
// renew_session function), one round trip and one row written whatever
// the number of locks. It confirms the locks it was granted against the
// rows read; locks not found under the token granted (deleted, past
// their lease, taken over) go to the ledger, for Lost; the call still
// succeeds. A session whose row expired stays lost: ErrSessionLost.
func (s *session) KeepAlive(ctx context.Context) error {
	if err := s.usable(); err != nil {
		return err
	}
	granted := s.ledger.Held()
	var (
		alive  bool
		names  []string
		tokens []int64
	)
	err := s.b.run(ctx, "keep-alive", func() error {
		return s.b.pool.QueryRow(ctx, s.b.t.expand(keepAliveSQL), s.sid).Scan(&alive, &names, &tokens)
	})
	switch {
	case err != nil:
		return err
	case !alive:
		return s.lost()
	}
	renewed := make(map[string]events.Token, len(names))
	for i, name := range names {
		if i < len(tokens) {
			renewed[name] = events.Token(tokens[i])
		}
	}
	for name, tok := range granted {
		if renewed[name] != tok {
			s.ledger.Gone(name, tok)
		}
	}
	return nil
}

// closeSQL deletes the session row and its registry entries, and frees
// its lock rows (but those released with a hold), NOTIFYing each watched
// lock freed.
const closeSQL = `WITH s AS (
  DELETE FROM {sessions} WHERE id = $1
), m AS (
  DELETE FROM {members} WHERE session_id = $1
), l AS (
  UPDATE {locks} SET session_id = '', candidate = '', expires_at = '-infinity', lease_end = NULL
  WHERE session_id = $1 AND NOT hold RETURNING name, watched_until
), w AS MATERIALIZED (
  SELECT name FROM l WHERE watched_until > clock_timestamp()
)
SELECT count(*) FROM w, pg_notify($2, '0 ' || w.name) n`

// Close deletes the session row and its registry entries, and frees the
// locks it holds, which wakes their waiters: one statement. If it does not reach
// PostgreSQL, the session is closed all the same, and its locks are freed
// when its row expires.
func (s *session) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	return s.b.run(ctx, "close", func() error {
		_, err := s.b.pool.Exec(ctx, s.b.t.expand(closeSQL), s.sid, s.b.t.channel)
		return err
	})
}

// Lost returns the locks KeepAlive found gone; see backends.Session.
func (s *session) Lost() map[string]events.Token { return s.ledger.Lost() }

// Losses returns nil: KeepAlive alone finds a lost lock.
func (s *session) Losses() <-chan struct{} { return nil }

// usable returns an error matching backends.ErrSessionClosed once Close
// was called.
func (s *session) usable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("postgres: session of %s: %w", s.id, backends.ErrSessionClosed)
	}
	return nil
}

func (s *session) lost() error {
	return fmt.Errorf("postgres: session of %s: %w", s.id, backends.ErrSessionLost)
}
