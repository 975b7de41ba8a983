package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/hustings/hustings/backends"
)

// migrateWait bounds how long Migrate waits for a new table to become
// ACTIVE (DynamoDB takes seconds to minutes).
const migrateWait = 5 * time.Minute

// Migrate creates the backend's table if it is missing (WithTable; the
// other options do not apply) and waits until it is ACTIVE; a table that
// exists is left as it is. Running it again, or beside itself, changes
// nothing. It needs dynamodb:CreateTable, DescribeTable,
// DescribeTimeToLive and UpdateTimeToLive.
//
// The table, for making it by hand: partition key "pk" and sort key "sk",
// both strings (S), any billing mode (Migrate: PAY_PER_REQUEST), no
// index; time to live on the attribute "gc", for cleanup only (Migrate
// enables it where the server has TTL; dynalite has none and it is
// skipped there). Every record is one item: session#<session ID>,
// lock#<name> and counter with sort key "-"; registry entries with
// partition group#<group> and the session ID as sort key.
func Migrate(ctx context.Context, client *dynamodb.Client, opts ...Option) error {
	if client == nil {
		return fmt.Errorf("%w: dynamodb: nil client", backends.ErrInvalid)
	}
	c, err := configure(opts)
	if err != nil {
		return err
	}
	d := newDriver(client, c.table)
	_, err = client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(c.table),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(attrPK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrSK), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(attrSK), KeyType: types.KeyTypeRange},
		},
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return d.failed("migrate", err)
	}
	w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 20*time.Millisecond, 5*time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(c.table)}, migrateWait); err != nil {
		return d.failed("migrate", err)
	}
	return d.failed("migrate", d.gcSweep(ctx))
}

// gcSweep enables DynamoDB's TTL on the attribute gc unless it is on (or
// the server has no TTL, as dynalite).
func (d *driver) gcSweep(ctx context.Context) error {
	out, err := d.c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(d.table)})
	switch {
	case unknownOp(err):
		return nil
	case err != nil:
		return err
	}
	if t := out.TimeToLiveDescription; t != nil && aws.ToString(t.AttributeName) == attrGC &&
		(t.TimeToLiveStatus == types.TimeToLiveStatusEnabled || t.TimeToLiveStatus == types.TimeToLiveStatusEnabling) {
		return nil
	}
	_, err = d.c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(d.table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(attrGC), Enabled: aws.Bool(true)},
	})
	var ae smithy.APIError
	if unknownOp(err) || errors.As(err, &ae) && ae.ErrorCode() == "ValidationException" {
		return nil // no TTL here, or a Migrate beside this one enabled it
	}
	return err
}

// unknownOp reports a server without the operation (dynalite's TTL).
func unknownOp(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "UnknownOperationException"
}
