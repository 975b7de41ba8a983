package record

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Lister is implemented by drivers that can list their lock records, for
// the Store's List.
type Lister interface {
	// ListLocks returns the names of the lock records whose names start
	// with prefix, live or not, in any order: one read, writing nothing.
	ListLocks(ctx context.Context, prefix string) ([]string, error)
}

// List returns the names of the locks held now that start with prefix,
// sorted: the driver's ListLocks, then one ReadLock per record found. A
// driver that is no Lister makes it return an error matching
// errors.ErrUnsupported.
func (s *Store) List(ctx context.Context, prefix string) ([]string, error) {
	l, ok := s.d.(Lister)
	if !ok {
		return nil, fmt.Errorf("%s: %w: this store cannot list its locks", s.name, errors.ErrUnsupported)
	}
	var found []string
	err := s.call(ctx, "list", func() (err error) {
		found, err = l.ListLocks(ctx, prefix)
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(found)
	found = slices.Compact(found)
	var names []string
	for _, name := range found {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		var v View
		err := s.call(ctx, "list", func() (err error) {
			v, err = s.d.ReadLock(ctx, name, "")
			return err
		})
		if err != nil {
			return nil, err
		}
		if live(v) {
			names = append(names, name)
		}
	}
	return names, nil
}
