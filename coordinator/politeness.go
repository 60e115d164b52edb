package coordinator

import (
	"time"

	"github.com/freshcrawl/freshcrawl/internal/schedule"
)

// restoreHosts gives the schedule each stored host's politeness: its
// Crawl-delay, the halvings of its rate and a Retry-After that has not
// ended. Without them a restart would forget that a host asked for less,
// and hit it at the full rate until it asked again. Hosts that cannot be
// read cost that memory only: logged, and the crawl goes on.
func (c *Coordinator) restoreHosts(do func(func(*schedule.Scheduler))) {
	hosts, err := c.db.Hosts()
	if err != nil {
		c.log.Warn("the stored hosts are unreadable; their Crawl-delay, slowdown and Retry-After are learnt again", "err", err)
		return
	}
	now := time.Now()
	held, slowed := 0, 0
	do(func(s *schedule.Scheduler) {
		for _, h := range hosts {
			if h.CrawlDelay == 0 && h.Slowdown == 0 && !h.BackoffTill.After(now) {
				continue
			}
			if s.RestoreHost(h.Host, h.CrawlDelay, h.Slowdown, h.BackoffTill) {
				if h.BackoffTill.After(now) {
					held++
				}
				if h.Slowdown > 0 {
					slowed++
				}
			}
		}
	})
	if held+slowed > 0 {
		c.log.Info("hosts' politeness restored from the store", "held_by_retry_after", held, "slowed", slowed)
	}
}
