package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/hustings/hustings/backends/consul/consuldial" // as -tags stores does: the nodes are this test binary
	"github.com/hustings/hustings/backends/consul/consultest"
	_ "github.com/hustings/hustings/backends/dynamodb/dynamodial"
	"github.com/hustings/hustings/backends/dynamodb/dynamotest"
	_ "github.com/hustings/hustings/backends/mongodb/mongodial"
	"github.com/hustings/hustings/backends/mongodb/mongotest"
	"github.com/hustings/hustings/backends/redis/redistest"
	"github.com/hustings/hustings/events"
)

// nodeProc is one "demo node" process: this test binary run as the demo
// (see TestMain), its JSON lines collected.
type nodeProc struct {
	id    string
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []nodeEvent
	read  chan struct{} // closed when stdout is drained
	errs  lockedBuffer  // stderr
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	defer output.announce()
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// output tells waitNodes that a node process wrote something or ended.
var output = &news{ch: make(chan struct{})}

// news is a broadcast: next returns a channel closed at the next
// announcement.
type news struct {
	mu sync.Mutex
	ch chan struct{}
}

func (n *news) next() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ch
}

func (n *news) announce() {
	n.mu.Lock()
	defer n.mu.Unlock()
	close(n.ch)
	n.ch = make(chan struct{})
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func startNode(t *testing.T, args ...string) *nodeProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"--", "node"}, args...)...)
	cmd.Env = append(os.Environ(), "HUSTINGS_DEMO_AS_MAIN=1")
	p := &nodeProc{id: args[len(args)-1], cmd: cmd, read: make(chan struct{})}
	cmd.Stderr = &p.errs
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go p.collect(out)
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // by PID; a no-op once it exited
		<-p.read
		_ = cmd.Wait()
	})
	return p
}

// collect parses stdout: every line must be one JSON event.
func (p *nodeProc) collect(r io.Reader) {
	defer output.announce()
	defer close(p.read)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var e nodeEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			e = nodeEvent{Event: "not-json: " + sc.Text()}
		}
		p.mu.Lock()
		p.lines = append(p.lines, e)
		p.mu.Unlock()
		output.announce()
	}
}

func (p *nodeProc) events() []nodeEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.lines)
}

// leads reports whether the node's last election or revocation is an
// election.
func (p *nodeProc) leads() bool {
	es := p.events()
	for i := len(es) - 1; i >= 0; i-- {
		switch es[i].Event {
		case "elected":
			return true
		case "revoked":
			return false
		}
	}
	return false
}

// waitNodes waits until cond, which reads what the node processes wrote,
// holds: it checks again each time one writes or ends, for up to 30s.
func waitNodes(t *testing.T, what string, cond func() bool) {
	t.Helper()
	limit := time.After(30 * time.Second)
	for {
		wrote := output.next() // before cond: a write after it is not missed
		if cond() {
			return
		}
		select {
		case <-wrote:
		case <-limit:
			t.Fatalf("%s: not so after 30s", what)
		}
	}
}

// TestNodesFailOverOnRedis starts three node processes on a real Redis,
// kills the leader with SIGKILL, and checks from their JSON lines that a
// new leader appears and tokens only grow; then stops the new leader with
// SIGTERM and checks it resigned (reason "resigned", not "canceled").
func TestNodesFailOverOnRedis(t *testing.T) {
	nodesFailOver(t, "redis://"+redistest.Start(t).Addr(), "1s")
}

// TestNodesFailOverOnConsul is TestNodesFailOverOnRedis on a real Consul
// server (its sessions' TTL at least the test server's minimum).
func TestNodesFailOverOnConsul(t *testing.T) {
	nodesFailOver(t, "consul://"+consultest.Start(t).Addr(), "1s")
}

// TestNodesFailOverOnMongoDB is TestNodesFailOverOnRedis on FerretDB, a
// server of MongoDB's protocol.
func TestNodesFailOverOnMongoDB(t *testing.T) {
	nodesFailOver(t, mongotest.Start(t).URI(), "1s")
}

// TestNodesFailOverOnDynamoDB is TestNodesFailOverOnRedis on dynalite, a
// server of DynamoDB's protocol (leases judged by the clients: a TTL of
// 2 s leaves room for its answers on a busy machine).
func TestNodesFailOverOnDynamoDB(t *testing.T) {
	srv := dynamotest.Start(t)
	nodesFailOver(t, "dynamodb://"+dynamotest.AccessKey+":"+dynamotest.SecretKey+"@"+srv.Addr()+"?region="+dynamotest.Region, "2s")
}

