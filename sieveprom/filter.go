package sieveprom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sievedb/sieve"
)

// rateSum accumulates a filter's measured probes and its expected rate
// weighted by keys.
type rateSum struct {
	falsePositives, negatives int64
	expectedSum, keys         float64
	policyKeys                map[string]float64
}

func (r *rateSum) measured() float64 {
	if r.falsePositives+r.negatives == 0 {
		return 0
	}
	return float64(r.falsePositives) / float64(r.falsePositives+r.negatives)
}

func (r *rateSum) expected() float64 {
	if r.keys == 0 {
		return 0
	}
	return r.expectedSum / r.keys
}

// policy is the policy holding the most keys (ties: the first name).
func (r *rateSum) policy() string {
	best := ""
	for name, k := range r.policyKeys {
		if best == "" || k > r.policyKeys[best] || (k == r.policyKeys[best] && name < best) {
			best = name
		}
	}
	return best
}

// filterKeys is how many keys a level's filters hold, from their memory
// and bits per key.
func filterKeys(lm *sieve.LevelMetrics) float64 {
	if lm.FilterBitsPerKey == 0 {
		return 0
	}
	return 8 * float64(lm.FilterBytes) / lm.FilterBitsPerKey
}

// collectFilterRates sends the measured and expected false-positive rates
// of each level (over every family: the engine counts probes over the
// database) and of each policy (the levels summed by their main policy).
func collectFilterRates(ch chan<- prometheus.Metric, m *sieve.Metrics, fams []family) {
	policies := map[string]*rateSum{}
	for l := range m.Levels {
		lr := rateSum{falsePositives: m.Levels[l].Filter.FalsePositives, negatives: m.Levels[l].Filter.Negatives,
			policyKeys: map[string]float64{}}
		for _, f := range fams {
			lm := &f.m.Levels[l]
			if lm.FilterPolicy == "" || lm.FilterExpectedFPR == 0 {
				continue
			}
			k := filterKeys(lm)
			lr.expectedSum += k * lm.FilterExpectedFPR
			lr.keys += k
			lr.policyKeys[lm.FilterPolicy] += k
		}
		p := lr.policy()
		if p == "" {
			continue // no open table with a filter: nothing to compare
		}
		ch <- prometheus.MustNewConstMetric(measuredFPRDesc, prometheus.GaugeValue, lr.measured(), levelLabels[l], p)
		ch <- prometheus.MustNewConstMetric(expectedFPRDesc, prometheus.GaugeValue, lr.expected(), levelLabels[l], p)
		pr := policies[p]
		if pr == nil {
			pr = &rateSum{}
			policies[p] = pr
		}
		pr.falsePositives += lr.falsePositives
		pr.negatives += lr.negatives
		pr.expectedSum += lr.expectedSum
		pr.keys += lr.keys
	}
	for p, pr := range policies {
		ch <- prometheus.MustNewConstMetric(policyMeasuredFPRDesc, prometheus.GaugeValue, pr.measured(), p)
		ch <- prometheus.MustNewConstMetric(policyExpectedFPRDesc, prometheus.GaugeValue, pr.expected(), p)
	}
}
