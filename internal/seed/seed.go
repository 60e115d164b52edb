// Package seed reads seed lists: one URL or one JSON object a line. It
// streams, so a file of millions of lines is read in constant memory, and it
// reports every bad line with its file and line number instead of stopping.
package seed

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/urlnorm"
	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/worker/extract"
	"github.com/freshcrawl/freshcrawl/worker/fetch"
)

// Mode says what the crawler keeps of a URL.
type Mode string

const (
	// ModeFreshness keeps the latest version as fresh as the budget allows.
	ModeFreshness Mode = "freshness"
	// ModeCapture keeps every version (change recall).
	ModeCapture Mode = "capture"
)

// Seed is one parsed seed line.
type Seed struct {
	URL      string            // normalised
	Host     string            // lower-cased host name without port
	Weight   float64           // importance, > 0
	Selector string            // CSS selector of the content of interest, or ""
	Mode     Mode              // freshness or capture
	Ignore   proto.IgnoreRules // noise rules for this URL
	// Period is the capture rhythm ("1h", "168h"), or "" to learn it.
	Period string
	// Polls is the number of capture polls per period, or 0 for a share of
	// the budget.
	Polls int
	// KeepRaw keeps the raw response body of the latest version besides
	// its extracted text.
	KeepRaw bool
	// Webhook is an http(s) URL that receives this URL's change events,
	// besides the webhooks of the config.
	Webhook string
}

