package proto

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// The binary encoding of tasks and results.
//
// A binary message is one magic byte (binaryMagic, which can start neither
// a JSON document nor a UTF-8 character, so a decoder tells the two
// encodings apart by the first byte), one message-type byte, then the
// message's fields in the protobuf wire format: each field a number and a
// wire type, then a varint, a fixed 64-bit value or length-prefixed bytes.
// The field numbers below are the schema, each written out (never iota)
// so that a field inserted in the list cannot renumber the ones after it;
// testdata/golden holds messages encoded under them, which
// TestGoldenMessages decodes. There is no generated code and
// no reflection, so encoding allocates one buffer and decoding allocates
// only the strings it returns. Zero values are left out. A decoder skips
// fields it does not know, so a later release may add fields under new
// numbers; a number is never reused for another meaning. `protoc
// --decode_raw` reads a message once the first two bytes are cut off.
//
// Signed integers and durations are zigzag varints, floats are fixed64
// IEEE bits, times are a nested message of seconds (zigzag) and
// nanoseconds since the Unix epoch, in UTC.
const (
	binaryMagic  = 0xB1
	binaryTask   = 1
	binaryResult = 2
)

// Task field numbers.
const (
	tfV               = 1
	tfID              = 2
	tfKind            = 3
	tfURL             = 4
	tfHost            = 5
	tfNotBefore       = 6
	tfIssuedAt        = 7
	tfMinGap          = 8
	tfSelector        = 9
	tfIgnoreSelectors = 10
	tfIgnorePatterns  = 11
	tfIgnoreMinChange = 12
	tfETag            = 13
	tfLastModified    = 14
	tfPrevHash        = 15
	tfPrevText        = 16
	tfProbe           = 17
	tfKeepRaw         = 18
	tfNeedRaw         = 19
)

// ProbeSpec field numbers.
const (
	pfSource = 1
	pfDef    = 2
	pfQuery  = 3
	pfPage   = 4
	pfItem   = 5
)

// Result field numbers.
const (
	rfV            = 1
	rfTaskID       = 2
	rfKind         = 3
	rfURL          = 4
	rfHost         = 5
	rfWorkerID     = 6
	rfAttempt      = 7
	rfStartedAt    = 8
	rfFinishedAt   = 9
	rfDuration     = 10
	rfStatus       = 11
	rfErrKind      = 12
	rfErr          = 13
	rfFinalURL     = 14
	rfBytes        = 15
	rfTruncated    = 16
	rfNotModified  = 17
	rfETag         = 18
	rfLastModified = 19
	rfContentType  = 20
	rfHash         = 21
	rfChanged      = 22
	rfText         = 23
	rfDiff         = 24
	rfRetryAfter   = 25
	rfCrawlDelay   = 26
	rfDisallowed   = 27
	rfFeedTimes    = 28
	rfRaw          = 29
	rfRawTruncated = 30
	rfItems        = 31
	rfTotal        = 32
	rfNoArchive    = 33
)

// DiffSummary field numbers.
const (
	dfLinesAdded   = 1
	dfLinesRemoved = 2
	dfCharsChanged = 3
	dfMagnitude    = 4
	dfNumeric      = 5
	dfPreview      = 6
)

// ProbeItem field numbers, and those of one entry of its Fields.
const (
	ifID     = 1
	ifField  = 2
	ifKey    = 1
	ifValue  = 2
	tmSecs   = 1
	tmNanos  = 2
	maxNanos = 999_999_999
)

// isBinary reports whether b is a binary-encoded message rather than JSON.
func isBinary(b []byte) bool { return len(b) > 0 && b[0] == binaryMagic }

// enc appends fields to a buffer, leaving zero values out.
type enc struct{ b []byte }

func (e *enc) str(num protowire.Number, s string) {
	if s != "" {
		e.b = protowire.AppendTag(e.b, num, protowire.BytesType)
		e.b = protowire.AppendString(e.b, s)
	}
}

func (e *enc) bytes(num protowire.Number, b []byte) {
	if len(b) > 0 {
		e.b = protowire.AppendTag(e.b, num, protowire.BytesType)
		e.b = protowire.AppendBytes(e.b, b)
	}
}

func (e *enc) int(num protowire.Number, v int64) {
	if v != 0 {
		e.b = protowire.AppendTag(e.b, num, protowire.VarintType)
		e.b = protowire.AppendVarint(e.b, protowire.EncodeZigZag(v))
	}
}

