package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/freshcrawl/freshcrawl/internal/seed"
	"github.com/freshcrawl/freshcrawl/internal/testutil/storetest"
	"github.com/freshcrawl/freshcrawl/store"
)

func seedLines(n int, bad map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if s, ok := bad[i]; ok {
			b.WriteString(s + "\n")
			continue
		}
		// Out of URL order, and every tenth line repeats an earlier URL.
		k := (i * 7919) % n
		if i%10 == 0 {
			k = (i / 2 * 7919) % n
		}
		fmt.Fprintf(&b, "https://h%d.example/page/%d\n", k%13, k)
	}
	return b.String()
}

func storedURLs(t *testing.T, db *store.DB) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	if err := db.ForEach(func(u store.URL) error { out[u.URL] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestIngestSeedsSorted: seeding through sorted runs (many spilled runs)
// stores every good line, counts repeats as updates, and reports each bad
// line as FILE:LINE; it gives the same URLs as streaming batches.
func TestIngestSeedsSorted(t *testing.T) {
	text := seedLines(3000, map[int]string{17: "not a url", 2500: `{"url": "https://x.example/", "wieght": 2}`})
	sorted, streamed := storetest.Open(t), storetest.Open(t)
	var bad []string
	reads := 0
	sum, err := IngestSeedsSorted(context.Background(), sorted, strings.NewReader(text), "seeds.txt", SortedSeedOptions{
		TempDir: t.TempDir(), RunBytes: 4 << 10,
		OnBad:  func(e *seed.LineError) { bad = append(bad, e.Error()) },
		OnRead: func(int) { reads++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) != 2 || !strings.HasPrefix(bad[0], "seeds.txt:17:") || !strings.HasPrefix(bad[1], "seeds.txt:2500:") || sum.Bad != 2 {
		t.Errorf("bad lines %q (%d counted), want seeds.txt:17 and seeds.txt:2500", bad, sum.Bad)
	}
	want, err := ingestSeedsBatch(context.Background(), streamed, seed.Parser{}, strings.NewReader(text), "seeds.txt", 100, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Good != 2998 || sum.Added != want.Added || sum.Updated != want.Updated || sum.Added+sum.Updated != sum.Good {
		t.Errorf("sorted: %+v; streamed: %+v", sum, want)
	}
	got, exp := storedURLs(t, sorted), storedURLs(t, streamed)
	if len(got) != sum.Added || len(got) != len(exp) {
		t.Fatalf("%d URLs stored sorted, %d streamed, %d added", len(got), len(exp), sum.Added)
	}
	for u := range exp {
		if !got[u] {
			t.Fatalf("%s missing from the sorted seeding", u)
		}
	}
}

// TestSeedingStops: a cancelled seeding keeps what it committed and says
// so: streaming stops at a batch with the line it reached, sorted seeding
// stores nothing when stopped while reading.
func TestSeedingStops(t *testing.T) {
	text := seedLines(1000, nil)
	db := storetest.Open(t)
	ctx, cancel := context.WithCancel(context.Background())
	batches := 0
	sum, err := ingestSeedsBatch(ctx, db, seed.Parser{}, strings.NewReader(text), "seeds.txt", 50, nil, func([]store.URL) {
		if batches++; batches == 2 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "seeds.txt:") {
		t.Fatalf("stopped seeding: %v, want the cancellation with the line reached", err)
	}
	if n := len(storedURLs(t, db)); sum.Added+sum.Updated != 100 || n != sum.Added {
		t.Errorf("summary %+v, %d URLs stored; want 100 lines stored and counted", sum, n)
	}

	db2 := storetest.Open(t)
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	sum, err = IngestSeedsSorted(ctx2, db2, strings.NewReader(seedLines(250_000, nil)), "big.txt", SortedSeedOptions{TempDir: t.TempDir()})
	if !errors.Is(err, context.Canceled) || sum.Added != 0 || sum.Good >= 250_000 {
		t.Fatalf("sorted seeding stopped before it stored: %+v, %v", sum, err)
	}
	if n := len(storedURLs(t, db2)); n != 0 {
		t.Errorf("%d URLs stored by a seeding stopped while reading", n)
	}

	// A line too long to read is a bad line, and the lines after it are
	// read too.
	db3 := storetest.Open(t)
	long := seedLines(30, nil) + "https://a.example/" + strings.Repeat("x", seed.MaxLine) + "\n" + "https://b.example/after\n"
	sum, err = IngestSeedsSorted(context.Background(), db3, strings.NewReader(long), "long.txt", SortedSeedOptions{TempDir: t.TempDir()})
	if err != nil || sum.Bad != 1 || len(sum.Errors) != 1 || !strings.HasPrefix(sum.Errors[0], "long.txt:31: line longer than") {
		t.Fatalf("a line too long: %+v, %v; want it reported as long.txt:31", sum, err)
	}
	if got := storedURLs(t, db3); len(got) != sum.Added || sum.Good != 31 || !got["https://b.example/after"] {
		t.Errorf("%d URLs stored, summary %+v; want the 31 good lines around the long one", len(got), sum)
	}
}

// POST /api/seeds stores the good lines of a batch that holds a URL too
// long for the store and a line too long to read, and names both.
func TestSeedsAPILongLines(t *testing.T) {
	e := newEnv(t, testSettings())
	c := e.coordinator(t, func(*Options) {})
	body := strings.Join([]string{
		"http://127.0.0.2:9/1",
		"http://127.0.0.2:9/" + strings.Repeat("a", 9<<10),
		"http://127.0.0.2:9/3",
		"http://127.0.0.2:9/" + strings.Repeat("b", 2<<20),
		"http://127.0.0.2:9/5",
	}, "\n")
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/api/seeds?name=batch", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-ndjson")
	c.Handler().ServeHTTP(rec, req)
	var sum SeedSummary
	if err := json.Unmarshal(rec.Body.Bytes(), &sum); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("POST /api/seeds: %d %.300s (%v)", rec.Code, rec.Body.String(), err)
	}
	if sum.Good != 3 || sum.Bad != 2 || len(sum.Errors) != 2 ||
		!strings.HasPrefix(sum.Errors[0], "batch:2: URL") || !strings.HasPrefix(sum.Errors[1], "batch:4: line longer than") {
		t.Errorf("summary %.500v; want 3 good and batch:2, batch:4 bad", sum)
	}
	got := storedURLs(t, e.db)
	for _, u := range []string{"http://127.0.0.2:9/1", "http://127.0.0.2:9/3", "http://127.0.0.2:9/5"} {
		if !got[u] {
			t.Errorf("%s not stored", u)
		}
	}
	if len(got) != 3 {
		t.Errorf("%d URLs stored, want 3", len(got))
	}
}

// TestSeedWebhookPrivateAddress: a seed whose webhook is the cloud
// metadata service is a bad line, naming the field, whether the running
// coordinator takes it or a store is seeded directly, unless webhooks may
// go to private addresses; then it is stored with its webhook.
func TestSeedWebhookPrivateAddress(t *testing.T) {
	const hook = "http://169.254.169.254/latest/meta-data/iam/security-credentials/"
	const line = `{"url":"https://a.example/","webhook":"` + hook + `"}`
	for _, allow := range []bool{false, true} {
		e := newEnv(t, testSettings())
		c := e.coordinator(t, func(o *Options) { o.Webhooks.AllowPrivate = allow })
		live, err := c.AddSeeds(strings.NewReader(line), "seeds.txt")
		if err != nil {
			t.Fatal(err)
		}
		direct, err := IngestSeedsSorted(context.Background(), storetest.Open(t), strings.NewReader(line), "seeds.txt", SortedSeedOptions{AllowPrivateWebhooks: allow})
		if err != nil {
			t.Fatal(err)
		}
		for how, sum := range map[string]SeedSummary{"live": live, "direct": direct} {
			if allow {
				if sum.Good != 1 || sum.Added != 1 {
					t.Errorf("%s, allowed: %+v, want the seed stored", how, sum)
				}
				continue
			}
			if sum.Bad != 1 || sum.Added != 0 || len(sum.Errors) != 1 || !strings.Contains(sum.Errors[0], `seeds.txt:1: field "webhook"`) {
				t.Errorf("%s: %+v, want one bad line naming the field", how, sum)
			}
		}
		u, err := e.db.Get("https://a.example/")
		switch {
		case allow && (err != nil || u.Webhook != hook):
			t.Errorf("allowed: stored %+v, %v", u, err)
		case !allow && err == nil:
			t.Errorf("refused, yet stored: %+v", u)
		}
	}
}
