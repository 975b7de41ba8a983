package dynamodb

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The table's key attributes, and the sort key of every item but a
// registry entry's.
const (
	attrPK = "pk"
	attrSK = "sk"
	single = "-"
)

// The items' partition keys: every record is one item.
const (
	sessionPrefix = "session#" // session#<session ID>
	lockPrefix    = "lock#"    // lock#<name>
	groupPrefix   = "group#"   // group#<group>, sort key <session ID>
	counterKey    = "counter"  // the counter of tokens, versions and orders
)

// The items' other attributes.
const (
	attrVer    = "ver"    // N: the record version, changed by every write
	attrSess   = "sess"   // S: a lock's session ID
	attrCand   = "cand"   // S: the candidate ID
	attrTok    = "tok"    // N: a lock's fencing token
	attrHold   = "hold"   // BOOL: a lock released with a hold
	attrTTL    = "ttl"    // N: milliseconds: a session's TTL, a lock's lease or hold
	attrGC     = "gc"     // N: Unix seconds after which DynamoDB's TTL may sweep a session item
	attrN      = "n"      // N: the counter's value
	attrOrd    = "ord"    // N: a registry entry's order
	attrScore  = "score"  // N
	attrWeight = "weight" // N
	attrMeta   = "meta"   // M of S
)

// gcAfter is how long past its TTL a session item is left for DynamoDB's
// TTL sweep, on the writer's wall clock: a cleanup of crashed sessions,
// far beyond any lease, never a lease itself.
const gcAfter = 24 * time.Hour

type item = map[string]types.AttributeValue

func key(pk, sk string) item {
	return item{attrPK: str(pk), attrSK: str(sk)}
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func num(n uint64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatUint(n, 10)}
}

func float(f float64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatFloat(f, 'g', -1, 64)}
}

func sOf(it item, a string) string {
	if v, ok := it[a].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func nOf(it item, a string) uint64 {
	if v, ok := it[a].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseUint(v.Value, 10, 64)
		return n
	}
	return 0
}

func fOf(it item, a string) float64 {
	if v, ok := it[a].(*types.AttributeValueMemberN); ok {
		f, _ := strconv.ParseFloat(v.Value, 64)
		return f
	}
	return 0
}

func bOf(it item, a string) bool {
	v, ok := it[a].(*types.AttributeValueMemberBOOL)
	return ok && v.Value
}

func ms(d time.Duration) uint64 { return uint64((d + time.Millisecond - 1) / time.Millisecond) }

func gcAt(ttl time.Duration) types.AttributeValue {
	return num(uint64(time.Now().Add(ttl + gcAfter).Unix()))
}

// get reads one item, consistently; nil if there is none.
func (d *driver) get(ctx context.Context, pk, sk string) (item, error) {
	out, err := d.c.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(d.table), Key: key(pk, sk), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, err
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}

// batchMax is BatchGetItem's limit of keys per request.
const batchMax = 100

// getMany reads the items of partition keys pks (sort key single),
// consistently, by BatchGetItem: one request per 100 keys, sent at once,
// and again for keys the service left unprocessed. Missing items are
// missing from the map.
func (d *driver) getMany(ctx context.Context, pks []string) (map[string]item, error) {
	out := make(map[string]item, len(pks))
	var (
		mu   sync.Mutex
		errs error
		wg   sync.WaitGroup
	)
	for i := 0; i < len(pks); i += batchMax {
		chunk := pks[i:min(i+batchMax, len(pks))]
		wg.Go(func() {
			got, err := d.batch(ctx, chunk)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = err
				return
			}
			for _, it := range got {
				out[sOf(it, attrPK)] = it
			}
		})
	}
	wg.Wait()
	return out, errs
}

// batch reads up to 100 items, again for the unprocessed (with a short
// pause).
func (d *driver) batch(ctx context.Context, pks []string) ([]item, error) {
	seen := map[string]bool{}
	keys := make([]item, 0, len(pks))
	for _, pk := range pks {
		if !seen[pk] { // BatchGetItem refuses duplicate keys
			seen[pk] = true
			keys = append(keys, key(pk, single))
		}
	}
	var out []item
	req := map[string]types.KeysAndAttributes{d.table: {Keys: keys, ConsistentRead: aws.Bool(true)}}
	for pause := time.Millisecond; len(req) > 0; pause *= 2 {
		res, err := d.c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
		if err != nil {
			return nil, err
		}
		out = append(out, res.Responses[d.table]...)
		if req = res.UnprocessedKeys; len(req[d.table].Keys) == 0 {
			break
		}
		select {
		case <-time.After(min(pause, 100*time.Millisecond)):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return out, nil
}

// next adds one to the counter and returns its new value: strictly
// increasing over the table's life (a lost answer skips a value).
func (d *driver) next(ctx context.Context) (uint64, error) {
	out, err := d.c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(d.table),
		Key:                       key(counterKey, single),
		UpdateExpression:          aws.String("ADD #n :one"),
		ExpressionAttributeNames:  map[string]string{"#n": attrN},
		ExpressionAttributeValues: item{":one": num(1)},
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, err
	}
	return nOf(out.Attributes, attrN), nil
}

// seen remembers, per item, the version this client last read and when
// it first saw it (its monotonic clock), the lease clock of records
// whose expiry the client judges: a version unchanged for the record's
// TTL since it was first seen has expired. Forgetting an entry only
// makes the wait start again.
type seen struct {
	mu    sync.Mutex
	m     map[string]sight
	count int
}

type sight struct {
	ver         uint64
	first, last time.Time
}

// forget is how long an entry is kept after it was last used.
const forget = 10 * time.Minute

// observe records that pk held version ver at a read answered at at,
// and returns when this client first saw that version.
func (s *seen) observe(pk string, ver uint64, at time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[pk]
	if !ok || e.ver != ver {
		e = sight{ver: ver, first: at}
	}
	e.last = at
	s.put(pk, e)
	return e.first
}

// wrote records this client's own write of version ver to pk, sent at
// start: the writer counts its record's lease from before the write
// reached the store, so its own view ends before any reader's.
func (s *seen) wrote(pk string, ver uint64, start time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[pk]
	if !ok || e.ver != ver || start.Before(e.first) {
		e = sight{ver: ver, first: start}
	}
	e.last = time.Now()
	s.put(pk, e)
}

// put stores e, sweeping entries unused for forget every 1,024 puts; the
// caller holds s.mu.
func (s *seen) put(pk string, e sight) {
	if s.m == nil {
		s.m = map[string]sight{}
	}
	s.m[pk] = e
	if s.count++; s.count%1024 == 0 {
		for k, v := range s.m {
			if time.Since(v.last) > forget {
				delete(s.m, k)
			}
		}
	}
}
