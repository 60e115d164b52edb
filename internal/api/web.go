package api

import (
	"embed"
	"io/fs"
	"net/http"
)

// web holds the dashboard: plain HTML, CSS and JavaScript, no build step
// and nothing loaded from elsewhere (the charts are drawn as SVG by
// web/app.js).
//
//go:embed web
var web embed.FS

// Assets serves the dashboard's files, by their names under web/.
func Assets() http.Handler {
	sub, err := fs.Sub(web, "web")
	if err != nil {
		panic(err) // the embedded tree always has web/
	}
	return http.FileServerFS(sub)
}

// ServeIndex answers GET /: the dashboard.
func ServeIndex(w http.ResponseWriter, r *http.Request) {
	b, err := web.ReadFile("web/index.html")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(b)
}
