package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: being written; replaced by the real command.
func benchScheduleCmd() *cobra.Command {
	return &cobra.Command{Use: "schedule", RunE: func(*cobra.Command, []string) error { return errors.New("not built yet") }}
}
