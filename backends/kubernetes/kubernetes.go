package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync/atomic"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/internal/ctxerr"
	"github.com/hustings/hustings/internal/validate"
)

var _ backends.Backend = (*Backend)(nil)

// DefaultPrefix begins the name of every Lease of a Backend unless
// WithPrefix says otherwise.
const DefaultPrefix = "hustings"

// Option configures a Backend.
type Option interface {
	apply(*Backend)
}

type optionFunc func(*Backend)

func (f optionFunc) apply(b *Backend) { f(b) }

// WithPrefix begins the name of every Lease of the Backend with prefix
// and labels them hustings.io/prefix=prefix, so that several services
// share a namespace without sharing lock names, and without one's watch
// seeing the other's Leases. Default DefaultPrefix, "hustings". It must
// be a DNS label of 1 to 20 characters (lower case letters, digits and
// '-', beginning and ending with a letter or digit); New reports
// backends.ErrInvalid otherwise.
func WithPrefix(prefix string) Option {
	return optionFunc(func(b *Backend) { b.prefix = prefix })
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Backend keeps locks in coordination.k8s.io/v1 Leases of one namespace.
// Create it with New; the zero value is not usable. It is safe for
// concurrent use.
type Backend struct {
	leases    coordclient.LeaseInterface
	namespace string
	prefix    string
	seen      observer // when this process first saw each record
	hub       feed     // every Watch, over one watch of the namespace's Leases

	watchTimeout int64                         // seconds the server keeps one watch request open; 0: its default (tests)
	held         atomic.Pointer[chan struct{}] // while set, the watch delivers nothing until it is closed (tests)
}

// New returns a Backend that keeps its Leases in namespace through
// client, the caller's: it is never closed here. New makes no request
// and starts no goroutine; the namespace must exist before the first
// call. A nil client, a namespace that is not a DNS label, or a bad
// option returns an error matching backends.ErrInvalid.
func New(client clientset.Interface, namespace string, opts ...Option) (*Backend, error) {
	if validate.Nil(client) {
		return nil, fmt.Errorf("%w: kubernetes: nil client", backends.ErrInvalid)
	}
	if len(namespace) > 63 || !dnsLabel.MatchString(namespace) {
		return nil, fmt.Errorf("%w: kubernetes: namespace %q is not a DNS label", backends.ErrInvalid, namespace)
	}
	b := &Backend{namespace: namespace, prefix: DefaultPrefix}
	for _, o := range opts {
		if o != nil {
			o.apply(b)
		}
	}
	if len(b.prefix) > 20 || !dnsLabel.MatchString(b.prefix) {
		return nil, fmt.Errorf("%w: kubernetes: prefix %q is not a DNS label of 1 to 20 characters", backends.ErrInvalid, b.prefix)
	}
	b.leases = client.CoordinationV1().Leases(namespace)
	b.hub.init(b)
	return b, nil
}

// LockLease returns the name of the Lease that keeps the lock name (in
// the Backend's namespace), for kubectl and for operators.
func (b *Backend) LockLease(name string) string { return leaseName(b.prefix, kindLock, name) }

// Holder reports who holds the lock name: one GET of its Lease, and two
// of its holder's session Lease unless the Backend's watch delivered it
// within its TTL (one judges the session, one reads its renewTime for
// Expires: see expiry). A lock is held while its session lives
// as this process judges it (see the package doc: by its own clock,
// since it first saw the session's current record); a lock released
// with a hold reports the releasing candidate until the hold ends.
func (b *Backend) Holder(ctx context.Context, name string) (backends.Holder, error) {
	if err := validate.Name(name); err != nil {
		return backends.Holder{}, err
	}
	if err := ctxErr(ctx, "holder"); err != nil {
		return backends.Holder{}, err
	}
	start := time.Now()
	l, err := b.leases.Get(ctx, b.LockLease(name), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return backends.Holder{}, nil
	case err != nil:
		return backends.Holder{}, translate(ctx, "holder", err)
	}
	t, err := b.term(l, name)
	if err != nil {
		return backends.Holder{}, err
	}
	live, err := b.live(ctx, t, start, nil)
	if err != nil || !live {
		return backends.Holder{}, err
	}
	return b.expiry(ctx, l, t, start)
}

// term reads a lock Lease, checking that it is name's (not a hash
// collision, nor someone else's Lease of that name).
func (b *Backend) term(l *coordv1.Lease, name string) (term, error) {
	t := termOf(l)
	if t.name != name || l.Labels[labelKind] != kindLock {
		return term{}, fmt.Errorf("%w: kubernetes: Lease %s/%s is not the lock %q's (annotation %s=%q, label %s=%q)",
			backends.ErrInvalid, b.namespace, l.Name, name, annName, t.name, labelKind, l.Labels[labelKind])
	}
	return t, nil
}

// labels returns the labels every Lease of kind carries.
func (b *Backend) labels(kind string) map[string]string {
	return map[string]string{labelManagedBy: managedBy, labelPrefix: b.prefix, labelKind: kind}
}

// translate maps an error of client-go onto the errors of package
// backends: refusals that no retry cures (forbidden by RBAC, a missing
// namespace, a request the server finds invalid) are ErrInvalid, and
// everything else (a done context, an unreachable server, throttling,
// timeouts) is ErrUnavailable. When ctx is done the result also matches
// ctx.Err().
func translate(ctx context.Context, what string, err error) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		return fmt.Errorf("%w: kubernetes: %s: %w (see the Role in the package doc)", backends.ErrInvalid, what, err)
	case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsMethodNotSupported(err):
		return fmt.Errorf("%w: kubernetes: %s: %w", backends.ErrInvalid, what, err)
	}
	if cerr := ctxerr.Of(ctx, err); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: kubernetes: %s: %w (%w)", backends.ErrUnavailable, what, err, cerr)
	}
	return fmt.Errorf("%w: kubernetes: %s: %w", backends.ErrUnavailable, what, err)
}

// missingNamespace translates the NotFound a create gets when the
// namespace does not exist.
func (b *Backend) missingNamespace(what string, err error) error {
	return fmt.Errorf("%w: kubernetes: %s: namespace %q: %w (create it first)", backends.ErrInvalid, what, b.namespace, err)
}

// ctxErr returns an error matching backends.ErrUnavailable and ctx.Err()
// if ctx is done, so that no request is sent on a done context.
func ctxErr(ctx context.Context, what string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: kubernetes: %s: %w", backends.ErrUnavailable, what, err)
	}
	return nil
}
