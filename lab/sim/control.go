package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Handler returns the control endpoints for running the sim standalone
// (`freshcrawl sim`), to be served on an address of the caller's choosing:
//
//	GET /urls                       one page URL per line, usable as a seed file
//	GET /pages                      JSON []PageInfo: the true change processes
//	GET /truth?warmup=10s&step=1s   JSON Report for [epoch+warmup, now)
//
// warmup (default 0) skips the start of the run, when the crawler is still
// loading its first copies; step (optional) adds the time series.
func (s *Sim) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /urls", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = fmt.Fprint(w, strings.Join(s.URLs(), "\n")+"\n")
	})
	mux.HandleFunc("GET /pages", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, s.Pages())
	})
	mux.HandleFunc("GET /truth", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		warmup, err := durationParam(q.Get("warmup"))
		if err != nil {
			http.Error(w, fmt.Sprintf("warmup: %v", err), http.StatusBadRequest)
			return
		}
		step, err := durationParam(q.Get("step"))
		if err != nil {
			http.Error(w, fmt.Sprintf("step: %v", err), http.StatusBadRequest)
			return
		}
		writeJSON(w, s.Truth(s.epoch.Add(warmup), s.now(), WithStep(step)))
	})
	return mux
}

func durationParam(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, err
	}
	if d < 0 {
		return 0, fmt.Errorf("%v is negative", d)
	}
	return d, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	// The status is already sent; an encoding error here means the client
	// went away, and there is nobody left to tell.
	_ = enc.Encode(v)
}
