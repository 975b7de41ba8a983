package mongodb

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/hustings/hustings/backends/internal/record"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/validate"
)

// sweepAfter is how long after its last renewal a session's document is
// deleted by cleanup (the TTL index, or Close): beyond the longest TTL.
const sweepAfter = validate.MaxTTL + 24*time.Hour

// closeWrites bounds the lock writes DeleteSession has in flight at once.
const closeWrites = 16

// driver is the record.Driver of the backend. See the package doc for
// the documents and why every compare-and-swap is an insert.
type driver struct {
	db                       *mongo.Database
	sessions, locks, members *mongo.Collection
	gate                     chan struct{} // the lock reads and writes in flight
	writes                   chan struct{} // the lock writes in flight
	seen                     versions      // the version last seen of each lock
}

// maxCalls bounds the lock reads and writes a driver has in flight at
// once: a server that serializes writes (FerretDB's SQLite, one writer
// at a time behind a busy wait that backs off to 100 ms) loses most of
// its throughput to many writers at once, and the client's pool opens
// connections two at a time: a storm of calls all at once would time out
// all together. Renewals are not held back.
const maxCalls = 16

// maxWrites bounds the lock writes in flight among them: each waits on
// FerretDB's SQLite for the one before, and a renewal waits behind them
// all.
const maxWrites = 4

// enter waits for a place among the calls in flight; leave gives it back.
func (d *driver) enter(ctx context.Context) error { return take(ctx, d.gate) }

func (d *driver) leave() { <-d.gate }

// enterWrite waits for a place among the writes in flight (and the
// calls); leaveWrite gives them back.
func (d *driver) enterWrite(ctx context.Context) error {
	if err := take(ctx, d.gate); err != nil {
		return err
	}
	if err := take(ctx, d.writes); err != nil {
		<-d.gate
		return err
	}
	return nil
}

func (d *driver) leaveWrite() { <-d.writes; <-d.gate }

