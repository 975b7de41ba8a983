package dynamodb

import (
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/internal/record"
)

var (
	_ backends.Backend = (*Backend)(nil)
)

// DefaultTable is the table the backend uses unless WithTable says
// otherwise.
const DefaultTable = "hustings"

// Option configures a Backend (and Migrate, which takes WithTable only).
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	table string
	poll  time.Duration
}

// WithTable names the backend's table. Default "hustings". It must be a
// DynamoDB table name: 3 to 255 letters, digits, '_', '-' or '.'; Migrate
// must have been run with the same name (or the table made as Migrate
// makes it).
func WithTable(name string) Option { return optionFunc(func(c *config) { c.table = name }) }

// WithPoll sets how often Watch reads every watched lock, since DynamoDB
// (and dynalite) push nothing here: the longest a waiter in another
// process takes to see a release. Default 1s; it must be at least 1ms. A
// watched lock is also read when its holder would expire as last seen.
func WithPoll(d time.Duration) Option { return optionFunc(func(c *config) { c.poll = d }) }

func configure(opts []Option) (config, error) {
	c := config{table: DefaultTable, poll: record.DefaultPoll}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if !tableName(c.table) {
		return c, fmt.Errorf("%w: dynamodb: table %q must be 3 to 255 letters, digits, '_', '-' or '.'", backends.ErrInvalid, c.table)
	}
	if c.poll < time.Millisecond {
		return c, fmt.Errorf("%w: dynamodb: poll %v must be at least 1ms", backends.ErrInvalid, c.poll)
	}
	return c, nil
}

func tableName(s string) bool {
	if len(s) < 3 || len(s) > 255 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// Backend keeps locks in one DynamoDB table (see Migrate). Create it
// with New; the zero value is not usable. It is safe for concurrent use.
type Backend struct {
	*record.Store
	d *driver
}

// New returns a Backend that sends its requests through client. It does
// no I/O, starts no goroutine, and never closes anything of client's;
// after the last call and the last watch, Wait waits for the goroutines
// the watches started. It does not create the table: run Migrate once,
// or make it by hand as Migrate's doc says. A nil client or bad options
// return an error matching backends.ErrInvalid.
//
// The client's own retries (its RetryMaxAttempts) are fine: a retried
// write that finds its first attempt applied is recognised as applied.
// Give it a request timeout well under the sessions' TTL.
func New(client *dynamodb.Client, opts ...Option) (*Backend, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: dynamodb: nil client", backends.ErrInvalid)
	}
	c, err := configure(opts)
	if err != nil {
		return nil, err
	}
	d := newDriver(client, c.table)
	s, err := record.New(d, record.Config{Name: "dynamodb", Poll: c.poll})
	if err != nil {
		return nil, err
	}
	return &Backend{Store: s, d: d}, nil
}

// Table returns the name of the backend's table.
func (b *Backend) Table() string { return b.d.table }

// conflicted reports a failed ConditionExpression.
func conflicted(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// ambiguous reports an error after which a write may have been applied
// all the same: anything but an answer of the service refusing the
// request (a client fault: a failed condition, a validation error,
// throttling). Timeouts, broken connections and server faults (5xx) are
// ambiguous (cirello-io/dynamolock #280).
func ambiguous(err error) bool {
	if err == nil || conflicted(err) {
		return false
	}
	var ae smithy.APIError
	return !errors.As(err, &ae) || ae.ErrorFault() != smithy.FaultClient
}

// failed translates an error of the client for the core: a failed
// condition is record.ErrConflict; a missing table or a request the
// service calls invalid is ErrInvalid (no retry cures them); anything
// else ErrUnavailable.
func (d *driver) failed(op string, err error) error {
	var (
		ae  smithy.APIError
		rnf *types.ResourceNotFoundException
	)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, record.ErrConflict), errors.Is(err, backends.ErrInvalid),
		errors.Is(err, backends.ErrUnavailable), errors.Is(err, backends.ErrSessionLost):
		return err
	case conflicted(err):
		return record.ErrConflict
	case errors.As(err, &rnf):
		return fmt.Errorf("%w: dynamodb: %s: table %s: %w (run dynamodb.Migrate first)", backends.ErrInvalid, op, d.table, err)
	case errors.As(err, &ae) && ae.ErrorCode() == "ValidationException":
		return fmt.Errorf("%w: dynamodb: %s: %w", backends.ErrInvalid, op, err)
	}
	return fmt.Errorf("%w: dynamodb: %s: %w", backends.ErrUnavailable, op, err)
}
