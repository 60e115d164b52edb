package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
)

// Tokens guards the HTTP API with bearer tokens of two scopes: admin
// tokens may do everything, read tokens only GET and HEAD. Without any
// token it lets everything through (the API then relies on listening on
// loopback, and on Guard to keep other sites' pages out). Tokens are kept as SHA-256 digests and every candidate is
// compared with every digest in constant time, so neither a token's
// characters nor its length, nor which scope matched, shows in the time
// an answer takes.
type Tokens struct {
	admin, read [][sha256.Size]byte
}

// NewTokens returns the guard of the given admin and read-only tokens;
// empty strings are skipped.
func NewTokens(admin, read []string) *Tokens {
	t := &Tokens{}
	for _, s := range admin {
		if s != "" {
			t.admin = append(t.admin, sha256.Sum256([]byte(s)))
		}
	}
	for _, s := range read {
		if s != "" {
			t.read = append(t.read, sha256.Sum256([]byte(s)))
		}
	}
	return t
}

// Enabled reports whether any token is set.
func (t *Tokens) Enabled() bool { return len(t.admin)+len(t.read) > 0 }

// scope of a presented token.
type scope int

const (
	scopeNone scope = iota
	scopeRead
	scopeAdmin
)

// scopeOf compares tok with every known token, in constant time.
func (t *Tokens) scopeOf(tok string) scope {
	d := sha256.Sum256([]byte(tok))
	admin, read := 0, 0
	for i := range t.admin {
		admin |= subtle.ConstantTimeCompare(d[:], t.admin[i][:])
	}
	for i := range t.read {
		read |= subtle.ConstantTimeCompare(d[:], t.read[i][:])
	}
	switch {
	case admin == 1:
		return scopeAdmin
	case read == 1:
		return scopeRead
	}
	return scopeNone
}

// public reports whether a request needs no token: liveness, and the
// dashboard's page and assets, which hold no data (the page signs in and
// sends the token with each of its API calls).
func public(r *http.Request) bool {
	p := r.URL.Path
	if p == "/healthz" {
		return true
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	return p == "/" || strings.HasPrefix(p, "/ui/")
}

// Wrap guards next: 401 without a valid token, 403 for a read token on a
// route that changes something.
func (t *Tokens) Wrap(next http.Handler) http.Handler {
	if !t.Enabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if public(r) {
			next.ServeHTTP(w, r)
			return
		}
		tok, ok := bearer(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="freshcrawl"`)
			WriteError(w, http.StatusUnauthorized, fmt.Errorf("%s %s needs a token: send the header \"Authorization: Bearer <token>\" with one of the coordinator's --api-token or --api-read-token values", r.Method, r.URL.Path))
			return
		}
		switch t.scopeOf(tok) {
		case scopeAdmin:
			next.ServeHTTP(w, withRole(r, roleAdmin))
		case scopeRead:
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				next.ServeHTTP(w, withRole(r, roleRead))
				return
			}
			WriteError(w, http.StatusForbidden, fmt.Errorf("%s %s changes the crawl: this token may only read, use an --api-token (admin) token", r.Method, r.URL.Path))
		default:
			w.Header().Set("WWW-Authenticate", `Bearer realm="freshcrawl", error="invalid_token"`)
			WriteError(w, http.StatusUnauthorized, fmt.Errorf("%s %s: the token is not one of the coordinator's --api-token or --api-read-token values", r.Method, r.URL.Path))
		}
	})
}

// The roles a request is served in: what its token may do.
const (
	roleAdmin = "admin" // an --api-token: everything
	roleRead  = "read"  // an --api-read-token: GET and HEAD only
	roleOpen  = "open"  // no tokens are set: everything, to whoever reaches the API
)

type roleKey struct{}

func withRole(r *http.Request, role string) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), roleKey{}, role))
}

// roleOf is the role Tokens.Wrap served r in: roleOpen when the API has
// no tokens (Wrap then lets every request through untouched).
func roleOf(r *http.Request) string {
	if role, ok := r.Context().Value(roleKey{}).(string); ok {
		return role
	}
	return roleOpen
}

// WhoAmI answers GET /api/whoami, {"role": "admin" | "read" | "open"}, so
// that the console offers only the actions the token it holds may
// perform. It decides nothing: Wrap refuses a read token's changes
// whatever the console shows.
func WhoAmI(w http.ResponseWriter, r *http.Request) {
	WriteJSON(w, http.StatusOK, struct {
		Role string `json:"role"`
	}{roleOf(r)})
}

// bearer is the token of an "Authorization: Bearer <token>" header.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}
