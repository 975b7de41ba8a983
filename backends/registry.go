package backends

import (
	"context"

	"github.com/hustings/hustings/strategy"
)

// Registry is implemented by backends that keep a registry of each group's
// live candidates, for the rankings of package strategy. Entries are tied
// to sessions: a candidate whose session ends disappears from the list.
type Registry interface {
	// Members lists the live candidates registered in group, in
	// registration order. It may list one ID twice for a moment while a
	// candidate replaces its session; callers keep the earliest.
	Members(ctx context.Context, group string) ([]strategy.Candidate, error)
}

// Registrar is implemented by the sessions of backends that implement
// Registry.
type Registrar interface {
	// Register adds the session's candidate to group, or updates its entry:
	// the backend assigns Order at the first registration of this session
	// (strictly increasing per group, over the life of the backend's data)
	// and keeps it on updates; Score, Weight and Meta are replaced. The ID
	// is the session's. It returns the entry as stored.
	Register(ctx context.Context, group string, c strategy.Candidate) (strategy.Candidate, error)
	// Deregister removes the session's entry from group; removing an entry
	// that is not there is not an error.
	Deregister(ctx context.Context, group string) error
}
