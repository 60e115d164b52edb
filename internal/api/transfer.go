package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"

	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/seed"
	"github.com/freshcrawl/freshcrawl/store"
)

// LineChecker validates one import line and normalises it: the URL and
// its host as `seed` would store them, the seed fields by p's rules (a
// seed webhook naming a non-public address is refused unless p allows
// it), and the estimate, counters and times as numbers the coordinator
// can use. Errors name the field.
func LineChecker(p seed.Parser) func(*store.Line) error {
	return func(l *store.Line) error { return checkLine(p, l) }
}

func checkLine(p seed.Parser, l *store.Line) error {
	u := &l.URL
	if u.URL == "" {
		return errors.New(`field "url": missing`)
	}
	if u.Weight == 0 {
		u.Weight = 1
	}
	if u.Mode == "" {
		u.Mode = string(seed.ModeFreshness)
	}
	js := map[string]any{"url": u.URL, "weight": u.Weight, "selector": u.Selector, "mode": u.Mode, "ignore": u.Ignore, "keep_raw": u.KeepRaw}
	if u.Period != "" {
		js["period"] = u.Period
	}
	if u.Polls != 0 {
		js["polls"] = u.Polls
	}
	if u.Webhook != "" {
		js["webhook"] = u.Webhook
	}
	if math.IsNaN(u.Weight) || math.IsInf(u.Weight, 0) {
		return fmt.Errorf(`field "weight": must be a finite number > 0, got %v`, u.Weight)
	}
	b, err := json.Marshal(js)
	if err != nil {
		return err
	}
	s, err := p.ParseLine(b)
	if err != nil {
		return err
	}
	u.URL, u.Host, u.Selector = s.URL, s.Host, s.Selector
	for _, f := range []struct {
		name string
		v    float64
	}{{"rate", u.Rate}, {"rate_se", u.RateSE}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("field %q: must be a finite number ≥ 0, got %v", f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"fetches", u.Fetches}, {"changes", u.Changes}, {"not_modified", u.NotModified}, {"errors", u.Errors}, {"failed", u.Failed}, {"versions", u.Versions}, {"interval", int64(u.Interval)}} {
		if f.v < 0 {
			return fmt.Errorf("field %q: must be ≥ 0, got %d", f.name, f.v)
		}
	}
	for k, v := range u.ErrorKinds {
		if v < 0 {
			return fmt.Errorf("field \"error_kinds\": %q is %d, want ≥ 0", k, v)
		}
	}
	if len(u.Estimate) > 0 {
		var st schedule.EstimateState
		if err := st.UnmarshalBinary(u.Estimate); err != nil {
			return fmt.Errorf(`field "estimate": %w`, err)
		}
	}
	if l.Raw != nil && l.Raw.Size < int64(len(l.Raw.Body)) {
		l.Raw.Size = int64(len(l.Raw.Body))
	}
	return nil
}

// serveExport answers GET /api/export with every URL as JSON lines.
func serveExport(db *store.DB, w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Disposition", `attachment; filename="freshcrawl-export.jsonl"`)
	if _, err := db.Export(w); err != nil {
		// The status line is gone: end the stream with a line that is
		// not valid JSON of a URL, so an import of it reports it.
		_, _ = fmt.Fprintf(w, "{\"error\": %q}\n", err.Error())
	}
}

// ServeImport answers POST /api/import?name=F: URLs as JSON lines, as
// GET /api/export writes them.
func (s *Server) ServeImport(w http.ResponseWriter, r *http.Request) {
	if !RequireType(w, r, StreamTypes...) {
		return
	}
	name := r.URL.Query().Get("name")
	if name == "" {
		name = "request"
	}
	sum, err := s.b.Store().Import(r.Body, name, LineChecker(s.seeds), nil, s.b.Adopt)
	if err != nil {
		WriteJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error(), "summary": sum})
		return
	}
	WriteJSON(w, http.StatusOK, sum)
}
