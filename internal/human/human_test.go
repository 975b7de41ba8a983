package human

import (
	"testing"
	"time"
)

func TestHuman(t *testing.T) {
	for d, want := range map[time.Duration]string{
		7 * 24 * time.Hour:             "7 days",
		24 * time.Hour:                 "1 day",
		2 * time.Hour:                  "2h",
		90 * time.Minute:               "1h30m",
		5 * time.Minute:                "5m",
		1500 * time.Millisecond:        "1.5s",
		time.Millisecond:               "1ms",
		-time.Second:                   "-1s",
		0:                              "0s",
		25*time.Hour + time.Nanosecond: "25h0m0.000000001s",
	} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
}