func take(ctx context.Context, gate chan struct{}) error {
	select {
	case gate <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

var (
	_ record.Driver = (*driver)(nil)
)

func newDriver(c *mongo.Client, db, prefix string) *driver {
	d := c.Database(db)
	return &driver{
		db:       d,
		sessions: d.Collection(prefix + "sessions"),
		locks:    d.Collection(prefix + "locks"),
		members:  d.Collection(prefix + "members"),
		gate:     make(chan struct{}, maxCalls),
		writes:   make(chan struct{}, maxWrites),
	}
}

// sessionDoc is a session's document.
type sessionDoc struct {
	ID   string    `bson:"_id"`
	Cand string    `bson:"cand"`
	TTL  int64     `bson:"ttl"`            // microseconds
	At   time.Time `bson:"at"`             // the server's clock at the last renewal
	Prev time.Time `bson:"prev,omitempty"` // at before it; zero until the first
	Dead bool      `bson:"dead,omitempty"`
}

func (s sessionDoc) ttl() time.Duration { return time.Duration(s.TTL) * time.Microsecond }

func (s sessionDoc) expires() time.Time { return s.At.Add(s.ttl()) }

// lapsed reports whether the last renewal landed after the session had
// expired: the server applied it a TTL or more after the one before (a
// write that waited on the server after its client gave up). The session
// is over for good, whether or not its client is left to mark it Dead.
func (s sessionDoc) lapsed() bool { return !s.Prev.IsZero() && !s.At.Before(s.Prev.Add(s.ttl())) }

func (s sessionDoc) alive(now time.Time) bool {
	return s.ID != "" && !s.Dead && !s.lapsed() && s.expires().After(now)
}

// lockDoc is a document of a lock's chain: its root (Root, Epoch), or a
// state (every other field) at version Ver.
type lockDoc struct {
	ID    string     `bson:"_id"`
	Name  string     `bson:"name"`
	Ver   int64      `bson:"ver"`
	Root  bool       `bson:"root,omitempty"`
	Epoch int64      `bson:"epoch,omitempty"`
	Sid   string     `bson:"sid,omitempty"`
	Cand  string     `bson:"cand,omitempty"`
	Tok   int64      `bson:"tok,omitempty"`
	Exp   *time.Time `bson:"exp,omitempty"`
	Hold  bool       `bson:"hold,omitempty"`
}

func stateKey(name string, ver uint64) string { return fmt.Sprintf("%s#%016x", name, ver) }

func rootKey(name string) string { return name + "#root" }

func (l lockDoc) lock() record.Lock {
	r := record.Lock{Name: l.Name, Session: l.Sid, Candidate: l.Cand, Token: events.Token(l.Tok), Hold: l.Hold, Version: uint64(l.Ver)}
	if l.Exp != nil {
		r.Expires = *l.Exp
	}
	return r
}

// head returns the state of a lock from its documents: the state of the
// highest version in the root's epoch or after (states of an older epoch
// are strays of writers that read the lock before an operator deleted
// it); ok false if there is none.
func head(docs []lockDoc) (lockDoc, bool) {
	var epoch int64
	for _, d := range docs {
		if d.Root {
			epoch = d.Epoch
		}
	}
	var h lockDoc
	ok := false
	for _, d := range docs {
		if !d.Root && d.Ver>>32 >= epoch && (!ok || d.Ver > h.Ver) {
			h, ok = d, true
		}
	}
	return h, ok
}

// now reads the server's clock (hello's localTime).
func (d *driver) now(ctx context.Context) (time.Time, error) {
	raw, err := d.db.RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Raw()
	if err != nil {
		return time.Time{}, err
	}
	v, err := raw.LookupErr("localTime")
	if err != nil {
		return time.Time{}, fmt.Errorf("mongodb: hello has no localTime: %w", err)
	}
	dt, ok := v.DateTimeOK()
	if !ok {
		return time.Time{}, fmt.Errorf("mongodb: hello's localTime is a %s", v.Type)
	}
	return time.UnixMilli(dt).UTC(), nil
}

// CreateLock makes the lock's chain where it has no state, taken by l:
// one insert of the root (epoch 1) and of l's state, the first of the
// epoch. A root there already (a race, an operator's delete of the
// states, a creator that stopped between its inserts) is ErrConflict,
// after a restart of the lock if it has no state (see restart); the core
// reads again.
func (d *driver) CreateLock(ctx context.Context, l record.Lock) (record.Lock, error) {
	if err := d.enterWrite(ctx); err != nil {
		return record.Lock{}, unavailable(ctx, "create", err)
	}
	defer d.leaveWrite()
	l, doc := state(l, 1<<32)
	_, err := d.locks.InsertMany(ctx, []any{
		lockDoc{ID: rootKey(l.Name), Name: l.Name, Ver: -1, Root: true, Epoch: 1}, doc,
	}, options.InsertMany().SetOrdered(true))
	if err == nil {
		d.seen.put(l.Name, l.Version)
		return l, nil
	}
	if !mongo.IsDuplicateKeyError(err) {
		return record.Lock{}, unavailable(ctx, "create", err)
	}
	return record.Lock{}, unavailable(ctx, "create", errors.Join(record.ErrConflict, d.restart(ctx, l.Name)))
}

// restartDoc is the mark of a restart in progress (_id "<name>#restart",
// and no name field: an operator's delete of a lock's documents by name
// leaves it), inserted by the one restarter of the lock at a time.
type restartDoc struct {
	ID    string    `bson:"_id"`
	At    time.Time `bson:"at"` // the server's clock when it was inserted
	Nonce string    `bson:"nonce"`
}

func restartKey(name string) string { return name + "#restart" }

// restartStale is how long after its insert a restart's mark may be
// deleted by another restarter: the mark of one that crashed, or lost
// the server, between its insert and its delete. Far beyond a restart's
// five round trips, and than a paused process is believed to be still
// running one.
const restartStale = time.Minute

// restart begins the next epoch of a lock whose states are all gone (an
// operator deleted them; see the package doc), so that its tokens go on
// increasing and the writes of those that read it before are below the
// chain. Only the inserter of the lock's restart mark does so, between
// the insert and the delete of the mark: it reads the lock's documents,
// and if there is no state in the root's epoch, moves the root to the
// next epoch and inserts the free state that begins it. Every lock write
// looks for the mark and the root's epoch after its insert (see chain):
// the restarter inserts and then reads, the writer inserts and then
// reads, so that one of them sees the other's insert, and a writer that
// saw no mark wrote before the restarter's read, which sees its state and
// leaves the lock as it is. A mark older than restartStale is deleted.
func (d *driver) restart(ctx context.Context, name string) (err error) {
	now, err := d.now(ctx)
	if err != nil {
		return err
	}
	mark := restartDoc{ID: restartKey(name), At: now, Nonce: rand.Text()}
	if _, err := d.locks.InsertOne(ctx, mark); err != nil {
		if !mongo.IsDuplicateKeyError(err) {
			return err
		}
		other, err := findByID[restartDoc](ctx, d.locks, mark.ID)
		switch {
		case err != nil || other.ID == "":
			return err
		case now.Sub(other.At) > restartStale:
			_, err = d.locks.DeleteOne(ctx, bson.D{{Key: "_id", Value: mark.ID}, {Key: "nonce", Value: other.Nonce}})
		}
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), restartUnmark)
		defer cancel()
		_, derr := d.locks.DeleteOne(ctx, bson.D{{Key: "_id", Value: mark.ID}, {Key: "nonce", Value: mark.Nonce}})
		err = errors.Join(err, derr)
	}()
	docs, err := d.findLocks(ctx, bson.D{{Key: "name", Value: name}})
	if err != nil {
		return err
	}
	var root *lockDoc
	for i := range docs {
		if docs[i].Root {
			root = &docs[i]
		}
	}
	if _, ok := head(docs); ok || root == nil {
		return nil
	}
	next := root.Epoch + 1
	if _, err := d.locks.UpdateOne(ctx, bson.D{{Key: "_id", Value: root.ID}},
		bson.D{{Key: "$max", Value: bson.D{{Key: "epoch", Value: next}}}}); err != nil {
		return err
	}
	_, err = d.locks.InsertOne(ctx, lockDoc{ID: stateKey(name, uint64(next)<<32), Name: name, Ver: next << 32})
	if mongo.IsDuplicateKeyError(err) {
		err = nil
	}
	return err
}

