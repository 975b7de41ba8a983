package redis_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/redis"
	"github.com/hustings/hustings/backends/redis/redistest"
	"github.com/hustings/hustings/events"
)

// incrScript increments its one key and returns the new value.
const incrScript = `return redis.call('INCR', KEYS[1])`

// fencedIncr is the contract suite's fenced write: an INCR of a key in
// the lock's slot, under Fence.
func fencedIncr(ctx context.Context, b backends.Backend, name string, token events.Token) error {
	_, err := b.(*redis.Backend).Fence(ctx, name, token, incrScript, []string{redis.HashTag(name) + ":writes"})
	return err
}

// TestFenceRefusesKeysOfOtherSlots: a key outside the lock's hash
// slot is refused before anything is sent, on a single server as on a
// Cluster, with an error naming the tag to use; keys with the tag, or
// with another tag of the same slot, are run.
func TestFenceRefusesKeysOfOtherSlots(t *testing.T) {
	srv := redistest.Start(t, redistest.Cluster())
	b, err := redis.New(redistest.ClusterClient(t, srv.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	tok, err := openSession(t, b, "a", time.Minute).Acquire(ctx, "a}b", 0)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key string
		ok  bool
	}{
		{"{a%7Db}:count", true},
		{"count:" + redis.HashTag("a}b"), true},
		{"count", false},
		{"{a}b}:count", false}, // the tag of a name not escaped: "a"
		{"{other}:count", false},
	}
	for _, tt := range tests {
		_, err := b.Fence(ctx, "a}b", tok, incrScript, []string{redis.HashTag("a}b") + ":first", tt.key})
		switch {
		case tt.ok && err != nil:
			t.Errorf("key %q: %v", tt.key, err)
		case !tt.ok && !errors.Is(err, backends.ErrInvalid):
			t.Errorf("key %q: %v, want ErrInvalid", tt.key, err)
		case !tt.ok && !strings.Contains(err.Error(), "{a%7Db}"):
			t.Errorf("key %q: error %q does not name the tag {a%%7Db}", tt.key, err)
		}
	}
}

// TestFenceKeepsNumbering: the script sees the caller's KEYS and
// ARGV, numbered as given, and Redis's error messages give the script's
// own line numbers, with or without a shebang line.
func TestFenceKeepsNumbering(t *testing.T) {
	srv := redistest.Start(t)
	b := newBackend(t, srv.Addr())
	ctx := t.Context()
	tok, err := openSession(t, b, "a", time.Minute).Acquire(ctx, "n", 0)
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"{n}:k1", "{n}:k2"}
	const echo = "return {#KEYS, #ARGV, KEYS[1], KEYS[2], ARGV[1], ARGV[2]}"
	want := []any{int64(2), int64(2), "{n}:k1", "{n}:k2", "v1", "7"}
	for _, script := range []string{echo, "#!lua\n" + echo, "#!lua flags=no-writes\n" + echo} {
		got, err := b.Fence(ctx, "n", tok, script, keys, "v1", 7)
		if err != nil || !slices.Equal(got.([]any), want) {
			t.Errorf("%q = %v, %v; want %v", script, got, err, want)
		}
	}
	if len(keys) != 2 || keys[1] != "{n}:k2" {
		t.Errorf("Fence changed the caller's keys: %q", keys)
	}
	lines := map[string]string{
		"local x = 1\nerror('on line 2')":        "user_script:2:",
		"#!lua\nlocal x = 1\nerror('on line 3')": "user_script:3:",
	}
	for script, at := range lines {
		_, err := b.Fence(ctx, "n", tok, script, nil)
		if err == nil || !strings.Contains(err.Error(), at) {
			t.Errorf("%q: %v, want an error at %s", script, err, at)
		}
	}
}

// TestFenceSurfacesScriptErrors: an error the script raises is
// returned as the script's, neither ErrNotHeld nor ErrUnavailable, and
// readable as a goredis.Error; nil from the script is no error.
func TestFenceSurfacesScriptErrors(t *testing.T) {
	srv := redistest.Start(t)
	b := newBackend(t, srv.Addr())
	ctx := t.Context()
	tok, err := openSession(t, b, "a", time.Minute).Acquire(ctx, "e", 0)
	if err != nil {
		t.Fatal(err)
	}
	scripts := map[string]string{
		"error()":            "error('boom')",
		"redis.error_reply":  "return redis.error_reply('BOOM bad balance')",
		"failed redis.call":  "return redis.call('INCR', KEYS[1], 'extra')",
		"syntax error":       "return (",
		"write to wrong key": "return redis.call('HSET', KEYS[1], 'f', 'v')", // after a SET: WRONGTYPE
	}
	if _, err := b.Fence(ctx, "e", tok, "return redis.call('SET', KEYS[1], 'x')", []string{"{e}:k"}); err != nil {
		t.Fatalf("SET: %v", err)
	}
	for what, script := range scripts {
		_, err := b.Fence(ctx, "e", tok, script, []string{"{e}:k"})
		var reply goredis.Error
		if err == nil || errors.Is(err, backends.ErrNotHeld) || errors.Is(err, backends.ErrUnavailable) || !errors.As(err, &reply) {
			t.Errorf("%s: %v, want the script's own error", what, err)
		}
	}
	if v, err := b.Fence(ctx, "e", tok, "return nil", nil); v != nil || err != nil {
		t.Errorf("a script returning nil: %v, %v; want nil, nil", v, err)
	}
}

// TestFenceRefusesEndedTerms: after a release with a hold, after a
// plain release and under token 0, the script does not run.
func TestFenceRefusesEndedTerms(t *testing.T) {
	srv := redistest.Start(t)
	b := newBackend(t, srv.Addr())
	client := redistest.Client(t, srv.Addr())
	ctx := t.Context()
	s := openSession(t, b, "a", time.Minute)
	count := func() int64 {
		n, err := client.Get(ctx, "{h}:writes").Int64()
		if err != nil && !errors.Is(err, goredis.Nil) {
			t.Fatal(err)
		}
		return n
	}
	tok, err := s.Acquire(ctx, "h", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := fencedIncr(ctx, b, "h", tok); err != nil || count() != 1 {
		t.Fatalf("holder's write: %v, count %d; want it made", err, count())
	}
	if err := s.Release(ctx, "h", tok, time.Minute); err != nil {
		t.Fatal(err)
	}
	wantErrs(t, "released with a hold", fencedIncr(ctx, b, "h", tok), backends.ErrNotHeld)
	tok2, err := s.Acquire(ctx, "h2", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "h2", tok2, 0); err != nil {
		t.Fatal(err)
	}
	wantErrs(t, "released", fencedIncr(ctx, b, "h2", tok2), backends.ErrNotHeld)
	wantErrs(t, "token 0", fencedIncr(ctx, b, "h", 0), backends.ErrNotHeld)
	if n := count(); n != 1 {
		t.Fatalf("%d writes made, want 1: a refused script ran", n)
	}
}
