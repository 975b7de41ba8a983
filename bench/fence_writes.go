package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	sdk "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/go-zookeeper/zk"
	"github.com/hashicorp/consul/api"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	goredis "github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"

	consulbackend "github.com/hustings/hustings/backends/consul"
	"github.com/hustings/hustings/backends/dynamodb"
	"github.com/hustings/hustings/backends/etcd"
	"github.com/hustings/hustings/backends/kubernetes"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/backends/mongodb"
	"github.com/hustings/hustings/backends/mysql"
	natsbackend "github.com/hustings/hustings/backends/nats"
	"github.com/hustings/hustings/backends/postgres"
	"github.com/hustings/hustings/backends/redis"
	"github.com/hustings/hustings/backends/zookeeper"
	"github.com/hustings/hustings/events"
)

// fencePair is one write of the fenced-write workload: made through the
// backend's native fence, under the token of a lock the bench holds, and
// made plainly (the same write to the same place, without the fence).
type fencePair struct {
	fenced, plain subject
}

// makeFence returns a system's fencePair for the lock name held under
// token, after the untimed setup its write needs (a node, a table, a
// document).
type makeFence func(ctx context.Context, name string, token events.Token) (fencePair, error)

// fenceKey is the key, node, row, document or item every fenced write
// and its plain twin write.
const fenceKey = "bench-fenced"

// fenceValue is a value no write made before: a write that changes
// nothing may be skipped (the apiserver does not store such an update).
func fenceValue() string { return strconv.FormatInt(seq.Add(1), 10) }

func memoryFence(b *memory.Backend) makeFence {
	return func(_ context.Context, name string, token events.Token) (fencePair, error) {
		store := map[string]string{}
		write := func() error { store[fenceKey] = "v"; return nil }
		return fencePair{
			fenced: subject{"Fence(write): a map write under the backend's lock", func(ctx context.Context) error { return b.Fence(ctx, name, token, write) }},
			plain:  subject{"the map write", func(context.Context) error { return write() }},
		}, nil
	}
}

// fenceScript is the Redis script both forms run.
const fenceScript = "return redis.call('SET', KEYS[1], ARGV[1])"

func redisFence(b *redis.Backend, c *goredis.Client) makeFence {
	return func(_ context.Context, name string, token events.Token) (fencePair, error) {
		keys := []string{redis.HashTag(name) + ":" + fenceKey}
		script := goredis.NewScript(fenceScript)
		return fencePair{
			fenced: subject{"Fence: a SET script (EVALSHA), the lock checked in it", func(ctx context.Context) error {
				_, err := b.Fence(ctx, name, token, fenceScript, keys, fenceValue())
				return err
			}},
			plain: subject{"the SET script (EVALSHA)", func(ctx context.Context) error { return script.Run(ctx, c, keys, fenceValue()).Err() }},
		}, nil
	}
}

func etcdFence(b *etcd.Backend, cli *clientv3.Client) makeFence {
	const key = "/bench/" + fenceKey
	return func(_ context.Context, name string, token events.Token) (fencePair, error) {
		return fencePair{
			fenced: subject{"Txn If(Fence) Then Put", func(ctx context.Context) error {
				resp, err := cli.Txn(ctx).If(b.Fence(name, token)).Then(clientv3.OpPut(key, fenceValue())).Commit()
				if err == nil && !resp.Succeeded {
					err = fmt.Errorf("the fence refused token %d", token)
				}
				return err
			}},
			plain: subject{"Txn Then Put (no comparison)", func(ctx context.Context) error {
				_, err := cli.Txn(ctx).Then(clientv3.OpPut(key, fenceValue())).Commit()
				return err
			}},
		}, nil
	}
}

func zkFence(b *zookeeper.Backend, conn *zk.Conn) makeFence {
	const path = "/" + fenceKey
	return func(_ context.Context, name string, token events.Token) (fencePair, error) {
		if _, err := conn.Create(path, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fencePair{}, err
		}
		set := func() *zk.SetDataRequest {
			return &zk.SetDataRequest{Path: path, Data: []byte(fenceValue()), Version: -1}
		}
		return fencePair{
			fenced: subject{"Fence(set data): two reads, then a multi of the check and the set", func(ctx context.Context) error {
				_, err := b.Fence(ctx, name, token, set())
				return err
			}},
			plain: subject{"Multi(set data)", func(context.Context) error {
				_, err := conn.Multi(set())
				return err
			}},
		}, nil
	}
}

func pgFence(pool *pgxpool.Pool, b *postgres.Backend) makeFence {
	const upsert = "INSERT INTO bench_fenced VALUES ($1, 1) ON CONFLICT (k) DO UPDATE SET n = bench_fenced.n + 1"
	return func(ctx context.Context, name string, token events.Token) (fencePair, error) {
		if _, err := pool.Exec(ctx, "CREATE TABLE IF NOT EXISTS bench_fenced (k text PRIMARY KEY, n bigint NOT NULL)"); err != nil {
			return fencePair{}, err
		}
		write := func(ctx context.Context, fenced bool) error {
			return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				if fenced {
					if err := b.Fence(ctx, tx, name, token); err != nil {
						return err
					}
				}
				_, err := tx.Exec(ctx, upsert, fenceKey)
				return err
			})
		}
		return fencePair{
			fenced: subject{"BEGIN, Backend.Fence, upsert, COMMIT", func(ctx context.Context) error { return write(ctx, true) }},
			plain:  subject{"BEGIN, upsert, COMMIT", func(ctx context.Context) error { return write(ctx, false) }},
		}, nil
	}
}

