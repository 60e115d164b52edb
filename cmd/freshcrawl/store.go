package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/internal/node"
	"github.com/freshcrawl/freshcrawl/store"
)

// heldBy is where to reach the coordinator holding cfg's store: --api if
// given, else the API the running coordinator recorded in the data
// directory, else http://<listen>.
func heldBy(cfg config.Config) (api, who string) {
	if cfg.API != "" {
		return cfg.APIBase(), "the coordinator at " + cfg.APIBase()
	}
	if o, ok, err := node.ReadOwner(cfg.Data); err == nil && ok && o.API != "" {
		return strings.TrimRight(o.API, "/"), fmt.Sprintf("a running coordinator (pid %d)", o.PID)
	}
	return cfg.APIBase(), "a running coordinator"
}

// readStore serves a read-only command: from the store in --data when no
// coordinator holds it, else from the API of the one that does (--api
// always uses the API). path is the API request, decoded into v; offline
// reads the store instead.
func readStore(cfg config.Config, path string, v any, offline func(*store.DB) error) error {
	if cfg.API == "" {
		db, err := openStore(cfg, true)
		if err == nil {
			defer db.Close()
			return offline(db)
		}
		if !errors.Is(err, store.ErrLocked) {
			return err
		}
	}
	api, who := heldBy(cfg)
	if err := getJSON(cfg, api+path, v); err != nil {
		if cfg.API != "" {
			return fmt.Errorf("the coordinator API at %s: %w", api, err)
		}
		return fmt.Errorf("the store in %s is held by %s, and its API at %s did not answer (give it with --api): %w", cfg.Data, who, api, err)
	}
	return nil
}

// fetchBackup writes a consistent copy of the store to path: read from the
// file when no coordinator holds it, else streamed from the API of the one
// that does. It returns where the copy came from.
func fetchBackup(cfg config.Config, path string) (string, error) {
	if cfg.API == "" {
		db, err := openStore(cfg, true)
		if err == nil {
			defer db.Close()
			err := store.WriteFileAtomic(path, func(w io.Writer) error {
				_, err := db.Backup(w)
				return err
			})
			return db.Path(), err
		}
		if !errors.Is(err, store.ErrLocked) {
			return "", err
		}
	}
	api, who := heldBy(cfg)
	resp, err := apiDo(cfg, 30*time.Minute, http.MethodGet, api+"/api/backup", "", nil)
	if err != nil {
		if cfg.API != "" {
			return "", fmt.Errorf("backup through the coordinator API at %s: %w", api, err)
		}
		return "", fmt.Errorf("the store in %s is held by %s, and its API at %s did not answer (give it with --api): %w", cfg.Data, who, api, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return "", fmt.Errorf("GET %s/api/backup: %s: %s", api, resp.Status, strings.TrimSpace(string(b)))
	}
	err = store.WriteFileAtomic(path, func(w io.Writer) error {
		n, err := io.Copy(w, resp.Body)
		if err == nil && resp.ContentLength >= 0 && n != resp.ContentLength {
			err = fmt.Errorf("the copy ended after %d of %d bytes", n, resp.ContentLength)
		}
		return err
	})
	return api + "/api/backup", err
}

func storeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Inspect the store (check)",
	}
	cmd.AddCommand(storeCheckCmd())
	return cmd
}

