package zookeeper

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hustings/hustings/events"
)

// FenceThen runs Fence's two steps with between(check.Path) called
// between them, for tests that end the term after the fence was read.
func FenceThen(ctx context.Context, b *Backend, name string, token events.Token, between func(string), ops ...any) ([]zk.MultiResponse, error) {
	check, err := b.fence(ctx, name, token)
	if err != nil {
		return nil, err
	}
	between(check.Path)
	return b.fencedMulti(ctx, name, token, check, ops)
}

// JudgeEvery sets how often b's looks for a node queued behind another
// waiter judge the nodes ahead of it. Call it before using b.
func JudgeEvery(b *Backend, d time.Duration) { b.judgeEvery = d }

// GrantSettle sets how long the loss watch of b's sessions lets a grant
// settle before it watches the lock's node. Call it before using b.
func GrantSettle(b *Backend, d time.Duration) { b.grantSettle = d }

// CountCalls counts b's calls from now on (most make one request; a
// KeepAlive or a Close beyond 1,000 locks makes more). Call it before
// using b.
func CountCalls(b *Backend) *atomic.Int64 {
	var n atomic.Int64
	b.onCall = func(string) { n.Add(1) }
	return &n
}
