package nats

import (
	"encoding/json"

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

// lockRecord is the value of lock.<name>.
type lockRecord struct {
	// Session is the holding session's ID; empty for a hold.
	Session string `json:"s,omitempty"`
	// ID is the holder's candidate ID (for a hold: the releasing one's).
	ID string `json:"id"`
	// Token is the term's token when the record was rewritten after the
	// write that took the lock (a hold); 0: the record's own revision.
	Token events.Token `json:"t,omitempty"`
}

// sessionRecord is the value of session.<session ID>.
type sessionRecord struct {
	ID string `json:"id"`
}

// memberRecord is the value of member.<group>.<session ID>.
type memberRecord struct {
	ID string `json:"id"`
	// Order is the revision of the entry's first write.
	Order  uint64            `json:"o"`
	Score  float64           `json:"sc,omitempty"`
	Weight float64           `json:"w,omitempty"`
	Meta   map[string]string `json:"m,omitempty"`
}

// encode marshals a record; its types are strings and finite numbers
// (validated), which always marshal.
func encode(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// decodeLock reads the lock record of name from its last message e. No
// message is no record (Version 0); a marker, or a value that is not a
// lock record (written by someone else), is a record of nobody's at its
// revision, which a take is conditioned on.
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
