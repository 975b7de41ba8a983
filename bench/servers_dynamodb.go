package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sdk "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/dynamodb"
	"github.com/hustings/hustings/backends/dynamodb/dynamotest"
)

// startDynamoDB starts dynalite (package dynamotest), the stand-in for
// DynamoDB this machine can run, its tables on LevelDB in a temporary
// directory; the backend's table, the baseline's and the peer's.
// Request counts are the main client's requests, counted by a
// middleware (dynalite keeps no count).
func startDynamoDB() (*system, error) {
	srv, err := dynamotest.StartServer(dynamotest.Persistent())
	if err != nil {
		return nil, err
	}
	s := &system{name: "dynamodb", maxTTL: 30 * time.Second, poll: defaultPoll, closers: []func(){srv.Stop}}
	var sent atomic.Int64
	counted := func(o *sdk.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("bench-count",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					sent.Add(1)
					return next.HandleInitialize(ctx, in)
				}), middleware.Before)
		})
	}
	client := srv.Client(counted)
	ctx := context.Background()
	if err := dynamodb.Migrate(ctx, client); err != nil {
		return s, err
	}
	if err := dynamodb.Migrate(ctx, client, dynamodb.WithTable(baselineTable)); err != nil {
		return s, err
	}
	if err := createDynamolockTable(ctx, srv.Endpoint()); err != nil {
		return s, err
	}
	if s.backend, err = dynamodb.New(client); err != nil {
		return s, err
	}
	s.fence = dynamoFence(s.backend.(*dynamodb.Backend), client)
	s.fresh = func() (backends.Backend, func(), error) {
		b, err := dynamodb.New(srv.Client())
		return b, func() {}, err
	}
	key := func(k string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: k}, "sk": &types.AttributeValueMemberS{Value: "-"}}
	}
	s.readName, s.read = "GetItem (consistent)", func(ctx context.Context) error {
		_, err := client.GetItem(ctx, &sdk.GetItemInput{TableName: aws.String(baselineTable), Key: key("bench-read"), ConsistentRead: aws.Bool(true)})
		return err
	}
	s.writeName, s.write = "conditional PutItem (attribute_not_exists)", func(ctx context.Context) error {
		_, err := client.PutItem(ctx, &sdk.PutItemInput{
			TableName:           aws.String(baselineTable),
			Item:                key(fmt.Sprintf("bench-write-%d", seq.Add(1))),
			ConditionExpression: aws.String("attribute_not_exists(pk)"),
		})
		return err
	}
	s.requestsName = "requests sent by the main client (an SDK middleware's count)"
	s.requests = func(context.Context) (int64, error) { return sent.Load(), nil }
	s.peers = dynamoPeers(srv.Endpoint())
	return s, nil
}

// baselineTable holds the baseline's items.
const baselineTable = "bench_baseline"
