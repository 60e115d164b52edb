package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Point is one sample of the overview's charts. Rates are per second over
// the time since the previous sample.
type Point struct {
	T           time.Time          `json:"t"`
	Pending     int                `json:"pending"`
	AckPending  int                `json:"ack_pending"`
	Redelivered int                `json:"redelivered"`
	Unfolded    int                `json:"unfolded"`
	InFlight    int                `json:"in_flight"`
	FetchRate   float64            `json:"fetch_rate"`
	ChangeRate  float64            `json:"change_rate"`
	ErrorRates  map[string]float64 `json:"error_rates"`
	Budget      float64            `json:"budget"`
	InUse       float64            `json:"in_use"`
	Unabsorbed  float64            `json:"unabsorbed"`
	Freshness   float64            `json:"freshness"`
	FreshnessLo float64            `json:"freshness_lo"`
	FreshnessHi float64            `json:"freshness_hi"`
	Workers     int                `json:"workers"`
}

// series keeps the last `keep` of samples taken every `every` and hands
// new points to subscribers.
type series struct {
	every time.Duration
	max   int

	mu     sync.Mutex
	points []Point
	last   *Overview
	subs   map[chan Point]struct{}
	closed bool
}

func newSeries(every, keep time.Duration) *series {
	return &series{every: every, max: max(int(keep/every), 2), subs: map[chan Point]struct{}{}}
}

// point turns an overview into a sample, with rates against prev.
func point(o Overview, prev *Overview) Point {
	p := Point{T: o.Time, Pending: o.Pending, AckPending: o.AckPending, Redelivered: o.Redelivered, Unfolded: o.Unfolded, InFlight: o.InFlight,
		Budget: o.Budget, InUse: o.InUse, Unabsorbed: o.Unabsorbed, Freshness: o.Freshness, FreshnessLo: o.FreshnessLo, FreshnessHi: o.FreshnessHi,
		Workers: len(o.Workers), ErrorRates: map[string]float64{}}
	if prev == nil {
		return p
	}
	dt := o.Time.Sub(prev.Time).Seconds()
	if dt <= 0 {
		return p
	}
	p.FetchRate = float64(max(o.Fetches-prev.Fetches, 0)) / dt
	p.ChangeRate = float64(max(o.Changes-prev.Changes, 0)) / dt
	for k, v := range o.Errors {
		if d := v - prev.Errors[k]; d > 0 {
			p.ErrorRates[k] = float64(d) / dt
		}
	}
	return p
}

func (s *series) add(o Overview) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	p := point(o, s.last)
	s.last = &o
	if len(s.points) == s.max {
		copy(s.points, s.points[1:])
		s.points = s.points[:len(s.points)-1]
	}
	s.points = append(s.points, p)
	for ch := range s.subs {
		select {
		case ch <- p:
		default: // a slow reader misses a point; it reloads the series
		}
	}
}

func (s *series) snapshot() []Point {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Point{}, s.points...)
}

func (s *series) subscribe() (chan Point, func()) {
	ch := make(chan Point, 16)
	s.mu.Lock()
	if s.closed {
		close(ch)
	} else {
		s.subs[ch] = struct{}{}
	}
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		if _, ok := s.subs[ch]; ok {
			delete(s.subs, ch)
			close(ch)
		}
		s.mu.Unlock()
	}
}

// open lets samples and subscribers in again after close.
func (s *series) open() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = false
}

// close ends every subscription (the coordinator is stopping).
func (s *series) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for ch := range s.subs {
		delete(s.subs, ch)
		close(ch)
	}
}

// SeriesAnswer is GET /api/series.
type SeriesAnswer struct {
	Every  time.Duration `json:"every"`
	Points []Point       `json:"points"`
}

// ServeSeries answers GET /api/series: the last hour of samples.
func (s *Server) ServeSeries(w http.ResponseWriter, r *http.Request) {
	WriteJSON(w, http.StatusOK, SeriesAnswer{Every: s.series.every, Points: s.series.snapshot()})
}

// ServeEvents streams each new sample as a server-sent event "point".
func (s *Server) ServeEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		WriteError(w, http.StatusInternalServerError, fmt.Errorf("streaming unsupported"))
		return
	}
	ch, cancel := s.series.subscribe()
	defer cancel()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	// Tell EventSource how long to wait before reconnecting.
	fmt.Fprintf(w, "retry: %d\n\n", max(s.series.every.Milliseconds(), 1000))
	fl.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case p, ok := <-ch:
			if !ok {
				return
			}
			b, err := json.Marshal(p)
			if err != nil {
				return
			}
			if _, err := fmt.Fprintf(w, "event: point\ndata: %s\n\n", b); err != nil {
				return
			}
			fl.Flush()
		}
	}
}
