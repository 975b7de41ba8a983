package kubetest

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// Main runs the tests of a package that share one server: it starts the
// server and stores it in *srv, runs m, stops the server and, if the
// tests passed, fails the run if a goroutine is left (goleak.Find). It
// returns the exit code, for
//
//	func TestMain(m *testing.M) { os.Exit(kubetest.Main(m, &srv)) }
//
// If the server does not start, it prints why and returns 1 without
// running the tests.
func Main(m *testing.M, srv **Server) int {
	s, err := StartServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*srv = s
	code := m.Run()
	s.Stop()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	return code
}
