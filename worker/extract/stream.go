package extract

import (
	"bytes"
	"io"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// streamText renders the visible text of an HTML document straight off the
// token stream, without building a tree: most of the cost of html.Parse is
// the nodes it allocates, and without a selector or ignore selectors no one
// needs them.
//
// It follows the HTML tree construction rules only as far as they decide
// what appendText would emit on html.Parse's tree — which elements are
// open (for dropped and hidden subtrees, <pre>, block and cell boundaries),
// implied end tags, implied head and body, table sections and cells, and
// where inline SVG and MathML end. Where the parser would move or re-create
// nodes in ways a stream cannot follow (foster parenting of misplaced table
// content, the adoption agency for misnested formatting, HTML elements
// inside SVG or MathML, select, template, frameset, quirks-dependent table
// placement, hidden attributes on elements the parser may clone or merge)
// it gives up and returns ok=false,
// and the caller parses the document. Once normalised its output equals
// the tree walk's; FuzzStreamMatchesDOM holds it to that.
func streamText(body []byte, out []byte) (_ []byte, ok bool) {
	s := streamer{z: html.NewTokenizer(bytes.NewReader(body)), out: out}
	if !s.run() {
		return out[:0], false
	}
	return s.out, true
}

// maxStreamDepth bounds the open elements the streamer follows. html.Parse
// fails beyond 512 (counting the html, head and body elements and implied
// table sections the streamer does not always hold), and a document that
// deep is better left to the caller's own fallback.
const maxStreamDepth = 400

type openElem struct {
	a    atom.Atom
	name string // set only when a is 0 (custom elements), to match end tags
	id   uint32
	drop bool // dropped(n): the element and everything in it render nothing
}

type streamer struct {
	z     *html.Tokenizer
	out   []byte
	oe    []openElem // the stack of open elements, html and body at the bottom
	drops int        // dropped elements in oe: text renders only when 0
	pres  int        // whitespace-preserving elements in oe
	ids   uint32
	name  [24]byte // the current tag's lower-cased name
	// selfClosing is set when the current start tag ends in "/>", which
	// only foreign (SVG, MathML) elements honour.
	selfClosing bool
	// form is the id of the element the parser's form element pointer
	// holds (0: none). It outlives the element on the stack, as in the
	// parser, because it decides whether a later <form> is ignored.
	form uint32
}

// tok is the current start or end tag.
type tok struct {
	end        bool
	a          atom.Atom
	name       []byte
	hidden     bool // a hidden attribute
	typeHidden bool // type="hidden", for <input> in tables
}

type insertionMode int

const (
	modeBody insertionMode = iota
	modeTable
	modeTableBody
	modeRow
	modeCell
)

func (s *streamer) run() bool {
	if !s.beforeBody() {
		return false
	}
	return s.inBody()
}

// next returns the next token's type, with self-closing tags read as start
// tags as the parser does for HTML (non-foreign) elements.
func (s *streamer) next() html.TokenType {
	tt := s.z.Next()
	s.selfClosing = tt == html.SelfClosingTagToken
	if s.selfClosing {
		return html.StartTagToken
	}
	return tt
}

// readTag reads the current tag. It takes the name from the raw bytes
// rather than TagName, and reads the attributes (TagAttr) only when the tag
// may carry one that matters: both allocate on every call, and a page has
// thousands of tags.
func (s *streamer) readTag(end bool) tok {
	raw := s.z.Raw()
	start := 1
	if end {
		start = 2
	}
	stop := min(start, len(raw))
	for stop < len(raw) && !endsTagName(raw[stop]) {
		stop++
	}
	name := raw[min(start, stop):stop]
	if len(name) == 0 || len(name) > len(s.name) || (stop < len(raw) && raw[stop] == 0) || raw[0] != '<' {
		// Unusual: let the tokenizer say (it turns NUL into U+FFFD).
		n, _ := s.z.TagName()
		name = n
	} else {
		for i, c := range name {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			s.name[i] = c
		}
		name = s.name[:len(name)]
	}
	t := tok{end: end, a: atom.Lookup(name), name: name}
	if end || (t.a != atom.Input && !containsFold(raw[stop:], "hidden")) {
		return t
	}
	for more := true; more; {
		var key, val []byte
		key, val, more = s.z.TagAttr()
		switch string(key) {
		case "hidden":
			t.hidden = true
		case "type":
			t.typeHidden = t.typeHidden || strings.EqualFold(string(val), "hidden")
		}
	}
	return t
}

// endsTagName reports the bytes the tokenizer ends a tag name at, and NUL,
// which it replaces.
func endsTagName(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\f', '/', '>', 0:
		return true
	}
	return false
}

