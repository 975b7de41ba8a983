// Package validate holds the input rules every backend shares: lock
// names, candidate IDs, TTLs and leases, and registry entries. Each check
// returns an error that matches backends.ErrInvalid and names what is
// wrong; backends add their own rules on top.
package validate

import (
	"fmt"
	"math"
	"reflect"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/internal/human"
	"github.com/hustings/hustings/strategy"
)

// MaxNameLen is the longest lock name or candidate ID, in bytes, that
// every backend stores.
const MaxNameLen = 256

// Name checks the rules every backend shares: a name is non-empty,
// at most MaxNameLen bytes of valid UTF-8, with no control characters.
// Backends add their own rules on top. The error matches backends.ErrInvalid and
// names what is wrong.
func Name(name string) error { return text("lock name", name) }

// text checks a lock name or a candidate ID (what says which).
func text(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%w: empty %s", backends.ErrInvalid, what)
	case len(s) > MaxNameLen:
		return fmt.Errorf("%w: %s is %d bytes, longer than %d", backends.ErrInvalid, what, len(s), MaxNameLen)
	case !utf8.ValidString(s):
		return fmt.Errorf("%w: %s %q is not valid UTF-8", backends.ErrInvalid, what, s)
	}
	for i, r := range s {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: %s %q has control character %U at byte %d", backends.ErrInvalid, what, s, r, i)
		}
	}
	return nil
}

// Session checks the arguments of Open: a candidate ID that
// follows the rules of lock names (non-empty, at most MaxNameLen bytes of
// UTF-8, no control characters) and a TTL TTL accepts. The error
// matches backends.ErrInvalid.
func Session(id string, ttl time.Duration) error {
	if err := text("candidate ID", id); err != nil {
		return err
	}
	return TTL("TTL", ttl)
}

// MaxTTL is the longest TTL or lease a backend takes: far beyond any
// useful lease, and within every backend's range (Redis and ZooKeeper
// count milliseconds, etcd seconds).
const MaxTTL = 7 * 24 * time.Hour

// TTL checks a TTL or lease: from 1 ms (the finest unit a backend
// keeps) to MaxTTL. what names it in the error, which matches backends.ErrInvalid.
func TTL(what string, d time.Duration) error {
	if d < time.Millisecond || d > MaxTTL {
		return fmt.Errorf("%w: %s %s must be from 1ms to %s", backends.ErrInvalid, what, human.Duration(d), human.Duration(MaxTTL))
	}
	return nil
}

// Acquire checks the arguments of backends.Session.Acquire: a valid name and
// a lease ≥ 0. The error matches backends.ErrInvalid.
func Acquire(name string, lease time.Duration) error {
	if err := Name(name); err != nil {
		return err
	}
	if lease < 0 {
		return fmt.Errorf("%w: lease %v must be ≥ 0", backends.ErrInvalid, lease)
	}
	return nil
}

// Release checks the arguments of backends.Session.Release: a valid name
// and a hold ≥ 0. The error matches backends.ErrInvalid.
func Release(name string, hold time.Duration) error {
	if err := Name(name); err != nil {
		return err
	}
	if hold < 0 {
		return fmt.Errorf("%w: hold %v must be ≥ 0", backends.ErrInvalid, hold)
	}
	return nil
}

// Candidate checks a registry entry: a valid group name, finite
// score and weight, and metadata small enough for every backend (at most
// 64 entries, 4 KiB in all). The error matches backends.ErrInvalid.
func Candidate(group string, c strategy.Candidate) error {
	if err := Name(group); err != nil {
		return err
	}
	if math.IsNaN(c.Score) || math.IsInf(c.Score, 0) {
		return fmt.Errorf("%w: score %v is not a finite number", backends.ErrInvalid, c.Score)
	}
	if math.IsNaN(c.Weight) || math.IsInf(c.Weight, 0) || c.Weight < 0 {
		return fmt.Errorf("%w: weight %v must be finite and ≥ 0", backends.ErrInvalid, c.Weight)
	}
	size := 0
	for k, v := range c.Meta {
		size += len(k) + len(v)
	}
	if len(c.Meta) > 64 || size > 4096 {
		return fmt.Errorf("%w: metadata of %d entries and %d bytes; at most 64 entries and 4096 bytes", backends.ErrInvalid, len(c.Meta), size)
	}
	return nil
}

// Nil reports whether v is nil, or a nil pointer, map, slice, channel or
// function behind an interface: a typed nil that "v == nil" lets through
// and that would panic at its first use.
func Nil(v any) bool {
	if v == nil {
		return true
	}
	switch r := reflect.ValueOf(v); r.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.Interface:
		return r.IsNil()
	}
	return false
}
