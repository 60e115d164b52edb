package fetch

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"
)

func TestIsBlockedIP(t *testing.T) {
	blocked := []string{
		"127.0.0.1", "127.255.255.254", "10.1.2.3", "172.16.0.1", "172.31.255.255",
		"192.168.1.1", "169.254.169.254", "169.254.0.1", "100.64.0.1", "100.100.100.200",
		"0.0.0.0", "0.1.2.3", "255.255.255.255", "224.0.0.1", "240.0.0.1", "192.0.0.192",
		"::", "::1", "fc00::1", "fd00:ec2::254", "fe80::1", "fe80::1%eth0", "ff02::1",
		"::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:10.0.0.1", "::127.0.0.1",
		"64:ff9b::a9fe:a9fe", // NAT64 of 169.254.169.254
		"64:ff9b::7f00:1",    // NAT64 of 127.0.0.1
		"2002:7f00:1::1",     // 6to4 of 127.0.0.1
		"2002:c0a8:101::1",   // 6to4 of 192.168.1.1
		"2001:db8::1",
	}
	public := []string{
		"8.8.8.8", "1.1.1.1", "93.184.216.34", "172.32.0.1", "172.15.255.255", "100.128.0.1",
		"192.169.0.1", "2606:4700:4700::1111", "2001:4860:4860::8888", "::ffff:8.8.8.8",
		"64:ff9b::808:808", // NAT64 of 8.8.8.8
		"2002:808:808::1",  // 6to4 of 8.8.8.8
	}
	for _, s := range blocked {
		if !IsBlockedIP(netip.MustParseAddr(s)) {
			t.Errorf("IsBlockedIP(%s) = false, want true", s)
		}
	}
	for _, s := range public {
		if IsBlockedIP(netip.MustParseAddr(s)) {
			t.Errorf("IsBlockedIP(%s) = true, want false", s)
		}
	}
	if !IsBlockedIP(netip.Addr{}) {
		t.Error("the zero Addr must be blocked")
	}
}

func TestHostBlocked(t *testing.T) {
	for host, want := range map[string]bool{
		"169.254.169.254": true, "127.0.0.1": true, "[::1]": true, "::1": true, "fe80::1%eth0": true,
		"localhost": true, "api.localhost": true, "10.0.0.1": true,
		"8.8.8.8": false, "a.example": false, "[2606:4700:4700::1111]": false, "": false,
	} {
		if got := HostBlocked(host); got != want {
			t.Errorf("HostBlocked(%q) = %v, want %v", host, got, want)
		}
	}
}

// TestSafeDialerRefusesLoopback dials a real listener on loopback, by
// address and by name: both are refused at connect, with the address.
func TestSafeDialerRefusesLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for _, target := range []string{ln.Addr().String(), net.JoinHostPort("localhost", port)} {
		c, err := SafeDialer(5*time.Second).DialContext(context.Background(), "tcp4", target)
		if err == nil {
			c.Close()
			t.Fatalf("dial %s: connected, want refused", target)
		}
		if addr, ok := BlockedAddr(err); !ok || addr != "127.0.0.1" {
			t.Fatalf("dial %s: %v; BlockedAddr = %q, %v, want 127.0.0.1", target, err, addr, ok)
		}
	}
	if _, ok := BlockedAddr(errors.New("connection refused")); ok {
		t.Fatal("BlockedAddr of another error reports a refusal")
	}
}
