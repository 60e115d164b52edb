package main

import (
	"bufio"
	"bytes"
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
	"github.com/freshcrawl/freshcrawl/internal/api"
	"github.com/freshcrawl/freshcrawl/internal/seed"
	"github.com/freshcrawl/freshcrawl/store"
)

// readFallback answers a read from the coordinator's API (heldBy), or,
// when none answers, from the store in --data (opened writable if no
// coordinator holds it, so an old store gets its indexes; else read-only).
func readFallback(cfg config.Config, path string, v any, offline func(*store.DB) error) error {
	base, _ := heldBy(cfg)
	err := getJSON(cfg, base+path, v)
	if err == nil {
		return nil
	}
	var apiErr *apiError
	if errors.As(err, &apiErr) || cfg.API != "" {
		return err // the coordinator answered, or an explicit --api
	}
	db, derr := store.OpenDir(cfg.Data, store.Options{Timeout: 300 * time.Millisecond})
	if derr != nil {
		if db, derr = openStore(cfg, true); derr != nil {
			return fmt.Errorf("API: %v; store: %w", err, derr)
		}
	}
	defer db.Close()
	return offline(db)
}

// apiError is an answer of the coordinator that is not 200.
type apiError struct {
	method, url, status, msg string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s %s: %s: %s", e.method, e.url, e.status, e.msg)
}

