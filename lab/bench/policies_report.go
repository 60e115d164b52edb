package bench

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"text/tabwriter"
)

// WriteTable prints the results of one workload at one budget as an
// aligned table: each policy's truth and its oracle (freshness, and age in
// days) at the fetch rate it achieved, the oracle and the signal oracle at
// the budget, and the ratio to uniform where uniform ran.
func WriteTable(out io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tfreshness\tmodel\tage (days)\tfetches\tfetches/day\tbytes\t304 share\toracle@fetches\toracle age\tratio\toracle@budget\tratio@budget\tsignal oracle\tsignal fetches/day\tratio@signal\tx uniform\tfirst pass (days)\tplan errors\t")
	for _, r := range rs {
		fp := "-"
		if r.FirstPassDays >= 0 {
			fp = fmt.Sprintf("%.1f", r.FirstPassDays)
		}
		xu := "-"
		if r.UniformRatio > 0 {
			xu = fmt.Sprintf("%.4f", r.UniformRatio)
		}
		fmt.Fprintf(tw, "%s\t%.4f\t%.4f\t%.2f\t%d\t%.1f\t%d\t%.3f\t%.4f\t%.2f\t%.4f\t%.4f\t%.4f\t%.4f\t%.1f\t%.4f\t%s\t%s\t%d\t\n",
			r.Policy, r.Freshness, r.ModelFreshness, r.AgeDays, r.Fetches, r.FetchesPerDay, r.Bytes, r.notModifiedShare(), r.Oracle, r.OracleAgeDays, r.Ratio, r.FullOracle, r.FullRatio,
			r.Signal.Freshness, r.Signal.FetchesPerDay, r.SignalRatio, xu, fp, r.PlanErrors)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// A cold start's warm-up is its first full pass: the truth and the
	// model from then on are what say whether the model is honest.
	for _, r := range rs {
		if r.FirstPassDays >= 0 && r.ModelAfterFirstPass >= 0 {
			fmt.Fprintf(out, "%s: after the first full pass (day %.1f): freshness %.4f, model %.4f\n", r.Policy, r.FirstPassDays, r.FreshAfterFirstPass, r.ModelAfterFirstPass)
		}
		if r.SitemapFetches > 0 {
			fmt.Fprintf(out, "%s: %d sitemap fetches besides the %d page fetches\n", r.Policy, r.SitemapFetches, r.Fetches)
		}
		if r.Hints > 0 {
			fmt.Fprintf(out, "%s: %d fetches for a hint (a tied page changed, a sitemap dated a change), %d found a change\n", r.Policy, r.Hints, r.HintsConfirmed)
		}
	}
	return nil
}

// AddUniformRatios sets the UniformRatio of every result for which a
// result of the uniform policy on the same workload, budget and mode is
// among rs.
func AddUniformRatios(rs []Result) {
	type key struct {
		mode, workload string
		budget         float64
	}
	uniform := map[key]float64{}
	for _, r := range rs {
		if r.Policy == "uniform" {
			uniform[key{r.Mode, r.Workload, r.Budget}] = r.Freshness
		}
	}
	for i := range rs {
		if u := uniform[key{rs[i].Mode, rs[i].Workload, rs[i].Budget}]; u > 0 {
			rs[i].UniformRatio = rs[i].Freshness / u
		}
	}
}

// WriteCSV writes results.csv (one row per policy, workload and budget) and
// series.csv (freshness over time per policy, workload and budget) into
// dir.
func WriteCSV(dir string, rs []Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bench: output directory: %w", err)
	}
	rows := [][]string{{"mode", "workload", "policy", "freshness", "age_days", "fetches", "fetches_per_day", "bytes", "not_modified", "not_modified_share", "oracle_freshness", "oracle_age_days", "ratio", "full_budget_oracle", "full_budget_ratio", "model_freshness", "first_pass_days", "freshness_after_first_pass", "model_after_first_pass", "plan_errors", "wall_seconds",
		"budget_per_day", "every_days", "signal_oracle_freshness", "signal_oracle_fetches_per_day", "signal_ratio", "uniform_ratio"}}
	series := [][]string{{"mode", "workload", "policy", "day", "freshness", "every_days"}}
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	for _, r := range rs {
		rows = append(rows, []string{r.Mode, r.Workload, r.Policy, g(r.Freshness), g(r.AgeDays), strconv.Itoa(r.Fetches), g(r.FetchesPerDay),
			strconv.FormatInt(r.Bytes, 10), strconv.Itoa(r.NotModified), g(r.notModifiedShare()), g(r.Oracle), g(r.OracleAgeDays), g(r.Ratio),
			g(r.FullOracle), g(r.FullRatio), g(r.ModelFreshness), g(r.FirstPassDays), g(r.FreshAfterFirstPass), g(r.ModelAfterFirstPass),
			strconv.Itoa(r.PlanErrors), g(r.Wall.Seconds()),
			g(r.Budget), g(r.EveryDays), g(r.Signal.Freshness), g(r.Signal.FetchesPerDay), g(r.SignalRatio), g(r.UniformRatio)})
		for _, p := range r.Series {
			series = append(series, []string{r.Mode, r.Workload, r.Policy, g(p.Day), g(p.Freshness), g(r.EveryDays)})
		}
	}
	if err := writeCSVFile(filepath.Join(dir, "results.csv"), rows); err != nil {
		return err
	}
	return writeCSVFile(filepath.Join(dir, "series.csv"), series)
}

func writeCSVFile(path string, rows [][]string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	w := csv.NewWriter(f)
	if err := w.WriteAll(rows); err != nil {
		f.Close()
		return fmt.Errorf("bench: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("bench: write %s: %w", path, err)
	}
	return nil
}
