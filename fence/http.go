package fence

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

// The request headers that carry a write's lock and token: the lock key
// path-escaped (url.PathEscape, so any lock name fits in a header), the
// token in decimal.
const (
	LockHeader  = "Hustings-Lock"
	TokenHeader = "Hustings-Token"
)

// SetHeaders sets the headers Handler reads on h: lock (the key the
// Guard keeps, see Guard.Do) and the term's token.
func SetHeaders(h http.Header, lock string, token events.Token) {
	h.Set(LockHeader, url.PathEscape(lock))
	h.Set(TokenHeader, strconv.FormatUint(uint64(token), 10))
}

// Handler serves a request through next only under a token g admits for
// the request's lock (Guard.Do; next runs as the write, and a higher
// token's first request waits for the requests under lower ones that are
// running). It answers 409 Conflict to a stale token or token 0, 400 Bad
// Request when either header is missing or malformed, and 503 Service
// Unavailable when Save fails.
func (g *Guard) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lock, err := url.PathUnescape(r.Header.Get(LockHeader))
		if err != nil || lock == "" {
			http.Error(w, "fence: the "+LockHeader+" header must name the lock, path-escaped", http.StatusBadRequest)
			return
		}
		tok, err := strconv.ParseUint(r.Header.Get(TokenHeader), 10, 64)
		if err != nil {
			http.Error(w, "fence: the "+TokenHeader+" header must be the term's token, in decimal", http.StatusBadRequest)
			return
		}
		ran := false
		err = g.Do(r.Context(), lock, events.Token(tok), func(ctx context.Context) error {
			ran = true
			next.ServeHTTP(w, r)
			return nil
		})
		switch {
		case ran:
		case errors.Is(err, backends.ErrNotHeld):
			http.Error(w, err.Error(), http.StatusConflict)
		default:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		}
	})
}
