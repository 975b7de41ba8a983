// Package testserver starts and stops the server processes that backend
// tests and benchmarks run against (redis-server, ZooKeeper, FerretDB...):
// on free loopback ports, with their output in a log file, stopped by PID
// (never by name). For tests and benchmarks only.
//
// A Process is one run of a program. A Server is the lifecycle every test
// kit gives its server: started and waited for by a probe, killed, paused,
// restarted on the same port and data directory, stopped; a kit's own
// Server wraps one and adds its clients.
package testserver

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago,
// picked at random below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range), from firstPort up: the kernel never
// hands such a port to an outgoing connection, so a server stopped and
// restarted on it finds it free unless another test picked it too. Where
// the range leaves too few ports below it, the kernel picks one.
func FreePort() (int, error) {
	low, _, err := ephemeralRange()
	if err == nil && low-firstPort >= 1024 {
		for range 100 {
			p := firstPort + rand.IntN(low-firstPort)
			if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
				ln.Close()
				return p, nil
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("testserver: free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// firstPort is the lowest port FreePort picks: above the well-known and
// most registered servers' ports.
const firstPort = 10000

// ephemeralRange reads the kernel's range of ports for outgoing
// connections; off Linux it is IANA's, 49152-65535.
func ephemeralRange() (low, high int, err error) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if errors.Is(err, os.ErrNotExist) {
		return 49152, 65535, nil
	}
	if err != nil {
		return 0, 0, err
	}
	if _, err := fmt.Sscan(string(b), &low, &high); err != nil {
		return 0, 0, fmt.Errorf("testserver: ip_local_port_range %q: %w", b, err)
	}
	return low, high, nil
}

// Process is a server process started by Start.
type Process struct {
	cmd     *exec.Cmd
	LogPath string // the process's stdout and stderr
	once    sync.Once
	waited  chan struct{}
	waitErr error
}

// Start runs name with args in dir, its output going to dir/name.log. The
// caller stops it with Kill.
func Start(dir, name string, args ...string) (*Process, error) {
	return StartAs(nil, dir, name, args...)
}

// Unprivileged returns the credential a server started by root runs
// under: the first of users that exists (the server's own account, then
// "nobody", say), or nil when the caller is not root (the server runs as
// the caller). It fails when root finds none of them.
func Unprivileged(users ...string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range users {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 == nil && err2 == nil {
			return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
		}
	}
	return nil, fmt.Errorf("running as root, and there is no user %s to run the server as", strings.Join(users, " or "))
}

// StartAs is Start with the process run as the user and group cred names
// (nil: as the caller). Root may start a process so; a server that refuses
// to run as root (PostgreSQL) is started as an unprivileged user this way.
func StartAs(cred *syscall.Credential, dir, name string, args ...string) (*Process, error) {
	return start(cred, nil, dir, name, args)
}

// start is StartAs with env (KEY=value) added to the caller's environment.
func start(cred *syscall.Credential, env []string, dir, name string, args []string) (*Process, error) {
	logPath := filepath.Join(dir, filepath.Base(name)+".log")
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("testserver: %w", err)
	}
	defer log.Close()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, log, log
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("testserver: start %s: %w", name, err)
	}
	p := &Process{cmd: cmd, LogPath: logPath, waited: make(chan struct{})}
	go func() { p.waitErr = cmd.Wait(); close(p.waited) }()
	return p, nil
}

// PID returns the process ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.waited:
		return true
	default:
		return false
	}
}

// Signal sends sig to the process (SIGSTOP and SIGCONT pause and resume it).
func (p *Process) Signal(sig syscall.Signal) error {
	if p.Exited() {
		return errors.New("testserver: process has exited")
	}
	return p.cmd.Process.Signal(sig)
}

// Kill sends SIGKILL to the process (by PID) and waits for it to end.
// Calling it again does nothing.
func (p *Process) Kill() {
	p.once.Do(func() {
		if !p.Exited() {
			_ = p.cmd.Process.Signal(syscall.SIGCONT) // a stopped process must run to die
			_ = p.cmd.Process.Kill()
		}
		<-p.waited
	})
}

// Halt ends the process and every process of its group (it leads one of
// its own): sig first, unless it is SIGKILL, then up to grace for the
// process to end on it; then SIGKILL to the group, and up to 10 s for the
// group's last process to end (a child may hold what the next start needs,
// such as PostgreSQL's shared memory). Halting an ended process only
// clears its group.
func (p *Process) Halt(sig syscall.Signal, grace time.Duration) {
	if sig != syscall.SIGKILL && !p.Exited() {
		_ = p.Signal(sig)
		select {
		case <-p.waited:
		case <-time.After(grace):
		}
	}
	pgid := -p.PID()
	_ = syscall.Kill(pgid, syscall.SIGCONT) // stopped children must run to die
	_ = syscall.Kill(pgid, syscall.SIGKILL)
	p.Kill()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if err := syscall.Kill(pgid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
	}
}

// Pause stops the process with SIGSTOP and returns once the kernel has
// stopped it (its state in /proc is T), or an error after 5 s.
func (p *Process) Pause() error {
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	stat := "/proc/" + strconv.Itoa(p.PID()) + "/stat"
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		b, err := os.ReadFile(stat)
		if err != nil {
			return fmt.Errorf("testserver: %w", err)
		}
		// pid (comm) state ...: the state follows the last ')'.
		if i := bytes.LastIndexByte(b, ')'); i > 0 && i+2 < len(b) && b[i+2] == 'T' {
			return nil
		}
	}
	return errors.New("testserver: process not stopped 5s after SIGSTOP")
}

// Log returns the tail of the process's output, for failure messages.
func (p *Process) Log() string { return tail(p.LogPath) }

// tail returns the last 4000 bytes of the file at path, or "" if there is
// none.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// WaitFor calls ready every 50 ms until it returns nil, the process exits,
// or timeout passes.
func (p *Process) WaitFor(timeout time.Duration, ready func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := ready()
		switch {
		case err == nil:
			return nil
		case p.Exited():
			return fmt.Errorf("testserver: process exited before it was ready: %v\n%s", p.waitErr, p.Log())
		case time.Now().After(deadline):
			return fmt.Errorf("testserver: not ready after %v: %w\n%s", timeout, err, p.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Eventually polls cond every 10 ms until it holds, and fails the test,
// saying what it waited for, if it does not within the bound. Call it
// from the test's goroutine: it may call t.Fatalf.
func Eventually(t testing.TB, what string, within time.Duration, cond func() bool) {
	t.Helper()
	EventuallyNil(t, within, func() error {
		if cond() {
			return nil
		}
		return errors.New(what)
	})
}

// EventuallyNil calls check every 10 ms until it returns nil, and fails
// the test with its last error if it does not within the bound. Call it
// from the test's goroutine: it may call t.Fatalf.
func EventuallyNil(t testing.TB, within time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not so after %v: %v", within, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
