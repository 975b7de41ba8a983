package ops

import (
	"errors"

	"github.com/hustings/hustings/internal/elector"
)

// ErrUnhealthy is matched (errors.Is) by every error Health.Check
// returns for a stuck campaign; its message says which lock, which term
// and by how much.
var ErrUnhealthy = errors.New("ops: unhealthy")

// uses is where the options of this package apply: everywhere but
// Observe, which runs no term and no work.
const uses = elector.ForAll &^ elector.ForObserve
