package group_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/group"
	"github.com/hustings/hustings/strategy"
)

// WithRotation makes a random ranking draw again every period: with
// preemption, the slots change hands over time (turn-taking), where
// without it the same candidates keep them.
func TestRotationTakesTurns(t *testing.T) {
	for _, rotate := range []bool{false, true} {
		t.Run(fmt.Sprintf("rotation=%v", rotate), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := memory.New()
				var h backendtest.History
				opts := []campaign.Option{group.WithStrategy(strategy.Random()), group.WithPatience(time.Hour), group.WithPreemption(time.Second)}
				if rotate {
					opts = append(opts, group.WithRotation(30*time.Second))
				}
				var ms []*member
				for i := range 4 {
					ms = append(ms, join(t, b, fmt.Sprintf("n%d", i), 2, &h, opts...))
				}
				sets := map[string]bool{}
				for range 20 {
					time.Sleep(30 * time.Second)
					synctest.Wait()
					ids := holders(ms)
					if len(ids) == 2 {
						slices.Sort(ids)
						sets[strings.Join(ids, ",")] = true
					}
				}
				switch {
				case rotate && len(sets) < 2:
					t.Errorf("with rotation, the same holders all along: %v", sets)
				case !rotate && len(sets) != 1:
					t.Errorf("without rotation, the holders changed: %v", sets)
				}
				for _, m := range ms {
					m.stop(t)
				}
				synctest.Wait() // the histories have every event
				backendtest.CheckTerms(t, h.Events(), 2)
			})
		})
	}
}
