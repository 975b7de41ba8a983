package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/hustings/hustings/transport/httpapi"
)

// registerHTTP adds the --http flag to fs.
func registerHTTP(fs *flag.FlagSet, addr *string) {
	fs.StringVar(addr, "http", "", "serve the live leadership page on this address (such as :8080 or 127.0.0.1:0), with transport/httpapi's JSON at /campaigns and its event stream at /events; empty: none")
}

// liveServer serves a transport/httpapi Handler at the root of a server of
// its own: a browser gets the live page at /, other clients JSON. The
// Handler records its sources' events meanwhile (Run), so that a page
// opened late shows the last minutes.
type liveServer struct {
	url      string // where a browser on this host finds the page
	srv      *http.Server
	cancel   context.CancelFunc
	served   chan error
	recorded chan struct{} // closed when h.Run has returned
}

// serveLive starts serving h on addr, and h.Run; close stops both.
func serveLive(addr string, h *httpapi.Handler) (*liveServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--http %s: %w", addr, err)
	}
	base, cancel := context.WithCancel(context.Background())
	l := &liveServer{
		url:      pageURL(ln.Addr()),
		cancel:   cancel,
		served:   make(chan error, 1),
		recorded: make(chan struct{}),
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			BaseContext:       func(net.Listener) context.Context { return base },
		},
	}
	go func() { l.served <- l.srv.Serve(ln) }()
	go func() {
		defer close(l.recorded)
		_ = h.Run(base) // context.Canceled, once close is called
	}()
	return l, nil
}

// close ends the recording and the event streams (their requests'
// context), then the server, waiting a few seconds at most for requests in
// flight.
func (l *liveServer) close() error {
	l.cancel()
	<-l.recorded
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := l.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, l.srv.Close())
	}
	if serr := <-l.served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// pageURL is the page's URL for a browser on this host: an unspecified
// address (":8080") is reached through loopback.
func pageURL(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return "http://" + a.String() + "/"
	}
	host := ta.IP.String()
	if ta.IP.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, fmt.Sprint(ta.Port)) + "/"
}
