package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/coordinator"
	"github.com/freshcrawl/freshcrawl/internal/plan"
	"github.com/freshcrawl/freshcrawl/store"
)

// planFlags holds the plan command's own flags.
type planFlags struct {
	rates, budget, hostRate, rateUnit, benefit, decay, workerRate string
	cost, target                                                  float64
	top                                                           int
	all, asJSON                                                   bool
}

// register adds the flags to fs; the host rate defaults to cfg's.
func (p *planFlags) register(fs *pflag.FlagSet, cfg config.Config) {
	fs.StringVar(&p.rates, "rates", "", "CSV file (- for stdin) of id,rate[,weight[,host]] to plan instead of the store")
	fs.StringVar(&p.budget, "budget", "", "total fetches per unit time: a number in the rates' unit, or 20/s, 300/m, 5000/h, 1000/d (default with --data: the configured budget)")
	fs.StringVar(&p.hostRate, "host-rate", cfg.HostRate.String(), "most fetches of any one host per unit time (elements with a host)")
	fs.StringVar(&p.rateUnit, "rate-unit", "plain", "time unit of the --rates file's numbers: s, m, h, d or plain (unknown)")
	fs.Float64Var(&p.target, "target-freshness", 0, "print the least budget whose optimal allocation reaches this freshness, in (0,1)")
	fs.StringVar(&p.benefit, "benefit", "", "long-term mode: benefit per unit time while a copy is correct (per unit weight)")
	fs.Float64Var(&p.cost, "cost", 0, "long-term mode: cost of one fetch")
	fs.StringVar(&p.decay, "decay", "exp", "long-term mode: decay of correctness, exp or linear")
	fs.StringVar(&p.workerRate, "worker-rate", "", "fetches per unit time one worker sustains: also print the workers needed")
	fs.IntVar(&p.top, "top", 20, "list this many elements, the largest by weight×rate (0: all)")
	fs.BoolVar(&p.all, "all", false, "list every element")
	fs.BoolVar(&p.asJSON, "json", false, "print JSON")
}

const planLong = `Answer an operator's questions from change-rate estimates, without crawling.

Input (one of):
  --data DIR     the store's current estimates: read from the file when no
                 coordinator runs, else from the API of the one that holds it
                 (GET /api/estimates), which is not disturbed. Rates are changes per second;
                 weights come from the seeds; each URL is capped by its host at
                 --host-rate, or one fetch per Crawl-delay where the host sent
                 one (politeness). URLs not observed yet get --prior-rate, as
                 the coordinator plans them. Freshness is the expectation over
                 each URL's posterior, and the model freshness of the stored
                 copies now is reported too.
  --rates FILE   a CSV file (- for stdin) of id,rate[,weight[,host]]: rate in
                 changes per unit time (any unit, as long as the budget uses
                 the same), weight > 0 (default 1), host optional. Elements
                 without a host are uncapped; those with one share that host's
                 --host-rate. A first line whose rate is not a number is a
                 header. Every bad line is reported as FILE:LINE and no plan is
                 printed.

Units. With --data everything is per second: --budget 20/s, 1200/m and 20 are
the same. With --rates the unit is the CSV's: a plain number (--budget 5) is
taken in that unit, and a rate with a unit (--budget 20/s) is refused unless
--rate-unit s|m|h|d says what the CSV's unit is (then it is converted). The
same holds for --host-rate, --worker-rate and --benefit. Intervals and ages
are printed in the unit too (as durations when it is known).

Questions (one of):
  --budget R              allocate R fetches per unit time (default with --data:
                          the configured budget): each element's frequency,
                          interval 1/f, freshness and age under --policy, and
                          the collection's freshness and age under the optimal,
                          uniform and proportional allocations side by side.
  --target-freshness F    the least budget whose optimal allocation reaches F
                          (an error if no budget can, e.g. under host caps).
  --benefit B --cost C    long-term mode: the budget is bought, at C per fetch,
                          and earns B per unit time while a copy of weight 1 is
                          correct (w·B for weight w). Prints each element's
                          optimal interval, the futile ones (never worth a
                          fetch), and the total budget to provision.
With --worker-rate W (what one worker sustains), also the workers to run:
ceil(budget in use / W).

Output: the first --top elements by weight×rate and a total line (--all for
every element), or with --json one object with policy, budget, freshness, age,
compare {optimal,uniform,proportional: {freshness, age}}, given_up,
hosts_at_cap, unabsorbed, elements [{id, rate, weight, frequency, freshness,
age, and in long-term mode interval, futile}], plus target_freshness,
total_budget and workers when they apply. Infinite ages and intervals (never
fetched) are null.`

