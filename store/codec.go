package store

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"net/http"
	"slices"
	"strings"
	"time"
)

// URL and Host records are stored in a compact binary form (one tenth of
// the decode time and about a third of the bytes of JSON, which matters at
// ten million URLs). The first byte tells the forms apart: a JSON record
// starts with '{', a binary one with its format version (1), which JSON
// can never start with. Both are read; records are written in binary, so
// a store written by an older binary moves to the new form record by
// record as it is written (Put, a fold, a seed), or all at once with
// `freshcrawl store migrate` (DB.Migrate). Other records (versions,
// changes, items, webhook deliveries) are rare or small and stay JSON.
//
// The key is not repeated in the value: a URL record's key is its URL and
// a host record's key its host, so decoding needs the key.
const recordV1 = 1

// Flag bits of a binary URL record. They are on disk: each is written out
// (never iota) so that no new flag can move an old one, and a bit, once
// used, keeps its meaning. testdata/golden holds records that use them all.
const (
	flagKeepRaw        = 1 << 0
	flagPaused         = 1 << 1
	flagDisallowed     = 1 << 2
	flagHostOfURL      = 1 << 3 // Host is hostPart(URL): not stored
	flagHashHex        = 1 << 4 // Hash is 64 lower-case hex digits, stored as 32 bytes
	flagLastModHTTP    = 1 << 5 // LastMod is an HTTP date, stored as Unix seconds
	flagIgnore         = 1 << 6 // the ignore rules follow, as JSON
	flagEstimatePacked = 1 << 7 // the estimator state is stored zero-packed (packZeros)
	flagWeightShort    = 1 << 8 // Weight, Rate, RateSE: stored short (appendFloatAs)
	flagRateShort      = 1 << 9
	flagRateSEShort    = 1 << 10
	flagGone           = 1 << 11
	flagTruncated      = 1 << 12
	flagNoArchive      = 1 << 13
	flagFailing        = 1 << 14 // ErrStreak and NotFoundSince follow NextDue
)

// modeCodes are the modes stored as one byte; any other mode is stored as
// a string after code 0. The codes are on disk, so each is written out: a
// mode inserted in the list would take an index another already has, and
// not compile.
var modeCodes = [...]string{0: "", 1: "freshness", 2: "capture"}

