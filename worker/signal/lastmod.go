package signal

import (
	"net/http"
	"strings"
	"time"
)

// parseLastMod reads a sitemap's <lastmod>: the W3C Datetime profile of
// ISO 8601 the protocol names (YYYY, YYYY-MM, YYYY-MM-DD, and a date with
// hh:mm, hh:mm:ss or hh:mm:ss.s and a zone, Z or ±hh:mm), and what real
// sitemaps write instead: no zone (read as UTC), a zone without its colon
// (+0200) or minutes (+02), a space or a lower-case t before the time, a
// lower-case z, and HTTP dates. It returns the time in UTC and the span
// its form leaves open (see Entry.LastModSpan).
func parseLastMod(s string) (time.Time, time.Duration, bool) {
	s = strings.TrimSpace(s)
	if t, span, ok := parseW3C(s); ok {
		return t, span, true
	}
	// Some generators write an HTTP date (RFC 1123 and its older forms).
	if t, err := http.ParseTime(s); err == nil {
		return t.UTC(), time.Second, true
	}
	return time.Time{}, 0, false
}

// digits reads n decimal digits at s[i:], or ok = false.
func digits(s string, i, n int) (int, bool) {
	if i < 0 || i+n > len(s) {
		return 0, false
	}
	v := 0
	for _, c := range []byte(s[i : i+n]) {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

// parseW3C parses the date forms and, after a T, the time and zone.
func parseW3C(s string) (time.Time, time.Duration, bool) {
	year, ok := digits(s, 0, 4)
	if !ok || year == 0 {
		return time.Time{}, 0, false
	}
	if len(s) == 4 {
		t := time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC)
		return t, t.AddDate(1, 0, 0).Sub(t), true
	}
	if s[4] != '-' {
		return time.Time{}, 0, false
	}
	month, ok := digits(s, 5, 2)
	if !ok || month < 1 || month > 12 {
		return time.Time{}, 0, false
	}
	if len(s) == 7 {
		t := time.Date(year, time.Month(month), 1, 0, 0, 0, 0, time.UTC)
		return t, t.AddDate(0, 1, 0).Sub(t), true
	}
	if s[7] != '-' {
		return time.Time{}, 0, false
	}
	day, ok := digits(s, 8, 2)
	if !ok || day < 1 || day > daysIn(year, month) {
		return time.Time{}, 0, false
	}
	if len(s) == 10 {
		return time.Date(year, time.Month(month), day, 0, 0, 0, 0, time.UTC), 24 * time.Hour, true
	}
	if c := s[10]; c != 'T' && c != 't' && c != ' ' {
		return time.Time{}, 0, false
	}
	return parseClock(s[11:], year, month, day)
}

// parseClock parses hh:mm[:ss[.s…]] and an optional zone.
func parseClock(s string, year, month, day int) (time.Time, time.Duration, bool) {
	hour, ok1 := digits(s, 0, 2)
	minute, ok2 := digits(s, 3, 2)
	if !ok1 || !ok2 || s[2] != ':' || hour > 24 || minute > 59 {
		return time.Time{}, 0, false
	}
	i, sec, nsec, span := 5, 0, 0, time.Minute
	if i < len(s) && s[i] == ':' {
		v, ok := digits(s, i+1, 2)
		if !ok || v > 60 {
			return time.Time{}, 0, false
		}
		// A leap second is the last instant of its minute.
		sec, i, span = min(v, 59), i+3, time.Second
		if i < len(s) && (s[i] == '.' || s[i] == ',') {
			j := i + 1
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			if j == i+1 {
				return time.Time{}, 0, false
			}
			frac := s[i+1 : j]
			span = time.Second
			for k := range min(len(frac), 9) {
				nsec = nsec*10 + int(frac[k]-'0')
				span /= 10
			}
			for k := len(frac); k < 9; k++ {
				nsec *= 10
			}
			span = max(span, time.Nanosecond)
			i = j
		}
	}
	if hour == 24 && (minute != 0 || sec != 0 || nsec != 0) {
		return time.Time{}, 0, false
	}
	offset, ok := parseZone(s[i:])
	if !ok {
		return time.Time{}, 0, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC).Add(-offset)
	return t, span, true
}

// parseZone reads "" (UTC), Z, ±hh:mm, ±hhmm or ±hh.
func parseZone(s string) (time.Duration, bool) {
	switch s {
	case "", "Z", "z":
		return 0, true
	}
	sign := time.Duration(1)
	switch s[0] {
	case '+':
	case '-':
		sign = -1
	default:
		return 0, false
	}
	s = s[1:]
	h, ok := digits(s, 0, 2)
	if !ok || h > 14 {
		return 0, false
	}
	m := 0
	switch len(s) {
	case 2:
	case 4:
		m, ok = digits(s, 2, 2)
	case 5:
		if s[2] != ':' {
			return 0, false
		}
		m, ok = digits(s, 3, 2)
	default:
		return 0, false
	}
	if !ok || m > 59 {
		return 0, false
	}
	return sign * (time.Duration(h)*time.Hour + time.Duration(m)*time.Minute), true
}

// daysIn is the number of days of month in year.
func daysIn(year, month int) int {
	return time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