// containsFold reports whether b contains the lower-case ASCII word w in
// any case.
func containsFold(b []byte, w string) bool {
	for i := 0; i+len(w) <= len(b); i++ {
		j := 0
		for j < len(w) && b[i+j]|0x20 == w[j] {
			j++
		}
		if j == len(w) {
			return true
		}
	}
	return false
}

// beforeBody consumes the tokens the parser handles in its initial, before
// html, before head, in head and after head modes, whose content is never
// rendered. It returns with the body element open, having processed the
// token that implied it.
func (s *streamer) beforeBody() bool {
	s.oe = append(s.oe, openElem{a: atom.Html})
	afterHead := false
	for {
		tt := s.next()
		switch tt {
		case html.ErrorToken:
			return s.z.Err() == io.EOF
		case html.TextToken:
			d := s.z.Text()
			if len(bytes.TrimLeft(d, whitespace)) == 0 {
				continue // goes to the head or the html element: renders nothing
			}
			s.openBody()
			return s.text(d)
		case html.StartTagToken:
			t := s.readTag(false)
			switch t.a {
			case atom.Html:
				if t.hidden {
					return false
				}
				continue
			case atom.Head:
				continue
			case atom.Body:
				if t.hidden {
					return false
				}
				s.openBody()
				return true
			case atom.Base, atom.Basefont, atom.Bgsound, atom.Link, atom.Meta:
				continue // void, in the head
			case atom.Title, atom.Script, atom.Style, atom.Noframes:
				s.skipRaw()
				continue
			case atom.Noscript:
				if !afterHead {
					s.skipRaw()
					continue
				}
			case atom.Template, atom.Frameset:
				return false
			}
			s.openBody()
			return s.startTag(t)
		case html.EndTagToken:
			t := s.readTag(true)
			switch t.a {
			case atom.Head:
				afterHead = true
			case atom.Br:
				s.openBody()
				return s.startTag(tok{a: atom.Br})
			case atom.Body, atom.Html:
				s.openBody() // implied, and the end tag is then ignored
				return true
			}
			// Other end tags are ignored before the body.
		}
	}
}

// skipRaw consumes a raw text element's content and end tag.
func (s *streamer) skipRaw() {
	for s.z.Next() == html.TextToken {
	}
}

func (s *streamer) openBody() { s.oe = append(s.oe, openElem{a: atom.Body}) }

func (s *streamer) inBody() bool {
	for {
		if len(s.oe) > maxStreamDepth {
			return false
		}
		var ok bool
		switch s.next() {
		case html.ErrorToken:
			return s.z.Err() == io.EOF
		case html.TextToken:
			ok = s.text(s.z.Text())
		case html.StartTagToken:
			ok = s.startTag(s.readTag(false))
		case html.EndTagToken:
			ok = s.endTag(s.readTag(true))
		default:
			continue // comments and doctypes render nothing
		}
		if !ok {
			return false
		}
	}
}

// mode is the parser's insertion mode, which in the documents the
// streamer follows is what resetting it from the open elements gives.
func (s *streamer) mode() insertionMode {
	for i := len(s.oe) - 1; i >= 0; i-- {
		switch s.oe[i].a {
		case atom.Td, atom.Th:
			return modeCell
		case atom.Tr:
			return modeRow
		case atom.Tbody, atom.Thead, atom.Tfoot:
			return modeTableBody
		case atom.Table:
			return modeTable
		case atom.Body, atom.Html:
			return modeBody
		}
	}
	return modeBody
}

const whitespace = " \t\r\n\f"

