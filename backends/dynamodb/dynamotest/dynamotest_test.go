package dynamotest_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/hustings/hustings/backends/dynamodb/dynamotest"
)

// createTable makes a table keyed by the string "pk", on demand, and
// waits until it is ACTIVE.
func createTable(ctx context.Context, t *testing.T, c *dynamodb.Client, name string) {
	t.Helper()
	_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
	})
	if err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	w := dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay = 20 * time.Millisecond })
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 10*time.Second); err != nil {
		t.Fatalf("table %s not ACTIVE: %v", name, err)
	}
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func num(n string) types.AttributeValue { return &types.AttributeValueMemberN{Value: n} }

// TestConditionalWrites: the compare-and-swap and counter the backend is
// built on. A PutItem conditioned on the item's absence succeeds once; one
// conditioned on its version succeeds with the version it holds and fails
// with ConditionalCheckFailedException otherwise; UpdateItem ADD counts
// up from nothing and returns the new count.
func TestConditionalWrites(t *testing.T) {
	s := dynamotest.Start(t)
	c := s.Client()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	createTable(ctx, t, c, "locks")

	create := &dynamodb.PutItemInput{
		TableName:           aws.String("locks"),
		Item:                map[string]types.AttributeValue{"pk": str("lock/a"), "ver": num("1"), "holder": str("s1")},
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	}
	if _, err := c.PutItem(ctx, create); err != nil {
		t.Fatalf("first create: %v", err)
	}
	var ccf *types.ConditionalCheckFailedException
	if _, err := c.PutItem(ctx, create); !errors.As(err, &ccf) {
		t.Fatalf("second create: %v, want ConditionalCheckFailedException", err)
	}

	swap := func(from, to, holder string) error {
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                 aws.String("locks"),
			Item:                      map[string]types.AttributeValue{"pk": str("lock/a"), "ver": num(to), "holder": str(holder)},
			ConditionExpression:       aws.String("ver = :v"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": num(from)},
		})
		return err
	}
	if err := swap("1", "2", "s2"); err != nil {
		t.Fatalf("swap at version 1: %v", err)
	}
	if err := swap("1", "3", "s3"); !errors.As(err, &ccf) {
		t.Fatalf("swap at a stale version: %v, want ConditionalCheckFailedException", err)
	}
	got, err := c.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String("locks"), Key: map[string]types.AttributeValue{"pk": str("lock/a")}, ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	if h, ok := got.Item["holder"].(*types.AttributeValueMemberS); !ok || h.Value != "s2" {
		t.Fatalf("holder after the swaps = %#v, want s2", got.Item["holder"])
	}

	for want := 1; want <= 2; want++ {
		out, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String("locks"),
			Key:                       map[string]types.AttributeValue{"pk": str("token/a")},
			UpdateExpression:          aws.String("ADD tok :one"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": num("1")},
			ReturnValues:              types.ReturnValueUpdatedNew,
		})
		if err != nil {
			t.Fatalf("UpdateItem ADD: %v", err)
		}
		if n, ok := out.Attributes["tok"].(*types.AttributeValueMemberN); !ok || n.Value != strconv.Itoa(want) {
			t.Fatalf("token after ADD #%d = %#v, want %d", want, out.Attributes["tok"], want)
		}
	}
}

// TestGaps holds doc.go's list of what dynalite lacks to the server: if
// a new dynalite implements one, this fails, and doc.go (and the backend)
// should say so.
func TestGaps(t *testing.T) {
	s := dynamotest.Start(t)
	c := s.Client()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	createTable(ctx, t, c, "gaps")

	unknown := func(what string, err error) {
		t.Helper()
		var api smithy.APIError
		if !errors.As(err, &api) || api.ErrorCode() != "UnknownOperationException" {
			t.Errorf("%s: %v, want UnknownOperationException", what, err)
		}
	}
	_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{
		Put: &types.Put{TableName: aws.String("gaps"), Item: map[string]types.AttributeValue{"pk": str("x")}},
	}}})
	unknown("TransactWriteItems", err)
	_, err = c.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{{
		Get: &types.Get{TableName: aws.String("gaps"), Key: map[string]types.AttributeValue{"pk": str("x")}},
	}}})
	unknown("TransactGetItems", err)
	_, err = c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("gaps"),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("exp"), Enabled: aws.Bool(true)}})
	unknown("UpdateTimeToLive", err)
	_, err = c.ExecuteStatement(ctx, &dynamodb.ExecuteStatementInput{Statement: aws.String(`SELECT * FROM "gaps"`)})
	unknown("ExecuteStatement (PartiQL)", err)

	ttl, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String("gaps")})
	if err != nil || ttl.TimeToLiveDescription.TimeToLiveStatus != types.TimeToLiveStatusDisabled {
		t.Errorf("DescribeTimeToLive = %+v, %v; want DISABLED", ttl, err)
	}
	d, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("gaps")})
	if err != nil || d.Table.LatestStreamArn != nil {
		t.Errorf("DescribeTable: stream %v, %v; want no stream", d, err)
	}

	// A failed condition returns no item, even when asked for it: a
	// backend must read the item back itself.
	put := &dynamodb.PutItemInput{
		TableName:                           aws.String("gaps"),
		Item:                                map[string]types.AttributeValue{"pk": str("y"), "ver": num("1")},
		ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if _, err := c.PutItem(ctx, put); err != nil {
		t.Fatal(err)
	}
	var ccf *types.ConditionalCheckFailedException
	if _, err := c.PutItem(ctx, put); !errors.As(err, &ccf) {
		t.Fatalf("second put: %v, want ConditionalCheckFailedException", err)
	}
	if ccf.Item != nil {
		t.Errorf("ConditionalCheckFailedException.Item = %v: dynalite returns the old item now; update doc.go", ccf.Item)
	}
}

