package kubernetes

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/internal/validate"
	"github.com/hustings/hustings/strategy"
)

// entry is what a member Lease's annotation hustings.io/entry holds.
type entry struct {
	Score  float64           `json:"score"`
	Weight float64           `json:"weight"`
	Meta   map[string]string `json:"meta,omitempty"`
}

// memberLease returns the name of the session's entry in group.
func (s *session) memberLease(group string) string {
	return leaseName(s.b.prefix, kindMember, group+"\x00"+s.lease)
}

// Register adds the session's candidate to group, or updates its entry.
// The entry is a member Lease (holderIdentity the candidate ID, labelled
// with the session and the group's hash, the group's name, the score,
// weight and metadata in annotations). Its Order is the resourceVersion
// its creation made, which strictly increases per namespace; updates
// record it in the annotation hustings.io/order before they change the
// resourceVersion. The first Register is one create; later ones a create
// refused, a GET and an update conditioned on it. A session judged
// expired by its own clock gets backends.ErrSessionLost and writes
// nothing.
func (s *session) Register(ctx context.Context, group string, c strategy.Candidate) (strategy.Candidate, error) {
	if err := s.usable(); err != nil {
		return strategy.Candidate{}, err
	}
	if err := validate.Candidate(group, c); err != nil {
		return strategy.Candidate{}, err
	}
	if err := ctxErr(ctx, "register"); err != nil {
		return strategy.Candidate{}, err
	}
	if s.expired(time.Now()) {
		return strategy.Candidate{}, s.markLost()
	}
	raw, err := json.Marshal(entry{Score: c.Score, Weight: c.Weight, Meta: c.Meta})
	if err != nil {
		return strategy.Candidate{}, fmt.Errorf("%w: kubernetes: register: %w", backends.ErrInvalid, err)
	}
	l, err := s.b.leases.Create(ctx, s.member(group, raw), metav1.CreateOptions{})
	for try := 0; apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err); try++ {
		if try == maxTries {
			return strategy.Candidate{}, fmt.Errorf("%w: kubernetes: register: %q changed under %d tries in a row", backends.ErrUnavailable, group, maxTries)
		}
		if l, err = s.b.leases.Get(ctx, s.memberLease(group), metav1.GetOptions{}); err != nil {
			break
		}
		l.Annotations[annOrder] = orderOf(l)
		l.Annotations[annEntry] = string(raw)
		l, err = s.b.leases.Update(ctx, l, metav1.UpdateOptions{})
	}
	switch {
	case apierrors.IsNotFound(err):
		return strategy.Candidate{}, s.b.missingNamespace("register", err)
	case err != nil:
		return strategy.Candidate{}, translate(ctx, "register", err)
	}
	order, err := strconv.ParseUint(orderOf(l), 10, 64)
	if err != nil {
		return strategy.Candidate{}, fmt.Errorf("%w: kubernetes: register: order %q", backends.ErrUnavailable, orderOf(l))
	}
	c.ID, c.Order, c.Meta = s.id, order, maps.Clone(c.Meta)
	return c, nil
}

// member returns a new member Lease of the session in group.
func (s *session) member(group string, raw []byte) *coordv1.Lease {
	lbl := s.b.labels(kindMember)
	lbl[labelSession], lbl[labelGroup] = s.lease, hashLabel(group)
	now := time.Now()
	return &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: s.memberLease(group), Labels: lbl,
			Annotations: map[string]string{annName: group, annEntry: string(raw)},
		},
		Spec: coordv1.LeaseSpec{HolderIdentity: &s.id, LeaseDurationSeconds: seconds(s.ttl), AcquireTime: micro(now), RenewTime: micro(now)},
	}
}

// orderOf returns a member Lease's order: recorded by an update, or
// else the resourceVersion its creation made (nothing wrote it since).
func orderOf(l *coordv1.Lease) string {
	if o := l.Annotations[annOrder]; o != "" {
		return o
	}
	return l.ResourceVersion
}

// Deregister deletes the session's member Lease in group: one DELETE;
// none to delete is not an error.
func (s *session) Deregister(ctx context.Context, group string) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := validate.Name(group); err != nil {
		return err
	}
	if err := ctxErr(ctx, "deregister"); err != nil {
		return err
	}
	err := s.b.leases.Delete(ctx, s.memberLease(group), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return translate(ctx, "deregister", err)
	}
	return nil
}

// Members lists the candidates of group whose sessions live, as this
// process judges them (see the package doc), in registration order: one
// LIST of the group's member Leases, then one of the Backend's session
// Leases. Entries whose session Lease is gone are deleted; session
// Leases judged expired are deleted (conditioned on the version judged;
// one that was renewed meanwhile stays listed), and their entries go at
// a later call.
func (b *Backend) Members(ctx context.Context, group string) ([]strategy.Candidate, error) {
	if err := validate.Name(group); err != nil {
		return nil, err
	}
	if err := ctxErr(ctx, "members"); err != nil {
		return nil, err
	}
	start := time.Now()
	// Members first: a session listed after them is there for every
	// member made before, so a member whose session is missing has lost it.
	set := map[string]string{labelPrefix: b.prefix, labelKind: kindMember, labelGroup: hashLabel(group)}
	members, err := b.leases.List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(set).String()})
	if err != nil {
		return nil, translate(ctx, "members", err)
	}
	delete(set, labelGroup)
	set[labelKind] = kindSession
	sessions, err := b.leases.List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(set).String()})
	if err != nil {
		return nil, translate(ctx, "members", err)
	}
	alive := map[string]bool{}
	for i := range sessions.Items {
		l := &sessions.Items[i]
		if alive[l.Name] = b.sessionLive(l, start); !alive[l.Name] {
			gone, err := b.reap(ctx, l)
			if err != nil {
				return nil, err
			}
			alive[l.Name] = !gone
		}
	}
	var out []strategy.Candidate
	for i := range members.Items {
		l := &members.Items[i]
		if l.Annotations[annName] != group {
			continue // a hash collision, or not ours
		}
		sess := l.Labels[labelSession]
		if _, known := alive[sess]; !known {
			_ = b.leases.Delete(ctx, l.Name, metav1.DeleteOptions{}) // its session is gone: best effort
		}
		if c, ok := candidateOf(l); ok && alive[sess] {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(x, y strategy.Candidate) int { return cmp.Compare(x.Order, y.Order) })
	return out, nil
}

// candidateOf reads a member Lease.
func candidateOf(l *coordv1.Lease) (strategy.Candidate, bool) {
	var e entry
	order, err := strconv.ParseUint(orderOf(l), 10, 64)
	if err != nil || l.Spec.HolderIdentity == nil || json.Unmarshal([]byte(l.Annotations[annEntry]), &e) != nil {
		return strategy.Candidate{}, false
	}
	return strategy.Candidate{ID: *l.Spec.HolderIdentity, Order: order, Score: e.Score, Weight: e.Weight, Meta: e.Meta}, true
}
