package coordinator

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/freshcrawl/freshcrawl/internal/broker"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/store"
)

var (
	foldURLs    = flag.Int("fold-urls", 1_000_000, "BenchmarkFoldDuringReplan: URLs in the schedule")
	foldReplans = flag.Int("fold-replans", 3, "BenchmarkFoldDuringReplan: re-plans measured")
	foldIdle    = flag.Duration("fold-idle-solve", 0, "BenchmarkFoldDuringReplan: instead of the optimal policy, a uniform plan after this long idle (0: optimal)")
)

// BenchmarkFoldDuringReplan measures how long results wait to be folded
// while the coordinator re-plans -fold-urls URLs with the optimal policy.
// A running coordinator (its own result loop, a bbolt file, embedded
// NATS) gets a batch of 8 results on the result stream every 10 ms,
// whatever happens (an open loop, as results come from workers). Every
// result is a change, so the coordinator announces it on the change
// subject once the fold has committed and the schedule has been updated:
// a batch's latency runs from its publication to the last of its
// announcements. It reports p50, p99 and max over the batches published
// while a re-plan ran, and the same for the others.
//
// -fold-idle-solve replaces the optimal policy with a uniform plan that
// first idles that long: a re-plan that uses no CPU, which separates
// waiting for the schedule's lock from sharing the CPU with the solver.
//
//	go test ./coordinator -run '^$' -bench FoldDuringReplan -benchtime 1x -fold-urls 1000000
func BenchmarkFoldDuringReplan(b *testing.B) {
	n := *foldURLs
	const hosts, resultURLs, batch = 1000, 2000, 8
	const every = 10 * time.Millisecond
	policy, err := schedule.PolicyByName("optimal", "freshness")
	if err != nil {
		b.Fatal(err)
	}
	if *foldIdle > 0 {
		uniform, err := schedule.PolicyByName("uniform", "")
		if err != nil {
			b.Fatal(err)
		}
		policy = idlePolicy{uniform, *foldIdle}
	}
	e := newEnv(b, broker.DefaultSettings())
	// A long Replan: the coordinator's own loop leaves planning to the
	// benchmark.
	c := e.coordinator(b, func(o *Options) {
		o.Budget, o.HostRate, o.Policy, o.Replan = float64(n)/(30*86400), 1, policy, time.Hour
	})
	rng := rand.New(rand.NewPCG(1, 13))
	now := time.Now()
	recs := make([]store.URL, 0, resultURLs)
	urls := make([]schedule.URLInfo, n)
	for i := range urls {
		h := int(float64(hosts) * math.Pow(rng.Float64(), 2))
		host := fmt.Sprintf("www.shop-%04d.example.com", h)
		url := fmt.Sprintf("https://%s/catalog/category-%d/item-%08d?ref=list", host, i%97, i)
		iv := time.Duration(1+rng.Int64N(30*24)) * time.Hour
		urls[i] = schedule.URLInfo{URL: url, Host: host, Weight: math.Exp(rng.NormFloat64()), Rate: 1 / (86400 * (1 + 30*rng.Float64())),
			Interval: iv, NextDue: now.Add(time.Duration(rng.Int64N(int64(iv))))}
		if i < resultURLs {
			recs = append(recs, store.URL{URL: url, Host: host, Weight: urls[i].Weight, Mode: "freshness", Hash: "h0", Rate: urls[i].Rate,
				Interval: iv, NextDue: urls[i].NextDue})
		}
	}
	addURLs(c, urls, now)
	urls = nil
	if _, err := e.db.Upsert(recs); err != nil {
		b.Fatal(err)
	}

	// Announcements: task id → when it arrived.
	var mu sync.Mutex
	seen := map[string]time.Time{}
	sub, err := e.nc.Subscribe(proto.ChangeSubjectPrefix+">", func(m *nats.Msg) {
		at := time.Now()
		var ev proto.ChangeEvent
		if json.Unmarshal(m.Data, &ev) == nil {
			mu.Lock()
			seen[ev.TaskID] = at
			mu.Unlock()
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Unsubscribe()
	_ = sub.SetPendingLimits(-1, -1)
	run(b, c) // loads the store and makes the first plan (a cold solve) before it folds
	// Measure once it folds: a first result's announcement says so.
	warm := proto.Result{TaskID: "bench-warm", URL: recs[0].URL, Host: recs[0].Host, StartedAt: time.Now(), FinishedAt: time.Now(), Status: 200, Changed: true, Hash: "h-warm"}
	e.sendResult(b, warm)
	testutil.WaitFor(b, 5*time.Minute, "the coordinator to fold", func() bool {
		mu.Lock()
		defer mu.Unlock()
		_, ok := seen[warm.TaskID]
		return ok
	})

	type sent struct {
		at  time.Time
		ids []string
	}
	var batches []sent
	var windows [][2]time.Time
	planned := make(chan struct{})
	go func() {
		defer close(planned)
		// A second of folds before, between and after the measured
		// re-plans.
		for range *foldReplans {
			time.Sleep(time.Second)
			start := time.Now()
			replanForBench(c)
			windows = append(windows, [2]time.Time{start, time.Now()})
		}
		time.Sleep(time.Second)
	}()
	b.ResetTimer()
	t0, seq := time.Now(), 0
	for k := 0; ; k++ {
		select {
		case <-planned:
		default:
			if d := time.Until(t0.Add(time.Duration(k) * every)); d > 0 {
				time.Sleep(d) // the arrival rate, not synchronisation
			}
			s := sent{at: time.Now()}
			for range batch {
				seq++
				r := recs[rng.IntN(len(recs))]
				res := proto.Result{V: proto.Version, TaskID: fmt.Sprintf("bench-%d", seq), Kind: proto.KindFetch, URL: r.URL, Host: r.Host,
					StartedAt: s.at.Add(-20 * time.Millisecond), FinishedAt: s.at, Status: 200, Changed: true, Hash: fmt.Sprintf("h%d", seq), Text: "text"}
				raw, err := proto.Encode(res)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := e.js.PublishAsync(proto.ResultSubject(res.Kind), raw); err != nil {
					b.Fatal(err)
				}
				s.ids = append(s.ids, res.TaskID)
			}
			batches = append(batches, s)
			continue
		}
		break
	}
	last := batches[len(batches)-1].ids
	testutil.WaitFor(b, time.Minute, "the last batch to be folded", func() bool {
		mu.Lock()
		defer mu.Unlock()
		_, ok := seen[last[len(last)-1]]
		return ok
	})
	b.StopTimer()
	var during, outside []time.Duration
	mu.Lock()
	for _, s := range batches {
		var done time.Time
		for _, id := range s.ids {
			at, ok := seen[id]
			if !ok {
				b.Fatalf("result %s was never announced", id)
			}
			if at.After(done) {
				done = at
			}
		}
		in := false
		for _, w := range windows {
			in = in || (!s.at.Before(w[0]) && s.at.Before(w[1]))
		}
		if in {
			during = append(during, done.Sub(s.at))
		} else {
			outside = append(outside, done.Sub(s.at))
		}
	}
	mu.Unlock()
	for _, w := range windows {
		b.Logf("re-plan of %d URLs: %.2fs", n, w[1].Sub(w[0]).Seconds())
	}
	report := func(name string, d []time.Duration) {
		if len(d) == 0 {
			return
		}
		slices.Sort(d)
		q := func(p float64) float64 { return d[min(len(d)-1, int(p*float64(len(d))))].Seconds() * 1000 }
		b.Logf("fold latency %s re-plans: %d batches, p50 %.1f ms, p99 %.1f ms, max %.1f ms", name, len(d), q(0.5), q(0.99), d[len(d)-1].Seconds()*1000)
		b.ReportMetric(q(0.5), name+"-p50-ms")
		b.ReportMetric(q(0.99), name+"-p99-ms")
		b.ReportMetric(d[len(d)-1].Seconds()*1000, name+"-max-ms")
	}
	report("during", during)
	report("outside", outside)
}

// addURLs puts URLs into the live schedule.
func addURLs(c *Coordinator, urls []schedule.URLInfo, now time.Time) {
	c.disp.Do(func(s *schedule.Scheduler) {
		for _, u := range urls {
			s.Add(u, now)
		}
	})
}

// replanForBench is one re-plan as the coordinator's maintenance loop
// makes it.
func replanForBench(c *Coordinator) { c.replan() }

// idlePolicy plans like Policy after idling for idle.
type idlePolicy struct {
	schedule.Policy
	idle time.Duration
}

func (p idlePolicy) Plan(in schedule.PlanInput) (schedule.PlanOutput, error) {
	time.Sleep(p.idle) // stands for a solve that takes this long
	return p.Policy.Plan(in)
}
