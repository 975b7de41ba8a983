package elector

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
)

// Observer is told what campaigns and one-shot runs do, for metrics. Its
// methods are called from the campaigns' goroutines, a campaign's under
// its lock: they must not block, nor call the campaign's methods.
type Observer interface {
	// Attempt: a try for the lock began.
	Attempt(name, backend string)
	// Acquired: the backend confirmed the lock (a term or a one-shot run).
	Acquired(name, backend string)
	// NotAcquired: a try ended without the lock, for why.
	NotAcquired(name, backend string, why Reason)
	// TermStarted and TermEnded bracket a campaign's term; reason is the
	// revocation's code (see ReasonCode).
	TermStarted(name, backend string)
	TermEnded(name, backend, reason string)
	// Action: a one-shot run's fn returned after d, with err.
	Action(name, backend string, d time.Duration, err error)
	// KeepAlive: a session renewal took d and returned err.
	KeepAlive(backend string, d time.Duration, err error)
}

// nopObserver is the default: it does nothing.
type nopObserver struct{}

func (nopObserver) Attempt(string, string)                      {}
func (nopObserver) Acquired(string, string)                     {}
func (nopObserver) NotAcquired(string, string, Reason)          {}
func (nopObserver) TermStarted(string, string)                  {}
func (nopObserver) TermEnded(string, string, string)            {}
func (nopObserver) Action(string, string, time.Duration, error) {}
func (nopObserver) KeepAlive(string, time.Duration, error)      {}

// BackendLabel names a backend for metrics by its package's name: "redis"
// for a *redis.Backend. Labels are kept by type: a run asks for one twice.
func BackendLabel(b backends.Backend) string {
	typ := reflect.TypeOf(b)
	if l, ok := labels.Load(typ); ok {
		return l.(string)
	}
	t := strings.TrimPrefix(fmt.Sprintf("%T", b), "*")
	if i := strings.IndexByte(t, '.'); i > 0 {
		t = t[:i]
	}
	labels.Store(typ, t)
	return t
}

// labels holds BackendLabel's labels by the backend's reflect.Type.
var labels sync.Map
