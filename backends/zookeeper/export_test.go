package zookeeper

import (
	"context"

	"github.com/go-zookeeper/zk"

	"github.com/hustings/hustings/events"
)

// FenceThen runs FencedMulti's two steps with between(check.Path) called
// between them, for tests that end the term after the fence was read.
func FenceThen(ctx context.Context, b *Backend, name string, token events.Token, between func(string), ops ...any) ([]zk.MultiResponse, error) {
	check, err := b.fence(ctx, name, token)
	if err != nil {
		return nil, err
	}
	between(check.Path)
	return b.fencedMulti(ctx, name, token, check, ops)
}
