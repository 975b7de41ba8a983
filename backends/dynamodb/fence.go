package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/validate"
)

// FenceAttr is the attribute Fence keeps in the caller's item: the
// largest token a fenced write to it carried.
const FenceAttr = "hustings_fence"

// Fence makes the caller's PutItem in (to any table the client reaches)
// under lock name's fencing token: it reads the lock's item and refuses
// the write unless name is held under token, by a session that lives,
// and is no hold; then it puts the item with FenceAttr set to token,
// conditioned (ANDed with in's own ConditionExpression, if any) on the
// item's FenceAttr being absent or at most token, so that once a later
// term wrote the item no earlier term's write lands. It returns
// PutItem's output. A refusal (an ended term, token 0, or a failed
// condition, the fence's or in's own) matches backends.ErrNotHeld;
// other errors match ErrUnavailable or ErrInvalid. in is changed (its
// Item, condition, names and values) and must not be used concurrently.
//
// What it cannot promise: DynamoDB has no transaction on dynalite and no
// read of the lock inside a PutItem, so the check and the write are two
// steps. A term taken over between them, whose successor has not yet
// written the item, still lands one write; every write after the
// successor's first is refused. Write every protected item through Fence
// to get that.
func (b *Backend) Fence(ctx context.Context, name string, token events.Token, in *dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) {
	if in == nil || in.Item == nil {
		return nil, fmt.Errorf("%w: dynamodb: fence: no PutItem input or item", backends.ErrInvalid)
	}
	if err := validate.Name(name); err != nil {
		return nil, err
	}
	if token == 0 {
		return nil, fmt.Errorf("%w: dynamodb: fence: %q under token 0", backends.ErrNotHeld, name)
	}
	v, err := b.d.ReadLock(ctx, name, "")
	if err != nil {
		return nil, err
	}
	if l := v.Lock; l.Version == 0 || l.Hold || !v.HolderAlive || l.Token != token ||
		!l.Expires.IsZero() && !l.Expires.After(v.Now) {
		return nil, fmt.Errorf("%w: dynamodb: fence: %q is not held under token %d", backends.ErrNotHeld, name, token)
	}
	in.Item = maps.Clone(in.Item)
	in.Item[FenceAttr] = num(uint64(token))
	cond := "(attribute_not_exists(#hustings_fence) OR #hustings_fence <= :hustings_fence)"
	if c := aws.ToString(in.ConditionExpression); c != "" {
		cond += " AND (" + c + ")"
	}
	in.ConditionExpression = aws.String(cond)
	in.ExpressionAttributeNames = maps.Clone(in.ExpressionAttributeNames)
	if in.ExpressionAttributeNames == nil {
		in.ExpressionAttributeNames = map[string]string{}
	}
	in.ExpressionAttributeNames["#hustings_fence"] = FenceAttr
	in.ExpressionAttributeValues = maps.Clone(in.ExpressionAttributeValues)
	if in.ExpressionAttributeValues == nil {
		in.ExpressionAttributeValues = item{}
	}
	in.ExpressionAttributeValues[":hustings_fence"] = num(uint64(token))
	out, err := b.d.c.PutItem(ctx, in)
	if conflicted(err) {
		return nil, fmt.Errorf("%w: dynamodb: fence: %q: the item was written under a later token, or its condition failed: %w",
			backends.ErrNotHeld, name, err)
	}
	if err != nil {
		err = b.d.failed("fence", err)
		if !errors.Is(err, backends.ErrInvalid) && !errors.Is(err, backends.ErrUnavailable) {
			err = fmt.Errorf("%w: %w", backends.ErrUnavailable, err)
		}
		return nil, err
	}
	return out, nil
}
