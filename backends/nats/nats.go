package nats

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/internal/record"
)

var (
	_ backends.Backend        = (*Backend)(nil)
	_ backends.ReleaseWatcher = (*Backend)(nil)
)

// DefaultBucket is the KV bucket the backend keeps its records in unless
// WithBucket says otherwise.
const DefaultBucket = "hustings"

// markerTTL is how long the server keeps the marker of a removal or an
// expiry (LimitMarkerTTL): long enough for every watch to see it.
const markerTTL = 10 * time.Second

// Option configures a Backend and CreateBucket.
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	bucket   string
	replicas int // 0: not given
}

// WithBucket keeps the records in the KV bucket name. Default
// DefaultBucket. It must be a valid bucket name (letters, digits, '-' and
// '_'); CreateBucket must have made it.
func WithBucket(name string) Option { return optionFunc(func(c *config) { c.bucket = name }) }

// WithReplicas makes CreateBucket replicate the bucket on n servers of a
// JetStream cluster (1 to 5). Default 1. It applies to CreateBucket only:
// New refuses it with backends.ErrInvalid.
func WithReplicas(n int) Option {
	return optionFunc(func(c *config) { c.replicas = cmp.Or(n, -1) }) // 0 given: out of range
}

// configure applies opts; bad ones, and a nil js or one whose connection
// is closed, are ErrInvalid.
func configure(js jetstream.JetStream, opts []Option) (config, error) {
	c := config{bucket: DefaultBucket}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	switch v := reflect.ValueOf(js); {
	case c.bucket == "" || len(c.bucket) > 64 || keyOf(c.bucket) != c.bucket: // keyOf keeps [-_A-Za-z0-9]
		return c, fmt.Errorf("%w: nats: bucket name %q: 1 to 64 letters, digits, '-' or '_'", backends.ErrInvalid, c.bucket)
	case c.replicas < 0 || c.replicas > 5:
		return c, fmt.Errorf("%w: nats: %d replicas, want 1 to 5", backends.ErrInvalid, c.replicas)
	case js == nil || v.Kind() == reflect.Pointer && v.IsNil():
		return c, fmt.Errorf("%w: nats: nil JetStream", backends.ErrInvalid)
	case js.Conn() == nil:
		return c, fmt.Errorf("%w: nats: JetStream without a connection", backends.ErrInvalid)
	case js.Conn().IsClosed():
		return c, fmt.Errorf("%w: nats: the connection is closed", backends.ErrInvalid)
	}
	return c, nil
}

// CreateBucket makes the KV bucket the backend needs, or brings an
// existing one to its settings: one value per key (History 1), no
// bucket-wide TTL, per-key TTLs with markers kept 10 s (LimitMarkerTTL;
// nats-server 2.11 or later), file storage, WithReplicas copies. It is
// idempotent. Run it once before New, as a deployment step or at start.
func CreateBucket(ctx context.Context, js jetstream.JetStream, opts ...Option) error {
	c, err := configure(js, opts)
	if err != nil {
		return err
	}
	_, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:         c.bucket,
		Description:    "Hustings leader election: sessions, locks and group members",
		History:        1,
		Storage:        jetstream.FileStorage,
		Replicas:       max(c.replicas, 1),
		LimitMarkerTTL: markerTTL,
	})
	if err != nil {
		return fmt.Errorf("%w: nats: create bucket %s: %w", backends.ErrUnavailable, c.bucket, err)
	}
	return nil
}

// Backend keeps locks in a JetStream KV bucket (see CreateBucket). Create
// it with New; the zero value is not usable. It is safe for concurrent
// use.
type Backend struct {
	*record.Store
	b *bucket
}

// New returns a Backend on js and its connection. It does no I/O, starts
// no goroutine, and never closes the connection: the caller does, after
// the last call and the last watch ended. The feed behind the watches
// stops when the last watch ends, on a goroutine of its own, which
// nats.go can hold for a request's timeout and a reset backoff (10 s
// each at most) while it re-creates the feed's consumer after an outage,
// connection closed or not: Backend.Wait waits for it. It does not
// create the bucket: run CreateBucket. A nil or typed-nil js, one whose connection is
// closed, and bad options return an error matching backends.ErrInvalid.
func New(js jetstream.JetStream, opts ...Option) (*Backend, error) {
	c, err := configure(js, opts)
	switch {
	case err != nil:
		return nil, err
	case c.replicas != 0:
		return nil, fmt.Errorf("%w: nats: WithReplicas is an option of CreateBucket, not of New", backends.ErrInvalid)
	}
	b := newBucket(js, c.bucket)
	s, err := record.New(b, record.Config{Name: "nats"})
	if err != nil {
		return nil, err
	}
	return &Backend{Store: s, b: b}, nil
}
