package filter

import (
	"fmt"
	"sync"
	"testing"
)

// Benchmarks on 1M "key%013d" keys (present 2i, absent 2i+1):
//
//	go test -run '^$' -bench . -count 5 ./filter/
//
// On a shared, noisy machine many short runs give steadier medians:
//
//	go test -run '^$' -bench Probe -count 40 -benchtime 20ms ./filter/
//
// BenchmarkBuild reports ns/key for a whole table filter; BenchmarkProbe
// reports ns per MayContain for present (hit) and absent (miss) keys, with
// the measured false-positive rate and size as extra metrics.

const benchKeys = 1_000_000

var benchPolicies = []Policy{
	Bloom(6), Bloom(8), Bloom(10), Bloom(12), Bloom(16), Bloom(20),
	StandardBloom(6), StandardBloom(10), StandardBloom(16),
	Cuckoo(8), Cuckoo(12), Cuckoo(16),
	BinaryFuse(8), BinaryFuse(16), Ribbon(7), Ribbon(10),
}

var benchSet = sync.OnceValues(func() (present, absent keySet) {
	return seqKeys(0, benchKeys, 0), seqKeys(0, benchKeys, 1)
})

func BenchmarkBuild(b *testing.B) {
	present, _ := benchSet()
	for _, p := range benchPolicies {
		b.Run(p.Name(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				build(p, present)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchKeys, "ns/key")
		})
	}
}

// benchFilter is a policy's filter over the benchmark keys, built once per
// process so that many short -count runs measure probes, not setup.
type benchFilter struct {
	r        Reader
	size     int
	fpr, exp float64
}

var benchFilters = sync.OnceValue(func() map[string]benchFilter {
	present, absent := benchSet()
	m := map[string]benchFilter{}
	for _, p := range benchPolicies {
		data := build(p, present)
		r, err := p.NewReader(data)
		if err != nil {
			panic(err)
		}
		exp, _ := ExpectedFPR(p, benchKeys)
		m[p.Name()] = benchFilter{r, len(data), float64(falsePositives(r, absent)) / benchKeys, exp}
	}
	return m
})

func BenchmarkProbe(b *testing.B) {
	present, absent := benchSet()
	for _, p := range benchPolicies {
		f := benchFilters()[p.Name()]
		r := f.r
		for _, c := range []struct {
			name string
			keys keySet
		}{{"hit", present}, {"miss", absent}} {
			b.Run(fmt.Sprintf("%s/%s", p.Name(), c.name), func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					r.MayContain(c.keys.at(i))
					if i++; i == benchKeys {
						i = 0
					}
				}
				if c.name == "miss" {
					b.ReportMetric(100*f.fpr, "fpr%")
					b.ReportMetric(100*f.exp, "expected-fpr%")
					b.ReportMetric(float64(f.size)/benchKeys, "bytes/key")
				}
			})
		}
	}
}

// BenchmarkStandalone measures the mutable filters' Add and Test.
func BenchmarkStandalone(b *testing.B) {
	present, absent := benchSet()
	b.Run("StandardBloomFilter/Add", func(b *testing.B) {
		f, _ := NewStandardBloomFilter(benchKeys, 0.01)
		i := 0
		for b.Loop() {
			f.Add(present.at(i))
			if i++; i == benchKeys {
				i = 0
			}
		}
	})
	b.Run("StandardBloomFilter/Test", func(b *testing.B) {
		f, _ := NewStandardBloomFilter(benchKeys, 0.01)
		for i := range benchKeys {
			f.Add(present.at(i))
		}
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			f.Test(absent.at(i))
			if i++; i == benchKeys {
				i = 0
			}
		}
	})
	b.Run("CuckooTableFilter/AddDelete", func(b *testing.B) {
		f, _ := NewCuckooTableFilter(benchKeys, 12)
		for i := range benchKeys * 9 / 10 {
			_ = f.Add(present.at(i))
		}
		i := 0
		for b.Loop() {
			_ = f.Add(absent.at(i))
			f.Delete(absent.at(i))
			if i++; i == benchKeys {
				i = 0
			}
		}
	})
	b.Run("CuckooTableFilter/Test", func(b *testing.B) {
		f, _ := NewCuckooTableFilter(benchKeys, 12)
		for i := range benchKeys {
			_ = f.Add(present.at(i))
		}
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			f.Test(absent.at(i))
			if i++; i == benchKeys {
				i = 0
			}
		}
	})
}
