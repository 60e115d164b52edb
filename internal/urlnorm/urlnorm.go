// Package urlnorm puts http(s) URLs in the canonical form the crawler
// keys URLs and hosts by. It is a package of its own, on the standard
// library alone, so that a package that only needs a URL's host (the
// scheduler naming a keyword-search source's host) does not link the seed
// parser, which validates selectors with an HTML parser.
package urlnorm

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Normalize returns the canonical form of an http(s) URL and its host name:
// scheme and host lower-cased, the default port and the fragment dropped, an
// empty path made "/". It refuses anything but absolute http and https URLs.
func Normalize(raw string) (canonical, host string, err error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", "", errors.New("empty URL")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", fmt.Errorf("unparsable URL: %w", err)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" {
		if u.Scheme == "" {
			return "", "", fmt.Errorf("URL %q has no scheme: want http:// or https://", raw)
		}
		return "", "", fmt.Errorf("URL %q: scheme %q is not http or https", raw, u.Scheme)
	}
	if u.Opaque != "" {
		return "", "", fmt.Errorf("URL %q is not hierarchical", raw)
	}
	if u.User != nil {
		return "", "", fmt.Errorf("URL %q carries credentials; put them nowhere near a seed list", raw)
	}
	host = strings.TrimRight(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return "", "", fmt.Errorf("URL %q has no host", raw)
	}
	if !strings.Contains(host, ":") && (strings.HasPrefix(host, ".") || strings.Contains(host, "..")) {
		return "", "", fmt.Errorf("URL %q: host %q has an empty label", raw, host)
	}
	port := u.Port()
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") { // IPv6 literal
		u.Host = "[" + host + "]"
	} else {
		u.Host = host
	}
	if port != "" {
		u.Host = net.JoinHostPort(host, port)
	}
	u.Fragment = ""
	u.RawFragment = ""
	if u.Path == "" {
		u.Path = "/"
		u.RawPath = ""
	}
	return u.String(), host, nil
}