func storeCheckCmd() *cobra.Command {
	cfg := config.Default()
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check [FILE]",
		Short: "Verify a store: its pages, its size, every record; exit 3 if it is damaged",
		Long: `Verify the store in --data (or the store file FILE, e.g. a backup): the two
header pages and their checksums, the file size against what the last
transaction uses, the page tree, bbolt's own consistency check (every page
reachable or free, keys in order) and that every record decodes. Nothing is
written. A store held by a running coordinator is checked through a copy
taken from its API (GET /api/backup), so the check never stops the crawl.
Exit status 0: the store is sound; 3: it is damaged (restore a backup).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := setup(cmd, &cfg); err != nil {
				return err
			}
			path := filepath.Join(cfg.Data, store.FileName)
			if len(args) == 1 {
				path = args[0]
			}
			source := path
			r, err := store.Check(path)
			if errors.Is(err, store.ErrLocked) && len(args) == 0 {
				tmp, terr := os.MkdirTemp("", "freshcrawl-check-")
				if terr != nil {
					return terr
				}
				defer os.RemoveAll(tmp)
				copyPath := filepath.Join(tmp, store.FileName)
				if source, err = fetchBackup(cfg, copyPath); err != nil {
					return err
				}
				r, err = store.Check(copyPath)
				r.Path = path
			}
			if r == nil || (err != nil && !errors.Is(err, store.ErrCorrupt)) {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if jerr := printJSON(out, r); jerr != nil {
					return jerr
				}
			} else {
				printReport(out, r, source)
			}
			if err != nil {
				return checkFailed{err}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	withConfig(cmd, &cfg, clientKeys...)
	return cmd
}

// checkFailed is a damaged store found by store check: the report is
// printed already, the exit status says the rest.
type checkFailed struct{ err error }

func (c checkFailed) Error() string { return c.err.Error() }
func (c checkFailed) Unwrap() error { return c.err }

func printReport(w io.Writer, r *store.Report, source string) {
	fmt.Fprintf(w, "store     %s\n", r.Path)
	if source != r.Path {
		fmt.Fprintf(w, "checked   a consistent copy from %s\n", source)
	}
	fmt.Fprintf(w, "file      %d bytes, %d pages of %d bytes in use, transaction %d\n", r.Size, r.Pages, r.PageSize, r.TxID)
	if r.StoreID != "" {
		fmt.Fprintf(w, "identity  store %s, schema %d, coordinator fence %d\n", r.StoreID, r.Schema, r.Fence)
	}
	if len(r.Records) > 0 {
		fmt.Fprintf(w, "records   %d URLs, %d contents, %d versions, %d changes, %d hosts, %d items, %d fold marks\n",
			r.Records["urls"], r.Records["content"], r.Records["versions"], r.Records["changes"], r.Records["hosts"], r.Records["items"], r.Records["folded"])
	}
	if r.OK() {
		fmt.Fprintf(w, "result    sound (%s)\n", r.Elapsed.Round(time.Millisecond))
		return
	}
	fmt.Fprintf(w, "result    DAMAGED: %d problems\n", len(r.Errors)+r.More)
	for _, e := range r.Errors {
		fmt.Fprintf(w, "  - %s\n", e)
	}
	if r.More > 0 {
		fmt.Fprintf(w, "  (%d more)\n", r.More)
	}
	fmt.Fprintln(w, "recover   stop every process using this data directory and restore a backup (freshcrawl backup FILE makes one)")
}

func backupCmd() *cobra.Command {
	cfg := config.Default()
	cmd := &cobra.Command{
		Use:   "backup FILE",
		Short: "Write a consistent copy of the store to FILE, also while the coordinator runs",
		Long: `Write a consistent copy of the store in --data to FILE: the state of one read
transaction, so a running coordinator goes on folding while it is written.
When a coordinator holds the store, the copy is streamed from its API
(GET /api/backup; --api, or the API it recorded in the data directory). The
copy is written to a temporary file, synced, renamed into place, then checked
as store check does. To restore, stop the coordinator and put the copy in
place of freshcrawl.db in its data directory.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := setup(cmd, &cfg); err != nil {
				return err
			}
			dst := args[0]
			if abs, err := filepath.Abs(dst); err == nil {
				if live, err := filepath.Abs(filepath.Join(cfg.Data, store.FileName)); err == nil && abs == live {
					return fmt.Errorf("backup FILE must not be the store itself (%s)", live)
				}
			}
			start := time.Now()
			source, err := fetchBackup(cfg, dst)
			if err != nil {
				return err
			}
			r, err := store.Check(dst)
			if err != nil {
				return fmt.Errorf("the copy written to %s does not check: %w", dst, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "backup %s: %d bytes from %s, %d URLs, checked sound, in %s\n", dst, r.Size, source, r.Records["urls"], time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	withConfig(cmd, &cfg, clientKeys...)
	return cmd
}