func (e *enc) bool(num protowire.Number, v bool) {
	if v {
		e.b = protowire.AppendTag(e.b, num, protowire.VarintType)
		e.b = protowire.AppendVarint(e.b, 1)
	}
}

func (e *enc) float(num protowire.Number, v float64) {
	if v != 0 || math.Signbit(v) {
		e.b = protowire.AppendTag(e.b, num, protowire.Fixed64Type)
		e.b = protowire.AppendFixed64(e.b, math.Float64bits(v))
	}
}

func (e *enc) time(num protowire.Number, t time.Time) {
	if !t.IsZero() {
		e.timeAlways(num, t)
	}
}

// timeAlways encodes t even when zero, for repeated times where a zero
// element must keep its place.
func (e *enc) timeAlways(num protowire.Number, t time.Time) {
	var m []byte
	if s := t.Unix(); s != 0 {
		m = protowire.AppendTag(m, tmSecs, protowire.VarintType)
		m = protowire.AppendVarint(m, protowire.EncodeZigZag(s))
	}
	if ns := t.Nanosecond(); ns != 0 {
		m = protowire.AppendTag(m, tmNanos, protowire.VarintType)
		m = protowire.AppendVarint(m, uint64(ns))
	}
	e.b = protowire.AppendTag(e.b, num, protowire.BytesType)
	e.b = protowire.AppendBytes(e.b, m)
}

// message appends a nested message built by fill, even when it is empty:
// its presence is the information (a non-nil pointer).
func (e *enc) message(num protowire.Number, fill func(*enc)) {
	var inner enc
	fill(&inner)
	e.b = protowire.AppendTag(e.b, num, protowire.BytesType)
	e.b = protowire.AppendBytes(e.b, inner.b)
}

func encodeTask(t *Task) []byte {
	e := enc{b: make([]byte, 0, 256+len(t.URL)+len(t.PrevText))}
	e.b = append(e.b, binaryMagic, binaryTask)
	e.int(tfV, int64(t.V))
	e.str(tfID, t.ID)
	e.str(tfKind, string(t.Kind))
	e.str(tfURL, t.URL)
	e.str(tfHost, t.Host)
	e.time(tfNotBefore, t.NotBefore)
	e.time(tfIssuedAt, t.IssuedAt)
	e.int(tfMinGap, int64(t.MinGap))
	e.str(tfSelector, t.Selector)
	for _, s := range t.Ignore.Selectors {
		e.b = protowire.AppendTag(e.b, tfIgnoreSelectors, protowire.BytesType)
		e.b = protowire.AppendString(e.b, s)
	}
	for _, s := range t.Ignore.Patterns {
		e.b = protowire.AppendTag(e.b, tfIgnorePatterns, protowire.BytesType)
		e.b = protowire.AppendString(e.b, s)
	}
	e.float(tfIgnoreMinChange, t.Ignore.MinChange)
	e.str(tfETag, t.ETag)
	e.str(tfLastModified, t.LastModified)
	e.str(tfPrevHash, t.PrevHash)
	e.str(tfPrevText, t.PrevText)
	if p := t.Probe; p != nil {
		e.message(tfProbe, func(m *enc) {
			m.str(pfSource, p.Source)
			m.bytes(pfDef, p.Def)
			for _, q := range p.Query {
				m.b = protowire.AppendTag(m.b, pfQuery, protowire.BytesType)
				m.b = protowire.AppendString(m.b, q)
			}
			m.int(pfPage, int64(p.Page))
			m.str(pfItem, p.Item)
		})
	}
	e.bool(tfKeepRaw, t.KeepRaw)
	e.bool(tfNeedRaw, t.NeedRaw)
	return e.b
}

