package bench

import (
	"fmt"
	"os"

	"github.com/freshcrawl/freshcrawl/config"
)

// crawlerConfig is the configuration of a crawler run against an in-process
// sim: a fresh data directory (removed by cleanup), embedded NATS and the
// API on free loopback ports, and private addresses allowed because the
// simulated web lives on loopback.
func crawlerConfig(prefix string) (config.Config, func(), error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return config.Config{}, nil, fmt.Errorf("bench: data directory: %w", err)
	}
	cfg := config.Default()
	cfg.Data, cfg.NATSListen, cfg.Listen = dir, "127.0.0.1:-1", "127.0.0.1:0"
	cfg.LogLevel = "warn"
	cfg.AllowPrivate = true
	return cfg, func() { os.RemoveAll(dir) }, nil
}
