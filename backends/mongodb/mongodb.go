package mongodb

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/internal/record"
	"github.com/hustings/hustings/internal/ctxerr"
)

var (
	_ backends.Backend = (*Backend)(nil)
)

var errInvalid = backends.ErrInvalid

// DefaultPrefix begins the names of the backend's collections unless
// WithPrefix says otherwise.
const DefaultPrefix = "hustings_"

// maxPrefixLen keeps collection names short.
const maxPrefixLen = 40

// Option configures a Backend (and EnsureIndexes, which takes WithPrefix
// only).
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	prefix string
	poll   time.Duration
}

// WithPrefix begins the names of the backend's collections with prefix,
// so that several applications can share one database. Default
// "hustings_". It must be 1 to 40 ASCII letters, digits or underscores.
func WithPrefix(prefix string) Option {
	return optionFunc(func(c *config) { c.prefix = prefix })
}

// WithPoll sets how often Watch reads every watched lock: the longest a
// waiter in another process takes to see a release. Default 1s; it must
// be at least 1ms. A lock that expires is also read when it expires as
// last seen, whatever the pace.
func WithPoll(d time.Duration) Option {
	return optionFunc(func(c *config) { c.poll = d })
}

func configure(opts []Option) (config, error) {
	c := config{prefix: DefaultPrefix, poll: record.DefaultPoll}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if c.prefix == "" || len(c.prefix) > maxPrefixLen || !plain(c.prefix) {
		return c, fmt.Errorf("%w: mongodb: prefix %q must be 1 to %d ASCII letters, digits or underscores", errInvalid, c.prefix, maxPrefixLen)
	}
	if c.poll < time.Millisecond {
		return c, fmt.Errorf("%w: mongodb: poll %v must be at least 1ms", errInvalid, c.poll)
	}
	return c, nil
}

func plain(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// validDatabase reports whether name can be a MongoDB database name.
func validDatabase(name string) bool {
	if name == "" || len(name) > 63 {
		return false
	}
	for _, r := range name {
		switch r {
		case '/', '\\', '.', ' ', '"', '$', '*', '<', '>', ':', '|', '?', 0:
			return false
		}
	}
	return true
}

// Backend keeps locks in documents of a MongoDB database (see the package
// doc). Create it with New; the zero value is not usable. It is safe for
// concurrent use.
type Backend struct {
	*record.Store
	d *driver
}

// New returns a Backend on database db of client. It does no I/O, starts
// no goroutine, and never connects or disconnects client: the caller
// does, after the last call and the last watch ended, then calls Wait.
// It creates nothing: run EnsureIndexes once (the backend works without
// its indexes, slowly).
// A nil client, a bad database name or bad options return an error
// matching backends.ErrInvalid.
func New(client *mongo.Client, db string, opts ...Option) (*Backend, error) {
	if client == nil || reflect.ValueOf(client).IsNil() {
		return nil, fmt.Errorf("%w: mongodb: nil client", errInvalid)
	}
	if !validDatabase(db) {
		return nil, fmt.Errorf("%w: mongodb: %q is not a database name", errInvalid, db)
	}
	c, err := configure(opts)
	if err != nil {
		return nil, err
	}
	d := newDriver(client, db, c.prefix)
	s, err := record.New(d, record.Config{Name: "mongodb", Poll: c.poll})
	if err != nil {
		return nil, err
	}
	return &Backend{Store: s, d: d}, nil
}

// Locks returns the collection of the backend's lock documents, for an
// operator (see the package doc: deleting a lock's documents frees it).
func (b *Backend) Locks() *mongo.Collection { return b.d.locks }

// EnsureIndexes creates the backend's indexes in database db (the
// collections are made by their first write): the lock documents by name
// and version; the registry's entries by group; and a TTL
// index on the sessions' renewal times that deletes the documents of
// sessions a week and a day after their last renewal (MaxTTL is a week),
// as cleanup only: no lease relies on it. A server that has no TTL
// indexes (FerretDB) is not an error: its documents of crashed sessions
// stay (a few hundred bytes each) until Close of a later session of the
// database deletes those older than that. It is idempotent.
func EnsureIndexes(ctx context.Context, client *mongo.Client, db string, opts ...Option) error {
	if client == nil || reflect.ValueOf(client).IsNil() {
		return fmt.Errorf("%w: mongodb: nil client", errInvalid)
	}
	if !validDatabase(db) {
		return fmt.Errorf("%w: mongodb: %q is not a database name", errInvalid, db)
	}
	c, err := configure(opts)
	if err != nil {
		return err
	}
	d := newDriver(client, db, c.prefix)
	// One index per command: FerretDB v1.24.2 drops the connection (a
	// panic it recovers from) when a createIndexes of several meets them
	// made already.
	for _, ix := range []struct {
		c    *mongo.Collection
		keys bson.D
	}{
		{d.locks, bson.D{{Key: "name", Value: 1}, {Key: "ver", Value: -1}}},
		{d.members, bson.D{{Key: "grp", Value: 1}, {Key: "ord", Value: 1}}},
	} {
		if _, err := ix.c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: ix.keys}); err != nil {
			return unavailable(ctx, "indexes", err)
		}
	}
	_, err = d.sessions.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys:    bson.D{{Key: "at", Value: 1}},
		Options: options.Index().SetExpireAfterSeconds(int32(sweepAfter / time.Second)),
	})
	if err != nil && !notImplemented(err) {
		return unavailable(ctx, "indexes", err)
	}
	return nil
}

// notImplemented reports the server's NotImplemented (238) or
// CommandNotFound (59).
func notImplemented(err error) bool {
	var se mongo.ServerError
	return errors.As(err, &se) && (se.HasErrorCode(238) || se.HasErrorCode(59))
}

// unavailable wraps err, a failure to reach the server or to get its
// answer, in backends.ErrUnavailable (or ErrInvalid if the client was
// disconnected: no retry cures that), and in ctx's error too when ctx
// ended. A conflict is passed on as it is.
func unavailable(ctx context.Context, op string, err error) error {
	if err == nil || errors.Is(err, record.ErrConflict) || errors.Is(err, backends.ErrInvalid) {
		return err
	}
	if errors.Is(err, mongo.ErrClientDisconnected) {
		return fmt.Errorf("%w: mongodb: %s: %w (the client is closed: its owner disconnected it)", errInvalid, op, err)
	}
	cerr := ctxerr.Of(ctx, err)
	if cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: mongodb: %s: %w (%w)", backends.ErrUnavailable, op, err, cerr)
	}
	return fmt.Errorf("%w: mongodb: %s: %w", backends.ErrUnavailable, op, err)
}
