package consul

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/consul/api"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/validate"
)

// FenceOp returns the transaction operation that checks that lock name's
// key is still the one its term's take wrote, token being that write's
// ModifyIndex (a check-index). Put it first in a transaction of your own
// KV writes (api.Txn): Consul applies them only if the check holds, in
// the same step. A term that ended (released, with or without a hold;
// taken over; its key deleted, or its session ended) fails the check.
// It does not judge a lease by its Expires.
func (b *Backend) FenceOp(name string, token events.Token) *api.TxnOp {
	return &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVCheckIndex, Key: b.d.lockKey(name), Index: uint64(token)}}
}

// Fence runs ops in one transaction after FenceOp(name, token), and
// returns its results. If the fence refused them (no write made, the
// fence's error at operation 0), the error matches backends.ErrNotHeld;
// so does token 0. Another failed operation is an error naming it, and
// ops that write keys under the backend's prefix are backends.ErrInvalid.
func (b *Backend) Fence(ctx context.Context, name string, token events.Token, ops api.TxnOps) (*api.TxnResponse, error) {
	if err := validate.Name(name); err != nil {
		return nil, err
	}
	for _, op := range ops {
		if op == nil || op.KV != nil && strings.HasPrefix(op.KV.Key, b.d.prefix) {
			return nil, fmt.Errorf("%w: consul: fence: a nil operation, or a key under the backend's prefix %s", backends.ErrInvalid, b.d.prefix)
		}
	}
	if token == 0 {
		return nil, fmt.Errorf("%w: consul: %q under token 0", backends.ErrNotHeld, name)
	}
	all := append(api.TxnOps{b.FenceOp(name, token)}, ops...)
	ok, resp, _, err := b.d.c.Txn().Txn(all, (&api.QueryOptions{}).WithContext(ctx))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: consul: fence: %w", backends.ErrUnavailable, err)
	case ok:
		return resp, nil
	}
	for _, e := range resp.Errors {
		if e.OpIndex == 0 {
			return resp, fmt.Errorf("%w: consul: %q under token %d", backends.ErrNotHeld, name, token)
		}
	}
	return resp, fmt.Errorf("consul: fence: the transaction was rolled back: %v", resp.Errors)
}
