package fold

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/internal/testutil/storetest"
	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/store"
)

// BenchmarkFold folds batches of results into a real bbolt file, as the
// coordinator does: 1000 URLs on 50 hosts, a quarter of the fetches
// finding a change (with a ~20 KiB text and a diff), the rest the same
// hash. ns/op and allocs/op are per batch; the result/s metric is per
// result. The batch sizes span what the coordinator's result loop folds
// in one transaction: 1 at a trickle, tens at a few hundred fetches a
// second, up to foldBatch (256) at its ceiling.
func BenchmarkFold(b *testing.B) {
	const urls, hosts = 1000, 50
	for _, batch := range []int{1, 16, 64, 256} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			db := storetest.Open(b)
			recs := make([]store.URL, urls)
			for i := range recs {
				h := fmt.Sprintf("127.0.0.%d:8080", 2+i%hosts)
				recs[i] = store.URL{URL: fmt.Sprintf("http://%s/p%d", h, i), Host: h, Weight: 1, Mode: "freshness"}
			}
			if _, err := db.Upsert(recs); err != nil {
				b.Fatal(err)
			}
			f, err := New(db, schedule.NewEstimator(90*24*time.Hour, 0.25/86400), DefaultOptions(), testutil.QuietLogger(b))
			if err != nil {
				b.Fatal(err)
			}
			text := strings.Repeat("A paragraph of the page, long enough to look like one.\n", 360)
			at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			in := make([]Input, batch)
			seq := 0
			b.ReportAllocs()
			for b.Loop() {
				for j := range in {
					seq++
					rec := &recs[seq%urls]
					round := seq / urls
					r := proto.Result{
						V: proto.Version, TaskID: fmt.Sprintf("t%d", seq), Kind: proto.KindFetch, URL: rec.URL, Host: rec.Host,
						WorkerID: "w", Attempt: 1, StartedAt: at.Add(time.Duration(seq) * time.Millisecond),
						FinishedAt: at.Add(time.Duration(seq)*time.Millisecond + 3*time.Millisecond), Status: 200, Bytes: 30000,
						ContentType: "text/html", Hash: fmt.Sprintf("h%d-%d", seq%urls, round/4),
					}
					if round%4 == 0 {
						r.Changed, r.Text = true, fmt.Sprintf("version %d\n", round)+text
						r.Diff = &proto.DiffSummary{LinesAdded: 1, LinesRemoved: 1, CharsChanged: 12, Magnitude: 0.001}
					}
					in[j] = Input{Result: r, Interval: time.Minute}
				}
				if _, err := f.Fold(in); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "results/s")
		})
	}
}
