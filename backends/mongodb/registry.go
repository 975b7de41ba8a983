package mongodb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/hustings/hustings/strategy"
)

// memberDoc is a registry entry, keyed by group and order: an insert of
// the next order is the atomic step, as a lock's state. The entry of the
// highest order of a group is never deleted, only marked gone, so that
// orders never repeat.
type memberDoc struct {
	ID     string            `bson:"_id"`
	Grp    string            `bson:"grp"`
	Ord    int64             `bson:"ord"`
	Sid    string            `bson:"sid,omitempty"`
	Score  float64           `bson:"score"`
	Weight float64           `bson:"weight"`
	Meta   map[string]string `bson:"meta,omitempty"`
	Gone   bool              `bson:"gone,omitempty"`
}

func memberKey(group string, ord int64) string { return fmt.Sprintf("%s#%016x", group, ord) }

// maxRegisterTries bounds the inserts of one Register that meet another's
// order.
const maxRegisterTries = 8

// Register reads the session, the clock, the session's entry and the
// group's highest order at once; it updates the entry, or inserts the
// next order (again after a duplicate key, bounded).
func (d *driver) Register(ctx context.Context, group, sid string, c strategy.Candidate) (uint64, bool, error) {
	for range maxRegisterTries {
		var (
			s                  sessionDoc
			mine, top          memberDoc
			now                time.Time
			e0, e1, e2, e3, e4 error
			wg                 sync.WaitGroup
		)
		wg.Go(func() { now, e0 = d.now(ctx) })
		wg.Go(func() { s, e1 = d.findSession(ctx, sid) })
		wg.Go(func() {
			e2 = d.members.FindOne(ctx, bson.D{{Key: "grp", Value: group}, {Key: "sid", Value: sid}}).Decode(&mine)
		})
		wg.Go(func() {
			e3 = d.members.FindOne(ctx, bson.D{{Key: "grp", Value: group}},
				options.FindOne().SetSort(bson.D{{Key: "ord", Value: -1}})).Decode(&top)
		})
		wg.Wait()
		for _, e := range []*error{&e2, &e3} {
			if errors.Is(*e, mongo.ErrNoDocuments) {
				*e = nil
			}
		}
		if err := errors.Join(e0, e1, e2, e3); err != nil {
			return 0, false, unavailable(ctx, "register", err)
		}
		if !s.alive(now) {
			return 0, false, nil
		}
		set := bson.D{{Key: "score", Value: c.Score}, {Key: "weight", Value: c.Weight}, {Key: "meta", Value: c.Meta}}
		if mine.ID != "" {
			_, e4 = d.members.UpdateOne(ctx, bson.D{{Key: "_id", Value: mine.ID}}, bson.D{{Key: "$set", Value: set}})
			return uint64(mine.Ord), true, unavailable(ctx, "register", e4)
		}
		ord := top.Ord + 1
		_, e4 = d.members.InsertOne(ctx, memberDoc{ID: memberKey(group, ord), Grp: group, Ord: ord, Sid: sid,
			Score: c.Score, Weight: c.Weight, Meta: c.Meta})
		if mongo.IsDuplicateKeyError(e4) {
			continue
		}
		return uint64(ord), e4 == nil, unavailable(ctx, "register", e4)
	}
	return 0, false, unavailable(ctx, "register", errors.New("every order tried was taken by another registration"))
}

// Deregister removes session sid's entry from group.
func (d *driver) Deregister(ctx context.Context, group, sid string) error {
	var mine memberDoc
	err := d.members.FindOne(ctx, bson.D{{Key: "grp", Value: group}, {Key: "sid", Value: sid}}).Decode(&mine)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil
	}
	if err == nil {
		err = d.drop(ctx, mine)
	}
	return unavailable(ctx, "deregister", err)
}

// drop deletes entry m, or marks it gone if it has the group's highest
// order (a higher one, once seen, is never deleted).
func (d *driver) drop(ctx context.Context, m memberDoc) error {
	n, err := d.members.CountDocuments(ctx, bson.D{{Key: "grp", Value: m.Grp}, {Key: "ord", Value: bson.D{{Key: "$gt", Value: m.Ord}}}})
	switch {
	case err != nil:
		return err
	case n > 0:
		_, err = d.members.DeleteOne(ctx, bson.D{{Key: "_id", Value: m.ID}})
	default:
		_, err = d.members.UpdateOne(ctx, bson.D{{Key: "_id", Value: m.ID}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "gone", Value: true}}}, {Key: "$unset", Value: bson.D{{Key: "sid", Value: ""}}}})
	}
	return err
}

// Members reads the group's entries, in order, and the clock; then the
// sessions they name. Entries of sessions gone are dropped.
func (d *driver) Members(ctx context.Context, group string) ([]strategy.Candidate, error) {
	var (
		ms   []memberDoc
		now  time.Time
		nerr error
		wg   sync.WaitGroup
	)
	wg.Go(func() { now, nerr = d.now(ctx) })
	cur, err := d.members.Find(ctx, bson.D{{Key: "grp", Value: group}, {Key: "gone", Value: bson.D{{Key: "$ne", Value: true}}}},
		options.Find().SetSort(bson.D{{Key: "ord", Value: 1}}))
	if err == nil {
		err = cur.All(ctx, &ms)
	}
	wg.Wait()
	if err = errors.Join(err, nerr); err != nil {
		return nil, unavailable(ctx, "members", err)
	}
	if len(ms) == 0 {
		return nil, nil
	}
	sids := make([]string, len(ms))
	for i, m := range ms {
		sids[i] = m.Sid
	}
	var ss []sessionDoc
	cur, err = d.sessions.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: sids}}}})
	if err == nil {
		err = cur.All(ctx, &ss)
	}
	if err != nil {
		return nil, unavailable(ctx, "members", err)
	}
	byID := make(map[string]sessionDoc, len(ss))
	for _, s := range ss {
		byID[s.ID] = s
	}
	var out []strategy.Candidate
	for _, m := range ms {
		s, ok := byID[m.Sid]
		if !ok || !s.alive(now) {
			if !ok || s.Dead || s.lapsed() || now.Sub(s.expires()) > time.Minute {
				_ = d.drop(ctx, m) // cleanup: the next Members tries again
			}
			continue
		}
		out = append(out, strategy.Candidate{ID: s.Cand, Order: uint64(m.Ord), Score: m.Score, Weight: m.Weight, Meta: m.Meta})
	}
	return out, nil
}