func planCmd() *cobra.Command {
	cfg := config.Default()
	var pf planFlags
	cmd := &cobra.Command{
		Use:   "plan [--data DIR | --rates FILE] [--budget R | --target-freshness F | --benefit B --cost C]",
		Short: "Predict freshness and age, the budget a target needs, or the long-term plan, without crawling",
		Long:  planLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return answerPlan(cmd, &cfg, &pf)
		},
	}
	pf.register(cmd.Flags(), cfg)
	withConfig(cmd, &cfg, "data", "listen", "api", "api-token", "api-read-token", "tls-cert", "policy", "objective", "prior-rate", "half-life", "log-level")
	return cmd
}

// answerPlan answers the question the flags ask and prints the answer.
func answerPlan(cmd *cobra.Command, cfg *config.Config, pf *planFlags) error {
	fl := cmd.Flags()
	// Read before setup, which marks flags set from the
	// environment or the config file as changed too.
	cliData, cliBudget := fl.Changed("data"), fl.Changed("budget")
	if _, err := setup(cmd, cfg); err != nil {
		return err
	}
	in := plan.Input{Top: pf.top}
	if pf.all {
		in.Top = 0
	}
	if err := pf.mode(fl, &in, cliBudget); err != nil {
		return err
	}
	var err error
	in.Policy = cfg.Policy // long-term mode reports its own policy
	if in.Objective, err = plan.ParseObjective(cfg.Objective); err != nil {
		return err
	}
	if err := pf.elements(cmd, *cfg, &in, cliData); err != nil {
		return err
	}
	if err := pf.amounts(*cfg, &in); err != nil {
		return err
	}
	res, err := plan.Run(in)
	if err != nil {
		return err
	}
	if pf.asJSON {
		return res.WriteJSON(cmd.OutOrStdout())
	}
	return res.WriteText(cmd.OutOrStdout())
}

// mode sets the question in asks from the flags given.
func (p *planFlags) mode(fl *pflag.FlagSet, in *plan.Input, cliBudget bool) error {
	longTerm := fl.Changed("benefit") || fl.Changed("cost")
	switch {
	case longTerm && fl.Changed("target-freshness"):
		return errors.New("--target-freshness and --benefit/--cost ask different questions: give one")
	case longTerm:
		if !fl.Changed("benefit") || !fl.Changed("cost") {
			return errors.New("long-term mode needs both --benefit and --cost")
		}
		in.Mode = plan.ModeLongTerm
	case fl.Changed("target-freshness"):
		in.Mode, in.TargetFreshness = plan.ModeTarget, p.target
	}
	if in.Mode != plan.ModeBudget && cliBudget {
		return errors.New("--budget: this mode computes the budget; drop --budget")
	}
	return nil
}

// elements sets in's elements and their unit: from the --rates file, or
// from cfg's store.
func (p *planFlags) elements(cmd *cobra.Command, cfg config.Config, in *plan.Input, cliData bool) error {
	var err error
	switch {
	case p.rates != "" && cliData:
		return errors.New("give --data or --rates, not both")
	case p.rates != "":
		if in.Unit, err = plan.ParseUnit(p.rateUnit); err != nil {
			return fmt.Errorf("--rate-unit: %w", err)
		}
		if in.Elements, err = readRates(cmd, p.rates); err != nil {
			return err
		}
	default:
		if cmd.Flags().Changed("rate-unit") {
			return errors.New("--rate-unit describes a --rates file; with --data rates are per second")
		}
		in.Unit = plan.Second
		if in.Elements, in.HostCaps, err = planElements(cfg); err != nil {
			return err
		}
		if len(in.Elements) == 0 {
			return fmt.Errorf("the store in %s holds no URLs: seed some first, or use --rates", cfg.Data)
		}
	}
	return nil
}

