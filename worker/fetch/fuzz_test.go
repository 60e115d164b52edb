package fetch

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"io"
	"net/http"
	"testing"
	"unicode/utf8"
)

// FuzzBody runs whatever a server may send as a body, under whatever
// Content-Encoding and Content-Type it claims, through decompression, the
// cap and the conversion to UTF-8. It never panics, never returns more
// than the cap, and text comes out as valid UTF-8.
func FuzzBody(f *testing.F) {
	const max = 4096
	var gz, fl bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(bytes.Repeat([]byte("<p>caf\xe9</p>"), 1000))
	zw.Close()
	fw, _ := flate.NewWriter(&fl, flate.BestCompression)
	fw.Write([]byte("plain text"))
	fw.Close()
	for _, s := range []struct{ body, enc, ct string }{
		{"<p>hello</p>", "", "text/html; charset=utf-8"},
		{gz.String(), "gzip", "text/html"},
		{fl.String(), "deflate", "text/plain"},
		{gz.String(), "gzip, gzip", "text/html"},
		{"\xff\xfe<\x00p\x00>\x00", "identity", "text/html"},
		{"caf\xe9", "", "text/plain; charset=iso-8859-1"},
		{"\x93\xfa\x96\x7b", "", "text/html; charset=Shift_JIS"},
		{"{\"a\":1}", "br", "application/json"},
		{"<meta charset=utf-16>abc", "", "text/html"},
		{"x", "", "text/plain; charset=\"x-no-such\"; y"},
	} {
		f.Add([]byte(s.body), s.enc, s.ct)
	}
	f.Fuzz(func(t *testing.T, body []byte, enc, ct string) {
		resp := &http.Response{Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))}
		if enc != "" {
			resp.Header.Set("Content-Encoding", enc)
		}
		got, truncated, err := readBody(resp, max)
		if len(got) > max || truncated && len(got) != max || truncated && err != nil {
			t.Fatalf("%d bytes, truncated %v, err %v: the cap is %d", len(got), truncated, err, max)
		}
		for _, class := range []Class{HTML, Text} {
			if out := toUTF8(got, ct, class); !utf8.Valid(out) {
				t.Fatalf("%v body under %q is not valid UTF-8: %q", class, ct, out)
			}
		}
		_ = classOf(mediaType(ct))
	})
}
