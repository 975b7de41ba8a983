package natstest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hustings/hustings/internal/testserver"
)

// Cluster is a JetStream cluster of nats-server processes on loopback,
// routed to each other: a replicated bucket's stream has a leader and
// followers among them. Each node is a Server: Kill, Pause and Restart
// one to fail it. Stop stops them all.
type Cluster struct {
	Servers []*Server
}

// StartCluster starts a cluster of n nodes for t and stops it when the
// test ends. It fails the test if the cluster does not start.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c, err := StartClusterServers(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

// StartClusterServers starts n nodes (n ≥ 1), each in a temporary
// directory of its own, and waits until every one's JetStream answers
// (the cluster has a meta leader) and a stream of n replicas can be
// placed. The caller stops it with Stop.
func StartClusterServers(n int) (*Cluster, error) {
	if n < 1 {
		return nil, errors.New("natstest: a cluster of no node")
	}
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	c := &Cluster{}
	routes := make([]string, n)
	ports := make([]int, n)
	for i := range n {
		cp, err := testserver.FreePort()
		if err == nil {
			ports[i], err = testserver.FreePort()
		}
		if err != nil {
			return nil, err
		}
		routes[i] = "nats://127.0.0.1:" + strconv.Itoa(cp)
	}
	for i := range n {
		dir, err := testserver.TempDir("natstest")
		if err != nil {
			c.Stop()
			return nil, err
		}
		others := append(append([]string{}, routes[:i]...), routes[i+1:]...)
		s := &Server{port: ports[i], extra: []string{
			"--cluster_name", "natstest", "--cluster", routes[i], "--routes", strings.Join(others, ","),
		}}
		spec := s.spec(bin)
		spec.Dir, spec.RemoveDir = dir, true
		s.srv = testserver.NewServer(spec)
		c.Servers = append(c.Servers, s)
	}
	// A node is ready once the cluster has formed: they start together.
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, s := range c.Servers {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = s.srv.Start() }()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.Stop()
		return nil, err
	}
	if err := c.placeable(n); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// placeable waits until the meta leader can place a stream of n
// replicas: a meta leader elected before it heard from every peer
// answers "no suitable peers for placement" (err_code 10005) for a while,
// longer on a busy machine. It makes and deletes a small stream to know.
func (c *Cluster) placeable(n int) error {
	if n < 2 {
		return nil
	}
	nc, err := nats.Connect(c.Servers[0].URL())
	if err != nil {
		return fmt.Errorf("natstest: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("natstest: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := jetstream.StreamConfig{Name: "natstest_placement", Subjects: []string{"natstest.placement"}, Replicas: n, Storage: jetstream.MemoryStorage}
	for {
		_, err := js.CreateStream(ctx, cfg)
		if err == nil {
			return js.DeleteStream(ctx, cfg.Name)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("natstest: a stream of %d replicas could not be placed: %w", n, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// URL returns the client URLs of every node, comma-separated, as
// nats.Connect takes them.
func (c *Cluster) URL() string {
	urls := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		urls[i] = s.URL()
	}
	return strings.Join(urls, ",")
}

// Stop stops every node and removes their directories. Calling it again
// does nothing.
func (c *Cluster) Stop() {
	for _, s := range c.Servers {
		s.Stop()
	}
}
