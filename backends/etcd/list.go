package etcd

import (
	"context"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// List returns the names of the locks held now that start with prefix,
// sorted: one range read of their keys, and one more read per lock
// acquired with a lease (its guard). It writes nothing.
func (b *Backend) List(ctx context.Context, prefix string) ([]string, error) {
	if err := ctxErr(ctx, "list"); err != nil {
		return nil, err
	}
	base := b.lockKey("")
	resp, err := b.client.Get(ctx, base+prefix, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, translate(ctx, "list", err)
	}
	var names []string
	for _, kv := range resp.Kvs {
		name := strings.TrimPrefix(string(kv.Key), base)
		if strings.Contains(name, "\x00") {
			continue // a guard key
		}
		l, err := b.decode(ctx, kv)
		if err != nil {
			return nil, err
		}
		if l.alive {
			names = append(names, name)
		}
	}
	return names, nil
}
