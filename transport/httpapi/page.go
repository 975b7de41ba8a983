package httpapi

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// The page is three plain files, put together once: the style and the
// script go inline, so that the page is one request wherever the Handler
// is mounted, and the Content-Security-Policy names them by hash and
// allows nothing from anywhere else.
var (
	//go:embed page/index.html
	pageHTML string
	//go:embed page/page.css
	pageCSS string
	//go:embed page/page.js
	pageJS string
)

// page is the assembled page and the policy that allows exactly it.
type page struct {
	body   []byte
	policy string
}

var livePage = sync.OnceValue(func() page {
	body := strings.Replace(pageHTML, "<style></style>", "<style>"+pageCSS+"</style>", 1)
	body = strings.Replace(body, "<script></script>", "<script>"+pageJS+"</script>", 1)
	return page{
		body: []byte(body),
		policy: "default-src 'none'; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; " +
			"style-src " + hashSource(pageCSS) + "; script-src " + hashSource(pageJS),
	}
})

func hashSource(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

func (h *Handler) servePage(w http.ResponseWriter, _ *http.Request) {
	p := livePage()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", p.policy)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(p.body)
}

// wantsHTML reports whether a request for / prefers the page to JSON: its
// Accept header names text/html with a higher quality than
// application/json. Browsers' navigations do; clients that send
// application/json, */* (curl) or no Accept at all get JSON, as before
// the page existed.
func wantsHTML(r *http.Request) bool {
	var html, json float64
	for _, accept := range r.Header.Values("Accept") {
		for _, part := range strings.Split(accept, ",") {
			typ, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			q := 1.0
			if v, ok := params["q"]; ok {
				if q, err = strconv.ParseFloat(v, 64); err != nil {
					continue
				}
			}
			switch typ {
			case "text/html":
				html = max(html, q)
			case "application/json":
				json = max(json, q)
			}
		}
	}
	return html > json
}
