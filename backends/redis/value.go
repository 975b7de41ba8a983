package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/ctxerr"
)

// value is a parsed lock key: "<token> s <session ID>" for a lock held by a
// session, "<token> h <session ID>" for one released with a hold (held by
// nobody alive). A session ID is 32 hex digits, a colon and the candidate
// ID.
type value struct {
	token events.Token
	held  bool // released with a hold
	sid   string
}

// sidRandLen is the length of the random part of a session ID.
const sidRandLen = 32

// id returns the candidate ID of the session.
func (v value) id() string { return v.sid[sidRandLen+1:] }

func parseValue(raw string) (value, error) {
	tok, rest, ok1 := strings.Cut(raw, " ")
	kind, sid, ok2 := strings.Cut(rest, " ")
	n, err := strconv.ParseUint(tok, 10, 64)
	if !ok1 || !ok2 || err != nil || (kind != "s" && kind != "h") || len(sid) <= sidRandLen || sid[sidRandLen] != ':' {
		return value{}, fmt.Errorf("malformed lock value %q (is the key prefix shared with another application?)", raw)
	}
	return value{token: events.Token(n), held: kind == "h", sid: sid}, nil
}

// unavailable wraps err, a failure to reach Redis or to get its answer, in
// backends.ErrUnavailable (or ErrInvalid if the client was closed: that
// failure is for good), and in ctx's error too when ctx ended: a read
// cut short by the context's deadline is reported by the driver as a
// network timeout, sometimes a moment before ctx.Err() says so.
func unavailable(ctx context.Context, op string, err error) error {
	if errors.Is(err, goredis.ErrClosed) {
		return fmt.Errorf("%w: redis: %s: %w (the caller closed the client)", backends.ErrInvalid, op, err)
	}
	cerr := ctxerr.Of(ctx, err)
	if cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: redis: %s: %w (%w)", backends.ErrUnavailable, op, err, cerr)
	}
	return fmt.Errorf("%w: redis: %s: %w", backends.ErrUnavailable, op, err)
}

// ms returns d in whole milliseconds, rounded up, as Redis takes it: a
// session or lock never ends before the caller thinks it does.
func ms(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}
