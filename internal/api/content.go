package api

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/sergi/go-diff/diffmatchpatch"

	"github.com/freshcrawl/freshcrawl/internal/seed"
	"github.com/freshcrawl/freshcrawl/store"
)

// Copy is the stored copy of a URL: `freshcrawl get` and GET /api/content.
type Copy struct {
	URL string `json:"url"`
	// Hash is the hash of Text; FetchedAt the last successful fetch and
	// ChangedAt the last change seen (zero: never).
	Hash      string    `json:"hash,omitempty"`
	FetchedAt time.Time `json:"fetched_at,omitzero"`
	ChangedAt time.Time `json:"changed_at,omitzero"`
	Text      string    `json:"text"`
	// Raw describes the raw body kept for the URL (seeded with keep_raw);
	// the body itself is GET /api/content?url=U&raw=1.
	Raw     *store.Raw `json:"raw,omitempty"`
	Deleted bool       `json:"deleted,omitempty"`
}

// GetCopy reads the stored copy of rawURL (normalised first), also for a
// deleted URL whose history was kept. withRaw includes the raw body.
func GetCopy(db *store.DB, rawURL string, withRaw bool) (Copy, error) {
	u, _, err := seed.Normalize(rawURL)
	if err != nil {
		return Copy{}, badRequest("url: %v", err)
	}
	c := Copy{URL: u}
	rec, err := db.Get(u)
	if errors.Is(err, store.ErrNotFound) {
		rec, err = db.Deleted(u)
		c.Deleted = err == nil
	}
	if err != nil {
		return c, fmt.Errorf("url %s: %w", u, store.ErrNotFound)
	}
	c.Hash, c.FetchedAt, c.ChangedAt = rec.Hash, rec.LastOK, rec.LastChange
	if c.Text, err = db.Content(u); err != nil {
		return c, err
	}
	raw, found, err := db.Raw(u, withRaw)
	if err != nil {
		return c, err
	}
	if found {
		c.Raw = &raw
	}
	return c, nil
}

// serveContent answers GET /api/content?url=U: the copy as JSON, or with
// raw=1 the raw body as it was fetched, with its content type.
func serveContent(db *store.DB, w http.ResponseWriter, r *http.Request) {
	raw := r.URL.Query().Get("raw")
	if raw != "" && raw != "0" && raw != "1" {
		WriteError(w, http.StatusBadRequest, fmt.Errorf("raw=%q: want 1 or 0", raw))
		return
	}
	if raw == "1" && !rawDest(r) {
		WriteError(w, http.StatusForbidden, fmt.Errorf("a raw body is a download, not a %s for a page: the crawled site's scripts and styles do not load from the console's origin", r.Header.Get("Sec-Fetch-Dest")))
		return
	}
	c, err := GetCopy(db, r.URL.Query().Get("url"), raw == "1")
	if err != nil {
		WriteError(w, statusOf(err), err)
		return
	}
	if raw != "1" {
		WriteJSON(w, http.StatusOK, c)
		return
	}
	if c.Raw == nil {
		WriteError(w, http.StatusNotFound, fmt.Errorf("no raw body kept for %s (seed it with \"keep_raw\": true)", c.URL))
		return
	}
	ct := c.Raw.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	// The body is someone else's page or script, and this is the
	// console's origin: a browser saves it instead of drawing it
	// (attachment), and should it draw it anyway, the sandbox gives it an
	// opaque origin of its own. nosniff keeps a body from being read as a
	// type other than the one it was served with.
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": rawName(c.URL)}))
	w.Header().Set("Content-Security-Policy", cspPolicy+"; sandbox")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if c.Raw.Truncated {
		w.Header().Set("Freshcrawl-Truncated", strconv.FormatInt(c.Raw.Size, 10))
	}
	_, _ = w.Write(c.Raw.Body)
}

// rawName is the file name a raw body is saved under: the last segment of
// its URL's path.
func rawName(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil {
		if b := path.Base(u.Path); b != "." && b != "/" {
			return b
		}
	}
	return "raw"
}

// rawDest reports whether a request for a raw body comes from a fetch
// (the console's download, a command-line client: no Sec-Fetch-Dest) or a
// navigation, which the attachment turns into a download. A crawled page
// drawn in the console's origin could otherwise load another kept body,
// a script, from it, and policy 'self' would let that script run.
func rawDest(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Dest") {
	case "", "empty", "document":
		return true
	}
	return false
}

// diffLine is one line of a version diff: Op is "+", "-" or " ".
type diffLine struct {
	Op   string `json:"op"`
	Text string `json:"text"`
}

// versionDiff is version Seq of a capture URL against the one before.
type versionDiff struct {
	URL   string     `json:"url"`
	Seq   uint64     `json:"seq"`
	Prev  uint64     `json:"prev"` // 0: the first version, diffed against nothing
	Lines []diffLine `json:"lines"`
	// Truncated says the diff was longer than maxDiffLines.
	Truncated bool `json:"truncated,omitempty"`
}

// maxDiffLines bounds a versionDiff.
const maxDiffLines = 5000

// diffVersions computes the line diff of version seq of rawURL against seq-1.
func diffVersions(db *store.DB, rawURL string, seq uint64) (versionDiff, error) {
	u, _, err := seed.Normalize(rawURL)
	if err != nil {
		return versionDiff{}, badRequest("url: %v", err)
	}
	d := versionDiff{URL: u, Seq: seq}
	cur, err := db.Version(u, seq)
	if err != nil {
		return d, err
	}
	prevText := ""
	if seq > 1 {
		prev, err := db.Version(u, seq-1)
		if err == nil {
			prevText, d.Prev = prev.Text, seq-1
		} else if !errors.Is(err, store.ErrNotFound) {
			return d, err
		}
	}
	dmp := diffmatchpatch.New()
	a, b, lines := dmp.DiffLinesToChars(prevText, cur.Text)
	diffs := dmp.DiffCharsToLines(dmp.DiffMain(a, b, false), lines)
	d.Lines = []diffLine{}
	for _, df := range diffs {
		op := " "
		switch df.Type {
		case diffmatchpatch.DiffInsert:
			op = "+"
		case diffmatchpatch.DiffDelete:
			op = "-"
		}
		for _, l := range strings.SplitAfter(df.Text, "\n") {
			if l == "" {
				continue
			}
			if len(d.Lines) == maxDiffLines {
				d.Truncated = true
				return d, nil
			}
			d.Lines = append(d.Lines, diffLine{Op: op, Text: strings.TrimSuffix(l, "\n")})
		}
	}
	return d, nil
}

// serveDiff answers GET /api/diff?url=U&seq=N.
func serveDiff(db *store.DB, w http.ResponseWriter, r *http.Request) {
	seq, err := strconv.ParseUint(r.URL.Query().Get("seq"), 10, 64)
	if err != nil || seq == 0 {
		WriteError(w, http.StatusBadRequest, fmt.Errorf("seq=%q: want a version number", r.URL.Query().Get("seq")))
		return
	}
	d, err := diffVersions(db, r.URL.Query().Get("url"), seq)
	if err != nil {
		WriteError(w, statusOf(err), err)
		return
	}
	WriteJSON(w, http.StatusOK, d)
}
