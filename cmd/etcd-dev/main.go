// Command etcd-dev runs an etcd server to try Hustings on etcd without
// installing one: a single member on loopback, its data in a temporary
// directory that is removed when it stops (Ctrl-C or SIGTERM). It prints
// the URL to give the demo:
//
//	$ go run ./cmd/etcd-dev
//	etcd://127.0.0.1:2379
//	$ go run ./cmd/demo --backend etcd://127.0.0.1:2379   # in another terminal
//
// For trying things only: no TLS, no auth, one member, data thrown away.
// It links the etcd server, so its first build takes a while; the demo
// does not.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

func main() {
	port := flag.Int("port", 2379, "client port on 127.0.0.1; 0 picks a free one")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "etcd-dev: takes flags only, not %q\n", flag.Arg(0))
		os.Exit(2)
	}
	if err := run(*port); err != nil {
		fmt.Fprintln(os.Stderr, "etcd-dev:", err)
		os.Exit(1)
	}
}

// run serves until SIGINT or SIGTERM.
func run(port int) error {
	// From the start: a signal during start-up must still remove the data.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(stop)
	cport, err := freePort(port)
	if err != nil {
		return fmt.Errorf("client port %d: %w", port, err)
	}
	pport, err := freePort(0)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "etcd-dev-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir = "etcd-dev", dir
	// Quiet: its errors reach us through StartEtcd and Err; its logs at
	// shutdown are alarming noise ("serving failed: server closed").
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	curl := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", cport)}
	purl := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", pport)}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{curl}, []url.URL{curl}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{purl}, []url.URL{purl}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// The smallest lease etcd grants is 1.5 election timeouts rounded up
	// to whole seconds: 1s here, as in the tests (2s with the defaults).
	cfg.TickMs, cfg.ElectionMs = 50, 500

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		return err
	case <-stop:
		return nil
	case <-time.After(time.Minute):
		return errors.New("not ready after a minute")
	}
	fmt.Printf("etcd://%s\n", curl.Host)
	fmt.Fprintln(os.Stderr, "etcd-dev: serving; Ctrl-C stops it and removes its data")
	select {
	case <-stop:
		return nil
	case err := <-e.Err():
		return err
	}
}

// freePort returns port if it is free on 127.0.0.1, or a free port if
// port is 0.
func freePort(port int) (int, error) {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
