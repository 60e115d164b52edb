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
		// IDN hosts: UTS #46 mapping, then punycode.
		{"http://Bücher.example/", "http://xn--bcher-kva.example/", "xn--bcher-kva.example"},
		{"http://B%C3%BCcher.example/", "http://xn--bcher-kva.example/", "xn--bcher-kva.example"},
		{"http://xn--bcher-kva.example/", "http://xn--bcher-kva.example/", "xn--bcher-kva.example"},
		{"http://faß.example/", "http://xn--fa-hia.example/", "xn--fa-hia.example"},
		{"http://ＥＸＡＭＰＬＥ．com/", "http://example.com/", "example.com"},
		{"http://a_b.example/", "http://a_b.example/", "a_b.example"},
		{"http://r3---sn-abc.example/", "http://r3---sn-abc.example/", "r3---sn-abc.example"},
		// Percent-encoding: unreserved decoded, the rest upper-cased,
		// reserved characters keep their form.
		{"http://example.com/%7euser/%2f%2F/%41%2d%5F%2e", "http://example.com/~user/%2F%2F/A-_.", "example.com"},
		{"http://example.com/a%3fb?q=%7e%3d&r=%e2%82%ac", "http://example.com/a%3Fb?q=~%3D&r=%E2%82%AC", "example.com"},
		{"http://example.com/caf\u00e9 x?a b", "http://example.com/caf%C3%A9%20x?a%20b", "example.com"},
		{"http://example.com/?%zz", "http://example.com/?%25zz", "example.com"},
		{"http://example.com/!$&'()*+,;=:@[]", "http://example.com/!$&'()*+,;=:@[]", "example.com"},
		{"http://example.com/{}|^`\"<>", "http://example.com/%7B%7D%7C%5E%60%22%3C%3E", "example.com"},
		{"http://example.com/?", "http://example.com/?", "example.com"},
		// Dot segments, also escaped ones.
		{"http://example.com/a/./b/../c", "http://example.com/a/c", "example.com"},
		{"http://example.com/a/b/..", "http://example.com/a/", "example.com"},
		{"http://example.com/a/.", "http://example.com/a/", "example.com"},
		{"http://example.com/../../x", "http://example.com/x", "example.com"},
		{"http://example.com/a/%2e%2E/b/%2E/c", "http://example.com/b/c", "example.com"},
		{"http://example.com/a/..b/.c", "http://example.com/a/..b/.c", "example.com"},
		// Ports.
		{"http://example.com:8080/", "http://example.com:8080/", "example.com"},
		{"http://example.com:080/", "http://example.com/", "example.com"},
		{"https://example.com:0443/", "https://example.com/", "example.com"},
		{"http://example.com:443/", "http://example.com:443/", "example.com"},
		{"http://example.com:65535/", "http://example.com:65535/", "example.com"},
		{"http://example.com:/", "http://example.com/", "example.com"},
		// IPv6 literals in their shortest form.
		{"http://[0:0:0:0:0:0:0:1]:8080/", "http://[::1]:8080/", "::1"},
		{"http://[2001:DB8::A]/", "http://[2001:db8::a]/", "2001:db8::a"},
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
	for _, bad := range []string{"", "ftp://example.com/", "example.com/x", "mailto:a@b", "http://", "http://user:pw@example.com/", "http://exa mple.com/%zz",
		"http://example.com:0/", "http://example.com:65536/", "http://example.com:99999999999/",
		"http://[fe80::1%25eth0]/", "http://a..b/", "http://.a/", "http://xn--a.example/",
		"http://a%2fb.example/", "http://a%00b.example/", "http://a%25b.example/", "http://\u00ad/", "http://0\xff/"} {
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
