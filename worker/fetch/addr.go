package fetch

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// blockedPrefixes are the address ranges a crawler must never connect to on
// behalf of a URL it was handed: an attacker who can seed URLs (or who owns
// a page that redirects, or a DNS name that rebinds) would otherwise reach
// the worker's own network, the cloud metadata service or localhost
// services. The list is immutable after package initialisation.
var blockedPrefixes = mustPrefixes(
	// IPv4 (IPv4-mapped IPv6 addresses are unmapped before the check).
	"0.0.0.0/8",       // "this network"; 0.0.0.0 reaches localhost on Linux
	"10.0.0.0/8",      // RFC 1918
	"100.64.0.0/10",   // carrier-grade NAT (RFC 6598), often internal; incl. 100.100.100.200 (Alibaba metadata)
	"127.0.0.0/8",     // loopback
	"169.254.0.0/16",  // link-local, incl. 169.254.169.254 cloud metadata
	"172.16.0.0/12",   // RFC 1918
	"192.0.0.0/24",    // IETF protocol assignments (incl. 192.0.0.192 metadata on some clouds)
	"192.0.2.0/24",    // TEST-NET-1
	"192.88.99.0/24",  // deprecated 6to4 relay anycast
	"192.168.0.0/16",  // RFC 1918
	"198.18.0.0/15",   // benchmarking
	"198.51.100.0/24", // TEST-NET-2
	"203.0.113.0/24",  // TEST-NET-3
	"224.0.0.0/4",     // multicast
	"240.0.0.0/4",     // reserved, incl. 255.255.255.255 broadcast
	// IPv6.
	"::/96",             // unspecified, loopback and deprecated IPv4-compatible
	"100::/64",          // discard-only
	"2001:db8::/32",     // documentation
	"fc00::/7",          // unique local, incl. fd00:ec2::254 (AWS metadata)
	"fe80::/10",         // link-local
	"fec0::/10",         // deprecated site-local
	"ff00::/8",          // multicast
	"64:ff9b:1::/48",    // local-use NAT64 (RFC 8215)
	"::ffff:0:0:0/96",   // SIIT IPv4-translated
	"2001::/32",         // Teredo: embeds an obfuscated IPv4 address
	"2001:10::/28",      // deprecated ORCHID
	"2001:20::/28",      // ORCHIDv2
	"3fff::/20",         // documentation (RFC 9637)
	"5f00::/16",         // segment routing SIDs
	"2620:4f:8000::/48", // AS112-v6, never a web server
	"2001:2::/48",       // benchmarking
)

// nat64Prefix is the NAT64 well-known prefix (RFC 6052); a public NAT64
// gateway forwards to the IPv4 address in its last 32 bits.
var nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")

func mustPrefixes(ss ...string) []netip.Prefix {
	ps := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		ps[i] = netip.MustParsePrefix(s)
	}
	return ps
}

// IsBlockedIP reports whether a connection to ip must be refused because it
// is not a public unicast address: loopback, private (RFC 1918, unique
// local), link-local (incl. the 169.254.169.254 metadata service), CGNAT,
// unspecified, multicast, reserved or documentation ranges. IPv4-mapped IPv6
// addresses are judged by their IPv4 address, and NAT64/6to4 addresses by
// the IPv4 address they embed, so no IPv6 spelling smuggles a private IPv4
// target through. An invalid address is blocked.
func IsBlockedIP(ip netip.Addr) bool {
	if !ip.IsValid() {
		return true
	}
	ip = ip.WithZone("").Unmap()
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsUnspecified() ||
		ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() {
		return true
	}
	if ip.Is6() {
		b := ip.As16()
		if nat64Prefix.Contains(ip) {
			return IsBlockedIP(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
		}
		// 6to4 2002::/16 carries the IPv4 address in bits 16..48.
		if b[0] == 0x20 && b[1] == 0x02 {
			return IsBlockedIP(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
		}
	}
	for _, p := range blockedPrefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// vet is the dial-time check of address, the "ip:port" a socket is about
// to connect to: a *blockedError if blocked refuses it or it is not an
// address at all.
func vet(address string, blocked func(netip.AddrPort) bool) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &blockedError{addr: address}
	}
	if blocked(ap) {
		return &blockedError{addr: ap.Addr().String()}
	}
	return nil
}

// literalAddr is the address host names without a lookup: an IP literal
// (bracketed or not), or loopback for localhost names, which resolve
// nowhere else (RFC 6761).
func literalAddr(host string) (netip.Addr, bool) {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return netip.AddrFrom4([4]byte{127, 0, 0, 1}), true
	}
	ip, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return ip, err == nil
}

// HostBlocked reports whether host, an IP literal or a localhost name, is
// an address IsBlockedIP refuses. Other names are only known to be safe
// or not when they are resolved, at every connection; this lets a caller
// refuse a URL plainly when it is given rather than when it is used.
func HostBlocked(host string) bool {
	ip, ok := literalAddr(host)
	return ok && IsBlockedIP(ip)
}

// SafeDialer returns a dialer that refuses every connection to an address
// IsBlockedIP refuses, the check the Fetcher makes, for other clients that
// connect where someone else chose (webhooks). The check runs in the
// dialer's Control hook, after name resolution and for each address
// actually dialled, so neither a name that resolves (or rebinds) to a
// private address nor a literal one gets through. A refused connection's
// error satisfies BlockedAddr. A client using it must not use a proxy: the
// check would vet the proxy, not the target.
func SafeDialer(timeout time.Duration) *net.Dialer {
	blocked := func(ap netip.AddrPort) bool { return IsBlockedIP(ap.Addr()) }
	return &net.Dialer{
		Timeout:   timeout,
		KeepAlive: 30 * time.Second,
		Control:   func(_, address string, _ syscall.RawConn) error { return vet(address, blocked) },
		Resolver:  &net.Resolver{PreferGo: true},
	}
}

// BlockedAddr returns the address a connection was refused for, if err
// is (or wraps) a refusal of the address check.
func BlockedAddr(err error) (string, bool) {
	var b *blockedError
	if errors.As(err, &b) {
		return b.addr, true
	}
	return "", false
}
