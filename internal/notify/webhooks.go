package notify

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/freshcrawl/freshcrawl/internal/seed"
	"github.com/freshcrawl/freshcrawl/store"
)

// Webhook is one webhook of the config file's `webhooks:` list. It
// receives the changes that pass all of its filters; an empty filter
// passes everything.
type Webhook struct {
	// Name appears in logs and the dead-letter list (default: the URL).
	Name string `yaml:"name"`
	// URL receives a POST per change.
	URL string `yaml:"url"`
	// Secret signs the requests (signatureHeader); SecretEnv names an
	// environment variable holding it instead, so the file need not. With
	// neither, the global --webhook-secret signs them.
	Secret    string `yaml:"secret"`
	SecretEnv string `yaml:"secret_env"`
	// Hosts are exact host names whose changes are wanted.
	Hosts []string `yaml:"hosts"`
	// Prefixes are URL prefixes whose changes are wanted.
	Prefixes []string `yaml:"prefixes"`
	// MinMagnitude is the smallest change wanted: the share of the text
	// that changed, or the numeric difference of a number (the diff's
	// magnitude).
	MinMagnitude float64 `yaml:"min_magnitude"`
}

// match reports whether ch passes w's filters.
func (w *Webhook) match(ch store.Change) bool {
	if len(w.Hosts) > 0 && !containsFold(w.Hosts, ch.Host) {
		return false
	}
	if len(w.Prefixes) > 0 {
		ok := false
		for _, p := range w.Prefixes {
			if strings.HasPrefix(ch.URL, p) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return ch.Diff.Magnitude >= w.MinMagnitude
}

func containsFold(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}

// LoadWebhooks reads the `webhooks:` list of the YAML config file at
// path; a file without it has none. getenv resolves secret_env
// (os.Getenv in production).
func LoadWebhooks(path string, getenv func(string) string) ([]Webhook, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("webhooks: %w", err)
	}
	return parseWebhooks(b, path, getenv)
}

func parseWebhooks(b []byte, file string, getenv func(string) string) ([]Webhook, error) {
	var doc map[string]yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	n, ok := doc["webhooks"]
	if !ok || n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s line %d: webhooks: want a list", file, n.Line)
	}
	var out []Webhook
	var errs []error
	for i, item := range n.Content {
		var w Webhook
		// Decoded on its own with KnownFields, so a typo ("prefix:") is
		// an error with its line, not a filter silently missing.
		raw, err := yaml.Marshal(item)
		if err == nil {
			dec := yaml.NewDecoder(bytes.NewReader(raw))
			dec.KnownFields(true)
			err = dec.Decode(&w)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s line %d: webhooks[%d]: %w", file, item.Line, i, err))
			continue
		}
		if err := w.check(getenv); err != nil {
			errs = append(errs, fmt.Errorf("%s line %d: webhooks[%d]: %w", file, item.Line, i, err))
			continue
		}
		out = append(out, w)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// check validates w and resolves its secret and name.
func (w *Webhook) check(getenv func(string) string) error {
	if w.URL == "" {
		return errors.New("url: missing")
	}
	if err := seed.CheckWebhookURL(w.URL); err != nil {
		return fmt.Errorf("url: %w", err)
	}
	if w.SecretEnv != "" {
		if w.Secret != "" {
			return errors.New("give secret or secret_env, not both")
		}
		if getenv == nil {
			getenv = os.Getenv
		}
		if w.Secret = getenv(w.SecretEnv); w.Secret == "" {
			return fmt.Errorf("secret_env: %s is not set", w.SecretEnv)
		}
	}
	if !(w.MinMagnitude >= 0) {
		return fmt.Errorf("min_magnitude: must be ≥ 0, got %v", w.MinMagnitude)
	}
	for _, p := range w.Prefixes {
		if p == "" {
			return errors.New("prefixes: an empty prefix")
		}
	}
	if w.Name == "" {
		w.Name = w.URL
	}
	return nil
}
