package dial

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"maps"
	"net"
	"os"
	"slices"
	"sync"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Each client's log lines go to the Open's logger at debug level, with the
// attribute client naming the client. The clients log what they retry
// (reconnects, failed dials), which the campaigns report in their own
// terms; a program shows the clients' lines only if it asks.

// zkLogger adapts a logger to go-zookeeper's (zk.WithLogger: one per conn).
type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, args ...any) {
	z.l.Debug(fmt.Sprintf(format, args...), "client", "zookeeper")
}

// zapLogger adapts a logger to the zap logger of the etcd client
// (clientv3.Config.Logger: one per client); zap.NewNop when l does not
// log at debug level, so that the client does not format for nothing.
func zapLogger(l *slog.Logger) *zap.Logger {
	if !l.Enabled(context.Background(), slog.LevelDebug) {
		return zap.NewNop()
	}
	return zap.New(zapCore{l: l})
}

// zapCore writes zap entries to a slog logger at debug level, the zap
// level and fields as attributes.
type zapCore struct {
	l      *slog.Logger
	fields []zapcore.Field
}

func (c zapCore) Enabled(zapcore.Level) bool { return true }

func (c zapCore) With(fields []zapcore.Field) zapcore.Core {
	return zapCore{l: c.l, fields: append(slices.Clip(c.fields), fields...)}
}

func (c zapCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	return ce.AddCore(e, c)
}

func (c zapCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range append(slices.Clip(c.fields), fields...) {
		f.AddTo(enc)
	}
	attrs := []slog.Attr{slog.String("client", "etcd"), slog.String("level", e.Level.String())}
	if e.LoggerName != "" {
		attrs = append(attrs, slog.String("logger", e.LoggerName))
	}
	for _, k := range slices.Sorted(maps.Keys(enc.Fields)) {
		attrs = append(attrs, slog.Any(k, enc.Fields[k]))
	}
	c.l.LogAttrs(context.Background(), slog.LevelDebug, e.Message, attrs...)
	return nil
}

func (c zapCore) Sync() error { return nil }

// go-redis has one logger per process (redis.SetLogger). The first Open of
// a Redis URL installs redisRouter as that logger, once. It sends a line
// to the logger of the Open whose client logged it, when it can tell: the
// line is about a failed dial of that client (its error comes from the
// client's dialer, which marks it with the logger: go-redis dials in the
// background, with a context of its own), or it was logged within a call
// of that client (redisHook marks the call's context). Every other line,
// of other clients or not tied to a call, goes where go-redis sends it by
// default, stderr, in go-redis's format. A program that sets its own
// go-redis logger after Open replaces the router, and then gets every
// line.

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

type redisRouter struct{ std *log.Logger }

func routeRedisLogs() {
	installRouter.Do(func() {
		goredis.SetLogger(redisRouter{std: log.New(os.Stderr, "redis: ", log.LstdFlags|log.Lshortfile)})
	})
}

func (r redisRouter) Printf(ctx context.Context, format string, args ...any) {
	if l := redisLineLogger(ctx, args); l != nil {
		l.Debug(fmt.Sprintf(format, args...), "client", "redis")
		return
	}
	// As go-redis's default logger: 3 frames up is the line that logged
	// (through go-redis's forwarding Printf and this one).
	_ = r.std.Output(3, fmt.Sprintf(format, args...))
}

// redisLineLogger returns the logger of the client a line is about, or
// nil.
func redisLineLogger(ctx context.Context, args []any) *slog.Logger {
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

// redisHook marks the context of every call of one client with its
// logger.
type redisHook struct{ l *slog.Logger }

func (h redisHook) DialHook(next goredis.DialHook) goredis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(context.WithValue(ctx, loggerKey{}, h.l), network, addr)
	}
}

func (h redisHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		return next(context.WithValue(ctx, loggerKey{}, h.l), cmd)
	}
}

func (h redisHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		return next(context.WithValue(ctx, loggerKey{}, h.l), cmds)
	}
}

// dialer dials TCP and remembers whether its last dial failed, and why: the cause Open reports
// when a client that retries on its own (etcd, ZooKeeper) never connected.
type dialer struct {
	d    net.Dialer
	mu   sync.Mutex
	last error
}

func (d *dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := d.d.DialContext(ctx, network, addr)
	d.mu.Lock()
	d.last = err // nil once one connects
	d.mu.Unlock()
	return c, err
}

func (d *dialer) lastErr() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.last
}
