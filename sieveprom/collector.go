package sieveprom

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sievedb/sieve"
)

// Collector is a prometheus.Collector of a sieve database's metrics.
type Collector struct {
	db       *sieve.DB
	families []*sieve.ColumnFamily
}

// New returns a collector of db's metrics and of the column families given
// (the default family is always included, as cf="default"). Register it
// with a prometheus.Registerer; it reads the metrics at each scrape.
func New(db *sieve.DB, families ...*sieve.ColumnFamily) *Collector {
	return &Collector{db: db, families: families}
}

// DefaultFamily is the cf label of the default column family.
const DefaultFamily = "default"

// levelLabels are the values of the level label, by level.
var levelLabels = func() []string {
	var out []string
	for l := range len(sieve.Metrics{}.Levels) {
		out = append(out, strconv.Itoa(l))
	}
	return out
}()

// Describe sends the descriptors of every metric the collector exports.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, s := range scalars {
		ch <- s.desc
	}
	for _, l := range levelCounters {
		ch <- l.desc
	}
	for _, f := range familyLevelGauges {
		ch <- f.desc
	}
	for _, d := range otherDescs {
		ch <- d
	}
}

// Collect reads the metrics of the database and its families.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	m := c.db.Metrics()
	for _, s := range scalars {
		ch <- prometheus.MustNewConstMetric(s.desc, s.typ, s.val(m))
	}
	for _, lc := range levelCounters {
		for l := range m.Levels {
			ch <- prometheus.MustNewConstMetric(lc.desc, prometheus.CounterValue, float64(lc.val(&m.Levels[l])), levelLabels[l])
		}
	}
	fams := []family{{DefaultFamily, m}}
	for _, cf := range c.families {
		if cf.Name() != DefaultFamily {
			fams = append(fams, family{cf.Name(), cf.Metrics()})
		}
	}
	for _, f := range fams {
		collectFamily(ch, f)
	}
	collectFilterRates(ch, m, fams)
	bg := 0.0
	if c.db.BackgroundError() != nil {
		bg = 1
	}
	ch <- prometheus.MustNewConstMetric(backgroundErrorDesc, prometheus.GaugeValue, bg)
}

// family is one column family's name and metrics.
type family struct {
	name string
	m    *sieve.Metrics
}

// collectFamily sends a column family's shape: per level, and its
// memtable and read amplification.
func collectFamily(ch chan<- prometheus.Metric, f family) {
	for l := range f.m.Levels {
		lm := &f.m.Levels[l]
		for _, g := range familyLevelGauges {
			ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, g.val(lm), f.name, levelLabels[l])
		}
		if lm.FilterPolicy != "" {
			ch <- prometheus.MustNewConstMetric(familyExpectedFPRDesc, prometheus.GaugeValue, lm.FilterExpectedFPR,
				f.name, levelLabels[l], lm.FilterPolicy)
		}
	}
	ch <- prometheus.MustNewConstMetric(memtableSizeDesc, prometheus.GaugeValue, float64(f.m.MemTable.Size), f.name)
	ch <- prometheus.MustNewConstMetric(readAmpDesc, prometheus.GaugeValue, float64(f.m.ReadAmp), f.name)
}
