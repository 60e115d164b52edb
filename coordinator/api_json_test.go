package coordinator

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
)

// A value JSON cannot carry is a 500 with the reason, never a 200 with an
// empty body; finite makes a status figure encodable.
func TestWriteJSONRefusesNaN(t *testing.T) {
	rec := httptest.NewRecorder()
	writeJSON(rec, http.StatusOK, map[string]float64{"x": math.NaN()})
	var e map[string]string
	if rec.Code != http.StatusInternalServerError || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e["error"] == "" {
		t.Errorf("NaN: %d %q, want 500 with an error", rec.Code, rec.Body.String())
	}
	rec = httptest.NewRecorder()
	writeJSON(rec, http.StatusOK, Status{ModelFreshness: finite(math.Inf(1)), CaptureRecall: finite(math.NaN()), ModelAge: finite(2)})
	var st Status
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &st) != nil || st.ModelFreshness != 0 || st.ModelAge != 2 {
		t.Errorf("finite status: %d %q", rec.Code, rec.Body.String())
	}
}