// LineError is a bad seed line. Parse reports it and goes on.
type LineError struct {
	File string
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// jsonSeed is the JSON form of a line. Unknown fields are rejected so a typo
// ("wieght") is reported rather than silently ignored.
type jsonSeed struct {
	URL      string             `json:"url"`
	Weight   *float64           `json:"weight"`
	Selector string             `json:"selector"`
	Mode     string             `json:"mode"`
	Ignore   *proto.IgnoreRules `json:"ignore"`
	Period   string             `json:"period"`
	Polls    int                `json:"polls"`
	KeepRaw  bool               `json:"keep_raw"`
	Webhook  string             `json:"webhook"`
}

// MaxLine is the longest line read; a longer one is a bad line, skipped
// without being held in memory.
const MaxLine = 1 << 20

// maxURL is the longest URL stored (urlnorm.MaxLen), in its canonical
// form; a longer one is a bad line.
const maxURL = urlnorm.MaxLen

func parse(p Parser, r io.Reader, file string, emit func(Seed) error, bad func(*LineError)) (good, bads int, err error) {
	br := bufio.NewReaderSize(r, 64*1024)
	var buf []byte
	line := 0
	for {
		var long bool
		var rerr error
		buf, long, rerr = readLine(br, buf[:0])
		if rerr != nil && rerr != io.EOF {
			return good, bads, fmt.Errorf("read %s after line %d: %w", file, line, rerr)
		}
		if rerr == io.EOF && len(buf) == 0 && !long {
			return good, bads, nil
		}
		line++
		s, perr := p.parseText(buf, line, long)
		switch {
		case perr == errSkip:
		case perr != nil:
			bads++
			if bad != nil {
				bad(&LineError{File: file, Line: line, Err: perr})
			}
		default:
			if err := emit(s); err != nil {
				return good, bads, fmt.Errorf("%s:%d: %w", file, line, err)
			}
			good++
		}
		if rerr == io.EOF {
			return good, bads, nil
		}
	}
}

// errSkip marks a blank or comment line.
var errSkip = errors.New("skip")

// parseText parses one line as read: errSkip for a blank line or a
// comment, an error for a line too long to read.
func (p Parser) parseText(text []byte, line int, long bool) (Seed, error) {
	if long {
		return Seed{}, fmt.Errorf("line longer than %d bytes: skipped", MaxLine)
	}
	text = bytes.TrimSpace(text)
	if line == 1 {
		text = bytes.TrimPrefix(text, []byte("\xef\xbb\xbf"))
	}
	if len(text) == 0 || text[0] == '#' {
		return Seed{}, errSkip
	}
	return p.ParseLine(text)
}

// readLine appends the next line of br, without its end of line, to buf.
// A line longer than MaxLine is read to its end but not kept: long is
// true and buf is left empty. err is io.EOF when the input ends: with
// this line if it has no newline, else with an empty line to ignore.
func readLine(br *bufio.Reader, buf []byte) (_ []byte, long bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			buf = append(buf, chunk...)
			// One byte of slack for a "\r" before the newline.
			if len(bytes.TrimSuffix(buf, []byte("\n"))) > MaxLine+1 {
				long, buf = true, buf[:0]
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if !long {
			buf = bytes.TrimSuffix(buf, []byte("\n"))
			buf = bytes.TrimSuffix(buf, []byte("\r"))
			if len(buf) > MaxLine {
				long, buf = true, buf[:0]
			}
		}
		return buf, long, err
	}
}

// Parser reads seed lines under rules that depend on the crawler's
// settings. The zero Parser is the strict one Parse and ParseLine use.
type Parser struct {
	// AllowPrivateWebhooks accepts a webhook URL whose host is a
	// non-public address (--allow-private-webhooks).
	AllowPrivateWebhooks bool
}

// Parse reads seeds from r and calls emit for every good line and bad for
// every bad one (with file name and line number). It stops early only when
// emit returns an error or r fails.
func (p Parser) Parse(r io.Reader, file string, emit func(Seed) error, bad func(*LineError)) (good, bads int, err error) {
	return parse(p, r, file, emit, bad)
}

// ParseLine parses one non-blank, non-comment line: a URL, or a JSON
// object with the seed's fields. A webhook naming a non-public address is
// refused (Parser allows it).
func ParseLine(text []byte) (Seed, error) { return Parser{}.ParseLine(text) }

// ParseLine is the package's ParseLine under p's rules.
func (p Parser) ParseLine(text []byte) (Seed, error) {
	if len(text) == 0 {
		return Seed{}, fmt.Errorf("empty line")
	}
	if text[0] != '{' {
		u, host, err := Normalize(string(text))
		if err != nil {
			return Seed{}, err
		}
		return Seed{URL: u, Host: host, Weight: 1, Mode: ModeFreshness}, nil
	}
	var js jsonSeed
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&js); err != nil {
		return Seed{}, fmt.Errorf("bad JSON: %w", err)
	}
	if dec.More() {
		return Seed{}, errors.New("bad JSON: trailing data after the object")
	}
	if js.URL == "" {
		return Seed{}, errors.New(`field "url": missing`)
	}
	u, host, err := Normalize(js.URL)
	if err != nil {
		return Seed{}, fmt.Errorf(`field "url": %w`, err)
	}
	s := Seed{URL: u, Host: host, Weight: 1, Mode: ModeFreshness, Selector: strings.TrimSpace(js.Selector), Period: js.Period, Polls: js.Polls, KeepRaw: js.KeepRaw}
	if js.Weight != nil {
		w := *js.Weight
		if !(w > 0) || math.IsInf(w, 0) {
			return Seed{}, fmt.Errorf(`field "weight": must be a finite number > 0, got %v`, w)
		}
		s.Weight = w
	}
	switch js.Mode {
	case "", string(ModeFreshness):
	case string(ModeCapture):
		s.Mode = ModeCapture
	default:
		return Seed{}, fmt.Errorf(`field "mode": want "freshness" or "capture", got %q`, js.Mode)
	}
	if js.Ignore != nil {
		s.Ignore = *js.Ignore
	}
	// The worker's own compile: a rule it would refuse on every fetch is
	// refused here, with the field at fault.
	if _, err := extract.Compile(s.Selector, s.Ignore); err != nil {
		var re *extract.RuleError
		if errors.As(err, &re) {
			return Seed{}, fmt.Errorf("field %q: %w", re.Field, re.Err)
		}
		return Seed{}, err
	}
	if (js.Period != "" || js.Polls != 0) && s.Mode != ModeCapture {
		return Seed{}, errors.New(`fields "period" and "polls" apply to "mode": "capture" only`)
	}
	if js.Period != "" {
		d, err := time.ParseDuration(js.Period)
		if err != nil || d <= 0 {
			return Seed{}, fmt.Errorf(`field "period": want a duration such as "1h", "24h" or "168h", got %q`, js.Period)
		}
	}
	if js.Polls < 0 {
		return Seed{}, fmt.Errorf(`field "polls": must be ≥ 0, got %d`, js.Polls)
	}
	if js.Webhook != "" {
		err := CheckWebhookURL(js.Webhook)
		if err == nil && !p.AllowPrivateWebhooks {
			err = CheckWebhookHost(js.Webhook)
		}
		if err != nil {
			return Seed{}, fmt.Errorf(`field "webhook": %w`, err)
		}
		s.Webhook = js.Webhook
	}
	return s, nil
}

// CheckWebhookURL reports whether raw can receive webhooks: an absolute
// http or https URL with a host.
func CheckWebhookURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("unparsable URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("URL %q: want http:// or https://", raw)
	}
	if u.Hostname() == "" {
		return fmt.Errorf("URL %q has no host", raw)
	}
	return nil
}

// CheckWebhookHost refuses a webhook URL (one CheckWebhookURL accepts)
// whose host is an IP literal or localhost name the fetcher's address
// rules block: loopback, private, link-local (the cloud metadata
// service), reserved. Whoever names a webhook chooses where the crawler
// sends signed POSTs, and that must not be the crawler's own network. A
// host name is checked when it is resolved, at every delivery.
func CheckWebhookHost(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("unparsable URL: %w", err)
	}
	if fetch.HostBlocked(u.Hostname()) {
		return fmt.Errorf("URL %q: %s is not a public address (loopback, private, link-local or reserved); --allow-private-webhooks allows it", raw, u.Hostname())
	}
	return nil
}

// Normalize returns the canonical form of an http(s) URL and its host name
// (urlnorm.Normalize): the form seeds are stored in.
func Normalize(raw string) (canonical, host string, err error) { return urlnorm.Normalize(raw) }
