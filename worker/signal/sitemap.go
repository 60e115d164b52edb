package signal

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
)

// Sitemap is what one sitemap file lists.
type Sitemap struct {
	// Index is set for a <sitemapindex>: Children lists its sitemaps and
	// Entries is empty. A <urlset> lists its pages in Entries.
	Index    bool
	Entries  []Entry
	Children []Entry
	// Skipped counts the entries left out, by reason: no loc, not an
	// absolute http(s) url, url too long, other host (the protocol lets a
	// sitemap list only URLs of its own host), duplicate.
	Skipped map[string]int
	// Ignored counts the fields dropped from entries that were kept
	// because they did not parse: lastmod, changefreq, priority.
	Ignored map[string]int
	// Truncated says why the file was read only in part: the entry or
	// byte limit, or the XML breaking off; "" when it was read to its
	// end. The entries before the cut are kept.
	Truncated string
	// Bytes is how many uncompressed bytes were read.
	Bytes int64
}

// maxField bounds the text kept of one field: a URL is at most
// maxURLLength, a date or a number a few dozen bytes.
const maxField = 4 * maxURLLength

// gzipMagic starts every gzip stream (RFC 1952 §2.3.1).
var gzipMagic = []byte{0x1f, 0x8b}

// Sitemap reads a sitemap from r: a <urlset> or a <sitemapindex>, in the
// sitemaps.org namespace or none, plain or gzipped (told by the gzip
// magic bytes, so a .gz file served with or without Content-Encoding
// reads the same). sitemapURL is the sitemap's own URL: entries of other
// hosts are skipped. The file is read as a stream of tokens, so memory
// grows with the entries kept, never with a tree of the document. An
// error means nothing usable was read: not XML, not a sitemap, or gzip
// that does not open.
func (p *Parser) Sitemap(r io.Reader, sitemapURL string) (*Sitemap, error) {
	base, err := url.Parse(sitemapURL)
	if err != nil {
		return nil, fmt.Errorf("sitemap %q: %w", sitemapURL, err)
	}
	br := bufio.NewReader(r)
	var src io.Reader = br
	if magic, _ := br.Peek(2); bytes.Equal(magic, gzipMagic) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("sitemap %s: gzip: %w", sitemapURL, err)
		}
		defer zr.Close()
		src = zr
	}
	cr := &capReader{r: src, left: p.opts.MaxSitemapBytes}
	sm := &Sitemap{Skipped: map[string]int{}, Ignored: map[string]int{}}
	st := sitemapState{sm: sm, base: base, max: p.opts.MaxEntries, seen: map[string]bool{}}
	err = st.read(newDecoder(cr))
	sm.Bytes = cr.read
	switch {
	case cr.hit:
		// Whatever the decoder made of the cut, the limit is the cause.
		sm.Truncated = fmt.Sprintf("over %d bytes", p.opts.MaxSitemapBytes)
	case err != nil && st.root == "":
		return nil, fmt.Errorf("sitemap %s: %w", sitemapURL, err)
	case err != nil && !errors.Is(err, errStop):
		sm.Truncated = err.Error()
	}
	if st.root == "" && sm.Truncated == "" {
		return nil, fmt.Errorf("sitemap %s: empty document", sitemapURL)
	}
	return sm, nil
}

// newDecoder is a lenient XML decoder: real sitemaps carry unescaped
// ampersands in URLs, HTML entities and declared non-UTF-8 encodings.
func newDecoder(r io.Reader) *xml.Decoder {
	d := xml.NewDecoder(r)
	d.Strict = false
	d.Entity = xml.HTMLEntity
	d.CharsetReader = charset.NewReaderLabel
	return d
}

// errStop ends the token loop when the entry limit is reached.
var errStop = errors.New("stop")

// sitemapState is the token loop's state: the document's root, the entry
// being read and the field whose text is being collected.
type sitemapState struct {
	sm   *Sitemap
	base *url.URL
	max  int
	seen map[string]bool

	root      string // "urlset" or "sitemapindex" once the root is read
	space     string // the root's namespace: entries and fields must share it
	depth     int
	count     int // entry elements met, kept or not
	inEntry   bool
	field     string // the field element being read, at depth 3
	text      []byte
	long      bool // the field's text was longer than maxField
	cur       rawEntry
	curFields map[string]bool
}

// rawEntry holds an entry's fields as written, until its end tag.
type rawEntry struct {
	loc, lastmod, changefreq, priority string
	locLong                            bool
}

// read runs the token loop until the document ends (nil), the entry
// limit is reached (errStop) or the XML breaks off (its error).
func (st *sitemapState) read(d *xml.Decoder) error {
	for {
		tok, err := d.Token()
		if err == io.EOF {
			if st.depth > 0 {
				return io.ErrUnexpectedEOF
			}
			return nil
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if err := st.start(t); err != nil {
				return err
			}
		case xml.CharData:
			if st.field != "" && st.depth == 3 {
				st.appendText(t)
			}
		case xml.EndElement:
			st.end()
		}
	}
}