func (s *streamer) text(d []byte) bool {
	switch s.top().a {
	case atom.Table, atom.Tbody, atom.Thead, atom.Tfoot, atom.Tr:
		// Text directly in a table is foster-parented before it unless it
		// is only whitespace.
		d = dropNUL(d)
		if len(bytes.Trim(d, whitespace)) != 0 {
			return false
		}
		s.emitText(d)
		return true
	}
	s.emitText(dropNUL(d))
	return true
}

func dropNUL(d []byte) []byte {
	if bytes.IndexByte(d, 0) < 0 {
		return d
	}
	return bytes.ReplaceAll(d, []byte{0}, nil)
}

func (s *streamer) emitText(d []byte) {
	if s.drops > 0 {
		return
	}
	if s.pres > 0 {
		s.out = append(s.out, d...)
		return
	}
	s.out = appendCollapsed(s.out, d)
}

func (s *streamer) top() *openElem { return &s.oe[len(s.oe)-1] }

// push opens an element and emits what appendText emits on entering it.
func (s *streamer) push(t tok) {
	e := openElem{a: t.a, drop: t.hidden || droppedAtom(t.a)}
	if t.a == 0 {
		e.name = string(t.name)
	}
	s.ids++
	e.id = s.ids
	if s.drops == 0 && !e.drop {
		s.out = appendBoundary(s.out, t.a)
	}
	if e.drop {
		s.drops++
	}
	if preservesAtom(t.a) {
		s.pres++
	}
	s.oe = append(s.oe, e)
}

// pop closes the top element and emits what appendText emits on leaving
// it.
func (s *streamer) pop() {
	e := s.oe[len(s.oe)-1]
	s.oe = s.oe[:len(s.oe)-1]
	if preservesAtom(e.a) {
		s.pres--
	}
	if e.drop {
		s.drops--
		return
	}
	if s.drops == 0 {
		s.out = appendBoundary(s.out, e.a)
	}
}

// popTo closes the elements above and including index i. A formatting
// element closed this way stays in the parser's list of active formatting
// elements and is re-created later, which the streamer does not follow,
// unless closing a cell clears that list (cell).
func (s *streamer) popTo(i int, cell bool) bool {
	for j := len(s.oe) - 1; j >= i; j-- {
		if !cell && formattingAtom(s.oe[j].a) && j > i {
			return false
		}
	}
	for len(s.oe) > i {
		s.pop()
	}
	return true
}

// void emits what appendText emits for an element with no content.
func (s *streamer) void(t tok) {
	if s.drops > 0 || t.hidden || droppedAtom(t.a) {
		return
	}
	s.out = appendBoundary(s.out, t.a)
	if t.a != atom.Br {
		s.out = appendBoundary(s.out, t.a)
	}
}

func appendBoundary(buf []byte, a atom.Atom) []byte {
	switch {
	case a == atom.Br || blockAtoms[a]:
		return append(buf, '\n')
	case a == atom.Td || a == atom.Th:
		return append(buf, ' ')
	}
	return buf
}

type scope int

const (
	defaultScope scope = iota
	buttonScope
	listItemScope
	tableScope
)

// inScope returns the index of the topmost open element matching one of
// as that is in scope s, or -1.
func (s *streamer) inScope(sc scope, as ...atom.Atom) int {
	for i := len(s.oe) - 1; i >= 0; i-- {
		a := s.oe[i].a
		for _, m := range as {
			if a == m {
				return i
			}
		}
		switch sc {
		case tableScope:
			if a == atom.Html || a == atom.Table || a == atom.Template {
				return -1
			}
			continue
		case buttonScope:
			if a == atom.Button {
				return -1
			}
		case listItemScope:
			if a == atom.Ol || a == atom.Ul {
				return -1
			}
		}
		switch a {
		case atom.Applet, atom.Caption, atom.Html, atom.Table, atom.Td, atom.Th, atom.Marquee, atom.Object, atom.Template:
			return -1
		}
	}
	return -1
}

func (s *streamer) contains(a atom.Atom) bool {
	for i := range s.oe {
		if s.oe[i].a == a {
			return true
		}
	}
	return false
}

