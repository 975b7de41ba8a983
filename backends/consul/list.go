package consul

import (
	"context"
	"strings"

	"github.com/hashicorp/consul/api"

	"github.com/hustings/hustings/backends/internal/record"
)

var _ record.Lister = (*driver)(nil)

// ListLocks reads the names of the lock keys that start with prefix,
// held or not: one read of the keys under lock/ (names only, no values).
// Escaping keeps prefixes: a name starts with prefix exactly when its
// escaped key starts with the escaped prefix.
func (d *driver) ListLocks(ctx context.Context, prefix string) ([]string, error) {
	dir := d.prefix + lockDir
	keys, _, err := d.c.KV().Keys(dir+escape(prefix), "", (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return nil, d.failed(err)
	}
	names := make([]string, 0, len(keys))
	for _, k := range keys {
		names = append(names, unescape(strings.TrimPrefix(k, dir)))
	}
	return names, nil
}
