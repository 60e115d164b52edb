package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/store"
)

// runPlan executes the plan subcommand as main would.
func runPlan(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRoot(&out, &errOut)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(append([]string{"plan"}, args...))
	err := root.Execute()
	return out.String(), errOut.String(), err
}

func decodePlan(t *testing.T, out string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("plan --json: %v\n%s", err, out)
	}
	return m
}

func planKeys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// TestPlanCSVJSON is the paper's Table 5 through the command line.
func TestPlanCSVJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "testdata.csv")
	if err := os.WriteFile(path, []byte("id,rate\ne1,1\ne2,2\ne3,3\ne4,4\ne5,5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := runPlan(t, "", "--rates", path, "--budget", "5", "--json")
	if err != nil {
		t.Fatal(err)
	}
	m := decodePlan(t, out)
	want := []string{"age", "budget", "compare", "elements", "freshness", "given_up", "hosts_at_cap", "policy", "unabsorbed"}
	if got := planKeys(m); !slices.Equal(got, want) {
		t.Errorf("keys %v, want %v", got, want)
	}
	if m["policy"] != "optimal" || m["budget"] != 5.0 || m["given_up"] != 1.0 || m["age"] != nil {
		t.Errorf("head %v", m)
	}
	cmp := m["compare"].(map[string]any)
	if got := planKeys(cmp); !slices.Equal(got, []string{"optimal", "proportional", "uniform"}) {
		t.Errorf("compare keys %v", got)
	}
	if f := cmp["optimal"].(map[string]any)["freshness"]; f != m["freshness"] {
		t.Errorf("compare.optimal.freshness %v, freshness %v", f, m["freshness"])
	}
	els := m["elements"].([]any)
	for i, w := range []float64{1.15, 1.36, 1.35, 1.14, 0} {
		e := els[i].(map[string]any)
		if got := planKeys(e); !slices.Equal(got, []string{"age", "frequency", "freshness", "id", "rate", "weight"}) {
			t.Errorf("element keys %v", got)
		}
		if f := e["frequency"].(float64); math.Abs(f-w) > 0.01 {
			t.Errorf("%v: f = %v, paper %v", e["id"], f, w)
		}
	}

	// The same from standard input, with a time unit: budget 5/d = 5 per day.
	out, _, err = runPlan(t, "e1,1\ne2,2\ne3,3\ne4,4\ne5,5\n", "--rates", "-", "--rate-unit", "d", "--budget", "5/d", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if m := decodePlan(t, out); m["budget"] != 5.0 {
		t.Errorf("--rate-unit d --budget 5/d: budget %v, want 5", m["budget"])
	}
	// A unit without --rate-unit cannot be converted.
	if _, _, err := runPlan(t, "", "--rates", path, "--budget", "5/d"); err == nil || !strings.Contains(err.Error(), "--rate-unit") {
		t.Errorf("--budget 5/d with a plain CSV: err = %v", err)
	}
	// Modes are exclusive.
	if _, _, err := runPlan(t, "", "--rates", path, "--budget", "5", "--target-freshness", "0.5"); err == nil {
		t.Error("--budget with --target-freshness accepted")
	}
	out, _, err = runPlan(t, "", "--rates", path, "--benefit", "10", "--cost", "1", "--worker-rate", "2", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if m := decodePlan(t, out); m["policy"] != "long-term" || m["total_budget"] == nil || m["workers"] == nil {
		t.Errorf("long-term: %v", m)
	}
}

func TestPlanBadCSV(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rates.csv")
	if err := os.WriteFile(path, []byte("id,rate\na,1\nb,abc\nc,1,0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := runPlan(t, "", "--rates", path, "--budget", "5")
	if err == nil {
		t.Fatal("bad CSV accepted")
	}
	for _, s := range []string{path + `:3: rate "abc": not a number`, path + `:4: weight "0": must be > 0`} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error lacks %q:\n%v", s, err)
		}
	}
	if out != "" {
		t.Errorf("a plan was printed:\n%s", out)
	}
}

// TestPlanData plans from a store: rates per second, hosts capped at
// --host-rate, unobserved URLs at the prior rate.
func TestPlanData(t *testing.T) {
	dir := t.TempDir()
	db, err := store.OpenDir(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	seeds := []store.URL{
		{URL: "http://a.example/1", Host: "a.example", Weight: 1, Mode: "freshness"},
		{URL: "http://a.example/2", Host: "a.example", Weight: 2, Mode: "freshness"},
		{URL: "http://b.example/1", Host: "b.example", Weight: 1, Mode: "freshness"},
	}
	if _, err := db.Upsert(seeds); err != nil {
		t.Fatal(err)
	}
	rates := map[string]float64{"http://a.example/1": 1.0 / 60, "http://a.example/2": 1.0 / 600} // b: never observed
	if _, err := db.Fold("estimates", func(tx *store.Tx) error {
		for u, r := range rates {
			rec, _, err := tx.Get(u)
			if err != nil {
				return err
			}
			rec.Rate = r
			if err := tx.Put(rec); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// Host a may take 1 fetch a minute: a budget of 1/s cannot be used.
	out, _, err := runPlan(t, "", "--data", dir, "--budget", "1/s", "--host-rate", "1/m", "--json")
	if err != nil {
		t.Fatal(err)
	}
	m := decodePlan(t, out)
	if m["budget"] != 1.0 || m["hosts_at_cap"] != 2.0 {
		t.Errorf("budget %v hosts at cap %v, want 1 and 2", m["budget"], m["hosts_at_cap"])
	}
	if u := m["unabsorbed"].(float64); math.Abs(u-(1-2.0/60)) > 1e-9 {
		t.Errorf("unabsorbed %v, want 1 − 2/60", u)
	}
	sumA := 0.0
	for _, x := range m["elements"].([]any) {
		e := x.(map[string]any)
		switch e["id"] {
		case "http://a.example/1", "http://a.example/2":
			sumA += e["frequency"].(float64)
			if e["rate"] != rates[e["id"].(string)] {
				t.Errorf("%v: rate %v, want %v", e["id"], e["rate"], rates[e["id"].(string)])
			}
		case "http://b.example/1":
			if r := e["rate"].(float64); math.Abs(r-0.25/86400) > 1e-15 {
				t.Errorf("unobserved URL planned at %v, want the default prior 0.25/d", r)
			}
		default:
			t.Errorf("unexpected element %v", e)
		}
	}
	if math.Abs(sumA-1.0/60) > 1e-9 {
		t.Errorf("host a gets %v/s, want its cap 1/60", sumA)
	}

	// Text, per second but shown in readable units, with a target.
	out, _, err = runPlan(t, "", "--data", dir, "--target-freshness", "0.5", "--host-rate", "1/s")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("plan --data %s --target-freshness 0.5:\n%s", dir, out)
	for _, s := range []string{"least budget for freshness 0.5", "http://a.example/2", "/m", "hosts at cap"} {
		if !strings.Contains(out, s) {
			t.Errorf("text lacks %q:\n%s", s, out)
		}
	}
	// Freshness 0.99 is more than 1 fetch a minute per host allows.
	if _, _, err := runPlan(t, "", "--data", dir, "--target-freshness", "0.99", "--host-rate", "1/m"); err == nil || !strings.Contains(err.Error(), "host caps bound it") {
		t.Errorf("unreachable target: err = %v", err)
	}
	// No --budget with --data: the configured (default 10/s) budget.
	out, _, err = runPlan(t, "", "--data", dir, "--json")
	if err != nil {
		t.Fatal(err)
	}
	if m := decodePlan(t, out); m["budget"] != 10.0 {
		t.Errorf("default budget %v, want 10 (per second)", m["budget"])
	}
	if _, _, err := runPlan(t, "", "--data", filepath.Join(dir, "missing")); err == nil {
		t.Error("missing data directory accepted")
	}
}

// TestPlanDataModelAndCrawlDelay: plan --data caps a host by the
// Crawl-delay stored for it, and reports the model freshness of the stored
// copies now: a copy fetched a moment ago is fresh, a URL never fetched is
// stale.
func TestPlanDataModelAndCrawlDelay(t *testing.T) {
	dir := t.TempDir()
	db, err := store.OpenDir(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	seeds := []store.URL{
		{URL: "http://a.example/1", Host: "a.example", Weight: 1, Mode: "freshness"},
		{URL: "http://a.example/2", Host: "a.example", Weight: 2, Mode: "freshness"},
		{URL: "http://b.example/1", Host: "b.example", Weight: 1, Mode: "freshness"},
	}
	if _, err := db.Upsert(seeds); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := db.Fold("fetched", func(tx *store.Tx) error {
		for _, u := range []string{"http://a.example/1", "http://a.example/2"} {
			rec, _, err := tx.Get(u)
			if err != nil {
				return err
			}
			rec.Rate, rec.LastOK = 1.0/86400, now
			if err := tx.Put(rec); err != nil {
				return err
			}
		}
		return tx.PutHost(store.Host{Host: "a.example", CrawlDelay: 2 * time.Minute})
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	out, _, err := runPlan(t, "", "--data", dir, "--budget", "1/s", "--host-rate", "1/s", "--json")
	if err != nil {
		t.Fatal(err)
	}
	m := decodePlan(t, out)
	sumA := 0.0
	for _, x := range m["elements"].([]any) {
		if e := x.(map[string]any); strings.HasPrefix(e["id"].(string), "http://a.example/") {
			sumA += e["frequency"].(float64)
		}
	}
	if math.Abs(sumA-1.0/120) > 1e-9 {
		t.Errorf("host a gets %v/s, want 1/120 (Crawl-delay 2 min)", sumA)
	}
	// Weights 1 and 2 fresh, weight 1 never fetched: 3/4.
	if mf, ok := m["model_freshness"].(float64); !ok || math.Abs(mf-0.75) > 0.01 {
		t.Errorf("model_freshness %v, want 0.75", m["model_freshness"])
	}
	text, _, err := runPlan(t, "", "--data", dir, "--budget", "1/s")
	if err != nil || !strings.Contains(text, "model freshness of the stored copies now: 0.75") {
		t.Errorf("text (%v):\n%s", err, text)
	}
}