// closeP closes a <p> in button scope, as block-level start tags do.
func (s *streamer) closeP() bool {
	if i := s.inScope(buttonScope, atom.P); i >= 0 {
		return s.popTo(i, false)
	}
	return true
}

func (s *streamer) startTag(t tok) bool {
	switch s.mode() {
	case modeTable, modeTableBody, modeRow:
		return s.tableStart(t)
	case modeCell:
		switch t.a {
		case atom.Caption, atom.Col, atom.Colgroup, atom.Tbody, atom.Td, atom.Tfoot, atom.Th, atom.Thead, atom.Tr:
			if !s.closeCell() {
				return false
			}
			return s.startTag(t)
		case atom.Select:
			return false
		}
	}
	return s.bodyStart(t)
}

func (s *streamer) closeCell() bool {
	i := s.inScope(tableScope, atom.Td, atom.Th)
	if i < 0 {
		return false
	}
	return s.popTo(i, true)
}

// tableStart handles a start tag whose current node is a table, a table
// section or a row.
func (s *streamer) tableStart(t tok) bool {
	top := s.top().a
	switch t.a {
	case atom.Tbody, atom.Thead, atom.Tfoot:
		if top != atom.Table {
			// A new section closes the current one (and its row).
			if i := s.inScope(tableScope, atom.Tbody, atom.Thead, atom.Tfoot); i >= 0 {
				if !s.popTo(i, false) {
					return false
				}
				return s.tableStart(t)
			}
			return false
		}
		s.push(t)
		return true
	case atom.Tr:
		switch top {
		case atom.Table:
			s.push(tok{a: atom.Tbody})
		case atom.Tr:
			s.pop()
		}
		s.push(t)
		return true
	case atom.Td, atom.Th:
		switch top {
		case atom.Table:
			s.push(tok{a: atom.Tbody})
			s.push(tok{a: atom.Tr})
		case atom.Tbody, atom.Thead, atom.Tfoot:
			s.push(tok{a: atom.Tr})
		}
		s.push(t)
		return true
	case atom.Script, atom.Style:
		return s.raw(t)
	case atom.Input:
		return t.typeHidden // otherwise foster-parented
	}
	// caption, colgroup, col, a nested table, and anything foster-parented.
	return false
}

