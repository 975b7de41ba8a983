package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/transport/httpapi"
)

// browserPatience bounds each wait on the browser: on a busy 2-core
// machine Chromium takes seconds to start and the page's first load more.
const browserPatience = time.Minute

// TestLivePageInBrowser serves the live page as "demo --http" does, with
// two candidates for one lock, and reads it in a real headless Chromium:
// the page shows the leader, then, after it resigns, the new leader and
// the ended term with its reason; opened again, it shows that term whole
// from the server's history; nothing reaches the console as an error
// (an exception, a console.error, a failed request, a CSP violation); a
// screenshot goes to the test's temporary folder.
func TestLivePageInBrowser(t *testing.T) {
	const lock = "demo/reconcile"
	b := memory.New()
	page := httpapi.New()
	alpha := runCandidate(t, b, lock, "alpha")
	won := awaitElected(t, alpha)
	bravo := runCandidate(t, b, lock, "bravo")
	page.Register(alpha)
	page.Register(bravo)
	live, err := serveLive("127.0.0.1:0", page)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := live.close(); err != nil {
			t.Errorf("closing the live page's server: %v", err)
		}
	}()

	ctx, console := newBrowser(t)
	within := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, browserPatience)
		defer cancel()
		if err := chromedp.Do(wctx, steps...); err != nil {
			t.Fatalf("%s: %v\nconsole: %v", what, err, console.messages())
		}
	}
	// until waits for a JavaScript condition on the page to hold.
	until := func(what, cond string) {
		t.Helper()
		within(what, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			// No timeout of its own (30 s by default): the context bounds it.
			poll := chromedp.Poll[bool](cond, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(0))
			_, err := poll(ctx, tg)
			return err
		}))
	}
	holderIs := func(id string) string {
		return fmt.Sprintf(`document.querySelector('[data-lock="%s|0"]')?.dataset.holder === %q`, lock, id)
	}
	within("loading the page", chromedp.Navigate(live.url))
	until("the page showing alpha as the holder", holderIs("alpha"))
	until("the page's event stream opening", `document.querySelector("#status").dataset.state === "live"`)
	// A campaign registered after the page opened joins it.
	late := runCandidate(t, b, "demo/nightly", "charlie")
	awaitElected(t, late)
	page.Register(late)
	until("the page showing a campaign registered after it opened", `document.querySelector('[data-lock="demo/nightly|0"]')?.dataset.holder === "charlie"`)

	rctx, cancel := context.WithTimeout(t.Context(), browserPatience)
	defer cancel()
	if err := alpha.Resign(rctx); err != nil {
		t.Fatalf("alpha resigning: %v", err)
	}
	until("the page showing bravo as the holder after alpha resigned", holderIs("bravo"))
	until("the timeline showing alpha's term ended by its resignation",
		fmt.Sprintf(`document.querySelector('#terms tr.ended[data-holder="alpha"][data-token="%d"][data-reason="resigned"]') !== null`, won.Token))
	until("the timeline drawing alpha's ended term", `[...document.querySelectorAll("#timeline .term.ended")].some((e) => e.textContent.startsWith("alpha #"))`)
	// Opened again, the page shows alpha's term from the server's history.
	within("loading the page again", chromedp.Navigate(live.url))
	until("the page opened again showing alpha's whole term, from the history",
		fmt.Sprintf(`((row) => row !== null && row.cells[4].textContent !== "before this page")(document.querySelector('#terms tr.ended[data-holder="alpha"][data-token="%d"][data-reason="resigned"]'))`, won.Token))
	until("the page opened again showing bravo as the holder", holderIs("bravo"))

	var shot []byte
	within("taking a screenshot", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) (err error) {
		shot, err = chromedp.FullScreenshot(100)(ctx, tg) // quality 100: a PNG
		return err
	}))
	path := filepath.Join(t.TempDir(), "live-page.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(shot))
	if bad := console.errors(); len(bad) > 0 {
		t.Fatalf("the page wrote errors to the console:\n%s", strings.Join(bad, "\n"))
	}
}

// runCandidate runs a campaign for lock on b until the test ends.
func runCandidate(t *testing.T, b *memory.Backend, lock, id string) *campaign.Campaign {
	t.Helper()
	c, err := campaign.New(b, lock, campaign.WithID(id), campaign.WithTTL(ttl), campaign.WithRetry(retry))
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- c.Run(context.Background()) }()
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("%s: Close: %v", id, err)
		}
		if err := <-ran; err != nil && !errors.Is(err, campaign.ErrClosed) {
			t.Errorf("%s: Run: %v", id, err)
		}
	})
	return c
}

// awaitElected waits for c's first Elected event.
func awaitElected(t *testing.T, c *campaign.Campaign) events.Event {
	t.Helper()
	timeout := time.After(browserPatience)
	for {
		select {
		case e := <-c.Events():
			if e.Kind == events.Elected {
				return e
			}
		case <-timeout:
			t.Fatal("not elected within a minute")
		}
	}
}

// newBrowser starts Debian's Chromium, headless, through chromedp, and
// returns a context for its tab (never given a timeout: it would end the
// browser) and what the tab writes to its console. The browser stops when
// the test ends, through chromedp's cancel functions: its process is
// chromedp's, never looked up by name.
func newBrowser(t *testing.T) (context.Context, *consoleLog) {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("this test needs Debian's chromium (make deps installs it: apt-get install chromium): %v", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(1280, 900),
		chromedp.CombinedOutput(io.Discard),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to sandbox as root (CI runs as root)
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	// The first Run starts the browser; it must not have a timeout.
	if err := chromedp.Do(ctx); err != nil {
		cancelTab()
		cancelAlloc()
		t.Fatalf("starting %s: %v", path, err)
	}
	log := &consoleLog{done: make(chan struct{})}
	messages := chromedp.Console(ctx)
	go log.collect(messages)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc() // waits for the browser's process to exit
		<-log.done
	})
	return ctx, log
}

// consoleLog keeps what a tab writes to its console: calls of the console
// API, uncaught exceptions, and the browser's log (failed requests, CSP
// violations).
type consoleLog struct {
	mu   sync.Mutex
	all  []chromedp.ConsoleMessage
	done chan struct{}
}

func (l *consoleLog) collect(messages func(func(chromedp.ConsoleMessage, error) bool)) {
	defer close(l.done)
	for m, err := range messages {
		if err != nil {
			return
		}
		l.mu.Lock()
		l.all = append(l.all, m)
		l.mu.Unlock()
	}
}

func (l *consoleLog) messages() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var s []string
	for _, m := range l.all {
		s = append(s, m.String())
	}
	return s
}

// errors returns the errors and exceptions written so far.
func (l *consoleLog) errors() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var s []string
	for _, m := range l.all {
		if m.Type == chromedp.ConsoleError || m.IsException() {
			s = append(s, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line))
		}
	}
	return s
}
