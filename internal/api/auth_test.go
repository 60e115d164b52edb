package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestTokensWrap checks every answer of the guard: public routes, 401
// without or with a wrong token, 403 for a read token that writes, and
// both scopes where they may go.
func TestTokensWrap(t *testing.T) {
	const admin, admin2, read = "admin-token-0123456789", "second-admin-token-xyz", "read-only-token-abcdef"
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("through")) })
	h := NewTokens([]string{admin, "", admin2}, []string{read}).Wrap(ok)
	for _, c := range []struct {
		method, path, token string
		code                int
		msg                 string // in the error
	}{
		{"GET", "/healthz", "", 200, ""},
		{"GET", "/", "", 200, ""},
		{"GET", "/ui/app.js", "", 200, ""},
		{"POST", "/", "", 401, "needs a token"},
		{"GET", "/api/status", "", 401, "needs a token"},
		{"GET", "/metrics", "", 401, "needs a token"},
		{"GET", "/api/status", "wrong-token-0123456789", 401, "not one of"},
		{"GET", "/api/status", admin[:len(admin)-1], 401, "not one of"},
		{"GET", "/api/status", read, 200, ""},
		{"GET", "/metrics", read, 200, ""},
		{"POST", "/api/seeds", read, 403, "may only read"},
		{"POST", "/api/webhooks/retry", read, 403, "may only read"},
		{"POST", "/api/seeds", admin, 200, ""},
		{"POST", "/api/seeds", admin2, 200, ""},
		{"GET", "/api/urls", admin2, 200, ""},
	} {
		req := httptest.NewRequest(c.method, c.path, nil)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.code {
			t.Errorf("%s %s with %q: %d, want %d (%s)", c.method, c.path, c.token, rec.Code, c.code, rec.Body)
			continue
		}
		if c.code == 200 {
			if rec.Body.String() != "through" {
				t.Errorf("%s %s: body %q", c.method, c.path, rec.Body)
			}
			continue
		}
		var e Error
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || !strings.Contains(e.Error, c.msg) {
			t.Errorf("%s %s: error %q, want it to mention %q", c.method, c.path, rec.Body, c.msg)
		}
		if c.code == 401 && !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Bearer ") {
			t.Errorf("%s %s: 401 without a WWW-Authenticate challenge", c.method, c.path)
		}
	}

	// Other spellings of the header.
	for _, hdr := range []string{"bearer " + admin, "Bearer  " + admin + " "} {
		req := httptest.NewRequest("POST", "/api/seeds", nil)
		req.Header.Set("Authorization", hdr)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Errorf("Authorization %q: %d", hdr, rec.Code)
		}
	}
	for _, hdr := range []string{"Basic " + admin, admin, "Bearer"} {
		req := httptest.NewRequest("GET", "/api/status", nil)
		req.Header.Set("Authorization", hdr)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 401 {
			t.Errorf("Authorization %q: %d, want 401", hdr, rec.Code)
		}
	}

	// Without tokens the guard is not there.
	none := NewTokens(nil, []string{""})
	if none.Enabled() {
		t.Fatal("empty tokens enable the guard")
	}
	rec := httptest.NewRecorder()
	none.Wrap(ok).ServeHTTP(rec, httptest.NewRequest("POST", "/api/seeds", nil))
	if rec.Code != 200 {
		t.Fatalf("no tokens: %d", rec.Code)
	}
}

// TestWhoAmI: /api/whoami names the role of the token sent, and "open"
// when the API has no tokens.
func TestWhoAmI(t *testing.T) {
	const admin, read = "admin-token-0123456789", "read-only-token-abcdef"
	ask := func(h http.Handler, tok string) string {
		t.Helper()
		req := httptest.NewRequest("GET", "/api/whoami", nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var got struct{ Role string }
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatalf("whoami with %q: %d %s", tok, rec.Code, rec.Body)
		}
		return got.Role
	}
	guarded := NewTokens([]string{admin}, []string{read}).Wrap(http.HandlerFunc(WhoAmI))
	if r := ask(guarded, admin); r != roleAdmin {
		t.Errorf("admin token: role %q", r)
	}
	if r := ask(guarded, read); r != roleRead {
		t.Errorf("read token: role %q", r)
	}
	if r := ask(NewTokens(nil, nil).Wrap(http.HandlerFunc(WhoAmI)), ""); r != roleOpen {
		t.Errorf("no tokens: role %q", r)
	}
}