func readAPIError(method, u string, resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	msg := strings.TrimSpace(string(b))
	var e api.Error
	if json.Unmarshal(b, &e) == nil && e.Error != "" {
		msg = e.Error
	}
	return &apiError{method: method, url: u, status: resp.Status, msg: msg}
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func urlsCmd() *cobra.Command {
	cfg := config.Default()
	var q api.ListQuery
	var all, asJSON bool
	cmd := &cobra.Command{
		Use:   "urls",
		Short: "List URLs: filter by host, prefix, text, mode and state, sort, page",
		Long: `List the crawl's URLs, a page at a time (--limit, default 50). The last line
says how to get the next page (--after CURSOR); --all prints every page.

States: paused (by the operator), gone (410, or 404 for --gone-after; back
when seeded again or resumed), disallowed (robots.txt, or robots.txt
unreachable), failed (the last fetch attempt failed), given up (the plan
gives it no fetches; explored only), due (its next fetch time has passed)
and scheduled (waiting for it). Sorts:
url, host, rate, next_due, changes, last_change, errors, weight (--desc for
largest first). Without a running coordinator the store is read directly;
"given up" then cannot be told.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := setup(cmd, &cfg); err != nil {
				return err
			}
			if q.Host != "" {
				q.Host = strings.ToLower(q.Host)
			}
			out := cmd.OutOrStdout()
			var tw *tabwriter.Writer
			if !asJSON {
				tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "STATE\tRATE\tINTERVAL\tNEXT DUE\tFETCHES\tCHANGES\tERRORS\tURL")
			}
			for {
				var p api.ListPage
				if err := readFallback(cfg, "/api/urls?"+q.Values().Encode(), &p, func(db *store.DB) error {
					var err error
					p, err = api.List(db, nil, q)
					return err
				}); err != nil {
					return err
				}
				if asJSON {
					if err := printJSON(out, p); err != nil {
						return err
					}
				} else {
					now := time.Now()
					for _, r := range p.URLs {
						next := "-"
						switch {
						case r.InFlight:
							next = "fetching"
						case !r.NextDue.IsZero():
							next = r.NextDue.Sub(now).Round(time.Second).String()
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", r.State, config.Rate(round3(r.Rate)), r.Interval.Round(time.Millisecond), next, r.Fetches, r.Changes, r.Errors, r.URL)
					}
				}
				if p.Next == "" || !all {
					if tw != nil {
						if err := tw.Flush(); err != nil {
							return err
						}
						switch {
						case p.Next != "":
							fmt.Fprintf(cmd.ErrOrStderr(), "more: --after %s\n", p.Next)
						case p.Total >= 0:
							fmt.Fprintf(cmd.ErrOrStderr(), "%d URLs match\n", p.Total)
						}
					}
					return nil
				}
				q.After = p.Next
			}
		},
	}
	f := cmd.Flags()
	f.StringVar(&q.Host, "host", "", "only URLs of this host")
	f.StringVar(&q.Prefix, "prefix", "", "only URLs starting with this prefix")
	f.StringVar(&q.Search, "q", "", "only URLs containing this text (case-insensitive)")
	f.StringVar(&q.Mode, "mode", "", "only URLs in this mode: freshness or capture")
	f.StringVar(&q.State, "state", "", "only URLs in this state: "+strings.Join(api.States, ", "))
	f.StringVar(&q.Sort, "sort", "url", "order: "+strings.Join(store.Sorts, ", "))
	f.BoolVar(&q.Desc, "desc", false, "largest first")
	f.IntVar(&q.Limit, "limit", 50, fmt.Sprintf("URLs a page, 1..%d", store.MaxLimit))
	f.StringVar(&q.After, "after", "", "the cursor a previous page printed")
	f.BoolVar(&all, "all", false, "print every page")
	f.BoolVar(&asJSON, "json", false, "print each page as JSON")
	withConfig(cmd, &cfg, clientKeys...)
	return cmd
}

func urlCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "url",
		Short: "One URL or a selection: show, pause, resume, delete, set",
	}
	cmd.AddCommand(urlShowCmd(), urlOpCmd("pause"), urlOpCmd("resume"), urlOpCmd("delete"), urlOpCmd("set"))
	return cmd
}

func urlShowCmd() *cobra.Command {
	cfg := config.Default()
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show URL",
		Short: "Everything about a URL: state, estimate with its 90% interval, schedule, fetches, changes, versions, copy",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := setup(cmd, &cfg); err != nil {
				return err
			}
			var d api.Detail
			if err := readFallback(cfg, "/api/url/show?url="+url.QueryEscape(args[0]), &d, func(db *store.DB) error {
				var err error
				d, err = api.Show(db, nil, args[0])
				return err
			}); err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), d)
			}
			printDetail(cmd.OutOrStdout(), d)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	withConfig(cmd, &cfg, clientKeys...)
	return cmd
}

func when(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Format(time.RFC3339)
}

func printDetail(w io.Writer, d api.Detail) {
	r := d.Record
	fmt.Fprintf(w, "%s\n", r.URL)
	fmt.Fprintf(w, "state        %s\n", d.State)
	fmt.Fprintf(w, "host         %s, mode %s, weight %g", r.Host, r.Mode, r.Weight)
	if r.Selector != "" {
		fmt.Fprintf(w, ", selector %q", r.Selector)
	}
	if r.KeepRaw {
		fmt.Fprint(w, ", keeps raw body")
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "change rate  %s (90%%: %s – %s)\n", config.Rate(round3(r.Rate)), config.Rate(round3(d.RateLo)), config.Rate(round3(d.RateHi)))
	iv, next := r.Interval, r.NextDue
	if s := d.Schedule; s != nil {
		iv, next = s.Interval, s.NextDue
		if s.InFlight {
			fmt.Fprintln(w, "fetch        in flight")
		}
	}
	fmt.Fprintf(w, "interval     %s, next due %s\n", iv.Round(time.Millisecond), when(next))
	fmt.Fprintf(w, "fetches      %d (%d not modified, %d errors), last %s", r.Fetches, r.NotModified, r.Errors, when(r.LastFetch))
	if r.LastStatus != 0 {
		fmt.Fprintf(w, ", HTTP %d", r.LastStatus)
	}
	if r.LastErr != "" {
		fmt.Fprintf(w, ": %s", r.LastErr)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "changes      %d, last %s\n", r.Changes, when(r.LastChange))
	fmt.Fprintf(w, "copy         %d characters of text", d.Copy.Length)
	if raw := d.Copy.Raw; raw != nil {
		fmt.Fprintf(w, ", raw body %d bytes (%s)", raw.Size, raw.ContentType)
	}
	fmt.Fprintln(w)
	if len(d.Fetches) > 0 {
		fmt.Fprintln(w, "\nfetch history (newest last)")
		for _, f := range d.Fetches {
			fmt.Fprintf(w, "  %s  %-12s %3d  %8s  %7d bytes  %s\n", f.At.Format(time.RFC3339), f.Outcome, f.Status, f.Duration.Round(time.Millisecond), f.Bytes, f.ErrKind)
		}
	}
	if len(d.Changes) > 0 {
		fmt.Fprintln(w, "\nchanges (newest first)")
		for _, c := range d.Changes {
			fmt.Fprintf(w, "  #%d  %s  +%d -%d lines, magnitude %.3g\n", c.Seq, c.At.Format(time.RFC3339), c.Diff.LinesAdded, c.Diff.LinesRemoved, c.Diff.Magnitude)
			for _, l := range strings.Split(strings.TrimRight(c.Diff.Preview, "\n"), "\n") {
				if l != "" {
					fmt.Fprintf(w, "      %s\n", l)
				}
			}
		}
	}
	if len(d.Versions) > 0 {
		fmt.Fprintf(w, "\n%d versions (freshcrawl versions %s)\n", len(d.Versions), r.URL)
	}
}

// selectionFlags are the bulk selection of url pause|resume|delete|set.
type selectionFlags struct {
	host, prefix, file string
}

func (s *selectionFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&s.host, "host", "", "every URL of this host")
	cmd.Flags().StringVar(&s.prefix, "prefix", "", "every URL starting with this prefix")
	cmd.Flags().StringVar(&s.file, "file", "", "the URLs listed in FILE (one a line, - for stdin; # comments)")
}

// selection builds the Selection of the arguments and flags; file lines
// that are not URLs are reported as FILE:LINE.
func (s *selectionFlags) selection(cmd *cobra.Command, args []string) (api.Selection, error) {
	sel := api.Selection{URLs: append([]string(nil), args...), Host: s.host, Prefix: s.prefix}
	if s.file != "" {
		var in io.Reader = cmd.InOrStdin()
		name := "stdin"
		if s.file != "-" {
			f, err := os.Open(s.file)
			if err != nil {
				return sel, fmt.Errorf("URL file: %w", err)
			}
			defer f.Close()
			in, name = f, s.file
		}
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 0, 64*1024), seed.MaxLine)
		line := 0
		var bad []string
		for sc.Scan() {
			line++
			t := strings.TrimSpace(sc.Text())
			if t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			if _, _, err := seed.Normalize(t); err != nil {
				bad = append(bad, fmt.Sprintf("%s:%d: %v", name, line, err))
				continue
			}
			sel.URLs = append(sel.URLs, t)
		}
		if err := sc.Err(); err != nil {
			return sel, fmt.Errorf("read %s: %w", name, err)
		}
		if len(bad) > 0 {
			return sel, errors.New(strings.Join(bad, "\n"))
		}
	}
	if len(sel.URLs) == 0 && sel.Host == "" && sel.Prefix == "" {
		return sel, errors.New("name URLs as arguments, or select them with --host, --prefix or --file")
	}
	return sel, nil
}

func urlOpCmd(op string) *cobra.Command {
	cfg := config.Default()
	var sel selectionFlags
	var purge bool
	var weight float64
	var selector, ignore, mode string
	var keepRaw bool
	short := map[string]string{
		"pause":  "Stop fetching URLs (they stay in the store and schedule, with no share of the budget)",
		"resume": "Fetch paused URLs again",
		"delete": "Take URLs off the schedule and the task queue; their history stays unless --purge",
		"set":    "Change seed fields of URLs: --weight, --selector, --ignore, --mode, --keep-raw",
	}[op]
	cmd := &cobra.Command{
		Use:   op + " [URL...]",
		Short: short,
		Long: short + `.

Select URLs as arguments, with --host, --prefix or --file (their union).
With a coordinator running (or --api), the change goes through its API and
takes effect in its live schedule at once; with none, the store in --data is
changed directly.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := setup(cmd, &cfg); err != nil {
				return err
			}
			s, err := sel.selection(cmd, args)
			if err != nil {
				return err
			}
			req := api.SetRequest{Selection: s}
			if op == "set" {
				f := cmd.Flags()
				if f.Changed("weight") {
					req.Weight = &weight
				}
				if f.Changed("selector") {
					req.Selector = &selector
				}
				if f.Changed("mode") {
					req.Mode = &mode
				}
				if f.Changed("keep-raw") {
					req.KeepRaw = &keepRaw
				}
				if f.Changed("ignore") {
					var rules store.IgnoreRules
					dec := json.NewDecoder(strings.NewReader(ignore))
					dec.DisallowUnknownFields()
					if err := dec.Decode(&rules); err != nil {
						return fmt.Errorf(`--ignore: want JSON such as {"selectors": [".ad"], "patterns": ["\\d+:\\d+"], "min_change": 0.01}: %w`, err)
					}
					req.Ignore = &rules
				}
				if err := api.CheckSeedChange(req.SeedChange); err != nil {
					return err
				}
			}
			res, err := lifecycle(cfg, op, req, purge)
			if err != nil {
				return err
			}
			verb := map[string]string{"pause": "paused", "resume": "resumed", "delete": "deleted", "set": "changed"}[op]
			if op == "delete" && purge {
				verb = "deleted and purged"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %d of %d selected URLs\n", verb, res.Changed, res.Selected)
			return nil
		},
	}
	sel.register(cmd)
	switch op {
	case "delete":
		cmd.Flags().BoolVar(&purge, "purge", false, "also remove the history: copy, raw body, fetches, change log, versions")
	case "set":
		cmd.Flags().Float64Var(&weight, "weight", 1, "importance, a finite number > 0")
		cmd.Flags().StringVar(&selector, "selector", "", `CSS selector of the content of interest ("" for the whole visible text)`)
		cmd.Flags().StringVar(&ignore, "ignore", "", `noise rules as JSON: {"selectors": [...], "patterns": [...], "min_change": 0.01}`)
		cmd.Flags().StringVar(&mode, "mode", "", "freshness or capture")
		cmd.Flags().BoolVar(&keepRaw, "keep-raw", false, "keep the raw response body of the latest version")
	}
	withConfig(cmd, &cfg, clientKeys...)
	return cmd
}

// lifecycle runs a pause, resume, delete or set through the running
// coordinator's API, or on the store directly when none holds it.
func lifecycle(cfg config.Config, op string, req api.SetRequest, purge bool) (api.OpResult, error) {
	db, viaAPI, err := openWritable(cfg)
	switch {
	case err != nil:
		return api.OpResult{}, err
	case !viaAPI:
		defer db.Close()
		urls, err := api.Resolve(db, req.Selection)
		if err != nil {
			return api.OpResult{}, err
		}
		res := api.OpResult{Selected: len(urls)}
		var recs []store.URL
		switch op {
		case "pause", "resume":
			recs, err = db.SetPaused(urls, op == "pause", time.Now())
			res.Changed = len(recs)
		case "delete":
			var gone []string
			gone, err = db.Delete(urls, purge, time.Now())
			res.Changed = len(gone)
		case "set":
			recs, err = db.SetSeed(urls, req.SeedChange)
			res.Changed = len(recs)
		}
		return res, err
	default:
		var res api.OpResult
		u := cfg.APIBase() + "/api/url/" + op
		if purge {
			u += "?purge=1"
		}
		body, err := json.Marshal(req)
		if err != nil {
			return res, err
		}
		resp, err := apiPost(cfg, u, "application/json", bytes.NewReader(body))
		if err != nil {
			return res, fmt.Errorf("the coordinator API at %s did not answer: %w", cfg.APIBase(), err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return res, readAPIError("POST", u, resp)
		}
		return res, json.NewDecoder(resp.Body).Decode(&res)
	}
}

func getCmd() *cobra.Command {
	cfg := config.Default()
	var raw, asJSON bool
	cmd := &cobra.Command{
		Use:   "get URL",
		Short: "Print the stored copy of a URL: its extracted text (--raw: the raw body, when kept)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := setup(cmd, &cfg); err != nil {
				return err
			}
			var c api.Copy
			path := "/api/content?url=" + url.QueryEscape(args[0])
			if err := readFallback(cfg, path, &c, func(db *store.DB) error {
				var err error
				c, err = api.GetCopy(db, args[0], raw)
				return err
			}); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch {
			case asJSON:
				return printJSON(out, c)
			case raw:
				if c.Raw == nil {
					return fmt.Errorf("no raw body kept for %s (set it with: freshcrawl url set --keep-raw %s)", c.URL, c.URL)
				}
				body := c.Raw.Body
				if body == nil {
					// The API serves the body apart from the JSON.
					b, err := getRaw(cfg, cfg.APIBase()+path+"&raw=1")
					if err != nil {
						return err
					}
					body = b
				}
				_, err := out.Write(body)
				return err
			}
			fmt.Fprint(out, c.Text)
			if c.Text != "" && !strings.HasSuffix(c.Text, "\n") {
				fmt.Fprintln(out)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&raw, "raw", false, "print the raw response body instead of the text")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: text, hash, times and the raw body's description")
	withConfig(cmd, &cfg, clientKeys...)
	return cmd
}

func getRaw(cfg config.Config, u string) ([]byte, error) {
	resp, err := apiDo(cfg, time.Minute, http.MethodGet, u, "", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, readAPIError("GET", u, resp)
	}
	return io.ReadAll(resp.Body)
}

func exportCmd() *cobra.Command {
	cfg := config.Default()
	cmd := &cobra.Command{
		Use:   "export [FILE|-]",
		Short: "Write every URL as JSON lines: seed fields, estimate, schedule, counters and latest copy",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := setup(cmd, &cfg); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			name := "stdout"
			if len(args) == 1 && args[0] != "-" {
				f, err := os.Create(args[0])
				if err != nil {
					return fmt.Errorf("export file: %w", err)
				}
				defer f.Close()
				out, name = f, args[0]
			}
			n, err := export(cfg, out)
			if err != nil {
				return err
			}
			if f, ok := out.(*os.File); ok && f != os.Stdout {
				if err := f.Close(); err != nil {
					return fmt.Errorf("export file: %w", err)
				}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "exported %d URLs to %s\n", n, name)
			return nil
		},
	}
	withConfig(cmd, &cfg, clientKeys...)
	return cmd
}

// export streams the API's export, or reads the store when no coordinator
// answers; it returns the lines written.
func export(cfg config.Config, out io.Writer) (int, error) {
	base, _ := heldBy(cfg)
	u := base + "/api/export"
	resp, err := apiDo(cfg, 0, http.MethodGet, u, "", nil)
	if err == nil {
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return 0, readAPIError("GET", u, resp)
		}
		cw := &lineCounter{w: out}
		if _, err := io.Copy(cw, resp.Body); err != nil {
			return cw.n, fmt.Errorf("export from %s: %w", u, err)
		}
		return cw.n, nil
	}
	if cfg.API != "" {
		return 0, fmt.Errorf("the coordinator API at %s did not answer: %w", cfg.APIBase(), err)
	}
	db, derr := openStore(cfg, true)
	if derr != nil {
		return 0, fmt.Errorf("API: %v; store: %w", err, derr)
	}
	defer db.Close()
	return db.Export(out)
}

