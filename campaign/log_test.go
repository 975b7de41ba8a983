package campaign_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
)

// records keeps every log record, for assertions.
type records struct {
	mu   sync.Mutex
	list []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, rec.Clone())
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

// find returns the records whose message contains msg.
func (r *records) find(msg string) []slog.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []slog.Record
	for _, rec := range r.list {
		if strings.Contains(rec.Message, msg) {
			out = append(out, rec)
		}
	}
	return out
}

func attrs(rec slog.Record) map[string]string {
	m := map[string]string{}
	rec.Attrs(func(a slog.Attr) bool {
		m[a.Key] = a.Value.String()
		return true
	})
	return m
}

// Contention is logged at debug only; a lost lease is a warning with the
// lock name and the term's token.
func TestLogLevels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		var logs records
		log := campaign.WithLogger(slog.New(&logs))
		holder := start(t, b, "holder", log)
		next(t, holder.c.Events())
		waiter := start(t, b, "waiter", log)
		synctest.Wait()
		held := logs.find("held by another")
		if len(held) == 0 {
			t.Fatal("contention was not logged at all")
		}
		for _, rec := range held {
			if rec.Level != slog.LevelDebug {
				t.Fatalf("contention logged at %v, want debug", rec.Level)
			}
		}
		b.Partition("holder")
		next(t, holder.c.Events()) // revoked at the deadline
		revoked := logs.find("revoked")
		if len(revoked) == 0 || revoked[0].Level != slog.LevelWarn {
			t.Fatalf("lost lease logged as %v, want one warning", revoked)
		}
		if a := attrs(revoked[0]); a["name"] != "lock" || a["token"] != "1" || a["reason"] == "" {
			t.Fatalf("lost-lease warning carries %v, want name, token and reason", a)
		}
		b.Heal("holder")
		waiter.stop(t)
		holder.stop(t)
	})
}
