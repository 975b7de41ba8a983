package backendtest

import (
	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/internal/crash"
)

// Crashable is a real backend seen by one candidate that can crash: after
// Crash every call hangs until its context ends. It lives in
// internal/crash, which imports no test code, so that the demo can use it;
// see crash.Backend.
type Crashable = crash.Backend

// NewCrashable wraps b; see crash.New.
func NewCrashable(b backends.Backend) *Crashable { return crash.New(b) }
