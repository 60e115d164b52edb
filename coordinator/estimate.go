package coordinator

import (
	"time"

	"github.com/freshcrawl/freshcrawl/estimate"
	"github.com/freshcrawl/freshcrawl/store"
)

// observe folds one "changed or not since the last successful fetch"
// observation into the URL's estimator and refreshes its rate. Time is in
// seconds, so rates are changes per second, the unit of the budget.
func (c *Coordinator) observe(u *store.URL, interval float64, changed bool, at time.Time) {
	if interval <= 0 {
		return
	}
	var st estimate.State
	if len(u.Estimate) > 0 {
		if err := st.UnmarshalBinary(u.Estimate); err != nil {
			c.log.Warn("discarding unreadable estimator state", "url", u.URL, "err", err)
			st = estimate.State{}
		}
	}
	now := float64(at.UnixNano()) / 1e9
	if err := st.Observe(now, interval, changed, c.estCfg); err != nil {
		c.log.Debug("observation refused", "url", u.URL, "err", err)
		return
	}
	if b, err := st.MarshalBinary(); err == nil {
		u.Estimate = b
	}
	u.Rate = st.Rate(c.prior)
}
