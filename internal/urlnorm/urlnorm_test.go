package urlnorm

import "testing"

func TestNormalize(t *testing.T) {
	cases := []struct{ in, want, host string }{
		{"HTTP://Example.COM", "http://example.com/", "example.com"},
		{"http://example.com:80/a#frag", "http://example.com/a", "example.com"},
		{"https://example.com:443/a?b=1", "https://example.com/a?b=1", "example.com"},
		{"https://example.com:8443/a", "https://example.com:8443/a", "example.com"},
		{"http://127.0.0.2:9000/p/1", "http://127.0.0.2:9000/p/1", "127.0.0.2"},
		{"http://[::1]:80/x", "http://[::1]/x", "::1"},
		{"  http://example.com./Path  ", "http://example.com/Path", "example.com"},
	}
	for _, c := range cases {
		got, host, err := Normalize(c.in)
		if err != nil {
			t.Errorf("Normalize(%q): %v", c.in, err)
			continue
		}
		if got != c.want || host != c.host {
			t.Errorf("Normalize(%q) = %q, %q; want %q, %q", c.in, got, host, c.want, c.host)
		}
	}
	for _, bad := range []string{"", "ftp://example.com/", "example.com/x", "mailto:a@b", "http://", "http://user:pw@example.com/", "http://exa mple.com/%zz"} {
		if _, _, err := Normalize(bad); err == nil {
			t.Errorf("Normalize(%q) accepted a bad URL", bad)
		}
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"http://a.com", "HTTPS://A.com:443/x#y", "http://[::1]:8080/", "http://%41.com/", "http://a.com/../b?c#d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, _, err := Normalize(raw)
		if err != nil {
			return
		}
		// Normalisation is idempotent: a canonical URL is its own canonical form.
		u2, _, err := Normalize(u)
		if err != nil || u2 != u {
			t.Fatalf("Normalize(%q) = %q, then %q (%v)", raw, u, u2, err)
		}
	})
}
