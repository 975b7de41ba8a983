package zookeeper

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The tree under the root:
//
//	<root>/sessions/<sid>          ephemeral, sessionData; mtime = last renewal
//	<root>/locks/<encoded name>    container, one per lock name
//	    <sid>-<10-digit sequence>  ephemeral sequential, lockData; the oldest live one holds
//	    hold                       persistent, holdData, while a release's hold lasts
//	<root>/groups/<encoded group>  container, one per registry group
//	    <sid>                      ephemeral, entryData; its czxid is the entry's order

// holdNode is the name of the hold marker among a lock's children.
const holdNode = "hold"

// encodeName maps a lock name to one path segment: url.PathEscape, which
// leaves ASCII letters, digits and -._~$&+:=@ as they are and writes every
// other byte (/, %, spaces, all non-ASCII) as %XX, so every valid name maps
// to a distinct segment ZooKeeper accepts. The names "." and ".." have
// their dots written as %2E.
func encodeName(name string) string {
	s := url.PathEscape(name)
	if s == "." || s == ".." {
		s = strings.ReplaceAll(s, ".", "%2E")
	}
	return s
}

// newSID returns a random session node name: 16 hex digits.
func newSID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// child is a lock child node's name, parsed.
type child struct {
	name string
	sid  string // the session that made it
	seq  int64  // its place in the queue
}

// parseChild parses "<sid>-<sequence>"; ok is false for other names.
func parseChild(name string) (c child, ok bool) {
	sid, seq, found := strings.Cut(name, "-")
	if !found || sid == "" || len(seq) != 10 {
		return child{}, false
	}
	n, err := strconv.ParseInt(seq, 10, 64)
	if err != nil {
		return child{}, false
	}
	return child{name: name, sid: sid, seq: n}, true
}

// queue sorts a lock's children: the lock children in sequence order, and
// whether a hold marker is among them. Names it does not know are left out.
func queue(names []string) (kids []child, hold bool) {
	kids = make([]child, 0, len(names))
	for _, name := range names {
		if name == holdNode {
			hold = true
			continue
		}
		if c, ok := parseChild(name); ok {
			kids = append(kids, c)
		}
	}
	slices.SortFunc(kids, func(a, b child) int { return cmp.Compare(a.seq, b.seq) })
	return kids, hold
}

// oldest returns the oldest lock child among names ("" for none) and
// whether a hold marker is among them; queue without its allocations.
func oldest(names []string) (name string, hold bool) {
	var first child
	for _, n := range names {
		if n == holdNode {
			hold = true
		} else if c, ok := parseChild(n); ok && (first.name == "" || c.seq < first.seq) {
			first = c
		}
	}
	return first.name, hold
}

// sessionData is a session node's data.
type sessionData struct {
	ID  string `json:"id"`
	TTL int64  `json:"ttl"` // ms; the session lives TTL after its node's mtime
}

// lockData is a lock child's data.
type lockData struct {
	ID    string `json:"id"`
	Lease int64  `json:"lease,omitempty"` // ms after the node's ctime; 0 for none
}

// holdData is a hold marker's data.
type holdData struct {
	ID    string `json:"id"`
	Token uint64 `json:"token"`
	Hold  int64  `json:"hold"` // ms after the marker's ctime
}

// entryData is a registry entry's data; the entry's czxid is its order.
type entryData struct {
	ID     string            `json:"id"`
	Score  float64           `json:"score,omitempty"`
	Weight float64           `json:"weight,omitempty"`
	Meta   map[string]string `json:"meta,omitempty"`
}

// encode returns v as JSON; the types above always encode.
func encode(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// decode parses the data of the node at path into v.
func decode(path string, data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("zookeeper: node %s holds no data of this backend: %w", path, err)
	}
	return nil
}

// millis returns d in whole milliseconds, rounded up: the server then ends
// a TTL, lease or hold no earlier than the caller counts it.
func millis(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}
