package httpapi

import (
	"time"

	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// snapshot is the JSON form of a campaign.State. Times are RFC 3339 with
// nanoseconds, and omitted when zero.
type snapshot struct {
	Name      string       `json:"name"`
	ID        string       `json:"id"`
	Leader    bool         `json:"leader"`
	Slot      int          `json:"slot"`
	Token     events.Token `json:"token"`
	Holder    string       `json:"holder,omitempty"`
	Deadline  time.Time    `json:"deadline,omitzero"`
	LastEvent *event       `json:"last_event,omitempty"` // nil before the first event
	Dropped   uint64       `json:"dropped"`
	Error     string       `json:"error,omitempty"` // the last backend error
}

// event is the JSON form of an events.Event. Kind is the lower-case name
// ("elected", "revoked", "leader-changed"); Reason is the revocation's.
type event struct {
	Kind     string       `json:"kind"`
	Name     string       `json:"name"`
	Slot     int          `json:"slot"`
	Token    events.Token `json:"token"`
	Holder   string       `json:"holder,omitempty"`
	Time     time.Time    `json:"time,omitzero"`
	Deadline time.Time    `json:"deadline,omitzero"`
	Reason   string       `json:"reason,omitempty"`
}

// newSnapshot converts st to its JSON form.
func newSnapshot(st campaign.State) snapshot {
	s := snapshot{
		Name:     st.Name,
		ID:       st.ID,
		Leader:   st.Leader,
		Slot:     st.Slot,
		Token:    st.Token,
		Deadline: st.Deadline,
		Dropped:  st.Dropped,
		Error:    errString(st.Err),
	}
	if st.Leader {
		s.Holder = st.ID // the holder this campaign knows of: itself
	}
	if st.LastEvent.Kind != 0 {
		e := newEvent(st.LastEvent)
		s.LastEvent = &e
	}
	return s
}

// newEvent converts e to its JSON form.
func newEvent(e events.Event) event {
	return event{
		Kind:     e.Kind.String(),
		Name:     e.Name,
		Slot:     e.Slot,
		Token:    e.Token,
		Holder:   e.Holder,
		Time:     e.Time,
		Deadline: e.Deadline,
		Reason:   errString(e.Reason),
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
