package httpapi_test

import (
	"time"

	"github.com/hustings/hustings/events"
)

// wireSnapshot is a campaign's JSON form as the package doc gives it.
type wireSnapshot struct {
	Name      string       `json:"name"`
	ID        string       `json:"id"`
	Leader    bool         `json:"leader"`
	Slot      int          `json:"slot"`
	Token     events.Token `json:"token"`
	Holder    string       `json:"holder,omitempty"`
	Deadline  time.Time    `json:"deadline,omitzero"`
	LastEvent *wireEvent   `json:"last_event,omitempty"`
	Dropped   uint64       `json:"dropped"`
	Error     string       `json:"error,omitempty"`
}

// wireEvent is an event's JSON form as the package doc gives it.
type wireEvent struct {
	Kind     string       `json:"kind"`
	Name     string       `json:"name"`
	Slot     int          `json:"slot"`
	Token    events.Token `json:"token"`
	Holder   string       `json:"holder,omitempty"`
	Time     time.Time    `json:"time,omitzero"`
	Deadline time.Time    `json:"deadline,omitzero"`
	Reason   string       `json:"reason,omitempty"`
}