func (st *sitemapState) start(t xml.StartElement) error {
	st.depth++
	switch st.depth {
	case 1:
		switch t.Name.Local {
		case "urlset", "sitemapindex":
		default:
			return fmt.Errorf("not a sitemap: root element <%s>", t.Name.Local)
		}
		st.root, st.space = t.Name.Local, t.Name.Space
		st.sm.Index = st.root == "sitemapindex"
	case 2:
		want := "url"
		if st.sm.Index {
			want = "sitemap"
		}
		if t.Name.Local != want || t.Name.Space != st.space {
			return nil // an extension element: skipped with its content
		}
		st.count++
		if st.count > st.max {
			st.sm.Truncated = fmt.Sprintf("over %d entries", st.max)
			return errStop
		}
		st.inEntry, st.cur, st.curFields = true, rawEntry{}, nil
	case 3:
		// Only the protocol's own fields, in the entry's namespace: an
		// extension's <image:loc> is not the page's <loc>.
		if !st.inEntry || t.Name.Space != st.space {
			return nil
		}
		switch t.Name.Local {
		case "loc", "lastmod", "changefreq", "priority":
			st.field, st.text, st.long = t.Name.Local, st.text[:0], false
		}
	}
	return nil
}

func (st *sitemapState) appendText(b []byte) {
	if len(st.text)+len(b) > maxField {
		st.long = true
		return
	}
	st.text = append(st.text, b...)
}

func (st *sitemapState) end() {
	switch st.depth {
	case 3:
		if st.field != "" {
			st.setField()
			st.field = ""
		}
	case 2:
		if st.inEntry {
			st.finish()
			st.inEntry = false
		}
	}
	st.depth--
}

// setField records the field just read; the first of a repeated field
// counts.
func (st *sitemapState) setField() {
	if st.curFields[st.field] {
		return
	}
	if st.curFields == nil {
		st.curFields = map[string]bool{}
	}
	st.curFields[st.field] = true
	v := strings.TrimSpace(string(st.text))
	switch st.field {
	case "loc":
		st.cur.loc, st.cur.locLong = v, st.long
	case "lastmod":
		st.cur.lastmod = v
		if st.long {
			st.cur.lastmod = "\x00" // cannot parse: counted as ignored
		}
	case "changefreq":
		st.cur.changefreq = v
	case "priority":
		st.cur.priority = v
	}
}

// finish turns the entry just read into an Entry, or counts why not.
func (st *sitemapState) finish() {
	raw := &st.cur
	sm := st.sm
	switch {
	case raw.loc == "" && !raw.locLong:
		sm.Skipped[reasonNoLoc]++
		return
	case raw.locLong || utf8.RuneCountInString(raw.loc) >= maxURLLength:
		sm.Skipped[reasonLong]++
		return
	}
	u, err := url.Parse(raw.loc)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		sm.Skipped[reasonBadURL]++
		return
	}
	if !sameHost(u, st.base) {
		sm.Skipped[reasonOtherHost]++
		return
	}
	if st.seen[raw.loc] {
		sm.Skipped[reasonDuplicate]++
		return
	}
	st.seen[raw.loc] = true
	e := Entry{URL: raw.loc, Priority: -1}
	if raw.lastmod != "" {
		var ok bool
		if e.LastMod, e.LastModSpan, ok = parseLastMod(raw.lastmod); !ok {
			sm.Ignored[fieldLastMod]++
		}
	}
	if sm.Index {
		// An index's <sitemap> has a loc and a lastmod only.
		sm.Children = append(sm.Children, e)
		return
	}
	if raw.changefreq != "" {
		switch f := strings.ToLower(raw.changefreq); f {
		case "always", "hourly", "daily", "weekly", "monthly", "yearly", "never":
			e.ChangeFreq = f
		default:
			sm.Ignored[fieldChangeFreq]++
		}
	}
	if raw.priority != "" {
		if pr, err := strconv.ParseFloat(raw.priority, 64); err == nil && pr >= 0 && pr <= 1 {
			e.Priority = pr
		} else {
			sm.Ignored[fieldPriority]++
		}
	}
	sm.Entries = append(sm.Entries, e)
}

// sameHost reports whether u is on base's host: the same name, ignoring
// case, and the same port once a scheme's default port is left out. The
// scheme may differ: a site moved to https often still lists its http
// URLs, and both name the same pages.
func sameHost(u, base *url.URL) bool {
	return strings.EqualFold(u.Hostname(), base.Hostname()) && portOf(u) == portOf(base)
}

func portOf(u *url.URL) string {
	p := u.Port()
	if (u.Scheme == "http" && p == "80") || (u.Scheme == "https" && p == "443") {
		return ""
	}
	return p
}
