package chaos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hustings/hustings/chaos/history"
	"github.com/hustings/hustings/internal/faultlink"
)

// proc is one candidate node: this test binary re-run as a node (see
// TestMain), behind its own link to the server, its lines collected.
type proc struct {
	id    string
	name  string // the lock or group it campaigns for
	cmd   *exec.Cmd
	link  *faultlink.Link
	read  chan struct{} // closed when stdout is drained
	ready chan struct{} // closed when the node said it is ready

	mu      sync.Mutex
	lines   []line
	dead    bool  // killed, or exited
	exitErr error // how it exited
	logPath string
}

// spawn starts a node for name (slots 1: one lock) whose backend URL is
// url(link address); its stderr goes to dir/id.log.
func spawn(t *testing.T, dir, id, name string, slots int, ttl time.Duration, upstream string, url func(string) string, fenceURL string) (*proc, error) {
	link := faultlink.NewLink(t, upstream)
	cmd := exec.Command(os.Args[0],
		"--backend", url(link.Addr()), "--name", name, "--id", id, "--fence", fenceURL,
		"--ttl", ttl.String(), "--slots", fmt.Sprint(slots))
	cmd.Env = append(os.Environ(), nodeEnv+"=1")
	logf, err := os.Create(filepath.Join(dir, id+".log"))
	if err != nil {
		return nil, err
	}
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	p := &proc{id: id, name: name, cmd: cmd, link: link, read: make(chan struct{}), ready: make(chan struct{}), logPath: logf.Name()}
	go p.collect(out, logf)
	t.Cleanup(func() { p.kill() })
	select { // until it handles SIGTERM, a stop would kill it
	case <-p.ready:
		return p, nil
	case <-p.read:
		return nil, fmt.Errorf("node %s exited before it was ready: %v; its log ends:\n%s", id, p.exitErr, p.logTail())
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("node %s not ready after 30s", id)
	}
}

// collect reads the node's lines until it exits, then reaps it.
func (p *proc) collect(r io.Reader, logf *os.File) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			l = line{TimeUnixNano: time.Now().UnixNano(), Node: p.id, Event: "garbage: " + sc.Text()}
		}
		if l.Event == "ready" {
			close(p.ready)
			continue
		}
		p.mu.Lock()
		p.lines = append(p.lines, l)
		p.mu.Unlock()
	}
	err := p.cmd.Wait()
	logf.Close()
	p.mu.Lock()
	p.dead, p.exitErr = true, err
	p.mu.Unlock()
	close(p.read)
}

// Lines returns what the node printed so far.
func (p *proc) Lines() []line {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.lines)
}

// Alive reports whether the process still runs.
func (p *proc) Alive() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.dead
}

// term returns the node's Elected line if its last election event is one.
func (p *proc) term() (line, bool) {
	ls := p.Lines()
	for i := len(ls) - 1; i >= 0; i-- {
		switch ls[i].Event {
		case "elected":
			return ls[i], true
		case "revoked":
			return line{}, false
		}
	}
	return line{}, false
}

// Leads reports whether the node believes it leads.
func (p *proc) Leads() bool {
	_, ok := p.term()
	return ok
}

// signal sends sig to the process by PID.
func (p *proc) signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

// kill ends the process with SIGKILL and waits until it is reaped. Calling
// it on a dead process does nothing.
func (p *proc) kill() {
	if p.Alive() {
		_ = p.signal(syscall.SIGKILL) // ends a stopped (SIGSTOP) process too
	}
	<-p.read
	p.link.Close()
}

// stop sends SIGTERM and waits up to d for a graceful exit; it returns an
// error, with the end of the node's log, unless the node exited with
// status 0 in time (if not in time, it is killed).
func (p *proc) stop(d time.Duration) error {
	_ = p.signal(syscall.SIGTERM)
	return p.wait(d)
}

// wait waits up to d for the node to exit after a SIGTERM; see stop.
func (p *proc) wait(d time.Duration) error {
	select {
	case <-p.read:
	case <-time.After(d):
		p.kill()
		return fmt.Errorf("node %s still ran %v after SIGTERM; its log ends:\n%s", p.id, d, p.logTail())
	}
	p.link.Close()
	p.mu.Lock()
	err := p.exitErr
	p.mu.Unlock()
	if err != nil {
		return fmt.Errorf("node %s exited after SIGTERM with %v; its log ends:\n%s", p.id, err, p.logTail())
	}
	return nil
}

// logTail returns the end of the node's stderr.
func (p *proc) logTail() string {
	b, _ := os.ReadFile(p.logPath)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// record adds the node's lines to h: its elections and revocations, its
// stalls as faults, its leak count if it exited gracefully.
func (p *proc) record(h *history.History) {
	for _, l := range p.Lines() {
		at := time.Unix(0, l.TimeUnixNano)
		switch l.Event {
		case "elected", "revoked":
			h.Events = append(h.Events, history.Event{
				Time: at, Node: p.id, Key: history.Key{Name: l.Name, Slot: l.Slot},
				Kind: history.Kind(l.Event), Token: l.Token, Deadline: time.Unix(0, l.DeadlineUnixNano), Reason: l.Reason,
			})
		case "stall":
			h.Faults = append(h.Faults, history.Fault{Kind: history.Stall, Node: p.id, From: at.Add(-time.Duration(l.GapNanos)), To: at})
		case "exit":
			h.Leaks[p.id] = l.Leaked
		default:
			h.Events = append(h.Events, history.Event{Time: at, Node: p.id, Kind: history.Kind(l.Event)})
		}
	}
}