func (s *streamer) bodyStart(t tok) bool {
	switch t.a {
	case atom.Html, atom.Body:
		return !t.hidden // a hidden attribute would be merged into the element
	case atom.Base, atom.Basefont, atom.Bgsound, atom.Link, atom.Meta,
		atom.Param, atom.Source, atom.Track, atom.Area, atom.Embed, atom.Img, atom.Image,
		atom.Input, atom.Keygen, atom.Wbr, atom.Br:
		s.void(t)
		return true
	case atom.Hr:
		if !s.closeP() {
			return false
		}
		s.void(t)
		return true
	case atom.Script, atom.Style, atom.Title, atom.Noframes, atom.Iframe, atom.Noembed, atom.Noscript, atom.Textarea:
		return s.raw(t)
	case atom.Xmp:
		if !s.closeP() {
			return false
		}
		return s.raw(t)
	case atom.Address, atom.Article, atom.Aside, atom.Blockquote, atom.Center, atom.Details, atom.Dialog, atom.Dir,
		atom.Div, atom.Dl, atom.Fieldset, atom.Figcaption, atom.Figure, atom.Footer, atom.Header, atom.Hgroup,
		atom.Main, atom.Menu, atom.Nav, atom.Ol, atom.P, atom.Search, atom.Section, atom.Summary, atom.Ul,
		atom.Pre, atom.Listing:
		if !s.closeP() {
			return false
		}
		s.push(t)
		return true
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		if !s.closeP() {
			return false
		}
		switch s.top().a {
		case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
			s.pop()
		}
		s.push(t)
		return true
	case atom.Form:
		if s.form != 0 {
			return true // the parser ignores a form inside a form
		}
		if !s.closeP() {
			return false
		}
		s.push(t)
		s.form = s.top().id
		return true
	case atom.Li, atom.Dd, atom.Dt:
		for i := len(s.oe) - 1; i >= 0; i-- {
			a := s.oe[i].a
			if a == t.a || (t.a != atom.Li && (a == atom.Dd || a == atom.Dt)) {
				if !s.popTo(i, false) {
					return false
				}
				break
			}
			if a != atom.Address && a != atom.Div && a != atom.P && specialAtom(a) {
				break
			}
		}
		if !s.closeP() {
			return false
		}
		s.push(t)
		return true
	case atom.Button:
		if i := s.inScope(defaultScope, atom.Button); i >= 0 && !s.popTo(i, false) {
			return false
		}
		s.push(t)
		return true
	case atom.A, atom.Nobr:
		if s.contains(t.a) {
			return false // the adoption agency closes the open one
		}
		if t.hidden {
			return false
		}
		s.push(t)
		return true
	case atom.B, atom.Big, atom.Code, atom.Em, atom.Font, atom.I, atom.S, atom.Small, atom.Strike, atom.Strong, atom.Tt, atom.U:
		if t.hidden {
			return false // the parser may re-create it elsewhere, hidden too
		}
		s.push(t)
		return true
	case atom.Table:
		if s.inScope(buttonScope, atom.P) >= 0 {
			return false // whether it closes the <p> depends on quirks mode
		}
		s.push(t)
		return true
	case atom.Optgroup, atom.Option:
		if s.top().a == atom.Option {
			s.pop()
		}
		s.push(t)
		return true
	case atom.Caption, atom.Col, atom.Colgroup, atom.Frame, atom.Head, atom.Tbody, atom.Td, atom.Tfoot, atom.Th, atom.Thead, atom.Tr:
		return true // ignored in body
	case atom.Svg, atom.Math:
		return s.foreign(t)
	case atom.Plaintext, atom.Select, atom.Template, atom.Frameset,
		atom.Applet, atom.Marquee, atom.Object, atom.Rb, atom.Rtc, atom.Rp, atom.Rt:
		return false
	}
	s.push(t)
	return true
}

// foreign consumes an <svg> or <math> element, which renders nothing, up
// to where the parser ends it: in foreign content every start tag opens an
// element unless it ends in "/>", an end tag closes the nearest open
// element of its name, no element's content is raw text and CDATA
// sections are text. Text in an integration point (<title>, <desc>,
// <foreignObject>, MathML text elements) goes through the HTML rules, which
// here only add it where it is not rendered either. It gives up where HTML
// elements start inside: a tag that breaks out of foreign content, a start
// tag in an integration point, or an end tag that matches no open foreign
// element.
func (s *streamer) foreign(t tok) bool {
	if s.selfClosing {
		return true
	}
	type foreignElem struct {
		name        string
		integration bool
	}
	open := []foreignElem{{name: string(t.name)}}
	defer s.z.AllowCDATA(false)
	for len(open) > 0 {
		if len(s.oe)+len(open) > maxStreamDepth {
			return false
		}
		s.z.AllowCDATA(true)
		switch tt := s.z.Next(); tt {
		case html.ErrorToken:
			return s.z.Err() == io.EOF
		case html.StartTagToken, html.SelfClosingTagToken:
			name, _ := s.z.TagName()
			if open[len(open)-1].integration || breaksOut(string(name)) {
				return false
			}
			s.z.NextIsNotRawText()
			if tt == html.StartTagToken {
				open = append(open, foreignElem{name: string(name), integration: integrationPoint(string(name))})
			}
		case html.EndTagToken:
			name, _ := s.z.TagName()
			i := len(open) - 1
			for i >= 0 && !strings.EqualFold(open[i].name, string(name)) {
				i--
			}
			if i < 0 {
				return false // handled by the HTML rules
			}
			open = open[:i]
		}
	}
	return true
}

