package node

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/worker/fetch"
)

// --max-redirects 0 means no redirect, not the fetcher's default 5; other
// values pass through.
func TestMaxRedirectsZeroFollowsNone(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/from" {
			http.Redirect(w, r, "/to", http.StatusFound)
			return
		}
		_, _ = w.Write([]byte("arrived"))
	}))
	defer srv.Close()
	get := func(maxRedirects int) fetch.Response {
		cfg := config.Default()
		cfg.MaxRedirects, cfg.AllowPrivate = maxRedirects, true
		f, err := fetch.New(cfg.WorkerOptions("t", nil).Fetch)
		if err != nil {
			t.Fatal(err)
		}
		return f.Get(context.Background(), srv.URL+"/from")
	}
	if r := get(0); r.ErrKind != proto.ErrRedirects {
		t.Errorf("--max-redirects 0: %v %v, want the redirect refused", r.ErrKind, r.Err)
	}
	if r := get(1); !r.OK() || string(r.Body) != "arrived" {
		t.Errorf("--max-redirects 1: %v %v %q, want the redirect followed", r.ErrKind, r.Err, r.Body)
	}
	if r := get(config.Default().MaxRedirects); !r.OK() {
		t.Errorf("default --max-redirects: %v %v", r.ErrKind, r.Err)
	}
}
