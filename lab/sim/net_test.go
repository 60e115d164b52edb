package sim

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startOrFail starts s and fails with an explanation if the environment
// cannot bind the per-host loopback addresses.
func startOrFail(t *testing.T, ctx context.Context, s *Sim) {
	t.Helper()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v\nsim needs to bind 127.0.0.2, 127.0.0.3, ...: on Linux all of 127.0.0.0/8 is loopback; in other environments add loopback aliases", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
}

func TestMultiHostListen(t *testing.T) {
	s := mustNew(t, Config{Hosts: 2, Pages: 4})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	startOrFail(t, ctx, s)

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	fetch := func(url string) (int, string) {
		t.Helper()
		resp, err := client.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("read %s: %v", url, err)
		}
		return resp.StatusCode, string(b)
	}

	urls := s.URLs()
	port := strconv.Itoa(s.Port())
	if s.Port() == 0 || urls[0] != "http://127.0.0.2:"+port+"/p/0" || urls[1] != "http://127.0.0.3:"+port+"/p/1" {
		t.Fatalf("URLs after Start: %v", urls)
	}
	for _, u := range urls {
		if code, body := fetch(u); code != 200 || !strings.Contains(body, "<style>") {
			t.Fatalf("GET %s: %d", u, code)
		}
	}
	for _, ip := range s.Hosts() {
		if code, body := fetch("http://" + ip + ":" + port + "/robots.txt"); code != 200 || body != DefaultRobots {
			t.Fatalf("robots.txt on %s: %d %q", ip, code, body)
		}
	}
	// Page 1 lives on 127.0.0.3, not on 127.0.0.2.
	if code, _ := fetch("http://127.0.0.2:" + port + "/p/1"); code != 404 {
		t.Fatalf("page 1 on host 0: %d, want 404", code)
	}

	rep := s.Truth(s.Epoch(), time.Now().Add(time.Second))
	if rep.Fetches != 4 || rep.Hosts[0].Requests != 4 || rep.Hosts[1].Requests != 3 || rep.Disallowed != 0 {
		t.Fatalf("fetches %d, host requests %d/%d, disallowed %d", rep.Fetches, rep.Hosts[0].Requests, rep.Hosts[1].Requests, rep.Disallowed)
	}

	// Cancelling the context stops serving; Close waits for it.
	cancel()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	tr.CloseIdleConnections()
	if _, err := client.Get(urls[0]); err == nil {
		t.Fatal("still serving after the context was cancelled")
	}
	if err := s.Start(t.Context()); err == nil {
		t.Fatal("Start after Close succeeded")
	}
}

func TestStartPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.3:0")
	if err != nil {
		t.Fatalf("listen on 127.0.0.3: %v (all of 127.0.0.0/8 must be loopback)", err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	s := mustNew(t, Config{Hosts: 2, Pages: 2, Port: port})
	err = s.Start(t.Context())
	if err == nil {
		_ = s.Close()
		t.Fatal("Start succeeded on a port taken on 127.0.0.3")
	}
	if !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), "127.0.0.3") {
		t.Fatalf("error %v should wrap EADDRINUSE and name 127.0.0.3", err)
	}
	// The first address must have been released again.
	probe, err := net.Listen("tcp4", "127.0.0.2:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("127.0.0.2:%d not released after the failed Start: %v", port, err)
	}
	probe.Close()
	if err := s.Close(); err != nil {
		t.Fatalf("Close after failed Start: %v", err)
	}
}
