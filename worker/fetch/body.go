package fetch

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
)

// maxEncodingLayers bounds stacked Content-Encodings ("gzip, gzip, ..."), a
// cheap way to multiply a bomb's ratio.
const maxEncodingLayers = 2

// readBody reads the decompressed body of resp up to max bytes. truncated
// reports that there was more; the returned body then holds exactly max
// bytes.
func readBody(resp *http.Response, max int64) (body []byte, truncated bool, err error) {
	return readBodyInto(nil, resp, max)
}

// readBodyInto is readBody reading into dst's storage (grown if need be):
// the body is dst's prefix or a new slice.
func readBodyInto(dst []byte, resp *http.Response, max int64) (body []byte, truncated bool, err error) {
	r, err := decoder(resp.Body, resp.Header.Values("Content-Encoding"))
	if err != nil {
		return nil, false, err
	}
	buf := bytes.NewBuffer(dst[:0])
	if n := resp.ContentLength; n > 0 && n <= max && len(resp.Header.Values("Content-Encoding")) == 0 {
		buf.Grow(int(n))
	}
	// One byte past the cap tells "exactly max" from "more than max"
	// without decompressing anything further.
	n, err := buf.ReadFrom(io.LimitReader(r, max+1))
	if err != nil {
		return buf.Bytes(), false, err
	}
	if n > max {
		return buf.Bytes()[:max], true, nil
	}
	return buf.Bytes(), false, nil
}

// decoder wraps body in decompressors for the listed content codings, last
// applied first undone. identity is a no-op; codings we did not ask for
// (br, zstd, compress) are an error rather than garbage handed on as text.
func decoder(body io.Reader, headers []string) (io.Reader, error) {
	var codings []string
	for _, h := range headers {
		for c := range strings.SplitSeq(h, ",") {
			c = strings.ToLower(strings.TrimSpace(c))
			if c != "" && c != "identity" {
				codings = append(codings, c)
			}
		}
	}
	if len(codings) > maxEncodingLayers {
		return nil, &contentEncodingError{enc: strings.Join(codings, ", ")}
	}
	r := body
	for i := len(codings) - 1; i >= 0; i-- {
		switch codings[i] {
		case "gzip", "x-gzip":
			zr, err := gzip.NewReader(r)
			if err != nil {
				return nil, fmt.Errorf("gzip: %w", err)
			}
			r = zr
		case "deflate":
			r = deflateReader(r)
		default:
			return nil, &contentEncodingError{enc: codings[i]}
		}
	}
	return r, nil
}

// deflateReader decodes "deflate", which RFC 9110 defines as zlib-wrapped
// but which some servers send as a raw DEFLATE stream; the zlib header
// check (CM=8, FCHECK) tells them apart.
func deflateReader(r io.Reader) io.Reader {
	br := bufio.NewReader(r)
	hdr, _ := br.Peek(2)
	if len(hdr) == 2 && hdr[0]&0x0f == 8 && (uint16(hdr[0])<<8|uint16(hdr[1]))%31 == 0 {
		return &lazyZlib{r: br}
	}
	return flate.NewReader(br)
}

// lazyZlib defers zlib.NewReader (which reads the header and can fail) to
// the first Read, so the error surfaces as a read error like every other
// decoding failure.
type lazyZlib struct {
	r  io.Reader
	zr io.ReadCloser
}

func (l *lazyZlib) Read(p []byte) (int, error) {
	if l.zr == nil {
		zr, err := zlib.NewReader(l.r)
		if err != nil {
			return 0, fmt.Errorf("deflate: %w", err)
		}
		l.zr = zr
	}
	return l.zr.Read(p)
}

// mediaType returns the lowercased media type of a Content-Type value, or
// "" when there is none. A malformed parameter does not hide the type.
func mediaType(ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if mt == "" && err != nil {
		mt, _, _ = strings.Cut(ct, ";")
	}
	return strings.ToLower(strings.TrimSpace(mt))
}

// classOf maps a media type to a Class.
func classOf(mt string) Class {
	switch mt {
	case "text/html", "application/xhtml+xml":
		return HTML
	case "application/json", "application/xml", "application/javascript",
		"application/ecmascript", "application/x-javascript", "application/rss+xml",
		"application/atom+xml", "application/x-ndjson", "application/yaml",
		"application/x-yaml", "application/toml", "application/csv":
		return Text
	}
	if strings.HasPrefix(mt, "text/") || strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+xml") {
		return Text
	}
	return Binary
}

// toUTF8 converts an HTML or text body to valid UTF-8. HTML is read as a
// browser reads it (htmlEncoding). Other text skips the <meta> search, which
// means nothing outside HTML, and defaults to UTF-8 when the bytes are valid
// UTF-8. Invalid sequences become U+FFFD, and a leading BOM is dropped, so
// the text hashes the same however it was served.
func toUTF8(body []byte, contentType string, class Class) []byte {
	var enc encoding.Encoding
	if class == HTML {
		var name string
		enc, name = htmlEncoding(body, contentType)
		if name == "utf-8" && utf8.Valid(body) {
			// Decoding valid UTF-8 as UTF-8 changes nothing; skipping the
			// decoder saves a copy of every page.
			enc = encoding.Nop
		}
	} else {
		enc = textEncoding(body, contentType)
	}
	out := body
	if enc != nil && enc != encoding.Nop {
		if b, err := enc.NewDecoder().Bytes(body); err == nil {
			out = b
		}
	}
	out = bytes.TrimPrefix(out, []byte("\uFEFF"))
	if !utf8.Valid(out) {
		out = bytes.ToValidUTF8(out, []byte("\uFFFD"))
	}
	return out
}

// textEncoding picks the encoding of a non-HTML text body: BOM, then the
// Content-Type charset, then UTF-8 if valid, else windows-1252 (the WHATWG
// reading of ISO-8859-1).
func textEncoding(body []byte, contentType string) encoding.Encoding {
	switch {
	case bytes.HasPrefix(body, []byte{0xEF, 0xBB, 0xBF}):
		return encoding.Nop
	case bytes.HasPrefix(body, []byte{0xFE, 0xFF}), bytes.HasPrefix(body, []byte{0xFF, 0xFE}):
		e, _, _ := charset.DetermineEncoding(body, "")
		return e
	}
	if _, params, err := mime.ParseMediaType(contentType); err == nil {
		if e, _ := charset.Lookup(params["charset"]); e != nil {
			return e
		}
	}
	if utf8.Valid(body) {
		return encoding.Nop
	}
	e, _ := charset.Lookup("windows-1252")
	return e
}
