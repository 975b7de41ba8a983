package testserver

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// DefaultReadyTimeout is how long a start waits for Spec.Ready when
// Spec.ReadyTimeout is zero: generous, for a loaded machine.
const DefaultReadyTimeout = 60 * time.Second

// shutdownGrace is how long a process has to end on Spec.Shutdown before
// its group is killed.
const shutdownGrace = 10 * time.Second

// Spec says how a Server runs its program. Kit, Dir, Bin, Args and Ready
// are required.
type Spec struct {
	// Kit names the test kit ("mongotest"); it prefixes every error.
	Kit string
	// Dir is the process's working directory; its output goes to
	// Dir/<base name of Bin>.log, appended to at each start. If it is
	// empty, Run makes a new temporary directory, with the subdirectories
	// Subdirs, that Stop removes.
	Dir     string
	Subdirs []string
	// Bin is the program, a path or a name looked up in $PATH.
	Bin string
	// Args returns the program's arguments, given Dir; it is called at
	// each start, so that it sees ports picked since.
	Args func(dir string) []string
	// Env holds KEY=value pairs added to the caller's environment.
	Env []string
	// Cred is the user and group the process runs as; nil: the caller's.
	Cred *syscall.Credential
	// Ready returns nil once the server serves; it is called every 50 ms
	// after a start.
	Ready func() error
	// ReadyTimeout bounds the wait for Ready; 0 means
	// DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// Addr returns the server's address, for error messages; nil: none.
	Addr func() string
	// Prepare, if not nil, runs before each start, with the Server's lock
	// held; an error fails the start.
	Prepare func() error
	// Shutdown is the signal Restart and Stop end the process with, before
	// SIGKILL to its group 10 s later; 0 means SIGKILL at once. Kill always
	// sends SIGKILL.
	Shutdown syscall.Signal
	// RestartWithin is how long Restart tries again a start that fails
	// (every 200 ms); 0: it tries once.
	RestartWithin time.Duration
	// RemoveDir makes Stop remove Dir.
	RemoveDir bool
}

// Server runs a Spec's program: one process at a time, restarted with the
// same arguments (so on the same port and data directory). It is safe for
// concurrent use; Start, Restart and Pause hold its lock while they wait.
type Server struct {
	spec Spec

	mu      sync.Mutex
	proc    *Process // nil while not running
	stopped bool
}

// NewServer returns a Server of spec; nothing runs until Start.
func NewServer(spec Spec) *Server {
	if spec.ReadyTimeout == 0 {
		spec.ReadyTimeout = DefaultReadyTimeout
	}
	if spec.Shutdown == 0 {
		spec.Shutdown = syscall.SIGKILL
	}
	return &Server{spec: spec}
}

// Run returns a server of spec, started on free ports (see StartOn). If
// it does not start, it is stopped, and its directory removed if Run made
// it.
func Run(spec Spec, ports ...*int) (*Server, error) {
	if spec.Dir == "" {
		dir, err := TempDir(spec.Kit, spec.Subdirs...)
		if err != nil {
			return nil, err
		}
		spec.Dir, spec.RemoveDir = dir, true
	}
	s := NewServer(spec)
	if err := s.StartOn(ports...); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// Dir returns the process's working directory.
func (s *Server) Dir() string { return s.spec.Dir }

// Start starts the process and waits until it is ready. Starting a running
// server does nothing; a stopped one cannot start.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return s.errorf("is stopped")
	}
	if s.proc != nil {
		return nil
	}
	return s.launch()
}

// StartOn picks a free port into each of ports, then starts the server
// (whose Args read them); it tries three times, since a port free a moment
// ago may be taken before the server binds it.
func (s *Server) StartOn(ports ...*int) error {
	var err error
	for range 3 {
		for _, p := range ports {
			if *p, err = FreePort(); err != nil {
				return err
			}
		}
		if err = s.Start(); err == nil {
			return nil
		}
	}
	return err
}

