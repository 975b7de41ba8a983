package redisdial

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"os"
	"sync"

	goredis "github.com/redis/go-redis/v9"
)

// go-redis has one logger per process (redis.SetLogger). The first Open
// installs router as that logger, once. It sends a line to the logger of
// the Open whose client logged it, when it can tell: the line is about a
// failed dial of that client (its error comes from the client's dialer,
// which marks it with the logger), or it was logged within a call of that
// client (hook marks the call's context). Every other line, of other
// clients or not tied to a call, goes where go-redis sends it by default,
// stderr, in go-redis's format.

var installRouter sync.Once

// loggerKey marks a context with the logger of the client that made it.
type loggerKey struct{}

// markedError is an error of a client's dialer, marked with its logger.
type markedError struct {
	err error
	l   *slog.Logger
}

func (e markedError) Error() string { return e.err.Error() }
func (e markedError) Unwrap() error { return e.err }

type router struct{ std *log.Logger }

func routeLogs() {
	installRouter.Do(func() {
		goredis.SetLogger(router{std: log.New(os.Stderr, "redis: ", log.LstdFlags|log.Lshortfile)})
	})
}

func (r router) Printf(ctx context.Context, format string, args ...any) {
	if l := lineLogger(ctx, args); l != nil {
		l.Debug(fmt.Sprintf(format, args...), "client", "redis")
		return
	}
	// As go-redis's default logger: 3 frames up is the line that logged
	// (through go-redis's forwarding Printf and this one).
	_ = r.std.Output(3, fmt.Sprintf(format, args...))
}

// lineLogger returns the logger of the client a line is about, or nil.
func lineLogger(ctx context.Context, args []any) *slog.Logger {
	for _, a := range args {
		var m markedError
		if err, ok := a.(error); ok && errors.As(err, &m) {
			return m.l
		}
	}
	if ctx != nil {
		if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
			return l
		}
	}
	return nil
}

// hook marks the context of every call of one client with its logger.
type hook struct{ l *slog.Logger }

func (h hook) DialHook(next goredis.DialHook) goredis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(context.WithValue(ctx, loggerKey{}, h.l), network, addr)
	}
}

func (h hook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		return next(context.WithValue(ctx, loggerKey{}, h.l), cmd)
	}
}

func (h hook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		return next(context.WithValue(ctx, loggerKey{}, h.l), cmds)
	}
}
