package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: being written; replaced by the real command.
func benchThroughputCmd() *cobra.Command {
	return &cobra.Command{Use: "throughput", RunE: func(*cobra.Command, []string) error { return errors.New("not built yet") }}
}