// amounts sets in's budget, host and worker rates and long-term terms,
// all in the unit of the rates.
func (p *planFlags) amounts(cfg config.Config, in *plan.Input) error {
	amount := func(flag, v string) (float64, error) {
		x, err := in.Unit.ParseRate(v)
		if errors.Is(err, plan.ErrNoUnit) {
			return 0, fmt.Errorf("--%s %w: give --rate-unit s|m|h|d, or a plain number in the CSV's unit", flag, err)
		}
		if err != nil {
			return 0, fmt.Errorf("--%s: %w", flag, err)
		}
		return x, nil
	}
	var err error
	if in.Mode == plan.ModeBudget {
		budget := p.budget
		switch {
		case budget != "":
		case p.rates == "":
			budget = cfg.Budget.String() // the coordinator's default
		default:
			return errors.New("--budget is required with --rates (in the CSV's unit, e.g. --budget 5), unless --target-freshness or --benefit/--cost")
		}
		if in.Budget, err = amount("budget", budget); err != nil {
			return err
		}
	}
	if hasHosts(in.Elements) {
		if in.HostRate, err = amount("host-rate", p.hostRate); err != nil {
			return err
		}
		if in.HostRate <= 0 {
			return errors.New("--host-rate must be > 0: politeness is a constraint")
		}
	}
	if p.workerRate != "" {
		if in.WorkerRate, err = amount("worker-rate", p.workerRate); err != nil {
			return err
		}
		if in.WorkerRate <= 0 {
			return errors.New("--worker-rate must be > 0")
		}
	}
	if in.Mode == plan.ModeLongTerm {
		lt := plan.LongTermInput{Cost: p.cost}
		if lt.Benefit, err = amount("benefit", p.benefit); err != nil {
			return err
		}
		if lt.Decay, err = plan.ParseDecay(p.decay); err != nil {
			return fmt.Errorf("--decay: %w", err)
		}
		in.LongTerm = &lt
	}
	return nil
}

// planElements reads the estimates of every URL of cfg's store: from the
// file, or from the API of the coordinator that holds it.
func planElements(cfg config.Config) ([]plan.Element, map[string]float64, error) {
	prior := cfg.PriorRate.PerSecond()
	if cfg.API == "" {
		db, err := openStore(cfg, true)
		if err == nil {
			defer db.Close()
			els, err := plan.FromStore(db, prior, cfg.HalfLife, time.Now())
			if err != nil {
				return nil, nil, err
			}
			// Each host's stored Crawl-delay caps it.
			caps, err := plan.HostCaps(db)
			return els, caps, err
		}
		if !errors.Is(err, store.ErrLocked) {
			return nil, nil, err
		}
	}
	api, who := heldBy(cfg)
	resp, err := apiDo(cfg, 10*time.Minute, http.MethodGet, api+"/api/estimates", "", nil)
	if err != nil {
		return nil, nil, fmt.Errorf("the store in %s is held by %s, and its API at %s did not answer (give it with --api): %w", cfg.Data, who, api, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, nil, fmt.Errorf("GET %s/api/estimates: %s: %s", api, resp.Status, strings.TrimSpace(string(b)))
	}
	var out []plan.Element
	dec := json.NewDecoder(resp.Body)
	for dec.More() {
		var line struct {
			coordinator.Estimate
			Error string `json:"error"`
		}
		if err := dec.Decode(&line); err != nil {
			return nil, nil, fmt.Errorf("GET %s/api/estimates: %w", api, err)
		}
		if line.Error != "" {
			return nil, nil, fmt.Errorf("GET %s/api/estimates: %s", api, line.Error)
		}
		r := line.Rate
		if !(r > 0) {
			r = prior
		}
		out = append(out, plan.Element{ID: line.URL, Rate: r, Weight: line.Weight, Host: line.Host})
	}
	return out, nil, nil
}

// readRates reads a rates file, or standard input for "-".
func readRates(cmd *cobra.Command, path string) ([]plan.Element, error) {
	var r io.Reader = cmd.InOrStdin()
	name := "stdin"
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("rates file: %w", err)
		}
		defer f.Close()
		r, name = f, path
	}
	return plan.ReadCSV(r, name)
}

func hasHosts(els []plan.Element) bool {
	for _, e := range els {
		if e.Host != "" {
			return true
		}
	}
	return false
}
