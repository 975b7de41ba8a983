package dynamodb_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sdk "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/dynamodb"
	"github.com/hustings/hustings/backends/dynamodb/dynamotest"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/faultlink"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, faultlink.KnownLeaks()...)
}

// newBackend returns a Backend on client, its table migrated, polling
// fast.
func newBackend(t testing.TB, client *sdk.Client, opts ...dynamodb.Option) *dynamodb.Backend {
	t.Helper()
	if err := dynamodb.Migrate(t.Context(), client, opts...); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	b, err := dynamodb.New(client, append([]dynamodb.Option{dynamodb.WithPoll(50 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return b
}

// contractTTL is the suite's session TTL: the suite runs checks (eight
// racers taking a lock three times over) that must end within one TTL
// without a renewal, and dynalite answers in 5-20 ms a request on a
// loaded machine, a take being four requests.
const contractTTL = 2 * time.Second

// fencedTable is the table the contract's fenced writes go to.
const fencedTable = "fenced_writes"

func harness(t *testing.T, srv *dynamotest.Server) backendtest.Harness {
	c := srv.Client()
	if err := dynamodb.Migrate(t.Context(), c, dynamodb.WithTable(fencedTable)); err != nil {
		t.Fatal(err)
	}
	return backendtest.Harness{
		New: func(t *testing.T) backends.Backend { return newBackend(t, srv.Client()) },
		TTL: contractTTL,
		Delete: func(t *testing.T, _ backends.Backend, name string) {
			out, err := c.DeleteItem(t.Context(), &sdk.DeleteItemInput{
				TableName:    aws.String(dynamodb.DefaultTable),
				Key:          map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "lock#" + name}, "sk": &types.AttributeValueMemberS{Value: "-"}},
				ReturnValues: types.ReturnValueAllOld,
			})
			if err != nil || len(out.Attributes) == 0 {
				t.Fatalf("DeleteItem lock %q: %v (item there: %v); want it deleted", name, err, err == nil && len(out.Attributes) > 0)
			}
		},
		Fence: func(ctx context.Context, b backends.Backend, name string, token events.Token) error {
			_, err := b.(*dynamodb.Backend).Fence(ctx, name, token, fencedPut(name, token))
			return err
		},
	}
}

// fencedPut is a write of the item name of fencedTable.
func fencedPut(name string, token events.Token) *sdk.PutItemInput {
	return &sdk.PutItemInput{
		TableName: aws.String(fencedTable),
		Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: name}, "sk": &types.AttributeValueMemberS{Value: "w"},
			"by": &types.AttributeValueMemberN{Value: strconv.FormatUint(uint64(token), 10)},
		},
	}
}

func TestContract(t *testing.T) {
	srv := dynamotest.Start(t)
	backendtest.Run(t, harness(t, srv))
}

// TestGroups runs the group scenario of the contract suite against a
// real server, in real time.
func TestGroups(t *testing.T) {
	srv := dynamotest.Start(t)
	h := harness(t, srv)
	backendtest.RunGroups(t, h)
}

func TestStorm(t *testing.T) {
	srv := dynamotest.Start(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server (pid %d) log:\n%s", srv.PID(), srv.Log())
		}
	})
	backendtest.RunStorm(t, backendtest.Harness{
		New: func(t *testing.T) backends.Backend { return newBackend(t, srv.Client()) },
		TTL: 3 * time.Second,
	}, 500)
}

// TestMigrateIsIdempotent: Migrate runs beside itself and again without
// error, and a Backend works on its table.
func TestMigrateIsIdempotent(t *testing.T) {
	srv := dynamotest.Start(t)
	c := srv.Client()
	errs := make(chan error, 3)
	for range 3 {
		go func() { errs <- dynamodb.Migrate(t.Context(), c, dynamodb.WithTable("m_locks")) }()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatalf("Migrate: %v", err)
		}
	}
	if err := dynamodb.Migrate(t.Context(), c, dynamodb.WithTable("m_locks")); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	b, err := dynamodb.New(c, dynamodb.WithTable("m_locks"))
	if err != nil {
		t.Fatal(err)
	}
	s := backendtest.Open(t, b, "a", time.Second)
	backendtest.Acquire(t, s, "x")
	if err := s.KeepAlive(t.Context()); err != nil {
		t.Fatalf("KeepAlive: %v", err)
	}
}

// Without Migrate, calls fail with ErrInvalid, not ErrUnavailable: no
// retry cures a missing table.
func TestMissingTableIsInvalid(t *testing.T) {
	srv := dynamotest.Start(t)
	b, err := dynamodb.New(srv.Client(), dynamodb.WithTable("none"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open(t.Context(), "a", time.Second); !errors.Is(err, backends.ErrInvalid) || !strings.Contains(err.Error(), "Migrate") {
		t.Fatalf("Open without Migrate = %v; want ErrInvalid naming Migrate", err)
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	c := dynamotest.NewClient("http://127.0.0.1:1") // never dialled
	var typedNil *sdk.Client
	tests := []struct {
		name string
		c    *sdk.Client
		opts []dynamodb.Option
	}{
		{"nil client", nil, nil},
		{"typed nil client", typedNil, nil},
		{"short table", c, []dynamodb.Option{dynamodb.WithTable("ab")}},
		{"bad table", c, []dynamodb.Option{dynamodb.WithTable("a b c")}},
		{"poll below 1ms", c, []dynamodb.Option{dynamodb.WithPoll(time.Microsecond)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if b, err := dynamodb.New(tt.c, tt.opts...); !errors.Is(err, backends.ErrInvalid) || b != nil {
				t.Fatalf("New = %v, %v; want ErrInvalid", b, err)
			}
			if err := dynamodb.Migrate(t.Context(), tt.c, tt.opts...); !errors.Is(err, backends.ErrInvalid) {
				t.Fatalf("Migrate = %v; want ErrInvalid", err)
			}
		})
	}
}
