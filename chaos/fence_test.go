package chaos

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hustings/hustings/chaos/history"
	"github.com/hustings/hustings/events"
)

// fence is the fenced resource: a service that accepts a write for a lock
// only with a token at least the highest it has accepted for that lock,
// as a storage system guarded by fencing tokens would. It logs every write
// in arrival order.
type fence struct {
	srv *httptest.Server

	mu     sync.Mutex
	top    map[history.Key]events.Token
	writes []history.Write
}

// startFence serves a fence on loopback until the test ends.
func startFence(t *testing.T) *fence {
	f := &fence{top: map[history.Key]events.Token{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// URL is where nodes POST their writes.
func (f *fence) URL() string { return f.srv.URL + "/write" }

// serve takes POST /write?node=&name=&slot=&token=: 204 if accepted, 409
// if the token is stale.
func (f *fence) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	slot, err1 := strconv.Atoi(q.Get("slot"))
	tok, err2 := strconv.ParseUint(q.Get("token"), 10, 64)
	if r.Method != http.MethodPost || err1 != nil || err2 != nil || q.Get("node") == "" {
		http.Error(w, "POST /write?node=&name=&slot=&token=", http.StatusBadRequest)
		return
	}
	if !f.write(q.Get("node"), history.Key{Name: q.Get("name"), Slot: slot}, events.Token(tok)) {
		w.WriteHeader(http.StatusConflict)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// write applies one write and reports whether it was accepted.
func (f *fence) write(node string, k history.Key, tok events.Token) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	top, seen := f.top[k]
	ok := !seen || tok >= top
	if ok {
		f.top[k] = tok
	}
	f.writes = append(f.writes, history.Write{Time: time.Now(), Node: node, Key: k, Token: tok, Accepted: ok})
	return ok
}

// Writes returns the log so far.
func (f *fence) Writes() []history.Write {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.writes)
}

func TestFence(t *testing.T) {
	f := startFence(t)
	k := history.Key{Name: "l", Slot: 0}
	post := func(node, tok string) int {
		resp, err := http.Post(f.URL()+"?node="+node+"&name=l&slot=0&token="+tok, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, w := range []struct {
		node, tok string
		want      int
	}{{"a", "5", 204}, {"a", "5", 204}, {"b", "7", 204}, {"a", "5", 409}, {"c", "6", 409}, {"b", "7", 204}, {"x", "nan", 400}} {
		if got := post(w.node, w.tok); got != w.want {
			t.Errorf("write %s/%s: %d, want %d", w.node, w.tok, got, w.want)
		}
	}
	ws := f.Writes()
	if len(ws) != 6 || ws[3].Accepted || ws[3].Key != k || !ws[5].Accepted {
		t.Fatalf("log %+v", ws)
	}
}
