package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/coordinator"
	"github.com/freshcrawl/freshcrawl/internal/source"
	"github.com/freshcrawl/freshcrawl/store"
	"github.com/freshcrawl/freshcrawl/worker/probeparse"
)

func itemsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "items",
		Short: "Tracked items of keyword-search sources (add, list)",
	}
	cmd.AddCommand(itemsAddCmd(), itemsListCmd())
	return cmd
}

func itemsAddCmd() *cobra.Command {
	cfg := config.Default()
	var src string
	cmd := &cobra.Command{
		Use:   "add --source NAME FILE|-",
		Short: "Track items from a JSON-lines file: one {\"id\": ..., attributes...} a line",
		Long: `Add tracked items of a keyword-search source (defined under sources: in the
config file). A line is a JSON object with an "id" and the item's attributes,
e.g. {"id": "p17", "title": "Synchronizing a database", "authors": ["Cho", "Garcia-Molina"], "citations": 42}.
Bad lines are reported as FILE:LINE: problem and skipped; exit status 2 means
some lines were bad. With a coordinator running, the items go through its API.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := setup(cmd, &cfg); err != nil {
				return err
			}
			if src == "" {
				return errors.New("--source NAME is required")
			}
			if cfg.ConfigFile != "" {
				srcs, err := source.Load(cfg.ConfigFile, probeparse.CheckSelector)
				if err != nil {
					return err
				}
				var names []string
				for _, s := range srcs {
					names = append(names, s.Name)
				}
				if !slices.Contains(names, src) {
					return fmt.Errorf("source %q is not defined in %s (sources: %v)", src, cfg.ConfigFile, names)
				}
			}
			var in io.Reader = cmd.InOrStdin()
			name := "stdin"
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return fmt.Errorf("items file: %w", err)
				}
				defer f.Close()
				in, name = f, args[0]
			}
			var sum coordinator.ItemsSummary
			db, viaAPI, err := openWritable(cfg)
			switch {
			case err != nil:
			case !viaAPI:
				defer db.Close()
				sum, err = coordinator.IngestItems(db, in, name, src)
			default:
				sum, err = postItems(cfg, in, name, src)
			}
			for _, e := range sum.Errors {
				fmt.Fprintln(cmd.ErrOrStderr(), e)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "items %s for %s: %d good (%d new, %d updated), %d bad\n", name, src, sum.Good, sum.Added, sum.Updated, sum.Bad)
			if sum.Bad > 0 {
				return exitCode(2)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&src, "source", "", "name of the keyword-search source")
	withConfig(cmd, &cfg, clientKeys...)
	return cmd
}

// openWritable opens the local store, or says that the command must go
// through the coordinator's API instead: --api names a (possibly remote)
// coordinator, whose store is never written behind its back, or a running
// coordinator holds the local one (store.ErrLocked).
func openWritable(cfg config.Config) (db *store.DB, viaAPI bool, err error) {
	if cfg.API != "" {
		return nil, true, nil
	}
	db, err = store.OpenDir(cfg.Data, store.Options{Timeout: 300 * time.Millisecond})
	if errors.Is(err, store.ErrLocked) {
		return nil, true, nil
	}
	return db, false, err
}

func postItems(cfg config.Config, in io.Reader, name, src string) (coordinator.ItemsSummary, error) {
	var sum coordinator.ItemsSummary
	u := cfg.APIBase() + "/api/items?source=" + url.QueryEscape(src) + "&name=" + url.QueryEscape(name)
	resp, err := apiPost(cfg, u, "application/x-ndjson", in)
	if err != nil {
		if cfg.API != "" {
			return sum, fmt.Errorf("the coordinator API at %s did not answer: %w", cfg.APIBase(), err)
		}
		return sum, fmt.Errorf("the store in %s is held by a running coordinator, and its API at %s did not answer: %w", cfg.Data, cfg.APIBase(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return sum, fmt.Errorf("POST %s: %s: %s", u, resp.Status, strings.TrimSpace(string(b)))
	}
	return sum, json.NewDecoder(resp.Body).Decode(&sum)
}

func itemsListCmd() *cobra.Command {
	cfg := config.Default()
	var src string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list --source NAME",
		Short: "List tracked items with their last value, estimated change rate and last sync",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := setup(cmd, &cfg); err != nil {
				return err
			}
			if src == "" {
				return errors.New("--source NAME is required")
			}
			var items []coordinator.ItemView
			err := readStore(cfg, "/api/items?source="+url.QueryEscape(src), &items, func(db *store.DB) error {
				var err error
				items, err = coordinator.Items(db, src)
				return err
			})
			if err != nil {
				return err
			}
			if asJSON {
				if items == nil {
					items = []coordinator.ItemView{}
				}
				return printJSON(cmd.OutOrStdout(), items)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tVALUE\tRATE\tSYNCS\tCHANGES\tLAST SYNC")
			for _, it := range items {
				val, last := "-", "never"
				if it.Value != nil {
					val = fmt.Sprintf("%g", *it.Value)
				}
				if it.LastSync != nil {
					last = it.LastSync.Format(time.RFC3339)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", it.ID, val, config.Rate(it.Rate), it.Syncs, it.Changes, last)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&src, "source", "", "name of the keyword-search source")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	withConfig(cmd, &cfg, clientKeys...)
	return cmd
}
