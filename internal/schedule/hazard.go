package schedule

import "time"

// CollectionHazard is the hazard of a change of a URL's rate (per URL per
// second) that the exploration, the rechecks and the model freshness use:
// changePoints detected over observed seconds of the collection's URLs,
// with the prior's one change in hazardPriorTime half-lives added, so that
// a young collection is not taken to have none.
func CollectionHazard(changePoints, observed float64, halfLife time.Duration) float64 {
	return (changePoints + 1) / (observed + hazardPriorTime*halfLife.Seconds())
}

// hazardPriorTime is the prior's observed time of the hazard estimate, in
// half-lives (20 × 90 days ≈ five years), so that it scales with the
// clock a simulated web runs on:
// one rate change in five years of observation until the collection
// shows more.
const hazardPriorTime = 20.0

// hazardMemory is the half-life of the hazard estimate's counts, as a
// share of the estimator's: short, so that a wave of rate changes across
// the collection shortens the rechecks of URLs given up within weeks.
const hazardMemory = 1.0 / 3

// HazardCounts is what the scheduler has counted of the collection for
// the hazard of a rate change (CollectionHazard): the change points seen
// and the seconds of observation, faded to at (zero before any
// observation). A coordinator stores them so that a restart goes on from
// them (RestoreHazardCounts).
func (s *Scheduler) HazardCounts() (changePoints, observed float64, at time.Time) {
	return s.changePoints, s.urlTime, s.hazardAt
}
