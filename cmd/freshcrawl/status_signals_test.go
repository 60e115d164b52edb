package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/freshcrawl/freshcrawl/coordinator"
)

// status shows sitemap and feed fetches apart, once there are any.
func TestPrintStatusShowsSignals(t *testing.T) {
	var out bytes.Buffer
	printStatus(&out, coordinator.Status{})
	if strings.Contains(out.String(), "signals") {
		t.Errorf("a status without signal fetches shows them:\n%s", out.String())
	}
	out.Reset()
	printStatus(&out, coordinator.Status{Signals: coordinator.SignalStatus{SitemapFetches: 3, SitemapEntries: 120, FeedFetches: 2, FeedEntries: 40}})
	if want := "signals        sitemaps 3 fetches, 120 entries; feeds 2 fetches, 40 entries"; !strings.Contains(out.String(), want) {
		t.Errorf("status lacks %q:\n%s", want, out.String())
	}
}
