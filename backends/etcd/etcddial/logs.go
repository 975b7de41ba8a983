package etcddial

import (
	"context"
	"log/slog"
	"maps"
	"slices"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

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
