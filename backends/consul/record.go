package consul

import (
	"encoding/json"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/hustings/hustings/backends/internal/record"
	"github.com/hustings/hustings/events"
)

// lockValue is the value of a lock key.
type lockValue struct {
	// Session is the holding session's ID (the core's, not Consul's);
	// empty for a hold.
	Session string `json:"s,omitempty"`
	// ID is the holder's candidate ID (for a hold: the releasing one's).
	ID string `json:"id"`
	// Token is the term's token when the key was written after the take
	// (a hold); 0: the key's ModifyIndex.
	Token events.Token `json:"t,omitempty"`
	// Expires ends a lease or a hold, in Unix nanoseconds on the writer's
	// clock; 0: none.
	Expires int64 `json:"e,omitempty"`
}

// sessionValue is the value of a session key.
type sessionValue struct {
	ID string `json:"id"`
}

// memberValue is the value of a registry entry's key.
type memberValue struct {
	ID     string            `json:"id"`
	Score  float64           `json:"sc,omitempty"`
	Weight float64           `json:"w,omitempty"`
	Meta   map[string]string `json:"m,omitempty"`
}

// encode marshals a value; its types are strings and finite numbers
// (validated), which always marshal.
func encode(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// decodeLock reads the lock record of name from its key kv (nil, or
// ModifyIndex 0: no key). held reports that a Consul session holds the
// key: Consul deletes a key when the session holding it ends, so a held
// key's session lives. A value that is not a lock record (written by
// someone else) is a record of nobody's at its index, which a take is
// conditioned on.
func decodeLock(name string, kv *api.KVPair) (l record.Lock, held bool) {
	l.Name = name
	if kv == nil || kv.ModifyIndex == 0 {
		return l, false
	}
	l.Version = kv.ModifyIndex
	var v lockValue
	if json.Unmarshal(kv.Value, &v) != nil || v.ID == "" {
		return l, false
	}
	l.Session, l.Candidate, l.Token, l.Hold = v.Session, v.ID, v.Token, v.Session == ""
	if l.Token == 0 {
		l.Token = events.Token(kv.ModifyIndex)
	}
	if v.Expires != 0 {
		l.Expires = time.Unix(0, v.Expires)
	}
	return l, kv.Session != "" && !l.Hold
}

// lockValueOf is the value written for l.
func lockValueOf(l record.Lock) []byte {
	v := lockValue{Session: l.Session, ID: l.Candidate, Token: l.Token}
	if l.Hold {
		v.Session = ""
	}
	if !l.Expires.IsZero() {
		v.Expires = l.Expires.UnixNano()
	}
	return encode(v)
}
