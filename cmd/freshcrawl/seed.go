package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/coordinator"
	"github.com/freshcrawl/freshcrawl/internal/seed"
	"github.com/freshcrawl/freshcrawl/store"
)

func seedCmd() *cobra.Command {
	cfg := config.Default()
	cmd := &cobra.Command{
		Use:   "seed FILE|-",
		Short: "Add or update URLs from a seed file (one URL or JSON object a line)",
		Long: `Seed URLs from FILE (or - for standard input). A line is a URL, or a JSON
object {"url": ..., "weight": 1.0, "selector": "css", "mode": "freshness"|"capture",
"ignore": {"selectors": [...], "patterns": [...], "min_change": 0.01}, "period": "1h", "polls": 2}.
Blank lines and # comments are skipped. Bad lines are reported as FILE:LINE: problem
and skipped; every good line is stored. Exit status 2 means some lines were bad.

With no coordinator running, the store in --data is written directly; when a
coordinator holds it, the seeds are streamed to its API (--api, default http://<listen>).
A seed whose webhook names a private, loopback or link-local address is a bad
line unless webhooks may go there: --allow-private-webhooks here when the store
is written directly, the coordinator's own setting otherwise.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := setup(cmd, &cfg); err != nil {
				return err
			}
			return seedOffline(cmd, cfg, args[0])
		},
	}
	withConfig(cmd, &cfg, slices.Concat(clientKeys, []string{"allow-private-webhooks"})...)
	return cmd
}

// progressEvery is how often a seed run without a terminal reports.
const progressEvery = 10 * time.Second

// countingReader counts bytes for the progress bar.
type countingReader struct {
	r   io.Reader
	bar *progressbar.ProgressBar
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.bar != nil && n > 0 {
		_ = c.bar.Add(n)
	}
	return n, err
}

// seedOffline seeds into the store directly, or through the running
// coordinator's API when the store is locked by it.
func seedOffline(cmd *cobra.Command, cfg config.Config, path string) error {
	var in io.Reader
	name := path
	size := int64(-1)
	if path == "-" {
		in, name = cmd.InOrStdin(), "stdin"
	} else {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("seed file: %w", err)
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil {
			size = st.Size()
		}
		in = f
	}
	stderr := cmd.ErrOrStderr()
	var bar *progressbar.ProgressBar
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		bar = progressbar.NewOptions64(size,
			progressbar.OptionSetWriter(stderr), progressbar.OptionSetDescription("seeding "+name),
			progressbar.OptionShowBytes(true), progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish())
	}
	in = bufio.NewReaderSize(&countingReader{r: in, bar: bar}, 256*1024)

	db, viaAPI, err := openWritable(cfg)
	var sum coordinator.SeedSummary
	switch {
	case err != nil:
	case !viaAPI:
		defer db.Close()
		// Without a terminal (a log, a pipe), a long run says where it is
		// every progressEvery instead of drawing a bar: lines read while
		// they are sorted, then URLs stored.
		o := coordinator.SortedSeedOptions{AllowPrivateWebhooks: cfg.AllowPrivateWebhooks, OnBad: func(e *seed.LineError) {
			if bar != nil {
				_ = bar.Clear()
			}
			fmt.Fprintln(stderr, e.Error())
		}}
		if bar == nil {
			start, last, stored := time.Now(), time.Now(), 0
			say := func(format string, args ...any) {
				if time.Since(last) >= progressEvery {
					last = time.Now()
					fmt.Fprintf(stderr, "seeding %s: "+format+" in %s\n", append(append([]any{name}, args...), time.Since(start).Round(time.Second))...)
				}
			}
			o.OnRead = func(lines int) { say("%d lines read and sorted", lines) }
			o.OnBatch = func(batch []store.URL) {
				stored += len(batch)
				say("%d URLs stored", stored)
			}
		}
		sum, err = coordinator.IngestSeedsSorted(cmd.Context(), db, in, name, o)
		if err != nil && cmd.Context().Err() != nil {
			// Stopped (ctrl-C, SIGTERM): what was committed stays.
			err = fmt.Errorf("seeding %s stopped: %d good lines read, %d URLs stored (%d new, %d updated); seeding the file again stores the rest: %w",
				name, sum.Good, sum.Added+sum.Updated, sum.Added, sum.Updated, err)
		}
	default:
		// A coordinator holds the store (or --api names one): stream the
		// file to its API.
		sum, err = seedViaAPI(cfg, in, name)
		for _, e := range sum.Errors {
			fmt.Fprintln(stderr, e)
		}
	}
	if bar != nil {
		_ = bar.Finish()
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "seeded %s: %d good lines (%d new, %d updated), %d bad\n", name, sum.Good, sum.Added, sum.Updated, sum.Bad)
	if sum.Bad > 0 {
		if len(sum.Errors) < sum.Bad {
			fmt.Fprintf(stderr, "(%d more bad lines not listed)\n", sum.Bad-len(sum.Errors))
		}
		return exitCode(2)
	}
	return nil
}

func seedViaAPI(cfg config.Config, in io.Reader, name string) (coordinator.SeedSummary, error) {
	var sum coordinator.SeedSummary
	u := cfg.APIBase() + "/api/seeds?name=" + url.QueryEscape(name)
	resp, err := apiPost(cfg, u, "application/x-ndjson", in)
	if err != nil {
		if cfg.API != "" {
			return sum, fmt.Errorf("the coordinator API at %s did not answer: %w", cfg.APIBase(), err)
		}
		return sum, fmt.Errorf("the store in %s is locked by a running coordinator, and its API at %s did not answer: %w", cfg.Data, cfg.APIBase(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return sum, fmt.Errorf("POST %s: %s: %s", u, resp.Status, strings.TrimSpace(string(b)))
	}
	if err := json.NewDecoder(resp.Body).Decode(&sum); err != nil {
		return sum, fmt.Errorf("POST %s: decode summary: %w", u, err)
	}
	return sum, nil
}

func getJSON(cfg config.Config, u string, v any) error {
	resp, err := apiDo(cfg, 10*time.Second, http.MethodGet, u, "", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return readAPIError("GET", u, resp)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func statusCmd() *cobra.Command {
	cfg := config.Default()
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show queue depth, workers, fetch and change rates, errors and the model's freshness",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := setup(cmd, &cfg); err != nil {
				return err
			}
			var s coordinator.Status
			if err := getJSON(cfg, cfg.APIBase()+"/api/status", &s); err != nil {
				return fmt.Errorf("status: is a coordinator running with its API at %s? %w", cfg.APIBase(), err)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), s)
			}
			printStatus(cmd.OutOrStdout(), s)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	withConfig(cmd, &cfg, clientKeys[1:]...) // no data: status needs a running coordinator
	return cmd
}

func printStatus(w io.Writer, s coordinator.Status) {
	if s.Version != "" {
		fmt.Fprintf(w, "version        %s\n", s.Version)
	}
	role := s.Role
	if l := s.Lease; l != nil {
		role += fmt.Sprintf(" coordinator %s, lease fence %d", l.Holder, l.Fence)
	}
	fmt.Fprintf(w, "role           %s\n", role)
	if c := s.NATS; c != nil {
		fmt.Fprintf(w, "nats           %s %s since %s, %d reconnects", c.State, c.URL, c.Since.Format(time.RFC3339), c.Reconnects)
		if c.LastError != "" {
			fmt.Fprintf(w, ", last error: %s", c.LastError)
		}
		fmt.Fprintln(w)
	}
	if f := s.Store.FoldError; f != nil {
		fmt.Fprintf(w, "store          %s: folds failing since %s: %s\n", s.Store.Path, f.Since.Format(time.RFC3339), f.Err)
	} else if s.Store.Path != "" {
		fmt.Fprintf(w, "store          %s\n", s.Store.Path)
	}
	fmt.Fprintf(w, "queue          pending %d, awaiting ack %d, redelivered %d, results to fold %d\n", s.Queue.Pending, s.Queue.AckPending, s.Queue.Redelivered, s.Queue.Results)
	fmt.Fprintf(w, "in flight      %d of at most %d\n", s.InFlight, s.MaxInFlight)
	fmt.Fprintf(w, "workers        %d seen in the last minute %v\n", len(s.Workers), s.Workers)
	fmt.Fprintf(w, "urls           %d on %d hosts (%d disallowed by robots.txt, %d gone)\n", s.URLs, s.Hosts, s.Disallowed, s.Gone)
	fmt.Fprintf(w, "fetches        %d total, %d in the last minute\n", s.Fetches, s.FetchesPerMin)
	fmt.Fprintf(w, "changes        %d total, %d in the last minute\n", s.Changes, s.ChangesPerMin)
	fmt.Fprintf(w, "failed tasks   %d\n", s.Failed)
	if len(s.Errors) > 0 {
		kinds := make([]string, 0, len(s.Errors))
		for k := range s.Errors {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		parts := make([]string, len(kinds))
		for i, k := range kinds {
			parts[i] = fmt.Sprintf("%s %d", k, s.Errors[k])
		}
		fmt.Fprintf(w, "errors         %s\n", strings.Join(parts, ", "))
	} else {
		fmt.Fprintf(w, "errors         none\n")
	}
	fmt.Fprintf(w, "policy         %s, budget %s, in use %s, unabsorbed %s\n", s.Policy, config.Rate(round3(s.Budget)), config.Rate(round3(s.BudgetInUse)), config.Rate(round3(s.Unabsorbed)))
	fmt.Fprintf(w, "model          freshness %.3f now (plan %.3f, 90%%: %.3f – %.3f), age %s, given up %d, hosts at cap %d\n", s.ModelFreshness, s.PlanFreshness, s.ModelFreshnessLo, s.ModelFreshnessHi, time.Duration(s.ModelAge*float64(time.Second)).Round(time.Millisecond), s.GivenUp, s.CappedHosts)
	if g := s.Signals; g != (coordinator.SignalStatus{}) {
		fmt.Fprintf(w, "signals        sitemaps %d fetches, %d entries; feeds %d fetches, %d entries (since the coordinator started)\n", g.SitemapFetches, g.SitemapEntries, g.FeedFetches, g.FeedEntries)
	}
	for _, p := range s.Probes {
		l := p.Last
		fmt.Fprintf(w, "source         %s (%s): %d rounds; last: %d items, %d queries, %d requests (%d by id), coverage %.3f, speedup %.2f, model content freshness %.3g\n",
			p.Source, p.Policy, p.Rounds, l.Items, l.Queries, l.Requests, l.ByID, l.CoverageRatio, l.SpeedupRatio, l.ContentFreshness)
	}
	if s.CaptureURLs > 0 {
		fmt.Fprintf(w, "capture        %d URLs, %d still learning, expected change recall %.3f\n", s.CaptureURLs, s.CaptureLearning, s.CaptureRecall)
		for _, c := range s.Capture {
			period := c.Period
			switch {
			case period == "":
				period = "unknown yet"
			case c.Detected:
				period += fmt.Sprintf(" (detected, strength %.2f over %d changes in %d polls)", c.Strength, c.Observations, c.PolledTimes)
			default:
				period += fmt.Sprintf(" (configured, strength %.2f over %d changes in %d polls)", c.Strength, c.Observations, c.PolledTimes)
			}
			state := fmt.Sprintf("polls at %v, expected recall %.3f, replayed on exactly timed updates %.3f", c.Phases, c.ExpectedRecall, c.ReplayedRecall)
			if c.Learning {
				state = fmt.Sprintf("learning: %d changes seen, %d exactly timed", c.ExactUpdates+c.IntervalOnly, c.ExactUpdates)
			}
			fmt.Fprintf(w, "  %s  period %s, %d polls/period, %s\n", c.URL, period, c.Polls, state)
		}
	}
	if h := s.Webhooks; h != nil {
		queued := 0
		for _, n := range h.Queued {
			queued += n
		}
		fmt.Fprintf(w, "webhooks       %d configured, %d delivered, %d failed attempts, %d queued, %d dead letters\n", len(h.Webhooks), h.Delivered, h.Failed, queued, h.Dead)
		for _, d := range h.DeadLetters {
			fmt.Fprintf(w, "  dead letter  %s  event %s to %s, %d attempts, last: %s (retry: POST /api/webhooks/retry {\"ids\":[\"%s\"]})\n", d.ID, d.EventID, d.URL, d.Attempts, d.LastErr, d.ID)
		}
		if more := h.Dead - len(h.DeadLetters); more > 0 {
			fmt.Fprintf(w, "  … and %d more dead letters (GET /api/webhooks)\n", more)
		}
	}
}

func versionsCmd() *cobra.Command {
	cfg := config.Default()
	var show uint64
	cmd := &cobra.Command{
		Use:   "versions URL",
		Short: "List the stored versions of a capture URL (--show N prints one)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := setup(cmd, &cfg); err != nil {
				return err
			}
			u, _, err := seed.Normalize(args[0])
			if err != nil {
				return err
			}
			q := "/api/versions?url=" + url.QueryEscape(u)
			if show > 0 {
				var v store.Version
				if err := versionsGet(cfg, q+fmt.Sprintf("&show=%d", show), &v, func(db *store.DB) error {
					var err error
					v, err = db.Version(u, show)
					return err
				}); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "version %d of %s, captured %s, appeared in (%s, %s]\n\n%s\n", v.Seq, v.URL, v.CapturedAt.Format(time.RFC3339), v.After.Format(time.RFC3339), v.Before.Format(time.RFC3339), v.Text)
				return nil
			}
			var vs []store.Version
			if err := versionsGet(cfg, q, &vs, func(db *store.DB) error {
				var err error
				vs, err = db.Versions(u)
				return err
			}); err != nil {
				return err
			}
			for _, v := range vs {
				exact := ""
				if v.Exact {
					exact = " (exact, Last-Modified)"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%4d  captured %s  appeared in (%s, %s]%s  %s\n", v.Seq, v.CapturedAt.Format(time.RFC3339), v.After.Format(time.RFC3339), v.Before.Format(time.RFC3339), exact, v.Hash[:min(12, len(v.Hash))])
			}
			if len(vs) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "no versions stored for %s\n", u)
			}
			return nil
		},
	}
	cmd.Flags().Uint64Var(&show, "show", 0, "print version N with its text")
	withConfig(cmd, &cfg, clientKeys...)
	return cmd
}

// versionsGet reads the store, or the API of the coordinator holding it.
func versionsGet(cfg config.Config, path string, v any, offline func(*store.DB) error) error {
	return readStore(cfg, path, v, offline)
}

// round3 keeps three significant digits for display.
func round3(v float64) float64 {
	if v == 0 {
		return 0
	}
	p := math.Pow(10, 2-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}