func mysqlFence(b *mysql.Backend, db *sql.DB) makeFence {
	const upsert = "INSERT INTO bench_write VALUES (?, 1) ON DUPLICATE KEY UPDATE n = n + 1"
	return func(_ context.Context, name string, token events.Token) (fencePair, error) {
		write := func(ctx context.Context, fenced bool) error {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			if fenced {
				err = b.Fence(ctx, tx, name, token)
			}
			if err == nil {
				_, err = tx.ExecContext(ctx, upsert, fenceKey)
			}
			if err != nil {
				return errors.Join(err, tx.Rollback())
			}
			return tx.Commit()
		}
		return fencePair{
			fenced: subject{"BEGIN, Fence, upsert, COMMIT", func(ctx context.Context) error { return write(ctx, true) }},
			plain:  subject{"BEGIN, upsert, COMMIT", func(ctx context.Context) error { return write(ctx, false) }},
		}, nil
	}
}

// kubeFence's plain write is a merge patch of the same annotation on the
// same Lease, the lock's: one request, where Fence reads the Lease and
// updates it conditioned on the version it read.
func kubeFence(b *kubernetes.Backend, leases coordclient.LeaseInterface) makeFence {
	return func(_ context.Context, name string, token events.Token) (fencePair, error) {
		lease := b.LockLease(name)
		return fencePair{
			fenced: subject{"Fence(annotation): GET of the lock Lease, conditioned update", func(ctx context.Context) error {
				return b.Fence(ctx, name, token, map[string]string{fenceKey: fenceValue()})
			}},
			plain: subject{"merge patch of the annotation on the lock Lease", func(ctx context.Context) error {
				patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, fenceKey, fenceValue())
				_, err := leases.Patch(ctx, lease, ktypes.MergePatchType, []byte(patch), metav1.PatchOptions{})
				return err
			}},
		}, nil
	}
}

func natsFence(b *natsbackend.Backend, kv jetstream.KeyValue) makeFence {
	return func(_ context.Context, name string, token events.Token) (fencePair, error) {
		return fencePair{
			fenced: subject{"Fence(key, value): a publish expecting the lock's revision", func(ctx context.Context) error {
				_, err := b.Fence(ctx, name, token, fenceKey, []byte(fenceValue()))
				return err
			}},
			plain: subject{"KV Put of the same key", func(ctx context.Context) error {
				_, err := kv.Put(ctx, fenceKey, []byte(fenceValue()))
				return err
			}},
		}, nil
	}
}

func mongoFence(b *mongodb.Backend, db *mongo.Database) makeFence {
	coll := db.Collection("bench_fenced")
	filter := bson.D{{Key: "_id", Value: fenceKey}}
	update := bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}
	return func(ctx context.Context, name string, token events.Token) (fencePair, error) {
		if _, err := coll.UpdateOne(ctx, filter, update, options.UpdateOne().SetUpsert(true)); err != nil {
			return fencePair{}, err
		}
		return fencePair{
			fenced: subject{"FencedUpdate: a read of the lock, then updateOne with the token's filter", func(ctx context.Context) error {
				res, err := b.FencedUpdate(ctx, coll, name, token, filter, update)
				if err == nil && res.MatchedCount != 1 {
					err = fmt.Errorf("fenced updateOne matched %d documents", res.MatchedCount)
				}
				return err
			}},
			plain: subject{"updateOne", func(ctx context.Context) error {
				_, err := coll.UpdateOne(ctx, filter, update)
				return err
			}},
		}, nil
	}
}

func dynamoFence(b *dynamodb.Backend, c *sdk.Client) makeFence {
	put := func() *sdk.PutItemInput {
		return &sdk.PutItemInput{TableName: aws.String(baselineTable), Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: fenceKey}, "sk": &types.AttributeValueMemberS{Value: "-"},
			"v": &types.AttributeValueMemberN{Value: fenceValue()},
		}}
	}
	return func(_ context.Context, name string, token events.Token) (fencePair, error) {
		return fencePair{
			fenced: subject{"Fence(PutItem): a read of the lock, then the conditioned PutItem", func(ctx context.Context) error {
				_, err := b.Fence(ctx, name, token, put())
				return err
			}},
			plain: subject{"PutItem", func(ctx context.Context) error {
				_, err := c.PutItem(ctx, put())
				return err
			}},
		}, nil
	}
}

func consulFence(b *consulbackend.Backend, c *api.Client) makeFence {
	ops := func() api.TxnOps {
		return api.TxnOps{{KV: &api.KVTxnOp{Verb: api.KVSet, Key: fenceKey, Value: []byte(fenceValue())}}}
	}
	return func(_ context.Context, name string, token events.Token) (fencePair, error) {
		return fencePair{
			fenced: subject{"Fence(ops): a Txn of the check-index and a KV set", func(ctx context.Context) error {
				_, err := b.Fence(ctx, name, token, ops())
				return err
			}},
			plain: subject{"a Txn of the KV set", func(ctx context.Context) error {
				ok, resp, _, err := c.Txn().Txn(ops(), (&api.QueryOptions{}).WithContext(ctx))
				if err == nil && !ok {
					err = fmt.Errorf("txn rolled back: %v", resp.Errors)
				}
				return err
			}},
		}, nil
	}
}