// launch runs the process and waits until it is ready; s.mu is held.
func (s *Server) launch() error {
	if s.spec.Prepare != nil {
		if err := s.spec.Prepare(); err != nil {
			return err
		}
	}
	p, err := start(s.spec.Cred, s.spec.Env, s.spec.Dir, s.spec.Bin, s.spec.Args(s.spec.Dir))
	if err != nil {
		return fmt.Errorf("%s: %w", s.spec.Kit, err)
	}
	if err := p.WaitFor(s.spec.ReadyTimeout, s.spec.Ready); err != nil {
		p.Halt(syscall.SIGKILL, 0)
		return fmt.Errorf("%s: %w", s.spec.Kit, err)
	}
	s.proc = p
	return nil
}

// halt ends the process, if it runs, with sig; s.mu is held.
func (s *Server) halt(sig syscall.Signal) {
	if s.proc != nil {
		s.proc.Halt(sig, shutdownGrace)
		s.proc = nil
	}
}

// errorf returns an error about the server, prefixed with the kit and
// the server's address: "kit: server on addr " + format.
func (s *Server) errorf(format string, args ...any) error {
	what := s.spec.Kit + ": server"
	if s.spec.Addr != nil {
		what += " on " + s.spec.Addr()
	}
	return fmt.Errorf("%s "+format, append([]any{what}, args...)...)
}

// PID returns the process ID, or 0 while the server does not run.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return 0
	}
	return s.proc.PID()
}

// Running reports whether the server's process runs (paused counts).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil && !s.proc.Exited()
}

// Log returns the tail of the server's output, of every start since the
// first, for failure messages; "" once Stop removed Dir.
func (s *Server) Log() string {
	return tail(filepath.Join(s.spec.Dir, filepath.Base(s.spec.Bin)+".log"))
}

// Kill ends the process with SIGKILL (by PID, and its group), as a crash:
// clients get errors until Restart; Dir stays. Killing a killed server
// does nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.halt(syscall.SIGKILL)
}

// Pause stops the process with SIGSTOP and returns once the kernel has
// stopped it: connections stay open and nothing answers, as a server
// stalled by the machine. Resume undoes it.
func (s *Server) Pause() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return s.errorf("is not running")
	}
	if err := s.proc.Pause(); err != nil {
		return s.errorf("not paused: %w", err)
	}
	return nil
}

// Resume continues a paused process (SIGCONT).
func (s *Server) Resume() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return s.errorf("is not running")
	}
	return s.proc.Signal(syscall.SIGCONT)
}

// Restart ends the process, if it runs, with Spec.Shutdown, and starts it
// again with the same arguments; it returns once the new one is ready. A
// stopped server cannot restart.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return s.errorf("is stopped")
	}
	s.halt(s.spec.Shutdown)
	deadline := time.Now().Add(s.spec.RestartWithin)
	for {
		err := s.launch()
		if err == nil || !time.Now().Before(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Stop ends the process for good with Spec.Shutdown, and removes Dir if
// Spec.RemoveDir. Calling it again does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.stopped = true
	s.halt(s.spec.Shutdown)
	if s.spec.RemoveDir {
		_ = os.RemoveAll(s.spec.Dir)
	}
}

// Must is a kit's Start for tests: it fails t if err (from starting s) is
// not nil, and stops s when the test ends.
func Must[S interface{ Stop() }](t testing.TB, s S, err error) S {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// TempDir makes a new temporary directory for a kit's server, named after
// the kit, with the subdirectories subs.
func TempDir(kit string, subs ...string) (string, error) {
	dir, err := os.MkdirTemp("", kit+"-")
	if err != nil {
		return "", fmt.Errorf("%s: %w", kit, err)
	}
	for _, sub := range subs {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			_ = os.RemoveAll(dir)
			return "", fmt.Errorf("%s: %w", kit, err)
		}
	}
	return dir, nil
}

// Built returns the path of a program the repository builds once per
// machine: $env if set, otherwise <user cache dir>/hustings/<program>-<version>/<program>
// (os.UserCacheDir: $XDG_CACHE_HOME, or $HOME/.cache, on Linux). If there
// is no file there, its error says so and how to build it (how: "`make
// consul` from the repository root ...").
func Built(kit, env, program, version, how string) (string, error) {
	path := os.Getenv(env)
	if path == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("%s: %w", kit, err)
		}
		path = filepath.Join(cache, "hustings", program+"-"+version, program)
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s: %s %s is not built (%w); build it once per machine with %s", kit, program, version, err, how)
	}
	return path, nil
}
