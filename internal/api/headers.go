package api

import "net/http"

// cspPolicy is the Content-Security-Policy of every answer of the HTTP API,
// the console's page and assets included: everything the console needs
// comes from its own origin (the charts are SVG, the favicon a data: URL),
// nothing may frame it, and no form may post anywhere else, so a page
// that does get drawn in this origin can neither load a script from
// another site nor send a typed-in token to one.
const cspPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; frame-src 'none'"

// SecureHeaders sets the headers every answer carries before next runs,
// so that answers written by any handler, errors and 404s included, have
// them. A handler may tighten the policy (the raw body adds sandbox) but
// should keep cspPolicy's directives.
func SecureHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", cspPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}