// restartUnmark bounds the delete of a restart's mark, which is made even
// when the restart's context has ended.
const restartUnmark = 5 * time.Second

// SwapLock writes l as the state after version (see write).
func (d *driver) SwapLock(ctx context.Context, l record.Lock, version uint64) (record.Lock, error) {
	got, err := d.write(ctx, l, version)
	return got, unavailable(ctx, "write", err)
}

// DeleteLock writes a free state after version (see write).
func (d *driver) DeleteLock(ctx context.Context, name string, version uint64) error {
	_, err := d.write(ctx, record.Lock{Name: name}, version)
	return unavailable(ctx, "delete", err)
}

// write is the compare-and-swap of every lock write: it inserts l as the
// state document at version+1 (a duplicate key: another writer's is
// there, ErrConflict), then, at once, deletes the state at version-1 (the
// chain's cleanup: the state it read is kept, so that a write that loses
// takes nothing from the chain), looks for a state above its own, and
// reads the lock's root and its restart mark (see restart). A key is
// freed only by the writer of the state two after it, which inserted the
// one after it first, and the highest state is never deleted: a writer that read version long ago,
// whose insert met a key freed since by the chain's progress, finds a
// state above its own, deletes its insert, and gets ErrConflict; so does
// one that finds a restart in progress, or the root in an epoch after
// its write's (it read the lock before an operator deleted its states).
// A take (Token 0) gets its version as its token; a write with no
// session is a free state.
func (d *driver) write(ctx context.Context, l record.Lock, version uint64) (record.Lock, error) {
	if err := d.enterWrite(ctx); err != nil {
		return record.Lock{}, err
	}
	defer d.leaveWrite()
	return d.chain(ctx, l, version)
}

// chain is write for a caller that entered.
func (d *driver) chain(ctx context.Context, l record.Lock, version uint64) (record.Lock, error) {
	ver := version + 1
	l, doc := state(l, ver)
	if _, err := d.locks.InsertOne(ctx, doc); err != nil {
		if mongo.IsDuplicateKeyError(err) {
			return record.Lock{}, record.ErrConflict
		}
		return record.Lock{}, err
	}
	var (
		derr, rerr, merr error
		wg               sync.WaitGroup
		above, root      lockDoc
		mark             restartDoc
	)
	wg.Go(func() { _, derr = d.locks.DeleteOne(ctx, bson.D{{Key: "_id", Value: stateKey(l.Name, version-1)}}) })
	wg.Go(func() { root, rerr = d.findLock(ctx, rootKey(l.Name)) })
	wg.Go(func() { mark, merr = findByID[restartDoc](ctx, d.locks, restartKey(l.Name)) })
	err := d.locks.FindOne(ctx, bson.D{{Key: "name", Value: l.Name}, {Key: "ver", Value: bson.D{{Key: "$gt", Value: int64(ver)}}},
		{Key: "root", Value: bson.D{{Key: "$ne", Value: true}}}}).Decode(&above)
	wg.Wait()
	switch {
	case errors.Is(err, mongo.ErrNoDocuments):
		err = nil
	case err == nil:
		err = record.ErrConflict // a state above: this insert met a key the chain had freed
	}
	if err = errors.Join(err, rerr, merr, derr); err == nil && (mark.ID != "" || root.Epoch > int64(ver>>32)) {
		err = record.ErrConflict // a restart in progress, or done since this writer read the lock
	}
	if err != nil {
		if errors.Is(err, record.ErrConflict) {
			_, derr := d.locks.DeleteOne(ctx, bson.D{{Key: "_id", Value: doc.ID}})
			err = errors.Join(err, derr)
		}
		return record.Lock{}, err
	}
	d.seen.put(l.Name, ver)
	return l, nil
}

// state returns l as the state at version ver, and its document: a take
// (Token 0) gets ver as its token; a write with no session is a free
// state.
func state(l record.Lock, ver uint64) (record.Lock, lockDoc) {
	if l.Token == 0 && l.Session != "" {
		l.Token = events.Token(ver)
	}
	if l.Session == "" {
		l.Token, l.Candidate, l.Hold, l.Expires = 0, "", false, time.Time{}
	}
	doc := lockDoc{ID: stateKey(l.Name, ver), Name: l.Name, Ver: int64(ver),
		Sid: l.Session, Cand: l.Candidate, Tok: int64(l.Token), Hold: l.Hold}
	if !l.Expires.IsZero() {
		exp := l.Expires.UTC()
		doc.Exp = &exp
		l.Expires = exp
	}
	l.Version, l.TTL = ver, 0
	return l, doc
}
