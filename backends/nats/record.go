package nats

import (
	"encoding/json"
	"net/url"
	"strings"

	"github.com/hustings/hustings/backends/internal/record"
	"github.com/hustings/hustings/events"
)

// Key prefixes of the backend's records in the bucket. Fence refuses
// keys that start with one.
const (
	sessionPrefix = "session."
	lockPrefix    = "lock."
	memberPrefix  = "member."
)

// The values of the records, in JSON: lock.<name>, session.<session ID>
// and member.<group>.<session ID>.
type (
	lockRecord struct {
		Session string       `json:"s,omitempty"` // the holding session's ID; "" for a hold
		ID      string       `json:"id"`          // the holder's candidate ID (a hold's: the releasing one's)
		Token   events.Token `json:"t,omitempty"` // a hold's term's token; 0: the record's own revision
	}
	sessionRecord struct {
		ID string `json:"id"`
	}
	memberRecord struct {
		ID     string            `json:"id"`
		Order  uint64            `json:"o"` // the revision of the entry's first write
		Score  float64           `json:"sc,omitempty"`
		Weight float64           `json:"w,omitempty"`
		Meta   map[string]string `json:"m,omitempty"`
	}
)

// encode marshals a record: strings and finite numbers, which always do.
func encode(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// decodeLock reads the lock record of name from its last message e. No
// message is no record; a marker, or a value not a lock record, is a
// record of nobody's at its revision, which a take is conditioned on.
func decodeLock(name string, e entry) record.Lock {
	l := record.Lock{Name: name, Version: e.rev}
	var r lockRecord
	if !e.live || json.Unmarshal(e.value, &r) != nil || r.ID == "" {
		return l
	}
	l.Session, l.Candidate, l.Token, l.Hold = r.Session, r.ID, r.Token, r.Session == ""
	if l.Token == 0 {
		l.Token = events.Token(e.rev)
	}
	return l
}

// keyOf turns a name (any UTF-8, at most 256 bytes) into a valid KV key
// token, readable where the name is plain: letters, digits, '-' and '_'
// stay, every other byte is =XX (hex), since a key allows only
// [-/_=.A-Za-z0-9] and '.' separates tokens.
func keyOf(name string) string {
	var b strings.Builder
	for i := range len(name) {
		if c := name[i]; c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
		} else {
			b.WriteByte('=')
			b.WriteByte("0123456789ABCDEF"[c>>4])
			b.WriteByte("0123456789ABCDEF"[c&15])
		}
	}
	return b.String()
}

// unkey turns a key token made by keyOf (which has no '%') back into its
// name; ok is false for a token keyOf does not make.
func unkey(key string) (name string, ok bool) {
	if strings.Contains(key, "%") {
		return "", false
	}
	name, err := url.PathUnescape(strings.ReplaceAll(key, "=", "%"))
	return name, err == nil
}

// LockKey returns the key of the lock name's record in the bucket, for
// operators and tools: `nats kv get <bucket> <key>` shows its holder, and
// deleting it takes the lock from its holder (who is told).
func LockKey(name string) string { return lockPrefix + keyOf(name) }

func memberKey(group, sid string) string { return memberPrefix + keyOf(group) + "." + sid }
