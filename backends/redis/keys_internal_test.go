package redis

import "testing"

// TestKeysOfALock: a lock's five keys share its hash tag and the prefix,
// and take two allocations (the tag's and one for all five keys).
func TestKeysOfALock(t *testing.T) {
	b := &Backend{prefix: "hustings"}
	k := b.keys("a}b")
	base := "hustings:" + HashTag("a}b") + ":"
	for got, want := range map[string]string{k.lock: base + "lock", k.fence: base + "fence", k.wanted: base + "wanted", k.channel: base + "released", k.wake: base + "wake"} {
		if got != want {
			t.Errorf("key %q, want %q", got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = b.keys("nightly") }); n > 3 {
		t.Errorf("keys allocates %v times, want at most 3", n)
	}
}
