package zookeeper

import (
	"context"
	"net/url"
	"slices"
	"strings"
)

// List returns the names of the locks held now that start with prefix,
// sorted: one listing of the locks' parent nodes, then Holder for each
// name under prefix (which deletes the nodes it finds dead, and may write
// a lock's parent node to read the server's clock, as every Holder does).
func (b *Backend) List(ctx context.Context, prefix string) ([]string, error) {
	kids, _, err := b.children(ctx, "", b.root+"/locks")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, k := range kids {
		name, err := url.PathUnescape(k)
		if err != nil || !strings.HasPrefix(name, prefix) {
			continue // not a node this backend made
		}
		h, err := b.Holder(ctx, name)
		if err != nil {
			return nil, err
		}
		if h.ID != "" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}
