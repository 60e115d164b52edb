package signal

import (
	"testing"
	"time"
)

// Every W3C Datetime form the protocol allows, and the deviations real
// sitemaps write, read to the instant and the span their form leaves
// open; nonsense does not read.
func TestParseLastMod(t *testing.T) {
	utc := func(y, mo, d, h, mi, s, ns int) time.Time {
		return time.Date(y, time.Month(mo), d, h, mi, s, ns, time.UTC)
	}
	for _, c := range []struct {
		in   string
		want time.Time
		span time.Duration
	}{
		{"2026", utc(2026, 1, 1, 0, 0, 0, 0), 365 * 24 * time.Hour},
		{"2024-02", utc(2024, 2, 1, 0, 0, 0, 0), 29 * 24 * time.Hour},
		{"2026-03-01", utc(2026, 3, 1, 0, 0, 0, 0), 24 * time.Hour},
		{" 2026-03-01\n", utc(2026, 3, 1, 0, 0, 0, 0), 24 * time.Hour},
		{"2026-03-01T10:20Z", utc(2026, 3, 1, 10, 20, 0, 0), time.Minute},
		{"2026-03-01T10:20+01:00", utc(2026, 3, 1, 9, 20, 0, 0), time.Minute},
		{"2026-03-01T10:20:30Z", utc(2026, 3, 1, 10, 20, 30, 0), time.Second},
		{"2026-03-01T10:20:30-05:30", utc(2026, 3, 1, 15, 50, 30, 0), time.Second},
		{"2026-03-01T10:20:30.5Z", utc(2026, 3, 1, 10, 20, 30, 5e8), 100 * time.Millisecond},
		{"2026-03-01T10:20:30.123456789+00:00", utc(2026, 3, 1, 10, 20, 30, 123456789), time.Nanosecond},
		{"2026-03-01T10:20:30.1234567891Z", utc(2026, 3, 1, 10, 20, 30, 123456789), time.Nanosecond},
		// Without a zone (read as UTC), a zone without its colon or
		// minutes, a space or lower case.
		{"2026-03-01T10:20:30", utc(2026, 3, 1, 10, 20, 30, 0), time.Second},
		{"2026-03-01 10:20:30+0200", utc(2026, 3, 1, 8, 20, 30, 0), time.Second},
		{"2026-03-01t10:20:30z", utc(2026, 3, 1, 10, 20, 30, 0), time.Second},
		{"2026-03-01T10:20:30+02", utc(2026, 3, 1, 8, 20, 30, 0), time.Second},
		{"2026-03-01T24:00:00Z", utc(2026, 3, 2, 0, 0, 0, 0), time.Second},
		{"2016-12-31T23:59:60Z", utc(2016, 12, 31, 23, 59, 59, 0), time.Second},
		// An HTTP date.
		{"Sun, 01 Mar 2026 10:20:30 GMT", utc(2026, 3, 1, 10, 20, 30, 0), time.Second},
	} {
		got, span, ok := parseLastMod(c.in)
		if !ok || !got.Equal(c.want) || span != c.span || got.Location() != time.UTC {
			t.Errorf("%q: %v span %v ok %v, want %v span %v", c.in, got, span, ok, c.want, c.span)
		}
	}
	for _, bad := range []string{"", "yesterday", "0000", "26-03-01", "2026-13-01", "2026-02-30", "2026-03-01T", "2026-03-01T25:00Z",
		"2026-03-01T10:61Z", "2026-03-01T10:20:30.Z", "2026-03-01T10:20:30+15:00", "2026-03-01T10:20:30+02:0", "2026-03-01T24:00:01Z",
		"2026-03-01T10:20:30 UTC", "2026/03/01", "2026-3-1", "20260301"} {
		if got, _, ok := parseLastMod(bad); ok {
			t.Errorf("%q read as %v", bad, got)
		}
	}
}
