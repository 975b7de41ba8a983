package memberlist

import (
	"context"
	"log/slog"
	"strings"
)

// logWriter turns memberlist's log lines ("[WARN] memberlist: ...") into
// records of the node's logger at their level. The log.Logger in front of
// it calls Write once per line, one call at a time.
type logWriter struct {
	l *slog.Logger
}

func (w logWriter) Write(p []byte) (int, error) {
	level, msg := parseLine(strings.TrimSpace(string(p)))
	w.l.Log(context.Background(), level, msg, "source", "hashicorp/memberlist")
	return len(p), nil
}

// parseLine splits memberlist's level tag off a line; untagged lines are
// Info.
func parseLine(line string) (slog.Level, string) {
	for _, t := range []struct {
		tag   string
		level slog.Level
	}{
		{"[DEBUG]", slog.LevelDebug}, {"[INFO]", slog.LevelInfo},
		{"[WARN]", slog.LevelWarn}, {"[ERR]", slog.LevelError},
	} {
		if rest, ok := strings.CutPrefix(line, t.tag); ok {
			return t.level, strings.TrimSpace(rest)
		}
	}
	return slog.LevelInfo, line
}
