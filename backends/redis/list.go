package redis

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"

	"github.com/hustings/hustings/backends"
)

// List returns the names of the locks held now that start with prefix,
// sorted: a SCAN of the lock keys whose hash tags start with prefix (on
// every master of a Cluster), then Holder for each key found, so two
// round trips per lock record. It writes nothing.
func (b *Backend) List(ctx context.Context, prefix string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, unavailable(ctx, "list", err)
	}
	pattern := b.prefix + ":{" + globEscaper.Replace(tagEscaper.Replace(prefix)) + "*}:lock"
	var (
		mu   sync.Mutex // ForEachMaster scans the masters at once
		keys []string
	)
	scan := func(ctx context.Context, c *goredis.Client) error {
		var mine []string
		it := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for it.Next(ctx) {
			mine = append(mine, it.Val())
		}
		mu.Lock()
		keys = append(keys, mine...)
		mu.Unlock()
		return it.Err()
	}
	var err error
	switch c := b.client.(type) {
	case *goredis.Client:
		err = scan(ctx, c)
	case *goredis.ClusterClient:
		err = c.ForEachMaster(ctx, scan)
	default:
		return nil, fmt.Errorf("%w: redis: list: a %T cannot be scanned: pass a *Client or a *ClusterClient", backends.ErrInvalid, b.client)
	}
	if err != nil {
		return nil, unavailable(ctx, "list", err)
	}
	var names []string
	seen := make(map[string]bool, len(keys)) // SCAN may return a key twice
	for _, k := range keys {
		name, ok := nameOf(b.prefix, k)
		if !ok || seen[name] {
			continue
		}
		seen[name] = true
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

// nameOf returns the lock name of a lock key, "<prefix>:{tag}:lock".
func nameOf(prefix, key string) (string, bool) {
	tag, ok := strings.CutPrefix(key, prefix+":{")
	if !ok {
		return "", false
	}
	tag, ok = strings.CutSuffix(tag, "}:lock")
	if !ok || strings.Contains(tag, "}") {
		return "", false
	}
	return tagUnescaper.Replace(tag), true
}

// globEscaper quotes the characters SCAN's MATCH patterns give a meaning.
var globEscaper = strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`, "]", `\]`)

// tagUnescaper undoes tagEscaper.
var tagUnescaper = strings.NewReplacer("%25", "%", "%7D", "}")