func encodeResult(r *Result) []byte {
	e := enc{b: make([]byte, 0, 256+len(r.URL)+len(r.Text)+len(r.Raw))}
	e.b = append(e.b, binaryMagic, binaryResult)
	e.int(rfV, int64(r.V))
	e.str(rfTaskID, r.TaskID)
	e.str(rfKind, string(r.Kind))
	e.str(rfURL, r.URL)
	e.str(rfHost, r.Host)
	e.str(rfWorkerID, r.WorkerID)
	e.int(rfAttempt, int64(r.Attempt))
	e.time(rfStartedAt, r.StartedAt)
	e.time(rfFinishedAt, r.FinishedAt)
	e.int(rfDuration, int64(r.Duration))
	e.int(rfStatus, int64(r.Status))
	e.str(rfErrKind, string(r.ErrKind))
	e.str(rfErr, r.Err)
	e.str(rfFinalURL, r.FinalURL)
	e.int(rfBytes, r.Bytes)
	e.bool(rfTruncated, r.Truncated)
	e.bool(rfNotModified, r.NotModified)
	e.str(rfETag, r.ETag)
	e.str(rfLastModified, r.LastModified)
	e.str(rfContentType, r.ContentType)
	e.str(rfHash, r.Hash)
	e.bool(rfChanged, r.Changed)
	e.str(rfText, r.Text)
	if d := r.Diff; d != nil {
		e.message(rfDiff, func(m *enc) {
			m.int(dfLinesAdded, int64(d.LinesAdded))
			m.int(dfLinesRemoved, int64(d.LinesRemoved))
			m.int(dfCharsChanged, int64(d.CharsChanged))
			m.float(dfMagnitude, d.Magnitude)
			m.bool(dfNumeric, d.Numeric)
			m.str(dfPreview, d.Preview)
		})
	}
	e.int(rfRetryAfter, int64(r.RetryAfter))
	e.int(rfCrawlDelay, int64(r.CrawlDelay))
	e.bool(rfDisallowed, r.Disallowed)
	for _, t := range r.FeedTimes {
		e.timeAlways(rfFeedTimes, t)
	}
	e.bytes(rfRaw, r.Raw)
	e.bool(rfRawTruncated, r.RawTruncated)
	for _, it := range r.Items {
		e.message(rfItems, func(m *enc) {
			m.str(ifID, it.ID)
			// Sorted, so a result encodes to the same bytes every time.
			for _, k := range slices.Sorted(maps.Keys(it.Fields)) {
				m.message(ifField, func(f *enc) {
					f.str(ifKey, k)
					f.str(ifValue, it.Fields[k])
				})
			}
		})
	}
	e.int(rfTotal, int64(r.Total))
	if r.Signal != nil {
		encodeSignal(&e, r.Signal)
	}
	e.bool(rfNoArchive, r.NoArchive)
	return e.b
}

// dec reads fields. Every reader checks the wire type, so a message whose
// field has another type than the schema's is refused, not misread.
type dec struct {
	b   []byte
	err error
}

var errWireType = errors.New("wrong wire type")

// next returns the next field's number and type, or ok=false at the end
// or on an error (then d.err is set).
func (d *dec) next() (protowire.Number, protowire.Type, bool) {
	if d.err != nil || len(d.b) == 0 {
		return 0, 0, false
	}
	num, typ, n := protowire.ConsumeTag(d.b)
	if n < 0 {
		d.err = fmt.Errorf("field tag: %w", protowire.ParseError(n))
		return 0, 0, false
	}
	d.b = d.b[n:]
	return num, typ, true
}

func (d *dec) fail(num protowire.Number, err error) {
	if d.err == nil {
		d.err = fmt.Errorf("field %d: %w", num, err)
	}
}

// skip consumes a field the schema does not know.
func (d *dec) skip(num protowire.Number, typ protowire.Type) {
	n := protowire.ConsumeFieldValue(num, typ, d.b)
	if n < 0 {
		d.fail(num, protowire.ParseError(n))
		return
	}
	d.b = d.b[n:]
}