// TestKillRestart: a Persistent server keeps its items across a crash,
// under a new PID on the same endpoint; a Kill makes requests fail.
func TestKillRestart(t *testing.T) {
	s := dynamotest.Start(t, dynamotest.Persistent())
	c := s.Client()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	createTable(ctx, t, c, "kept")
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("kept"),
		Item: map[string]types.AttributeValue{"pk": str("k"), "v": str("before")}}); err != nil {
		t.Fatal(err)
	}
	pid := s.PID()
	s.Kill()
	if s.PID() != 0 {
		t.Fatal("PID after Kill is not 0")
	}
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	_, err := c.ListTables(short, &dynamodb.ListTablesInput{})
	cancelShort()
	if err == nil {
		t.Fatal("a killed server answered")
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if s.PID() == 0 || s.PID() == pid {
		t.Fatalf("PID after Restart = %d (was %d)", s.PID(), pid)
	}
	got, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("kept"),
		Key: map[string]types.AttributeValue{"pk": str("k")}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatalf("GetItem after Restart: %v", err)
	}
	if v, ok := got.Item["v"].(*types.AttributeValueMemberS); !ok || v.Value != "before" {
		t.Fatalf("item after Restart = %v, want v=before", got.Item)
	}
}

// TestInMemoryRestartIsEmpty: without Persistent, a restarted server has
// no tables (what Restart's doc says).
func TestInMemoryRestartIsEmpty(t *testing.T) {
	s := dynamotest.Start(t)
	c := s.Client()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	createTable(ctx, t, c, "gone")
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	out, err := c.ListTables(ctx, &dynamodb.ListTablesInput{})
	if err != nil || len(out.TableNames) != 0 {
		t.Fatalf("ListTables after Restart = %v, %v; want none", out, err)
	}
}

// TestConcurrentSwaps: conditional puts from many clients at once on one
// item are atomic (dynalite locks an item's key for a write): at most one
// winner a version, every loser a ConditionalCheckFailedException, and
// the final version is the count of wins.
func TestConcurrentSwaps(t *testing.T) {
	s := dynamotest.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	createTable(ctx, t, s.Client(), "locks")
	key := map[string]types.AttributeValue{"pk": str("lock/a")}
	const clients, tries = 8, 40
	wins := make(map[int]int)
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		c := s.Client()
		wg.Go(func() {
			for range tries {
				got, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("locks"), Key: key, ConsistentRead: aws.Bool(true)})
				if err != nil {
					errs <- err
					return
				}
				ver := 0
				if n, ok := got.Item["ver"].(*types.AttributeValueMemberN); ok {
					ver, _ = strconv.Atoi(n.Value)
				}
				in := &dynamodb.PutItemInput{
					TableName: aws.String("locks"),
					Item:      map[string]types.AttributeValue{"pk": str("lock/a"), "ver": num(strconv.Itoa(ver + 1)), "holder": str(strconv.Itoa(i))},
				}
				if ver == 0 {
					in.ConditionExpression = aws.String("attribute_not_exists(pk)")
				} else {
					in.ConditionExpression = aws.String("ver = :v")
					in.ExpressionAttributeValues = map[string]types.AttributeValue{":v": num(strconv.Itoa(ver))}
				}
				_, err = c.PutItem(ctx, in)
				var ccf *types.ConditionalCheckFailedException
				switch {
				case err == nil:
					mu.Lock()
					wins[ver+1]++
					mu.Unlock()
				case errors.As(err, &ccf):
				default:
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a swap failed otherwise than by its condition: %v", err)
	}
	for v, n := range wins {
		if n != 1 {
			t.Errorf("version %d was won %d times", v, n)
		}
	}
	got, err := s.Client().GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("locks"), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := got.Item["ver"].(*types.AttributeValueMemberN); !ok || n.Value != strconv.Itoa(len(wins)) {
		t.Errorf("final version %v after %d wins", got.Item["ver"], len(wins))
	}
	if len(wins) < 2 {
		t.Errorf("%d wins: the clients did not race", len(wins))
	}
	t.Logf("%d clients × %d tries: %d wins", clients, tries, len(wins))
}
