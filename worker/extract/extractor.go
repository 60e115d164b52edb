package extract

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"

	"github.com/freshcrawl/freshcrawl/worker/fetch"
)

// Extractor extracts and hashes pages with buffers it recycles: the
// rendered text and the normalised text of a page are most of what
// extraction allocates, and most fetches find the page unchanged, so
// their text is only hashed and never needs a string of its own. One
// Extractor serves any number of goroutines.
type Extractor struct {
	bufs sync.Pool // *[]byte: render and normalisation buffers
}

// NewExtractor returns an Extractor with an empty buffer pool.
func NewExtractor() *Extractor {
	return &Extractor{bufs: sync.Pool{New: func() any { return new([]byte) }}}
}

// maxPooledBuf keeps a rare huge page from pinning its buffer in the pool.
const maxPooledBuf = 1 << 20

func (e *Extractor) get() *[]byte { return e.bufs.Get().(*[]byte) }

func (e *Extractor) put(bp *[]byte) {
	if bp == nil || cap(*bp) > maxPooledBuf {
		return
	}
	*bp = (*bp)[:0]
	e.bufs.Put(bp)
}

// Page is an extracted page: its text's hash, and the text, which may live
// in a buffer of the Extractor's until Release.
type Page struct {
	// Hash is the hex SHA-256 of the text (of the body, for Binary): the
	// version identity the coordinator compares.
	Hash string
	str  string // the text, when it was made as a string
	buf  *[]byte
	n    int // the text's length in *buf
	e    *Extractor
}

// Text returns the page's text. For a page extracted into a pooled buffer
// it is a copy, so it stays valid after Release.
func (p *Page) Text() string {
	if p.buf != nil {
		return string((*p.buf)[:p.n])
	}
	return p.str
}

// Release hands the page's buffer back to its Extractor; Text must not be
// called after.
func (p *Page) Release() {
	if p.buf != nil {
		p.e.put(p.buf)
		p.buf = nil
	}
}

// Extract extracts body by r, as r.extractText does, and hashes the text. A
// page with no selector, ignore selector or ignore pattern is rendered off
// the token stream and normalised in recycled buffers, and hashed there.
func (e *Extractor) Extract(r *Rules, body []byte, class fetch.Class) (page Page, err error) {
	if class == fetch.Binary {
		return Page{Hash: hashBytes(body)}, nil
	}
	if class == fetch.HTML && r.streams() && r.blankRE == nil {
		if p, ok := e.stream(body); ok {
			return p, nil
		}
	}
	text, err := r.extractText(body, class)
	if err != nil {
		return Page{}, err
	}
	return Page{Hash: hashText(text), str: text}, nil
}

// stream renders body off the token stream into one pooled buffer,
// normalises it into another and hashes the result. ok is false when the
// document needs the tree (see streamText).
func (e *Extractor) stream(body []byte) (page Page, ok bool) {
	defer func() {
		// The same last-resort guard as Rules.extractText: the caller then
		// takes the tree path, which has its own.
		if p := recover(); p != nil {
			page, ok = Page{}, false
		}
	}()
	render := e.get()
	defer e.put(render)
	raw, ok := streamText(body, (*render)[:0])
	*render = raw[:0]
	if !ok {
		return Page{}, false
	}
	out := e.get()
	text := appendNormalized((*out)[:0], raw)
	*out = text
	sum := sha256.Sum256(text)
	return Page{Hash: hex.EncodeToString(sum[:]), buf: out, n: len(text), e: e}, true
}
