package nats

import (
	"context"
	"strings"

	"github.com/hustings/hustings/backends/internal/record"
)

var _ record.Lister = (*bucket)(nil)

// ListLocks reads the names of the bucket's lock records that start with
// prefix: one multi-key get of every lock key (a subject wildcard matches
// whole tokens, so the prefix is applied here). A bucket of more lock
// records than the server answers in one multi-key get fails it.
func (b *bucket) ListLocks(ctx context.Context, prefix string) ([]string, error) {
	entries, err := b.scan(ctx, lockPrefix+"*")
	if err != nil {
		return nil, b.failed(err)
	}
	var names []string
	for key, e := range entries {
		if !e.live {
			continue
		}
		if name, ok := unkey(strings.TrimPrefix(key, lockPrefix)); ok && strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	return names, nil
}
