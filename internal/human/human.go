// Package human formats values for messages people read.
package human

import (
	"fmt"
	"strings"
	"time"
)

// Duration formats d as people write it: whole days as "7 days", whole
// hours and minutes without trailing zero units ("2h", "1h30m"), anything
// else as time.Duration does ("1.5s", "250ms").
func Duration(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d == day:
		return "1 day"
	case d > 0 && d%day == 0:
		return fmt.Sprintf("%d days", d/day)
	case d > 0 && d%time.Minute == 0:
		s := strings.TrimSuffix(d.String(), "0s") // "2h0m", "1h30m", "5m"
		if strings.HasSuffix(s, "h0m") {
			s = strings.TrimSuffix(s, "0m")
		}
		return s
	}
	return d.String()
}
