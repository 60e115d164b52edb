package fetch

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/proto"
)

// Stream hands a 2xx body, its Content-Encoding undone and longer than
// MaxBody, to its reader with the response's headers; it sends the
// Accept it is given and the validators, and counts what was read.
func TestStreamBody(t *testing.T) {
	doc := strings.Repeat("<url>x</url>", 10_000) // 120 000 bytes
	var accept, inm string
	ts := serve(t, func(w http.ResponseWriter, r *http.Request) {
		accept, inm = r.Header.Get("Accept"), r.Header.Get("If-None-Match")
		w.Header().Set("Content-Type", "application/xml; charset=utf-8")
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("ETag", `"s1"`)
		zw := gzip.NewWriter(w)
		_, _ = io.WriteString(zw, doc)
		_ = zw.Close()
	})
	f := newFetcher(t, allowPrivate, func(o *Options) { o.MaxBody = 1000 })
	var got []byte
	var hdr Body
	r := f.Stream(context.Background(), StreamRequest{Request: Request{URL: ts.URL + "/sitemap.xml", ETag: `"s0"`}, Accept: "application/xml"}, func(b Body) error {
		hdr = b
		var err error
		got, err = io.ReadAll(b.R)
		return err
	})
	wantKind(t, r, proto.ErrNone)
	if string(got) != doc || r.Bytes != int64(len(doc)) || r.Body != nil || r.Truncated {
		t.Fatalf("read %d bytes, Bytes %d, truncated %v", len(got), r.Bytes, r.Truncated)
	}
	if r.Status != 200 || r.ETag != `"s1"` || r.ContentType != "application/xml" || hdr.ContentType != "application/xml" ||
		hdr.Header.Get("Cache-Control") != "max-age=60" || hdr.FinalURL != ts.URL+"/sitemap.xml" {
		t.Errorf("response %+v, body %+v", r, hdr)
	}
	if accept != "application/xml" || inm != `"s0"` {
		t.Errorf("sent Accept %q, If-None-Match %q", accept, inm)
	}
}

// A 304, an error status and a refused address never reach the reader:
// they are the same outcomes Fetch reports.
func TestStreamWithoutBody(t *testing.T) {
	ts := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/same":
			if r.Header.Get("If-None-Match") == `"v"` {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			w.Header().Set("ETag", `"v"`)
			_, _ = io.WriteString(w, "body")
		case "/busy":
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			http.NotFound(w, r)
		}
	})
	never := func(Body) error {
		t.Error("the reader was called")
		return nil
	}
	f := newFetcher(t, allowPrivate)
	ctx := context.Background()
	r := f.Stream(ctx, StreamRequest{Request: Request{URL: ts.URL + "/same", ETag: `"v"`, LastModified: "Sun, 01 Mar 2026 10:00:00 GMT"}}, never)
	wantKind(t, r, proto.ErrNone)
	if !r.NotModified || r.ETag != `"v"` || r.LastModified != "Sun, 01 Mar 2026 10:00:00 GMT" {
		t.Errorf("304: %+v", r)
	}
	r = f.Stream(ctx, StreamRequest{Request: Request{URL: ts.URL + "/gone"}}, never)
	wantKind(t, r, proto.ErrHTTPStatus)
	r = f.Stream(ctx, StreamRequest{Request: Request{URL: ts.URL + "/busy"}}, never)
	if wantKind(t, r, proto.ErrHTTPStatus); r.RetryAfter != 2*time.Minute {
		t.Errorf("Retry-After %s", r.RetryAfter)
	}
	// The production policy refuses the loopback server's address.
	strict := newFetcher(t)
	wantKind(t, strict.Stream(ctx, StreamRequest{Request: Request{URL: ts.URL + "/same"}}, never), proto.ErrBlocked)
	wantKind(t, f.Stream(ctx, StreamRequest{Request: Request{URL: "ftp://x/"}}, never), proto.ErrBadURL)
}

// The reader's own error is a content error; a body that breaks off
// under the reader fails the fetch with the transport's kind even when
// the reader made do; a body slower than Timeout is a timeout.
func TestStreamErrors(t *testing.T) {
	ts := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/cut":
			w.Header().Set("Content-Length", "1000")
			_, _ = io.WriteString(w, "only a little")
			// The handler returns with the body short: the connection
			// is closed mid-body.
		case "/slow":
			_, _ = io.WriteString(w, "start")
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		case "/badgzip":
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = io.WriteString(w, "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff")
		default:
			_, _ = io.WriteString(w, "<not xml")
		}
	})
	f := newFetcher(t, allowPrivate, func(o *Options) { o.Timeout = 500 * time.Millisecond })
	ctx := context.Background()
	parseErr := errors.New("not a sitemap")
	r := f.Stream(ctx, StreamRequest{Request: Request{URL: ts.URL + "/doc"}}, func(b Body) error {
		_, _ = io.ReadAll(b.R)
		return parseErr
	})
	if wantKind(t, r, proto.ErrContent); !errors.Is(r.Err, parseErr) {
		t.Errorf("err %v, want the reader's", r.Err)
	}
	lenient := func(b Body) error {
		_, _ = io.Copy(io.Discard, b.R)
		return nil // makes do with what came
	}
	r = f.Stream(ctx, StreamRequest{Request: Request{URL: ts.URL + "/cut"}}, lenient)
	if r.OK() || r.ErrKind == proto.ErrContent || r.Bytes != int64(len("only a little")) {
		t.Errorf("cut body: %q %v, %d bytes", r.ErrKind, r.Err, r.Bytes)
	}
	wantKind(t, f.Stream(ctx, StreamRequest{Request: Request{URL: ts.URL + "/slow"}}, lenient), proto.ErrTimeout)
	wantKind(t, f.Stream(ctx, StreamRequest{Request: Request{URL: ts.URL + "/badgzip"}}, lenient), proto.ErrContent)
	r = f.Stream(ctx, StreamRequest{Request: Request{URL: ts.URL + "/doc"}}, func(Body) error { panic("boom") })
	if wantKind(t, r, proto.ErrOther); !bytes.Contains([]byte(r.Err.Error()), []byte("boom")) {
		t.Errorf("panic: %v", r.Err)
	}
}
