package fetch

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/freshcrawl/freshcrawl/proto"
)

// StreamRequest is a request whose body is read as it arrives.
type StreamRequest struct {
	Request
	// Accept is sent as the Accept header; "" sends the one Fetch sends.
	Accept string
}

// Body is a 2xx response as Stream hands it to its reader.
type Body struct {
	Header      http.Header
	FinalURL    string // after redirects
	ContentType string // media type, lowercased, without parameters
	// R is the body, its Content-Encoding undone and not capped by
	// Options.MaxBody: the reader bounds what it reads.
	R io.Reader
}

// Stream is Fetch for a body its caller reads as a stream and bounds
// itself (a sitemap may hold 50 MB): the same client, so the same address
// screening on every connection, redirect policy, timeouts (Timeout
// bounds the reading too), conditional request and error kinds, but a
// 2xx body is handed to read as it arrives instead of being held whole.
// read is called only for a 2xx response; the Response's Body stays nil
// and its Bytes counts what read consumed. An error of read's own (a
// parse error) is proto.ErrContent; a failure of the body underneath it
// (a timeout, a reset, bad compression) fails the fetch with the kind
// Fetch would give, even when read made do with what came before it.
func (f *Fetcher) Stream(ctx context.Context, req StreamRequest, read func(Body) error) (resp Response) {
	resp.Started = time.Now()
	resp.FinalURL = req.URL
	defer func() {
		if p := recover(); p != nil {
			resp.ErrKind = proto.ErrOther
			resp.Err = fmt.Errorf("fetch %s: internal error: %v", req.URL, p)
		}
		resp.Elapsed = time.Since(resp.Started)
	}()
	if ctx == nil {
		ctx = context.Background()
	}
	u, err := parseURL(req.URL)
	if err != nil {
		resp.fail(proto.ErrBadURL, err)
		return resp
	}
	resp.FinalURL = u.String()
	ctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	defer cancel()
	hresp, ok := f.get(ctx, u, req.Request, req.Accept, &resp)
	if !ok {
		return resp
	}
	defer hresp.Body.Close()
	resp.Status = hresp.StatusCode
	resp.FinalURL = hresp.Request.URL.String()
	resp.ETag = hresp.Header.Get("ETag")
	resp.LastModified = hresp.Header.Get("Last-Modified")
	resp.ContentType = mediaType(hresp.Header.Get("Content-Type"))
	resp.Class = classOf(resp.ContentType)
	switch {
	case hresp.StatusCode == http.StatusNotModified:
		resp.NotModified = true
		if resp.ETag == "" {
			resp.ETag = req.ETag
		}
		if resp.LastModified == "" {
			resp.LastModified = req.LastModified
		}
		drain(hresp.Body)
		return resp
	case hresp.StatusCode >= 400:
		if hresp.StatusCode == http.StatusTooManyRequests || hresp.StatusCode == http.StatusServiceUnavailable {
			resp.RetryAfter = parseRetryAfter(hresp.Header.Get("Retry-After"), hresp.Header.Get("Date"), time.Now())
		}
		resp.fail(proto.ErrHTTPStatus, fmt.Errorf("fetch %s: http status %d", resp.FinalURL, hresp.StatusCode))
		drain(hresp.Body)
		return resp
	}
	dec, err := decoder(hresp.Body, hresp.Header.Values("Content-Encoding"))
	if err != nil {
		resp.fail(proto.ErrContent, fmt.Errorf("fetch %s: reading body: %w", resp.FinalURL, err))
		return resp
	}
	body := &watchedReader{r: dec}
	err = read(Body{Header: hresp.Header, FinalURL: resp.FinalURL, ContentType: resp.ContentType, R: body})
	resp.Bytes = body.n
	// What the reader left unread is dropped with the connection, unless
	// a little draining lets it go back to the pool.
	drain(hresp.Body)
	switch {
	case body.err != nil:
		// The body failed under the reader, whether or not the reader
		// made do with what came before: the fetch failed, as Fetch's
		// does.
		kind := classifyCtx(ctx, body.err)
		if kind == proto.ErrOther && isDecodeError(body.err) {
			kind = proto.ErrContent
		}
		resp.fail(kind, fmt.Errorf("fetch %s: reading body: %w", resp.FinalURL, body.err))
	case err != nil:
		resp.fail(proto.ErrContent, fmt.Errorf("fetch %s: %w", resp.FinalURL, err))
	}
	return resp
}

// watchedReader counts what is read and keeps the first error other than
// the end, so Stream tells a failing body from a reader that gave up.
type watchedReader struct {
	r   io.Reader
	n   int64
	err error
}

func (w *watchedReader) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	w.n += int64(n)
	if err != nil && err != io.EOF && w.err == nil {
		w.err = err
	}
	return n, err
}
