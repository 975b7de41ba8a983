package chaos

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	sdk "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hustings/hustings/backends/dynamodb"
	"github.com/hustings/hustings/backends/dynamodb/dynamotest"
	"github.com/hustings/hustings/events"
)

// startDynamoDB runs dynalite (package dynamotest) with its tables on
// LevelDB: down is a crash (SIGKILL), up a restart on the same store
// (the counter of tokens survives). Leases are judged by the nodes'
// clocks: a crashed leader's successor is elected a TTL after it first
// saw the leader's last renewal, which it reads at its poll (dial's
// default, 1 s).
func startDynamoDB(t *testing.T) server {
	s := dynamotest.Start(t, dynamotest.Persistent())
	c := s.Client()
	return server{
		addr: s.Addr(),
		url:  func(a string) string { return "dynamodb://" + a },
		down: s.Kill,
		up:   s.Restart,
		tamper: func(ctx context.Context, name string, token events.Token) error {
			_, err := c.DeleteItem(ctx, &sdk.DeleteItemInput{
				TableName: aws.String(dynamodb.DefaultTable),
				Key: map[string]types.AttributeValue{
					"pk": &types.AttributeValueMemberS{Value: "lock#" + name},
					"sk": &types.AttributeValueMemberS{Value: "-"},
				},
				ConditionExpression:       aws.String("tok = :tok"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":tok": &types.AttributeValueMemberN{Value: strconv.FormatUint(uint64(token), 10)}},
			})
			if _, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
				return fmt.Errorf("no lock item %q under token %d to delete", name, token)
			}
			return err
		},
	}
}
