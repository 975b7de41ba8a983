package httpapi_test

import (
	"bufio"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/transport/httpapi"
)

var _ httpapi.Source = (*campaign.Campaign)(nil) // groups too: group.New makes one

// patience bounds every wait of these tests; they normally take milliseconds.
const patience = 10 * time.Second

type runner interface {
	Run(ctx context.Context) error
	Close() error
	Events() <-chan events.Event
}

// start runs r until the test ends.
func start(t *testing.T, r runner) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := <-done; !errors.Is(err, campaign.ErrClosed) {
			t.Errorf("Run = %v, want ErrClosed", err)
		}
	})
}

// elected waits for r's first Elected.
func elected(t *testing.T, r runner) events.Event {
	t.Helper()
	timeout := time.After(patience)
	for {
		select {
		case e := <-r.Events():
			if e.Kind == events.Elected {
				return e
			}
		case <-timeout:
			t.Fatal("not elected in time")
		}
	}
}

// sse is one Server-Sent Event as read off the wire.
type sse struct{ event, data string }

// next reads the next event from sc; ok is false at the end of the stream.
func next(t *testing.T, sc *bufio.Scanner) (e sse, ok bool) {
	t.Helper()
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if e != (sse{}) {
				return e, true
			}
		case strings.HasPrefix(line, "event: "):
			e.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			e.data = strings.TrimPrefix(line, "data: ")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	return e, false
}

// closeOK closes r, failing the test on an error.
func closeOK(t *testing.T, r interface{ Close() error }) {
	t.Helper()
	if err := r.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