func (d *dec) rawBytes(num protowire.Number, typ protowire.Type) []byte {
	if typ != protowire.BytesType {
		d.fail(num, errWireType)
		return nil
	}
	v, n := protowire.ConsumeBytes(d.b)
	if n < 0 {
		d.fail(num, protowire.ParseError(n))
		return nil
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) str(num protowire.Number, typ protowire.Type) string {
	return string(d.rawBytes(num, typ))
}

func (d *dec) uvarint(num protowire.Number, typ protowire.Type) uint64 {
	if typ != protowire.VarintType {
		d.fail(num, errWireType)
		return 0
	}
	v, n := protowire.ConsumeVarint(d.b)
	if n < 0 {
		d.fail(num, protowire.ParseError(n))
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) int64(num protowire.Number, typ protowire.Type) int64 {
	return protowire.DecodeZigZag(d.uvarint(num, typ))
}

// int reads an int field, refusing values that do not fit.
func (d *dec) int(num protowire.Number, typ protowire.Type) int {
	v := d.int64(num, typ)
	if int64(int(v)) != v {
		d.fail(num, fmt.Errorf("%d out of range", v))
		return 0
	}
	return int(v)
}

func (d *dec) bool(num protowire.Number, typ protowire.Type) bool {
	return d.uvarint(num, typ) != 0
}

func (d *dec) float(num protowire.Number, typ protowire.Type) float64 {
	if typ != protowire.Fixed64Type {
		d.fail(num, errWireType)
		return 0
	}
	v, n := protowire.ConsumeFixed64(d.b)
	if n < 0 {
		d.fail(num, protowire.ParseError(n))
		return 0
	}
	d.b = d.b[n:]
	return math.Float64frombits(v)
}

func (d *dec) time(num protowire.Number, typ protowire.Type) time.Time {
	m := dec{b: d.rawBytes(num, typ)}
	var secs, nanos int64
	for n, t, ok := m.next(); ok; n, t, ok = m.next() {
		switch n {
		case tmSecs:
			secs = m.int64(n, t)
		case tmNanos:
			u := m.uvarint(n, t)
			if u > maxNanos {
				m.fail(n, fmt.Errorf("%d nanoseconds", u))
			}
			nanos = int64(u)
		default:
			m.skip(n, t)
		}
	}
	if m.err != nil {
		d.fail(num, m.err)
	}
	return time.Unix(secs, nanos).UTC()
}

// nested returns a decoder of a nested message field.
func (d *dec) nested(num protowire.Number, typ protowire.Type) *dec {
	b := d.rawBytes(num, typ)
	if b == nil {
		b = []byte{} // present but empty
	}
	return &dec{b: b}
}

// done folds a nested decoder's error into d.
func (d *dec) done(num protowire.Number, m *dec) {
	if m.err != nil {
		d.fail(num, m.err)
	}
}

// header checks the magic and message-type bytes.
func header(b []byte, want byte) ([]byte, error) {
	if len(b) < 2 || b[0] != binaryMagic {
		return nil, errors.New("not a binary message")
	}
	if b[1] != want {
		return nil, fmt.Errorf("binary message of type %d, want %d", b[1], want)
	}
	return b[2:], nil
}

func decodeBinaryTask(b []byte) (Task, error) {
	var t Task
	body, err := header(b, binaryTask)
	if err != nil {
		return t, err
	}
	d := dec{b: body}
	for num, typ, ok := d.next(); ok; num, typ, ok = d.next() {
		switch num {
		case tfV:
			t.V = d.int(num, typ)
		case tfID:
			t.ID = d.str(num, typ)
		case tfKind:
			t.Kind = Kind(d.str(num, typ))
		case tfURL:
			t.URL = d.str(num, typ)
		case tfHost:
			t.Host = d.str(num, typ)
		case tfNotBefore:
			t.NotBefore = d.time(num, typ)
		case tfIssuedAt:
			t.IssuedAt = d.time(num, typ)
		case tfMinGap:
			t.MinGap = time.Duration(d.int64(num, typ))
		case tfSelector:
			t.Selector = d.str(num, typ)
		case tfIgnoreSelectors:
			t.Ignore.Selectors = append(t.Ignore.Selectors, d.str(num, typ))
		case tfIgnorePatterns:
			t.Ignore.Patterns = append(t.Ignore.Patterns, d.str(num, typ))
		case tfIgnoreMinChange:
			t.Ignore.MinChange = d.float(num, typ)
		case tfETag:
			t.ETag = d.str(num, typ)
		case tfLastModified:
			t.LastModified = d.str(num, typ)
		case tfPrevHash:
			t.PrevHash = d.str(num, typ)
		case tfPrevText:
			t.PrevText = d.str(num, typ)
		case tfProbe:
			m := d.nested(num, typ)
			t.Probe = decodeProbe(m)
			d.done(num, m)
		case tfKeepRaw:
			t.KeepRaw = d.bool(num, typ)
		case tfNeedRaw:
			t.NeedRaw = d.bool(num, typ)
		default:
			d.skip(num, typ)
		}
	}
	return t, d.err
}

func decodeProbe(d *dec) *ProbeSpec {
	p := &ProbeSpec{}
	for num, typ, ok := d.next(); ok; num, typ, ok = d.next() {
		switch num {
		case pfSource:
			p.Source = d.str(num, typ)
		case pfDef:
			if b := d.rawBytes(num, typ); len(b) > 0 {
				p.Def = json.RawMessage(append([]byte(nil), b...))
			}
		case pfQuery:
			p.Query = append(p.Query, d.str(num, typ))
		case pfPage:
			p.Page = d.int(num, typ)
		case pfItem:
			p.Item = d.str(num, typ)
		default:
			d.skip(num, typ)
		}
	}
	return p
}

func decodeBinaryResult(b []byte) (Result, error) {
	var r Result
	body, err := header(b, binaryResult)
	if err != nil {
		return r, err
	}
	d := dec{b: body}
	for num, typ, ok := d.next(); ok; num, typ, ok = d.next() {
		switch num {
		case rfV:
			r.V = d.int(num, typ)
		case rfTaskID:
			r.TaskID = d.str(num, typ)
		case rfKind:
			r.Kind = Kind(d.str(num, typ))
		case rfURL:
			r.URL = d.str(num, typ)
		case rfHost:
			r.Host = d.str(num, typ)
		case rfWorkerID:
			r.WorkerID = d.str(num, typ)
		case rfAttempt:
			r.Attempt = d.int(num, typ)
		case rfStartedAt:
			r.StartedAt = d.time(num, typ)
		case rfFinishedAt:
			r.FinishedAt = d.time(num, typ)
		case rfDuration:
			r.Duration = time.Duration(d.int64(num, typ))
		case rfStatus:
			r.Status = d.int(num, typ)
		case rfErrKind:
			r.ErrKind = ErrorKind(d.str(num, typ))
		case rfErr:
			r.Err = d.str(num, typ)
		case rfFinalURL:
			r.FinalURL = d.str(num, typ)
		case rfBytes:
			r.Bytes = d.int64(num, typ)
		case rfTruncated:
			r.Truncated = d.bool(num, typ)
		case rfNotModified:
			r.NotModified = d.bool(num, typ)
		case rfETag:
			r.ETag = d.str(num, typ)
		case rfLastModified:
			r.LastModified = d.str(num, typ)
		case rfContentType:
			r.ContentType = d.str(num, typ)
		case rfHash:
			r.Hash = d.str(num, typ)
		case rfChanged:
			r.Changed = d.bool(num, typ)
		case rfText:
			r.Text = d.str(num, typ)
		case rfDiff:
			m := d.nested(num, typ)
			r.Diff = decodeDiff(m)
			d.done(num, m)
		case rfRetryAfter:
			r.RetryAfter = time.Duration(d.int64(num, typ))
		case rfCrawlDelay:
			r.CrawlDelay = time.Duration(d.int64(num, typ))
		case rfDisallowed:
			r.Disallowed = d.bool(num, typ)
		case rfFeedTimes:
			r.FeedTimes = append(r.FeedTimes, d.time(num, typ))
		case rfRaw:
			if b := d.rawBytes(num, typ); len(b) > 0 {
				r.Raw = append([]byte(nil), b...)
			}
		case rfRawTruncated:
			r.RawTruncated = d.bool(num, typ)
		case rfItems:
			m := d.nested(num, typ)
			r.Items = append(r.Items, decodeItem(m))
			d.done(num, m)
		case rfTotal:
			r.Total = d.int(num, typ)
		case rfSignal:
			m := d.nested(num, typ)
			r.Signal = decodeSignal(m)
			d.done(num, m)
		case rfNoArchive:
			r.NoArchive = d.bool(num, typ)
		default:
			d.skip(num, typ)
		}
	}
	return r, d.err
}

func decodeDiff(d *dec) *DiffSummary {
	s := &DiffSummary{}
	for num, typ, ok := d.next(); ok; num, typ, ok = d.next() {
		switch num {
		case dfLinesAdded:
			s.LinesAdded = d.int(num, typ)
		case dfLinesRemoved:
			s.LinesRemoved = d.int(num, typ)
		case dfCharsChanged:
			s.CharsChanged = d.int(num, typ)
		case dfMagnitude:
			s.Magnitude = d.float(num, typ)
		case dfNumeric:
			s.Numeric = d.bool(num, typ)
		case dfPreview:
			s.Preview = d.str(num, typ)
		default:
			d.skip(num, typ)
		}
	}
	return s
}

func decodeItem(d *dec) ProbeItem {
	it := ProbeItem{Fields: map[string]string{}}
	for num, typ, ok := d.next(); ok; num, typ, ok = d.next() {
		switch num {
		case ifID:
			it.ID = d.str(num, typ)
		case ifField:
			m := d.nested(num, typ)
			var k, v string
			for n, t, ok := m.next(); ok; n, t, ok = m.next() {
				switch n {
				case ifKey:
					k = m.str(n, t)
				case ifValue:
					v = m.str(n, t)
				default:
					m.skip(n, t)
				}
			}
			d.done(num, m)
			it.Fields[k] = v
		default:
			d.skip(num, typ)
		}
	}
	return it
}
