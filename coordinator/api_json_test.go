package coordinator

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/freshcrawl/freshcrawl/internal/api"
)

// finite makes a status figure that would be NaN or infinite encodable,
// where api.WriteJSON would refuse it.
func TestFiniteStatusEncodes(t *testing.T) {
	rec := httptest.NewRecorder()
	api.WriteJSON(rec, http.StatusOK, Status{ModelFreshness: finite(math.Inf(1)), CaptureRecall: finite(math.NaN()), ModelAge: finite(2)})
	var st Status
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &st) != nil || st.ModelFreshness != 0 || st.ModelAge != 2 {
		t.Errorf("finite status: %d %q", rec.Code, rec.Body.String())
	}
}
