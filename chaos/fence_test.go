package chaos

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hustings/hustings/chaos/history"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/fence"
)

// resource is the fenced resource: a service behind a fence.Guard, as a
// storage system guarded by fencing tokens would be, which accepts a
// write for a lock slot only under a token at least the highest it has
// accepted for that slot. It logs every write in the order the guard
// decided it.
type resource struct {
	srv   *httptest.Server
	guard fence.Guard

	mu     sync.Mutex
	writes []history.Write
}

// startResource serves a resource on loopback until the test ends.
func startResource(t *testing.T) *resource {
	r := &resource{}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

// URL is where nodes POST their writes.
func (r *resource) URL() string { return r.srv.URL + "/write" }

// guardKey is the Guard's key for a lock slot: each slot has tokens of its
// own.
func guardKey(name string, slot int) string { return fmt.Sprintf("%s/%d", name, slot) }

// serve takes POST /write?node=&name=&slot= with the fence headers
// (fence.SetHeaders, keyed by guardKey): 204 if the guard admits it, 409
// if its token is stale, 400 if the request is malformed.
func (r *resource) serve(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	slot, err1 := strconv.Atoi(q.Get("slot"))
	tok, err2 := strconv.ParseUint(req.Header.Get(fence.TokenHeader), 10, 64)
	if req.Method != http.MethodPost || err1 != nil || err2 != nil || q.Get("node") == "" {
		http.Error(w, "POST /write?node=&name=&slot= with the fence headers", http.StatusBadRequest)
		return
	}
	k := history.Key{Name: q.Get("name"), Slot: slot}
	accepted := false
	r.guard.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		r.log(q.Get("node"), k, events.Token(tok), true) // inside the guard: in its order
		accepted = true
		w.WriteHeader(http.StatusNoContent)
	})).ServeHTTP(w, req)
	if !accepted {
		r.log(q.Get("node"), k, events.Token(tok), false)
	}
}

// log records one write.
func (r *resource) log(node string, k history.Key, tok events.Token, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, history.Write{Time: time.Now(), Node: node, Key: k, Token: tok, Accepted: ok})
}

// Writes returns the log so far.
func (r *resource) Writes() []history.Write {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.writes)
}

func TestResource(t *testing.T) {
	r := startResource(t)
	k := history.Key{Name: "l", Slot: 0}
	post := func(node string, tok events.Token, headers bool) int {
		req, err := http.NewRequest(http.MethodPost, r.URL()+"?node="+node+"&name=l&slot=0", nil)
		if err != nil {
			t.Fatal(err)
		}
		if headers {
			fence.SetHeaders(req.Header, guardKey("l", 0), tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, w := range []struct {
		node    string
		tok     events.Token
		headers bool
		want    int
	}{{"a", 5, true, 204}, {"a", 5, true, 204}, {"b", 7, true, 204}, {"a", 5, true, 409}, {"c", 6, true, 409}, {"b", 7, true, 204}, {"x", 8, false, 400}} {
		if got := post(w.node, w.tok, w.headers); got != w.want {
			t.Errorf("write %s/%d: %d, want %d", w.node, w.tok, got, w.want)
		}
	}
	ws := r.Writes()
	if len(ws) != 6 || ws[3].Accepted || ws[3].Key != k || !ws[5].Accepted {
		t.Fatalf("log %+v", ws)
	}
}
