package memberlist

import (
	"bytes"
	"log/slog"
	"math"
	"reflect"
	"testing"

	hmemberlist "github.com/hashicorp/memberlist"

	"github.com/hustings/hustings/strategy"
)

func sample() entry {
	return entry{order: 1_700_000_000_123_456_789}.
		withGroup("tenants", strategy.Candidate{Score: 0.75, Weight: 3, Meta: map[string]string{"zone": "eu-1", "v": "2"}}).
		withGroup("reports", strategy.Candidate{Score: -2}).
		withClaim("svc/job", claim{slot: 0, token: 1 << 40}).
		withClaim("tenants", claim{slot: 3, token: 17})
}

func TestEntryRoundTrip(t *testing.T) {
	for _, e := range []entry{{}, {order: 5}, sample()} {
		got, err := decodeEntry(e.encode())
		if err != nil {
			t.Fatalf("decode(encode(%+v)): %v", e, err)
		}
		if !reflect.DeepEqual(got, e) {
			t.Errorf("round trip: got %+v, want %+v", got, e)
		}
	}
}

func TestEntryEncodingIsCanonical(t *testing.T) {
	a := sample()
	b := entry{order: a.order}.
		withClaim("tenants", claim{slot: 3, token: 17}).
		withClaim("svc/job", claim{slot: 0, token: 1 << 40}).
		withGroup("reports", strategy.Candidate{Score: -2}).
		withGroup("tenants", strategy.Candidate{Score: 0.75, Weight: 3, Meta: map[string]string{"v": "2", "zone": "eu-1"}})
	if !bytes.Equal(a.encode(), b.encode()) {
		t.Error("equal entries built in another order encode differently")
	}
}

// The sizes doc.go promises.
func TestEntrySizes(t *testing.T) {
	base := len(entry{order: 1_700_000_000_000_000_000}.encode())
	g := len(entry{order: 1_700_000_000_000_000_000}.withGroup("g", strategy.Candidate{Score: 1}).encode()) - base
	if g != 18+len("g") {
		t.Errorf("a group registration takes %d bytes, doc says 18 plus the name", g)
	}
	small := len(entry{}.withClaim("j", claim{token: 1}).encode()) - len(entry{}.encode())
	big := len(entry{}.withClaim("j", claim{slot: 100, token: math.MaxUint64}).encode()) - len(entry{}.encode())
	if small != 3+len("j") || big != 12+len("j") {
		t.Errorf("claims take %d to %d bytes plus the name, doc says 3 to 12", small-1, big-1)
	}
}

func TestDecodeRejectsDamage(t *testing.T) {
	good := sample().encode()
	for i := range len(good) {
		if _, err := decodeEntry(good[:i]); err == nil {
			t.Errorf("a prefix of %d of %d bytes decoded", i, len(good))
		}
	}
	if _, err := decodeEntry(append(bytes.Clone(good), 0)); err == nil {
		t.Error("trailing bytes decoded")
	}
	bad := entry{}.withGroup("g", strategy.Candidate{Score: math.NaN()}).encode()
	if _, err := decodeEntry(bad); err == nil {
		t.Error("a NaN score decoded: it would make every node's ranking fail")
	}
	wrong := bytes.Clone(good)
	wrong[0] = entryVersion + 1
	if _, err := decodeEntry(wrong); err == nil {
		t.Error("an unknown version decoded")
	}
}

func FuzzDecodeEntry(f *testing.F) {
	f.Add(sample().encode())
	f.Add([]byte{entryVersion, 0, 0, 0})
	f.Add([]byte{entryVersion, 1, 255, 255, 255, 255, 15})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEntry(b)
		if err != nil {
			return
		}
		if again, err := decodeEntry(e.encode()); err != nil || !reflect.DeepEqual(again, e) {
			t.Errorf("re-encoding %x changed it: %+v, %v", b, again, err)
		}
	})
}

// A peer whose metadata cannot be read is listed with no entries, and the
// events of a memberlist that was shut down no longer count.
func TestPeerEvents(t *testing.T) {
	n, err := New("me", WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	p := peerEvents{n, n.reset()}
	p.NotifyJoin(&hmemberlist.Node{Name: "ok", Meta: sample().encode()})
	p.NotifyJoin(&hmemberlist.Node{Name: "bad", Meta: []byte{entryVersion, 9}})
	p.NotifyJoin(&hmemberlist.Node{Name: "me", Meta: sample().encode()})
	if got := n.Leaders("tenants"); len(got) != 1 || got[0].Node != "ok" {
		t.Errorf("Leaders = %v, want only the readable peer's claim", got)
	}
	p.NotifyLeave(&hmemberlist.Node{Name: "ok"})
	if got := n.Leaders("tenants"); len(got) != 0 {
		t.Errorf("Leaders after the peer left = %v", got)
	}
	stale := p
	n.reset()
	stale.NotifyJoin(&hmemberlist.Node{Name: "ghost", Meta: sample().encode()})
	if got := n.Leaders("tenants"); len(got) != 0 {
		t.Errorf("an event of a shut-down memberlist counted: %v", got)
	}
}

func TestParseLine(t *testing.T) {
	for _, tc := range []struct {
		line  string
		level slog.Level
		msg   string
	}{
		{"[DEBUG] memberlist: Stream connection", slog.LevelDebug, "memberlist: Stream connection"},
		{"[INFO] memberlist: Marking x as failed", slog.LevelInfo, "memberlist: Marking x as failed"},
		{"[WARN] memberlist: Refuting", slog.LevelWarn, "memberlist: Refuting"},
		{"[ERR] memberlist: Failed", slog.LevelError, "memberlist: Failed"},
		{"no tag", slog.LevelInfo, "no tag"},
	} {
		level, msg := parseLine(tc.line)
		if level != tc.level || msg != tc.msg {
			t.Errorf("parseLine(%q) = %v, %q; want %v, %q", tc.line, level, msg, tc.level, tc.msg)
		}
	}
}
