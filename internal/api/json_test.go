package api_test

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/freshcrawl/freshcrawl/internal/api"
)

// Every JSON answer of the API is indented by two spaces and ends in a
// newline, with HTML characters escaped as encoding/json does; errors are
// {"error": ...}.
func TestWriteJSON(t *testing.T) {
	rec := httptest.NewRecorder()
	api.WriteJSON(rec, http.StatusCreated, map[string]any{"a": []int{1}, "b": "<x>"})
	want := "{\n  \"a\": [\n    1\n  ],\n  \"b\": \"\\u003cx\\u003e\"\n}\n"
	if rec.Code != http.StatusCreated || rec.Header().Get("Content-Type") != "application/json" || rec.Body.String() != want {
		t.Errorf("got %d %q %q, want 201 application/json %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String(), want)
	}
	rec = httptest.NewRecorder()
	api.WriteError(rec, http.StatusNotFound, errors.New("no such URL"))
	if want := "{\n  \"error\": \"no such URL\"\n}\n"; rec.Code != http.StatusNotFound || rec.Body.String() != want {
		t.Errorf("error: %d %q, want 404 %q", rec.Code, rec.Body.String(), want)
	}
}

// A value JSON cannot carry is a 500 with the reason, never a 200 with an
// empty body.
func TestWriteJSONRefusesNaN(t *testing.T) {
	rec := httptest.NewRecorder()
	api.WriteJSON(rec, http.StatusOK, map[string]float64{"x": math.NaN()})
	var e map[string]string
	if rec.Code != http.StatusInternalServerError || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e["error"] == "" {
		t.Errorf("NaN: %d %q, want 500 with an error", rec.Code, rec.Body.String())
	}
}