// nodesFailOver runs the failover of three node processes on the store
// at url, with sessions of ttl.
func nodesFailOver(t *testing.T, url, ttl string) {
	name := fmt.Sprintf("demo-nodes-%x", time.Now().UnixNano())
	var nodes []*nodeProc
	for _, id := range []string{"n1", "n2", "n3"} {
		nodes = append(nodes, startNode(t, "--backend", url, "--name", name, "--ttl", ttl, "--work", "50ms", "--id", id))
	}
	// leader returns a live node whose last line is an election.
	leader := func(dead *nodeProc) *nodeProc {
		for _, n := range nodes {
			if n != dead && n.leads() {
				return n
			}
		}
		return nil
	}
	waitNodes(t, "a first leader", func() bool { return leader(nil) != nil })
	first := leader(nil)
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitNodes(t, "a new leader after SIGKILL", func() bool { return leader(first) != nil })
	second := leader(first)
	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-second.read
	if err := second.cmd.Wait(); err != nil {
		t.Fatalf("node stopped by SIGTERM exited with %v, want 0", err)
	}
	var revoked []nodeEvent
	for _, e := range second.events() {
		if e.Event == "revoked" {
			revoked = append(revoked, e)
		}
	}
	if last := revoked[len(revoked)-1]; last.Reason != "resigned" || last.Node != second.id || last.Name != name {
		t.Fatalf("last revocation of the node stopped by SIGTERM = %+v, want reason resigned", last)
	}
	for _, n := range nodes {
		checkLines(t, n)
	}
	checkTokensGrow(t, nodes)
}

// checkLines checks one node's lines: "campaigning" first, then every
// term's work between its election and its revocation.
func checkLines(t *testing.T, n *nodeProc) {
	t.Helper()
	es := n.events()
	if len(es) == 0 || es[0].Event != "campaigning" || !strings.Contains(es[0].Detail, "a work loop wakes every 50ms") {
		t.Fatalf("node %s: first line %+v, want campaigning, saying what the work does", n.id, es)
	}
	working := events.Token(0)
	for _, e := range es[1:] {
		switch e.Event {
		case "work-started":
			working = e.Token
		case "work-stopped":
			if e.Token != working {
				t.Errorf("node %s: work of term %d stopped while term %d worked", n.id, e.Token, working)
			}
			working = 0
		}
	}
}

// checkTokensGrow fails unless every line is JSON and the tokens of
// elections, across the nodes in time order, strictly increase.
func checkTokensGrow(t *testing.T, nodes []*nodeProc) {
	t.Helper()
	var elected []nodeEvent
	for _, n := range nodes {
		for _, e := range n.events() {
			switch e.Event {
			case "elected":
				elected = append(elected, e)
			case "revoked", "campaigning", "work-started", "work-stopped":
			default:
				t.Fatalf("node %s printed %q", n.id, e.Event)
			}
		}
	}
	slices.SortFunc(elected, func(a, b nodeEvent) int { return cmp.Compare(a.TimeUnixNano, b.TimeUnixNano) })
	for i := 1; i < len(elected); i++ {
		if elected[i].Token <= elected[i-1].Token {
			t.Fatalf("token %d after %d: %+v", elected[i].Token, elected[i-1].Token, elected)
		}
	}
	if len(elected) < 2 {
		t.Fatalf("only %d elections", len(elected))
	}
}

// TestNodeServesLivePage: "demo node --http" serves its campaign through
// transport/httpapi, the page to browsers and JSON to anyone else, and
// says where on stderr (stdout stays JSON lines only).
func TestNodeServesLivePage(t *testing.T) {
	srv := redistest.Start(t)
	name := fmt.Sprintf("demo-page-%x", time.Now().UnixNano())
	n := startNode(t, "--backend", "redis://"+srv.Addr(), "--name", name, "--ttl", "1s", "--work", "50ms", "--http", "127.0.0.1:0", "--id", "n1")
	at := regexp.MustCompile(`the live page is at (http://\S+)`)
	waitNodes(t, "the node's page address on stderr", func() bool { return at.MatchString(n.errs.String()) })
	waitNodes(t, "the node leading", n.leads)
	url := at.FindStringSubmatch(n.errs.String())[1]
	get := func(accept string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", accept)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	resp, body := get("application/json")
	var snaps []struct {
		Name, ID string
		Leader   bool
	}
	if err := json.Unmarshal(body, &snaps); err != nil || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s as JSON: %s %q (%v)", url, resp.Header.Get("Content-Type"), body, err)
	}
	if len(snaps) != 1 || snaps[0].Name != name || snaps[0].ID != "n1" {
		t.Fatalf("snapshot %+v, want the node's one campaign", snaps)
	}
	if resp, body = get("text/html"); !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !bytes.Contains(body, []byte("<title>Hustings")) {
		t.Fatalf("GET %s as a browser: %s %.80q, want the page", url, resp.Header.Get("Content-Type"), body)
	}
	if err := n.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-n.read
	if err := n.cmd.Wait(); err != nil {
		t.Fatalf("node with --http stopped by SIGTERM exited with %v, want 0\n%s", err, n.errs.String())
	}
	checkLines(t, n)
}
