package api

import (
	"strings"
	"testing"

	"github.com/freshcrawl/freshcrawl/internal/seed"
	"github.com/freshcrawl/freshcrawl/store"
)

// TestImportScreensSeedWebhooks: an import line whose webhook is the
// cloud metadata service is refused, naming the field, as a seed line
// is; with private webhooks allowed it passes.
func TestImportScreensSeedWebhooks(t *testing.T) {
	line := func() *store.Line {
		return &store.Line{URL: store.URL{URL: "https://a.example/", Webhook: "http://169.254.169.254/latest/meta-data/"}}
	}
	if err := LineChecker(seed.Parser{})(line()); err == nil || !strings.Contains(err.Error(), `field "webhook"`) {
		t.Errorf("CheckLine: %v, want the webhook refused", err)
	}
	if err := LineChecker(seed.Parser{AllowPrivateWebhooks: true})(line()); err != nil {
		t.Errorf("allowed: %v", err)
	}
	if err := LineChecker(seed.Parser{})(&store.Line{URL: store.URL{URL: "https://a.example/", Webhook: "https://hooks.example/x"}}); err != nil {
		t.Errorf("a public webhook: %v", err)
	}
}
