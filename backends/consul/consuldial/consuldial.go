// Package consuldial registers the URL scheme consul:// with package
// dial, so that dial.Open opens a Consul backend (package
// backends/consul) on a client of its own. Import it for its side
// effect:
//
//	import _ "github.com/hustings/hustings/backends/consul/consuldial"
//
// The URL names one Consul agent's HTTP API and, as its path, the KV
// prefix of the backend's keys (consul.WithPrefix; default the
// backend's), in Target.Root:
//
//	consul://host:port[/prefix]
//
// The client speaks plain HTTP, keeps up to 128 idle connections (the
// backend has up to 64 calls in flight per session), and takes its ACL
// token from CONSUL_HTTP_TOKEN, as Consul's own tools do. User info,
// queries and fragments are bad URLs: a program that needs TLS builds
// its client and calls consul.New. Open waits until the agent reports a
// leader.
package consuldial

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/hashicorp/consul/api"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/consul"
	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/backends/internal/record"
)

// The errors of Register are recorded by dial, which refuses the scheme
// at Parse: nothing to do with them here.
func init() { _ = dial.Register("consul", opener{}) }

// opener opens consul:// URLs.
type opener struct{}

func (opener) Usage(string) string { return "consul://host:port[/prefix]" }

func (opener) Check(u *url.URL) error {
	_, err := describe(u)
	return err
}

func (opener) Describe(u *url.URL) (dial.Target, error) { return describe(u) }

// describe checks a consul:// URL: one host:port, and a path that is a
// valid prefix.
func describe(u *url.URL) (dial.Target, error) {
	hs, err := dial.HostsOf(u)
	if err != nil {
		return dial.Target{}, err
	}
	if len(hs) != 1 {
		return dial.Target{}, errors.New("one host:port only (an agent forwards to the servers)")
	}
	t := dial.Target{Scheme: "consul", Hosts: hs}
	if p := strings.Trim(u.Path, "/"); p != "" {
		t.Root = p + "/"
		if _, err := consul.New(&api.Client{}, consul.WithPrefix(t.Root)); err != nil {
			return dial.Target{}, fmt.Errorf("prefix %q: no empty segments", p)
		}
	}
	return t, nil
}

func (opener) Open(ctx context.Context, u *url.URL, c dial.Config) (backends.Backend, func(), error) {
	shown := u.Redacted()
	t, err := describe(u)
	if err != nil {
		return nil, nil, fmt.Errorf("%w %q: %v", dial.ErrURL, shown, err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 128
	cfg := &api.Config{Address: t.Hosts[0], Scheme: "http", Transport: tr, Token: os.Getenv(api.HTTPTokenEnvName)}
	cl, err := api.NewClient(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("dial: %s: %w", shown, err)
	}
	done := tr.CloseIdleConnections
	leader, err := cl.Status().LeaderWithQueryOptions((&api.QueryOptions{}).WithContext(ctx))
	switch {
	case err != nil:
		done()
		var se api.StatusError
		if errors.As(err, &se) { // the agent answered, with an error
			return nil, nil, fmt.Errorf("dial: %s: %w", shown, err)
		}
		return nil, nil, dial.Unreachable(ctx, c, shown, nil, err)
	case leader == "":
		done()
		return nil, nil, fmt.Errorf("%w: dial: %s: the agent knows no leader", backends.ErrUnavailable, shown)
	}
	var opts []consul.Option
	if t.Root != "" {
		opts = append(opts, consul.WithPrefix(t.Root))
	}
	b, err := consul.New(cl, opts...)
	if err != nil {
		done()
		return nil, nil, err
	}
	return b, func() { done(); record.WaitBounded(b.Store) }, nil
}
