package dynamodb

import (
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hustings/hustings/backends/internal/record"
)

var _ record.Lister = (*driver)(nil)

// ListLocks reads the names of the lock items that start with prefix,
// held or not: a Scan of the table for their keys alone, page by page
// (DynamoDB has no index of keys by prefix but a Scan's filter, so it
// reads, and bills, the whole table).
func (d *driver) ListLocks(ctx context.Context, prefix string) ([]string, error) {
	in := &dynamodb.ScanInput{
		TableName:                 aws.String(d.table),
		ProjectionExpression:      aws.String("#pk"),
		FilterExpression:          aws.String("begins_with(#pk, :p)"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": str(lockPrefix + prefix)},
		ConsistentRead:            aws.Bool(true),
	}
	var names []string
	for {
		out, err := d.c.Scan(ctx, in)
		if err != nil {
			return nil, d.failed("list", err)
		}
		for _, it := range out.Items {
			if pk, ok := it[attrPK].(*types.AttributeValueMemberS); ok {
				names = append(names, strings.TrimPrefix(pk.Value, lockPrefix))
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return names, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}