// breaksOut reports tags that end foreign content (font does only with
// some attributes; any font gives up), and annotation-xml, which may hold
// HTML.
func breaksOut(name string) bool {
	switch name {
	case "b", "big", "blockquote", "body", "br", "center", "code", "dd", "div", "dl", "dt", "em", "embed",
		"h1", "h2", "h3", "h4", "h5", "h6", "head", "hr", "i", "img", "li", "listing", "menu", "meta", "nobr",
		"ol", "p", "pre", "ruby", "s", "small", "span", "strong", "strike", "sub", "sup", "table", "tt", "u",
		"ul", "var", "font", "annotation-xml":
		return true
	}
	return false
}

// integrationPoint reports foreign elements whose content follows the HTML
// rules (SVG's and MathML's, taken together: treating a MathML <title> as
// one only makes the streamer give up more often).
func integrationPoint(name string) bool {
	switch name {
	case "foreignobject", "desc", "title", "mi", "mo", "mn", "ms", "mtext":
		return true
	}
	return false
}

// raw handles an element whose content the tokenizer reads as raw text or
// RCDATA up to its end tag.
func (s *streamer) raw(t tok) bool {
	s.push(t)
	first := true
	for {
		switch s.z.Next() {
		case html.TextToken:
			d := s.z.Text()
			if first && t.a == atom.Textarea && len(d) > 0 && d[0] == '\n' {
				d = d[1:] // the parser drops a newline just after <textarea>
			}
			first = false
			s.emitText(d) // raw text keeps NUL as U+FFFD
		case html.ErrorToken:
			return s.z.Err() == io.EOF
		default:
			// The tokenizer leaves raw text only at the matching end tag.
			s.pop()
			return true
		}
	}
}

func (s *streamer) endTag(t tok) bool {
	switch s.mode() {
	case modeTable, modeTableBody, modeRow:
		return s.tableEnd(t)
	case modeCell:
		switch t.a {
		case atom.Td, atom.Th:
			if i := s.inScope(tableScope, t.a); i >= 0 {
				return s.popTo(i, true)
			}
			return true
		case atom.Body, atom.Caption, atom.Col, atom.Colgroup, atom.Html:
			return true
		case atom.Table, atom.Tbody, atom.Tfoot, atom.Thead, atom.Tr:
			if s.inScope(tableScope, t.a) < 0 {
				return true
			}
			if !s.closeCell() {
				return false
			}
			return s.endTag(t)
		}
	}
	return s.bodyEnd(t)
}

func (s *streamer) tableEnd(t tok) bool {
	top := s.top().a
	switch t.a {
	case atom.Table:
		i := s.inScope(tableScope, atom.Table)
		if i < 0 {
			return true
		}
		return s.popTo(i, false)
	case atom.Tbody, atom.Thead, atom.Tfoot:
		i := s.inScope(tableScope, t.a)
		if i < 0 || top == atom.Table {
			return true
		}
		return s.popTo(i, false)
	case atom.Tr:
		if top == atom.Tr {
			s.pop()
		}
		return true
	case atom.Body, atom.Caption, atom.Col, atom.Colgroup, atom.Html, atom.Td, atom.Th:
		return true
	}
	return false // processed as in body with foster parenting
}

