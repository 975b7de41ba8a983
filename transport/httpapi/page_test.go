package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/hustings/hustings/transport/httpapi"
)

// browser is the Accept header of a browser's navigation (Chromium's).
const browser = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"

func TestRootNegotiatesPageOrJSON(t *testing.T) {
	tests := []struct {
		accept []string
		page   bool
	}{
		{nil, false},
		{[]string{"*/*"}, false},
		{[]string{"application/json"}, false},
		{[]string{"text/html, application/json"}, false}, // a tie keeps JSON
		{[]string{"text/html;q=0.5, application/json"}, false},
		{[]string{"text/html;q=bad"}, false},
		{[]string{browser}, true},
		{[]string{"text/html"}, true},
		{[]string{"application/json;q=0.1", "text/html"}, true},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.accept, " + "), func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			for _, a := range tt.accept {
				req.Header.Add("Accept", a)
			}
			rec := httptest.NewRecorder()
			httpapi.New().ServeHTTP(rec, req)
			ct := rec.Header().Get("Content-Type")
			if rec.Code != http.StatusOK || rec.Header().Get("Vary") != "Accept" {
				t.Fatalf("GET / = %d, Vary %q; want 200, Vary Accept", rec.Code, rec.Header().Get("Vary"))
			}
			if tt.page {
				if ct != "text/html; charset=utf-8" || !strings.Contains(rec.Body.String(), "<title>Hustings") {
					t.Fatalf("Content-Type %q, body starting %.60q: want the page", ct, rec.Body)
				}
				return
			}
			var snaps []wireSnapshot
			if ct != "application/json" || json.Unmarshal(rec.Body.Bytes(), &snaps) != nil {
				t.Fatalf("Content-Type %q, body %q: want a JSON array", ct, rec.Body)
			}
		})
	}
}

// TestCampaignsStaysJSON: only / is negotiated; /campaigns is JSON for a
// browser too, and the page reads it.
func TestCampaignsStaysJSON(t *testing.T) {
	req := httptest.NewRequest(http.MethodGet, "/campaigns", nil)
	req.Header.Set("Accept", browser)
	rec := httptest.NewRecorder()
	httpapi.New().ServeHTTP(rec, req)
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("GET /campaigns from a browser: Content-Type %q, want application/json", ct)
	}
}

// TestPageIsSelfContained: the page loads nothing from anywhere, and its
// Content-Security-Policy allows its own inline style and script (by hash)
// and requests to its own origin, nothing else.
func TestPageIsSelfContained(t *testing.T) {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("Accept", browser)
	rec := httptest.NewRecorder()
	httpapi.New().ServeHTTP(rec, req)
	body := rec.Body.String()
	for _, m := range regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?[a-z]+:|https?://|@import|url\(`).FindAllString(body, -1) {
		if m != `href="data:` { // the empty favicon, so that no request for one fails
			t.Errorf("the page refers to something outside itself: %q", m)
		}
	}
	for _, want := range []string{"<style>:root", "<script>\"use strict\""} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q: its style or script was not put inline", want)
		}
	}
	csp := rec.Header().Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "connect-src 'self'", "script-src 'sha256-", "style-src 'sha256-"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
}
