package sim

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
)

// vocabulary feeds the generated paragraphs. Real words keep extraction and
// diffing code in the crawler honest (tokenisers, shingles) without any data.
// Each Sim splits it once (see New).
const vocabulary = `
alpha archive budget cache capture change coordinator crawler daily decay
delta digest document estimate feed fetch frequency fresh global harvest
header history host index interval item keyword latency listing market
mirror notice optimal page period phase policy price probe queue rate
record recall refresh release report revision robots sample schedule
search server source stale stream summary sync table ticket update version
weekly worker yearly zone`

// staticHead is the chrome shared by every page and version: a script and a
// style that never change, so a crawler that diffs the raw HTML rather than
// the extracted text sees changes only where the content changed.
const staticHead = `<meta charset="utf-8">
<style>
body { font-family: sans-serif; max-width: 48em; margin: 2em auto; }
nav a { margin-right: 1em; }
footer { color: #666; font-size: small; }
</style>
<script>
// Static analytics stub: identical on every page and version.
window.simAnalytics = { track: function (e) { return e; } };
</script>`

// etagFor returns a quoted strong ETag for (page, version). The hash of the
// seed keeps two runs with different seeds from validating each other's
// copies.
func etagFor(seed uint64, page, version int) string {
	return fmt.Sprintf(`"%08x-p%d-v%d"`, uint32(splitmix(seed^uint64(page)<<20^uint64(version))), page, version)
}

// render returns the HTML of page at version. The text depends only on
// (seed, page, version); the navigation depends only on the page.
func render(seed uint64, vocab []string, page, version, hosts, pages int) []byte {
	r := rand.New(rand.NewPCG(splitmix(seed^0x5eed), splitmix(uint64(page)<<32|uint64(uint32(version)))))
	words := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = vocab[r.IntN(len(vocab))]
		}
		return strings.Join(w, " ")
	}
	var b bytes.Buffer
	b.Grow(2048)
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<title>Item %d: %s</title>\n%s\n</head>\n<body>\n", page, words(3), staticHead)
	b.WriteString("<nav><a href=\"/\">Home</a>")
	// Links to the neighbouring pages on the same host and one to a path
	// robots.txt disallows, to catch crawlers that follow links impolitely.
	for _, q := range []int{page - hosts, page + hosts} {
		if q >= 0 && q < pages {
			fmt.Fprintf(&b, "<a href=\"/p/%d\">Item %d</a>", q, q)
		}
	}
	b.WriteString("<a href=\"/private/account\">Account</a></nav>\n<main>\n")
	fmt.Fprintf(&b, "<h1>Item %d</h1>\n", page)
	for range 3 + r.IntN(3) {
		fmt.Fprintf(&b, "<p>%s.</p>\n", words(25+r.IntN(35)))
	}
	b.WriteString("</main>\n<footer>freshcrawl simulated site &middot; content is synthetic</footer>\n</body>\n</html>\n")
	return b.Bytes()
}

// BodySize is the length in bytes of the body the site serves for page i
// at the given version (a 200 to a GET): what a crawler downloads when its
// copy is out of date.
func (s *Sim) BodySize(i, version int) int {
	return len(render(s.cfg.Seed, s.vocab, s.pages[i].bodyOf, version, s.cfg.Hosts, len(s.pages)))
}

// renderIndex lists the pages of one host, so a crawler can also start from
// the root.
func renderIndex(host, hosts, pages int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<title>Host %d</title>\n%s\n</head>\n<body>\n<ul>\n", host, staticHead)
	for i := host; i < pages; i += hosts {
		fmt.Fprintf(&b, "<li><a href=\"/p/%d\">Item %d</a></li>\n", i, i)
	}
	b.WriteString("</ul>\n</body>\n</html>\n")
	return b.Bytes()
}

const privateBody = "<!DOCTYPE html>\n<html><head><title>Private</title></head><body><p>Disallowed by robots.txt.</p></body></html>\n"