// hostPart is the authority of a URL (between "://" and the path): the
// host a seed records for it in the common case, so the record need not
// store it twice.
func hostPart(url string) string {
	i := strings.Index(url, "://")
	if i < 0 {
		return ""
	}
	rest := url[i+3:]
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// recMeta is what a binary URL record holds besides the URL: the URL's
// id in the secondary indexes (0 for a record not in them: a deleted
// URL's) and the key of its latest text in the texts bucket (nil: none, or
// a store written before texts were shared).
type recMeta struct {
	id      uint64
	content []byte
}

// metaOf reads the recMeta of a stored URL record (zero for a JSON one).
func metaOf(v []byte) recMeta {
	if len(v) == 0 || v[0] != recordV1 {
		return recMeta{}
	}
	r := &reader{b: v[1:]}
	m := recMeta{id: r.uvarint()}
	if c := r.bytes(); len(c) > 0 {
		m.content = c
	}
	if r.err != nil {
		return recMeta{}
	}
	return m
}

// stateFlags are the flags of u's yes/no fields (and of its failures,
// which follow the record only when flagged).
func stateFlags(u *URL) uint64 {
	var flags uint64
	for _, f := range [...]struct {
		on   bool
		flag uint64
	}{
		{u.KeepRaw, flagKeepRaw}, {u.Paused, flagPaused}, {u.Disallowed, flagDisallowed},
		{u.Gone, flagGone}, {u.Truncated, flagTruncated}, {u.NoArchive, flagNoArchive},
		{u.ErrStreak != 0 || !u.NotFoundSince.IsZero(), flagFailing},
	} {
		if f.on {
			flags |= f.flag
		}
	}
	return flags
}

// appendURL appends the binary record of u (without its URL, the key).
func appendURL(b []byte, u *URL, m recMeta) []byte { return appendURLPacked(b, u, m, true) }

// appendURLPacked is appendURL, with the estimator state zero-packed
// when pack is set (an older binary wrote it unpacked: still read).
func appendURLPacked(b []byte, u *URL, m recMeta, pack bool) []byte {
	flags := stateFlags(u)
	if u.Host == hostPart(u.URL) {
		flags |= flagHostOfURL
	}
	var hash [32]byte
	if len(u.Hash) == 64 && isLowerHex(u.Hash) {
		flags |= flagHashHex
		_, _ = hex.Decode(hash[:], []byte(u.Hash))
	}
	var lastMod time.Time
	if u.LastMod != "" {
		if t, err := http.ParseTime(u.LastMod); err == nil && t.UTC().Format(http.TimeFormat) == u.LastMod {
			flags |= flagLastModHTTP
			lastMod = t
		}
	}
	if pack && len(u.Estimate) >= minPacked {
		flags |= flagEstimatePacked
	}
	if pack {
		for _, f := range [...]struct {
			v    float64
			flag uint64
		}{{u.Weight, flagWeightShort}, {u.Rate, flagRateShort}, {u.RateSE, flagRateSEShort}} {
			if shortFloatLen(f.v) < 8 {
				flags |= f.flag
			}
		}
	}
	var ignore []byte
	if !u.Ignore.IsZero() {
		flags |= flagIgnore
		ignore, _ = json.Marshal(u.Ignore) // strings and a float: cannot fail
	}
	b = append(b, recordV1)
	b = binary.AppendUvarint(b, m.id)
	b = appendBytes(b, m.content)
	b = binary.AppendUvarint(b, flags)
	if flags&flagHostOfURL == 0 {
		b = appendString(b, u.Host)
	}
	b = appendFloatAs(b, u.Weight, flags&flagWeightShort != 0)
	b = appendString(b, u.Selector)
	if i := slices.Index(modeCodes[:], u.Mode); i > 0 {
		b = append(b, byte(i))
	} else {
		b = append(b, 0)
		b = appendString(b, u.Mode)
	}
	if ignore != nil {
		b = appendBytes(b, ignore)
	}
	b = appendString(b, u.Period)
	b = binary.AppendVarint(b, int64(u.Polls))
	b = appendString(b, u.Webhook)
	b = appendTime(b, u.AddedAt)
	b = appendTime(b, u.PausedAt)
	b = appendTime(b, u.DeletedAt)
	for _, n := range [...]int64{u.Fetches, u.Changes, u.NotModified, u.Errors, u.Failed, u.Versions} {
		b = binary.AppendVarint(b, n)
	}
	b = binary.AppendUvarint(b, uint64(len(u.ErrorKinds)))
	if len(u.ErrorKinds) > 0 {
		kinds := make([]string, 0, len(u.ErrorKinds))
		for k := range u.ErrorKinds {
			kinds = append(kinds, k)
		}
		slices.Sort(kinds)
		for _, k := range kinds {
			b = appendString(b, k)
			b = binary.AppendVarint(b, u.ErrorKinds[k])
		}
	}
	b = appendTime(b, u.LastFetch)
	b = appendTimeRef(b, u.LastOK, u.LastFetch)
	b = appendTimeRef(b, u.LastChange, u.LastFetch)
	b = binary.AppendVarint(b, int64(u.LastStatus))
	b = appendString(b, u.LastErrKind)
	b = appendString(b, u.LastErr)
	b = appendString(b, u.ETag)
	if flags&flagLastModHTTP != 0 {
		b = binary.AppendVarint(b, lastMod.Unix())
	} else {
		b = appendString(b, u.LastMod)
	}
	if flags&flagHashHex != 0 {
		b = append(b, hash[:]...)
	} else {
		b = appendString(b, u.Hash)
	}
	if flags&flagEstimatePacked != 0 {
		b = packZeros(b, u.Estimate)
	} else {
		b = appendBytes(b, u.Estimate)
	}
	b = appendFloatAs(b, u.Rate, flags&flagRateShort != 0)
	b = appendFloatAs(b, u.RateSE, flags&flagRateSEShort != 0)
	b = binary.AppendVarint(b, int64(u.Interval))
	b = appendTime(b, u.NextDue)
	if flags&flagFailing != 0 {
		// At the end, behind a flag: a record without failures (every
		// record a store held before they were kept) reads as before.
		b = binary.AppendVarint(b, int64(u.ErrStreak))
		b = appendTime(b, u.NotFoundSince)
	}
	return b
}

// decodeURL decodes a URL record, binary or JSON, stored under key.
func decodeURL(key, v []byte, u *URL) error {
	if len(v) > 0 && v[0] == recordV1 {
		*u = URL{URL: string(key)}
		return readURL(&reader{b: v[1:]}, u, false)
	}
	*u = URL{}
	return json.Unmarshal(v, u)
}

// decodeScheduled decodes what a schedule needs of a URL record
// (ForEachScheduleBatch): a binary record is read without building the
// others, a JSON one in full.
func decodeScheduled(key, v []byte, u *URL) error {
	if len(v) > 0 && v[0] == recordV1 {
		*u = URL{URL: string(key)}
		return readURL(&reader{b: v[1:]}, u, true)
	}
	*u = URL{}
	return json.Unmarshal(v, u)
}

// readURL reads a binary record into u. With lean, it checks and skips
// the fields a schedule does not use (see ForEachScheduleBatch) instead of
// building them: a restart decodes millions of records, and the
// validators alone are three strings a record (the hash as 64 hex
// digits, Last-Modified formatted).
func readURL(r *reader, u *URL, lean bool) error {
	keep := !lean
	u.ID = r.uvarint() // recMeta: metaOf
	r.bytes()
	flags := r.uvarint()
	if flags&flagHostOfURL != 0 {
		u.Host = hostPart(u.URL)
	} else {
		u.Host = r.string()
	}
	u.KeepRaw, u.Paused, u.Disallowed = flags&flagKeepRaw != 0, flags&flagPaused != 0, flags&flagDisallowed != 0
	u.Gone, u.Truncated, u.NoArchive = flags&flagGone != 0, flags&flagTruncated != 0, flags&flagNoArchive != 0
	u.Weight = r.floatAs(flags&flagWeightShort != 0)
	u.Selector = r.stringIf(keep)
	if c := r.byte(); c == 0 {
		u.Mode = r.string()
	} else if int(c) < len(modeCodes) {
		u.Mode = modeCodes[c]
	} else {
		r.fail("mode code %d", c)
	}
	if flags&flagIgnore != 0 {
		if b := r.bytes(); !lean {
			if err := json.Unmarshal(b, &u.Ignore); err != nil && r.err == nil {
				r.err = fmt.Errorf("ignore rules: %w", err)
			}
		}
	}
	u.Period = r.string()
	u.Polls = int(r.varint())
	u.Webhook = r.stringIf(keep)
	u.AddedAt, u.PausedAt, u.DeletedAt = r.time(), r.time(), r.time()
	u.Fetches, u.Changes, u.NotModified = r.varint(), r.varint(), r.varint()
	u.Errors, u.Failed, u.Versions = r.varint(), r.varint(), r.varint()
	if n := r.uvarint(); n > 0 {
		if n > uint64(len(r.b)) {
			r.fail("%d error kinds in %d bytes", n, len(r.b))
		} else {
			if !lean {
				u.ErrorKinds = make(map[string]int64, n)
			}
			for range n {
				k := r.stringIf(keep)
				if v := r.varint(); !lean {
					u.ErrorKinds[k] = v
				}
			}
		}
	}
	u.LastFetch = r.time()
	u.LastOK, u.LastChange = r.timeRef(u.LastFetch), r.timeRef(u.LastFetch)
	u.LastStatus = int(r.varint())
	u.LastErrKind, u.LastErr, u.ETag = r.stringIf(keep), r.stringIf(keep), r.stringIf(keep)
	switch {
	case flags&flagLastModHTTP == 0:
		u.LastMod = r.stringIf(keep)
	case lean:
		r.varint()
	default:
		u.LastMod = time.Unix(r.varint(), 0).UTC().Format(http.TimeFormat)
	}
	switch {
	case flags&flagHashHex == 0:
		u.Hash = r.stringIf(keep)
	case lean:
		r.fixed(32)
	default:
		u.Hash = hex.EncodeToString(r.fixed(32))
	}
	if flags&flagEstimatePacked != 0 {
		u.Estimate = r.unpackZeros()
	} else if e := r.bytes(); len(e) > 0 {
		u.Estimate = append([]byte(nil), e...)
	}
	u.Rate, u.RateSE = r.floatAs(flags&flagRateShort != 0), r.floatAs(flags&flagRateSEShort != 0)
	u.Interval = time.Duration(r.varint())
	u.NextDue = r.time()
	if flags&flagFailing != 0 {
		u.ErrStreak = int(r.varint())
		u.NotFoundSince = r.time()
	}
	return r.done()
}

// appendHost appends the binary record of h (without its name, the key).
func appendHost(b []byte, h *Host) []byte {
	b = append(b, recordV1)
	b = binary.AppendVarint(b, int64(h.CrawlDelay))
	b = appendTime(b, h.BackoffTill)
	b = binary.AppendVarint(b, int64(h.Backoff))
	b = binary.AppendVarint(b, int64(h.ServerErrs))
	b = appendTime(b, h.LastFetch)
	b = binary.AppendVarint(b, h.Fetches)
	b = binary.AppendVarint(b, h.Errors)
	if h.Slowdown != 0 || h.OKStreak != 0 {
		// Left out when zero, so that a host never slowed is written as
		// before they were kept.
		b = binary.AppendVarint(b, int64(h.Slowdown))
		b = binary.AppendVarint(b, int64(h.OKStreak))
	}
	return b
}

// decodeHost decodes a host record, binary or JSON, stored under key.
func decodeHost(key, v []byte, h *Host) error {
	*h = Host{}
	if len(v) == 0 || v[0] != recordV1 {
		return json.Unmarshal(v, h)
	}
	r := &reader{b: v[1:]}
	h.Host = string(key)
	h.CrawlDelay = time.Duration(r.varint())
	h.BackoffTill = r.time()
	h.Backoff = time.Duration(r.varint())
	h.ServerErrs = int(r.varint())
	h.LastFetch = r.time()
	h.Fetches, h.Errors = r.varint(), r.varint()
	if len(r.b) > 0 {
		h.Slowdown, h.OKStreak = int(r.varint()), int(r.varint())
	}
	return r.done()
}

// decodeRecord decodes the record v stored under key into dst: URL and
// Host records in either form, anything else from JSON.
func decodeRecord(key, v []byte, dst any) error {
	switch d := dst.(type) {
	case *URL:
		return decodeURL(key, v, d)
	case *Host:
		return decodeHost(key, v, d)
	}
	return json.Unmarshal(v, dst)
}

// encodeRecord encodes v for the store: URL and Host records in binary,
// anything else as JSON.
func encodeRecord(v any) ([]byte, error) {
	switch r := v.(type) {
	case URL:
		return appendURL(make([]byte, 0, 256), &r, recMeta{}), nil
	case *URL:
		return appendURL(make([]byte, 0, 256), r, recMeta{}), nil
	case Host:
		return appendHost(make([]byte, 0, 32), &r), nil
	case *Host:
		return appendHost(make([]byte, 0, 32), r), nil
	}
	return json.Marshal(v)
}

func isLowerHex(s string) bool {
	for i := range len(s) {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// The estimator's state is opaque here (schedule.EstimateState encodes
// it: fixed-width fields, most of them small counts or float32s of an
// empty bucket), and about 60 % of its bytes are zero. packZeros stores
// its length, a bitmap of its non-zero bytes, then those bytes: 126
// bytes become about 64, whatever the layout of the fields.
func packZeros(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	at := len(b)
	b = append(b, make([]byte, (len(s)+7)/8)...)
	for i, c := range s {
		if c != 0 {
			b[at+i/8] |= 1 << (i % 8)
			b = append(b, c)
		}
	}
	return b
}

// minPacked is the shortest estimator state worth packing (below it the
// bitmap costs more than the zeros save, for the states seen so far).
const minPacked = 16

// maxPackedLen bounds the length a packed field may claim, so a damaged
// record cannot make the reader allocate gigabytes.
const maxPackedLen = 1 << 16

// unpackZeros reads a field written by packZeros.
func (r *reader) unpackZeros() []byte {
	n := r.uvarint()
	if n > maxPackedLen {
		r.fail("packed field of %d bytes", n)
		return nil
	}
	bitmap := r.fixed(int((n + 7) / 8))
	if r.err != nil {
		return nil
	}
	out := make([]byte, n)
	for i := range out {
		if bitmap[i/8]&(1<<(i%8)) != 0 {
			out[i] = r.byte()
		}
	}
	if r.err != nil {
		return nil
	}
	return out
}

// A short float is the uvarint of its bits with the bytes reversed: the
// low mantissa bytes of a round number (a weight of 1, a rate of 0) are
// zero, so it takes one to three bytes. A record flag says which floats
// are short; the others stay 8 bytes.
func shortFloat(f float64) uint64 { return bits.ReverseBytes64(math.Float64bits(f)) }

func shortFloatLen(f float64) int {
	var buf [binary.MaxVarintLen64]byte
	return binary.PutUvarint(buf[:], shortFloat(f))
}

func appendFloatAs(b []byte, f float64, short bool) []byte {
	if short {
		return binary.AppendUvarint(b, shortFloat(f))
	}
	return appendFloat(b, f)
}

func (r *reader) floatAs(short bool) float64 {
	if short {
		return math.Float64frombits(bits.ReverseBytes64(r.uvarint()))
	}
	return r.float()
}

func appendFloat(b []byte, f float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
}

// Times: 0 is the zero time; 1 is followed by the Unix nanoseconds (every
// time between the years 1678 and 2262); 2 by seconds and nanoseconds
// (any other). Times are read back in UTC, as JSON reads a "Z" time.
func appendTime(b []byte, t time.Time) []byte {
	switch {
	case t.IsZero():
		return append(b, 0)
	case t.Year() > 1678 && t.Year() < 2262:
		b = append(b, 1)
		return binary.AppendVarint(b, t.UnixNano())
	}
	b = append(b, 2)
	b = binary.AppendVarint(b, t.Unix())
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}

// reader decodes a binary record; the first problem sticks in err and
// every later read returns a zero value, so decoding code reads straight
// through and checks once.
type reader struct {
	b   []byte
	err error
}

var errShort = errors.New("record ends early")

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
	r.b = nil
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("%w: bad varint", errShort)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("%w: bad varint", errShort)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) byte() byte {
	if len(r.b) < 1 {
		r.fail("%w", errShort)
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) fixed(n int) []byte {
	if len(r.b) < n {
		r.fail("%w: want %d bytes, have %d", errShort, n, len(r.b))
		return make([]byte, n)
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

// bytes returns a length-prefixed field, aliasing the record.
func (r *reader) bytes() []byte {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail("%w: field of %d bytes, %d left", errShort, n, len(r.b))
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) string() string { return string(r.bytes()) }

// stringIf is string, or the field skipped ("") unless keep.
func (r *reader) stringIf(keep bool) string {
	if b := r.bytes(); keep {
		return string(b)
	}
	return ""
}

func (r *reader) float() float64 { return math.Float64frombits(binary.LittleEndian.Uint64(r.fixed(8))) }

// appendTimeRef is appendTime, with a time equal to ref (not zero) as the
// single tag 3: a successful fetch's LastOK is its LastFetch.
func appendTimeRef(b []byte, t, ref time.Time) []byte {
	if !t.IsZero() && t.Equal(ref) {
		return append(b, 3)
	}
	return appendTime(b, t)
}

// timeRef reads a time written by appendTimeRef.
func (r *reader) timeRef(ref time.Time) time.Time {
	if len(r.b) > 0 && r.b[0] == 3 {
		r.b = r.b[1:]
		return ref
	}
	return r.time()
}

func (r *reader) time() time.Time {
	switch c := r.byte(); c {
	case 0:
		return time.Time{}
	case 1:
		return time.Unix(0, r.varint()).UTC()
	case 2:
		s := r.varint()
		ns := r.uvarint()
		if ns >= 1e9 {
			r.fail("time: %d nanoseconds", ns)
			return time.Time{}
		}
		return time.Unix(s, int64(ns)).UTC()
	default:
		r.fail("time tag %d", c)
		return time.Time{}
	}
}

// done reports the first problem, or bytes left over: a record of a newer
// format this binary cannot read whole.
func (r *reader) done() error {
	if r.err != nil {
		return fmt.Errorf("binary record: %w", r.err)
	}
	if len(r.b) != 0 {
		return fmt.Errorf("binary record: %d bytes left over", len(r.b))
	}
	return nil
}