type lineCounter struct {
	w io.Writer
	n int
}

func (c *lineCounter) Write(p []byte) (int, error) {
	c.n += bytes.Count(p, []byte{'\n'})
	return c.w.Write(p)
}

func importCmd() *cobra.Command {
	cfg := config.Default()
	cmd := &cobra.Command{
		Use:   "import FILE|-",
		Short: "Add URLs from an export (JSON lines); URLs already stored keep what they have",
		Long: `Import JSON lines written by freshcrawl export. A URL not in the store is added
with its seed fields, estimate, schedule, counters and latest copy; a URL the
store already has is left as it is (counted as kept), so an import never loses
what is stored. Bad lines are reported as FILE:LINE: problem and skipped; exit
status 2 means some lines were bad. With a coordinator running, the lines go
through its API and the new URLs join its schedule at once. A seed webhook on a
private, loopback or link-local address is a bad line unless webhooks may go
there (--allow-private-webhooks here when the store is written directly, the
coordinator's own setting otherwise).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := setup(cmd, &cfg); err != nil {
				return err
			}
			var in io.Reader = cmd.InOrStdin()
			name := "stdin"
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return fmt.Errorf("import file: %w", err)
				}
				defer f.Close()
				in, name = f, args[0]
			}
			in = bufio.NewReaderSize(in, 256*1024)
			var sum store.ImportSummary
			db, viaAPI, err := openWritable(cfg)
			switch {
			case err != nil:
			case !viaAPI:
				defer db.Close()
				sum, err = db.Import(in, name, api.LineChecker(seed.Parser{AllowPrivateWebhooks: cfg.AllowPrivateWebhooks}), nil, nil)
			default:
				sum, err = postImport(cfg, in, name)
			}
			for _, e := range sum.Errors {
				fmt.Fprintln(cmd.ErrOrStderr(), e)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "imported %s: %d good lines (%d added, %d kept), %d bad\n", name, sum.Good, sum.Added, sum.Kept, sum.Bad)
			if sum.Bad > 0 {
				if len(sum.Errors) < sum.Bad {
					fmt.Fprintf(cmd.ErrOrStderr(), "(%d more bad lines not listed)\n", sum.Bad-len(sum.Errors))
				}
				return exitCode(2)
			}
			return nil
		},
	}
	withConfig(cmd, &cfg, slices.Concat(clientKeys, []string{"allow-private-webhooks"})...)
	return cmd
}

func postImport(cfg config.Config, in io.Reader, name string) (store.ImportSummary, error) {
	var sum store.ImportSummary
	u := cfg.APIBase() + "/api/import?name=" + url.QueryEscape(name)
	resp, err := apiPost(cfg, u, "application/x-ndjson", in)
	if err != nil {
		return sum, fmt.Errorf("the coordinator API at %s did not answer: %w", cfg.APIBase(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error   string              `json:"error"`
			Summary store.ImportSummary `json:"summary"`
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return e.Summary, fmt.Errorf("POST %s: %s", u, e.Error)
		}
		return sum, fmt.Errorf("POST %s: %s: %s", u, resp.Status, strings.TrimSpace(string(b)))
	}
	return sum, json.NewDecoder(resp.Body).Decode(&sum)
}
