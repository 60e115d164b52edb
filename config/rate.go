package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Rate is a frequency in events per second, written as a count per unit:
// "20/s", "300/m", "5000/h", "1000/d" (a plain number means per second).
type Rate float64

// ParseRate parses a rate.
func ParseRate(s string) (Rate, error) {
	s = strings.TrimSpace(s)
	num, unit, found := strings.Cut(s, "/")
	per := 1.0
	if found {
		switch strings.ToLower(strings.TrimSpace(unit)) {
		case "s", "sec", "second":
			per = 1
		case "m", "min", "minute":
			per = 60
		case "h", "hour":
			per = 3600
		case "d", "day":
			per = 86400
		default:
			return 0, fmt.Errorf("rate %q: unit %q is not s, m, h or d", s, unit)
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("rate %q: want a non-negative number per unit, such as 20/s, 300/m, 5000/h or 1000/d", s)
	}
	return Rate(v / per), nil
}

// PerSecond is the rate in events per second.
func (r Rate) PerSecond() float64 { return float64(r) }

// String prints the rate in the largest unit that keeps it ≥ 1.
func (r Rate) String() string {
	v := float64(r)
	switch {
	case v == 0 || v >= 1:
		return strconv.FormatFloat(v, 'g', -1, 64) + "/s"
	case v*60 >= 1:
		return strconv.FormatFloat(v*60, 'g', 6, 64) + "/m"
	case v*3600 >= 1:
		return strconv.FormatFloat(v*3600, 'g', 6, 64) + "/h"
	default:
		return strconv.FormatFloat(v*86400, 'g', 6, 64) + "/d"
	}
}

// Set implements pflag.Value.
func (r *Rate) Set(s string) error {
	v, err := ParseRate(s)
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// Type implements pflag.Value.
func (r *Rate) Type() string { return "rate" }