func (s *streamer) bodyEnd(t tok) bool {
	switch t.a {
	case atom.Body, atom.Html, atom.Template, atom.Applet, atom.Marquee, atom.Object:
		return true // no element is closed (the last three are never open here)
	case atom.Address, atom.Article, atom.Aside, atom.Blockquote, atom.Button, atom.Center, atom.Details,
		atom.Dialog, atom.Dir, atom.Div, atom.Dl, atom.Fieldset, atom.Figcaption, atom.Figure, atom.Footer,
		atom.Header, atom.Hgroup, atom.Listing, atom.Main, atom.Menu, atom.Nav, atom.Ol, atom.Pre, atom.Search,
		atom.Section, atom.Summary, atom.Ul, atom.Dd, atom.Dt:
		return s.popScoped(defaultScope, t.a)
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		return s.popScoped(defaultScope, atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6)
	case atom.Li:
		return s.popScoped(listItemScope, atom.Li)
	case atom.P:
		if s.inScope(buttonScope, atom.P) < 0 {
			// An implied empty <p>.
			s.push(tok{a: atom.P})
			s.pop()
			return true
		}
		return s.popScoped(buttonScope, atom.P)
	case atom.Br:
		s.void(tok{a: atom.Br})
		return true
	case atom.Form:
		node := s.form
		s.form = 0
		i := s.inScope(defaultScope, atom.Form)
		if node == 0 || i < 0 || s.oe[i].id != node {
			return true
		}
		for len(s.oe)-1 > i && impliedEnd(s.top().a) {
			s.pop()
		}
		if len(s.oe)-1 != i {
			return false // the form is taken out from under open elements
		}
		s.pop()
		return true
	case atom.A, atom.B, atom.Big, atom.Code, atom.Em, atom.Font, atom.I, atom.Nobr, atom.S, atom.Small,
		atom.Strike, atom.Strong, atom.Tt, atom.U:
		if s.top().a == t.a {
			s.pop()
			return true
		}
		// Open elsewhere: the adoption agency. Not open: ignored.
		return !s.contains(t.a)
	}
	// Any other end tag closes the nearest element of its name unless a
	// special element is open above it.
	for i := len(s.oe) - 1; i >= 0; i-- {
		e := &s.oe[i]
		if e.a == t.a && (t.a != 0 || e.name == string(t.name)) {
			return s.popTo(i, false)
		}
		if specialAtom(e.a) {
			return true
		}
	}
	return true
}

func (s *streamer) popScoped(sc scope, as ...atom.Atom) bool {
	if i := s.inScope(sc, as...); i >= 0 {
		return s.popTo(i, false)
	}
	return true
}

// impliedEnd reports elements whose end tag the parser implies.
func impliedEnd(a atom.Atom) bool {
	switch a {
	case atom.Dd, atom.Dt, atom.Li, atom.Optgroup, atom.Option, atom.P, atom.Rb, atom.Rp, atom.Rt, atom.Rtc:
		return true
	}
	return false
}

// droppedAtom is dropped without the hidden attribute.
func droppedAtom(a atom.Atom) bool {
	switch a {
	case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Head,
		atom.Iframe, atom.Object, atom.Embed, atom.Canvas, atom.Svg, atom.Math:
		return true
	}
	return false
}

func preservesAtom(a atom.Atom) bool {
	return a == atom.Pre || a == atom.Textarea || a == atom.Listing || a == atom.Xmp
}

func formattingAtom(a atom.Atom) bool {
	switch a {
	case atom.A, atom.B, atom.Big, atom.Code, atom.Em, atom.Font, atom.I, atom.Nobr, atom.S, atom.Small,
		atom.Strike, atom.Strong, atom.Tt, atom.U:
		return true
	}
	return false
}

// specialAtom reports the HTML elements the parsing algorithm calls
// special.
func specialAtom(a atom.Atom) bool {
	switch a {
	case atom.Address, atom.Applet, atom.Area, atom.Article, atom.Aside, atom.Base, atom.Basefont,
		atom.Bgsound, atom.Blockquote, atom.Body, atom.Br, atom.Button, atom.Caption, atom.Center,
		atom.Col, atom.Colgroup, atom.Dd, atom.Details, atom.Dir, atom.Div, atom.Dl, atom.Dt, atom.Embed,
		atom.Fieldset, atom.Figcaption, atom.Figure, atom.Footer, atom.Form, atom.Frame, atom.Frameset,
		atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6, atom.Head, atom.Header, atom.Hgroup,
		atom.Hr, atom.Html, atom.Iframe, atom.Img, atom.Input, atom.Keygen, atom.Li, atom.Link,
		atom.Listing, atom.Main, atom.Marquee, atom.Menu, atom.Meta, atom.Nav, atom.Noembed,
		atom.Noframes, atom.Noscript, atom.Object, atom.Ol, atom.P, atom.Param, atom.Plaintext,
		atom.Pre, atom.Script, atom.Section, atom.Select, atom.Source, atom.Style, atom.Summary,
		atom.Table, atom.Tbody, atom.Td, atom.Template, atom.Textarea, atom.Tfoot, atom.Th,
		atom.Thead, atom.Title, atom.Tr, atom.Track, atom.Ul, atom.Wbr, atom.Xmp:
		return true
	}
	return false
}
