package schedule

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// optimalInput is n URLs on 20 hosts, every fourth host capped below its
// uniform share, with log-normal rates and weights.
func optimalInput(n int, rng *rand.Rand) PlanInput {
	in := PlanInput{Rates: make([]float64, n), Weights: make([]float64, n), Hosts: make([]int32, n), HostCaps: make([]float64, 20), Budget: float64(n) / 30}
	count := make([]int, len(in.HostCaps))
	for i := range n {
		in.Rates[i] = math.Exp(rng.NormFloat64()) / 10
		in.Weights[i] = math.Exp(rng.NormFloat64() / 2)
		in.Hosts[i] = int32(rng.IntN(len(in.HostCaps)))
		count[in.Hosts[i]]++
	}
	for h := range in.HostCaps {
		if h%4 == 0 {
			in.HostCaps[h] = 0.5 * float64(count[h]) / 30
		}
	}
	return in
}

// TestOptimalPolicyWarmSolver: the optimal policy re-plans warm from the
// plan's own arrays, which it leaves as they were; a re-plan after rates
// moved matches a fresh policy's plan, and one whose URLs moved between
// hosts (the same number of URLs, so only the hosts tell) is solved cold,
// the same bit for bit as a fresh policy's.
func TestOptimalPolicyWarmSolver(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 16))
	in := optimalInput(5000, rng)
	p, err := PolicyByName("optimal", "")
	if err != nil {
		t.Fatal(err)
	}
	fresh := func(in PlanInput) PlanOutput {
		t.Helper()
		q, err := PolicyByName("optimal", "")
		if err != nil {
			t.Fatal(err)
		}
		out, err := q.Plan(in)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if _, err := p.Plan(in); err != nil {
		t.Fatal(err)
	}
	for i := range in.Rates {
		if rng.IntN(10) == 0 {
			in.Rates[i] *= 0.8 + 0.4*rng.Float64()
		}
	}
	rates, weights, hosts := slices.Clone(in.Rates), slices.Clone(in.Weights), slices.Clone(in.Hosts)
	warm, err := p.Plan(in)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rates, in.Rates) || !slices.Equal(weights, in.Weights) || !slices.Equal(hosts, in.Hosts) {
		t.Fatal("the plan changed its input's arrays")
	}
	cold := fresh(in)
	if math.Abs(warm.Mu/cold.Mu-1) > 1e-9 {
		t.Errorf("warm μ %v, fresh %v", warm.Mu, cold.Mu)
	}
	for i, f := range warm.Freq {
		if math.Abs(f-cold.Freq[i]) > 1e-6*cold.Freq[i]+1e-15 {
			t.Fatalf("URL %d: warm f %v, fresh %v", i, f, cold.Freq[i])
		}
	}

	// Two URLs trade hosts: the warm start is dropped.
	in.Hosts[10], in.Hosts[11] = in.Hosts[11], in.Hosts[10]
	if in.Hosts[10] == in.Hosts[11] {
		in.Hosts[10] = (in.Hosts[10] + 1) % int32(len(in.HostCaps))
	}
	moved, err := p.Plan(in)
	if err != nil {
		t.Fatal(err)
	}
	cold = fresh(in)
	if moved.Mu != cold.Mu {
		t.Errorf("after a host change: μ %v, a fresh policy's %v", moved.Mu, cold.Mu)
	}
	for i, f := range moved.Freq {
		if f != cold.Freq[i] {
			t.Fatalf("after a host change: URL %d: f %v, a fresh policy's %v", i, f, cold.Freq[i])
		}
	}
	if hostsHash(in.Hosts) == hostsHash(hosts) {
		t.Error("hostsHash does not tell the hosts apart")
	}
}
