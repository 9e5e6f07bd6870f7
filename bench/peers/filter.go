package main

// The filter subcommand: a single-threaded micro-benchmark of standalone
// filters built on identical keys. See README.md, "Filter micro-benchmark".

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"time"

	bbloom "github.com/bits-and-blooms/bloom/v3"
	"github.com/cockroachdb/pebble"
	pbloom "github.com/cockroachdb/pebble/bloom"
	lfilter "github.com/syndtr/goleveldb/leveldb/filter"

	sfilter "github.com/sievedb/sieve/filter"
)

// builtFilter is one filter built over the present keys.
type builtFilter struct {
	size int // bytes of the built (serialized) filter
	test func(key []byte) bool
}

// filterCandidate builds one kind of filter over keys with bitsPerKey.
type filterCandidate struct {
	name  string
	build func(keys keySet, bitsPerKey int) (builtFilter, error)
}

// keySet is count 16-byte keys stored back to back.
type keySet struct {
	buf   []byte
	count int
}

func (s keySet) key(i int) []byte { return s.buf[i*keyLen : (i+1)*keyLen : (i+1)*keyLen] }

func filterCandidates(bits int) []filterCandidate {
	sieve := func(name string, mk func(bits int) sfilter.Policy) filterCandidate {
		return filterCandidate{name: name, build: func(keys keySet, bits int) (builtFilter, error) {
			p := mk(bits)
			b := p.NewBuilder()
			for i := 0; i < keys.count; i++ {
				b.Add(keys.key(i))
			}
			data := b.Finish()
			r, err := p.NewReader(data)
			if err != nil {
				return builtFilter{}, err
			}
			return builtFilter{size: len(data), test: r.MayContain}, nil
		}}
	}
	return []filterCandidate{
		{name: "bits-and-blooms/bloom/v3", build: func(keys keySet, bits int) (builtFilter, error) {
			// m = bits·n and the optimal k = round(bits·ln 2), as the
			// table filters below; NewWithEstimates would pick its own m.
			k := uint(math.Max(1, math.Round(float64(bits)*math.Ln2)))
			f := bbloom.New(uint(bits*keys.count), k)
			for i := 0; i < keys.count; i++ {
				f.Add(keys.key(i))
			}
			data, err := f.MarshalBinary()
			if err != nil {
				return builtFilter{}, err
			}
			g := &bbloom.BloomFilter{}
			if err := g.UnmarshalBinary(data); err != nil {
				return builtFilter{}, err
			}
			return builtFilter{size: len(data), test: g.Test}, nil
		}},
		{name: "pebble bloom.FilterPolicy", build: func(keys keySet, bits int) (builtFilter, error) {
			p := pbloom.FilterPolicy(bits)
			w := p.NewWriter(pebble.TableFilter)
			for i := 0; i < keys.count; i++ {
				w.AddKey(keys.key(i))
			}
			data := w.Finish(nil)
			return builtFilter{size: len(data), test: func(key []byte) bool {
				return p.MayContain(pebble.TableFilter, data, key)
			}}, nil
		}},
		{name: "goleveldb filter.NewBloomFilter", build: func(keys keySet, bits int) (builtFilter, error) {
			f := lfilter.NewBloomFilter(bits)
			g := f.NewGenerator()
			for i := 0; i < keys.count; i++ {
				g.Add(keys.key(i))
			}
			var buf appendBuffer
			g.Generate(&buf)
			data := []byte(buf)
			return builtFilter{size: len(data), test: func(key []byte) bool {
				return f.Contains(data, key)
			}}, nil
		}},
		sieve(fmt.Sprintf("sieve filter.Bloom(%d)", bits), func(bits int) sfilter.Policy { return sfilter.Bloom(float64(bits)) }),
		sieve(fmt.Sprintf("sieve filter.StandardBloom(%d)", bits), func(bits int) sfilter.Policy { return sfilter.StandardBloom(float64(bits)) }),
		sieve("sieve filter.Cuckoo(12)", func(int) sfilter.Policy { return sfilter.Cuckoo(12) }),
		sieve("sieve filter.BinaryFuse(8)", func(int) sfilter.Policy { return sfilter.BinaryFuse(8) }),
		sieve("sieve filter.BinaryFuse(16)", func(int) sfilter.Policy { return sfilter.BinaryFuse(16) }),
		sieve("sieve filter.Ribbon(7)", func(int) sfilter.Policy { return sfilter.Ribbon(7) }),
	}
}

// appendBuffer is the goleveldb filter.Buffer the generator writes into.
type appendBuffer []byte

func (b *appendBuffer) Alloc(n int) []byte {
	*b = append(*b, make([]byte, n)...)
	return (*b)[len(*b)-n:]
}
func (b *appendBuffer) Write(p []byte) (int, error) { *b = append(*b, p...); return len(p), nil }
func (b *appendBuffer) WriteByte(c byte) error      { *b = append(*b, c); return nil }

// filterResult is one filter's row in one key scheme.
type filterResult struct {
	Name       string
	Keys       string
	BitsPerKey float64
	FPR        float64
	FalsePos   int
	Absent     int
	TestOps    float64 // MayContain calls per second, best round
	Queries    int     // calls per timed round
}

type filterOptions struct {
	n    int
	bits int
	keys string
	seed uint64
	// rounds is how many timed passes each filter gets over the query mix;
	// the report keeps the fastest (the one least disturbed by the
	// machine). Filters take turns within a round, in rotating order.
	rounds int
}

// runFilterCmd parses the subcommand's flags and writes its report to w.
func runFilterCmd(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("filter", flag.ContinueOnError)
	var o filterOptions
	fs.IntVar(&o.n, "n", 1000000, "present keys (as many absent keys, less one, sit between them)")
	fs.IntVar(&o.bits, "bits", 10, "bits per key of the Bloom filters (Cuckoo(12), BinaryFuse and Ribbon(7) ignore it)")
	fs.StringVar(&o.keys, "keys", "both", "key scheme: seq, scattered or both")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the query mix order")
	fs.IntVar(&o.rounds, "rounds", 7, "timed passes per filter over the query mix (the fastest is reported)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("filter: unexpected arguments %q", fs.Args())
	}
	return runFilterBench(o, filterCandidates(o.bits), w)
}

func runFilterBench(o filterOptions, cands []filterCandidate, w io.Writer) error {
	if o.n < 2 {
		return fmt.Errorf("-n must be at least 2")
	}
	if int64(o.n)*1000 >= 1e13 {
		return fmt.Errorf("-n too large for 13-digit keys")
	}
	if o.rounds < 1 {
		o.rounds = 1
	}
	if o.bits < 1 {
		return fmt.Errorf("-bits must be at least 1")
	}
	var schemes []string
	switch o.keys {
	case "both":
		schemes = []string{"seq", "scattered"}
	case "seq", "scattered":
		schemes = []string{o.keys}
	default:
		return fmt.Errorf("-keys must be seq, scattered or both")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	saved := scatteredKeys
	defer func() { scatteredKeys = saved }()

	start := time.Now()
	fmt.Fprintf(w, "peers filter -n=%d -bits=%d -keys=%s -rounds=%d: %s, GOMAXPROCS=%d, %s, %s\n",
		o.n, o.bits, o.keys, o.rounds, runtime.Version(), runtime.GOMAXPROCS(0), cpuModel(), start.UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "%d present keys, %d absent keys between them; test ops/s = MayContain calls/s over a shuffled mix of all of them, best of %d rounds\n",
		o.n, o.n-1, o.rounds)
	for _, scheme := range schemes {
		scatteredKeys = scheme == "scattered"
		rows, err := filterScheme(o, scheme, cands)
		if err != nil {
			return err
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| filter | keys | bits/key | FPR | test ops/s |")
		fmt.Fprintln(w, "|---|---|---:|---:|---:|")
		for _, r := range rows {
			fmt.Fprintf(w, "| %s | %s | %.2f | %.3f%% | %.2fM |\n", r.Name, r.Keys, r.BitsPerKey, 100*r.FPR, r.TestOps/1e6)
		}
	}
	fmt.Fprintf(w, "\n%.1f s\n", time.Since(start).Seconds())
	return nil
}

// errFalseNegative is wrapped by the error a filter that rejects a present
// key produces.
var errFalseNegative = errors.New("false negative")

func filterScheme(o filterOptions, scheme string, cands []filterCandidate) ([]filterResult, error) {
	present, absent, mix := filterKeys(o)
	rows := make([]filterResult, len(cands))
	built := make([]builtFilter, len(cands))
	for c, cand := range cands {
		runtime.GC()
		f, err := cand.build(present, o.bits)
		if err != nil {
			return nil, fmt.Errorf("%s (%s keys): build: %w", cand.name, scheme, err)
		}
		fp, err := countFalsePositives(f, present, absent)
		if err != nil {
			return nil, fmt.Errorf("%s (%s keys): %w", cand.name, scheme, err)
		}
		built[c] = f
		rows[c] = filterResult{
			Name: cand.name, Keys: scheme,
			BitsPerKey: float64(f.size) * 8 / float64(present.count),
			FalsePos:   fp, Absent: absent.count, FPR: float64(fp) / float64(absent.count),
			Queries: mix.count,
		}
	}
	best, err := timeFilters(o.rounds, built, rows, mix, present.count)
	if err != nil {
		return nil, err
	}
	for c := range rows {
		rows[c].TestOps = float64(mix.count) / max(best[c].Seconds(), 1e-9)
	}
	return rows, nil
}

// filterKeys returns the present keys, the absent keys and the timed mix:
// every present and absent key once, shuffled, copied into one buffer so
// the loop reads keys sequentially.
func filterKeys(o filterOptions) (present, absent, mix keySet) {
	n, absentN := o.n, o.n-1
	present = keySet{buf: make([]byte, 0, n*keyLen), count: n}
	absent = keySet{buf: make([]byte, 0, absentN*keyLen), count: absentN}
	var k []byte
	for i := 0; i < n; i++ {
		k = presentKey(k, i)
		present.buf = append(present.buf, k...)
	}
	for j := 0; j < absentN; j++ {
		k = absentKey(k, j)
		absent.buf = append(absent.buf, k...)
	}
	rng := rand.New(rand.NewPCG(o.seed, 0xf117e5))
	mix = keySet{buf: make([]byte, 0, (n+absentN)*keyLen), count: n + absentN}
	for _, q := range rng.Perm(n + absentN) {
		if q < n {
			mix.buf = append(mix.buf, present.key(q)...)
		} else {
			mix.buf = append(mix.buf, absent.key(q-n)...)
		}
	}
	return present, absent, mix
}

// countFalsePositives checks f accepts every present key and counts the
// absent keys it accepts.
func countFalsePositives(f builtFilter, present, absent keySet) (int, error) {
	for i := 0; i < present.count; i++ {
		if !f.test(present.key(i)) {
			return 0, fmt.Errorf("%w: present key %q (#%d) rejected", errFalseNegative, present.key(i), i)
		}
	}
	fp := 0
	for j := 0; j < absent.count; j++ {
		if f.test(absent.key(j)) {
			fp++
		}
	}
	return fp, nil
}

// timeFilters times rounds passes of each filter over the mix, the
// filters taking turns in rotating order, and returns each one's fastest.
// Deterministic filters: a timed pass must say yes to every present key
// and to exactly the false positives counted before.
func timeFilters(rounds int, built []builtFilter, rows []filterResult, mix keySet, n int) ([]time.Duration, error) {
	best := make([]time.Duration, len(built))
	for round := 0; round < rounds; round++ {
		for k := range built {
			c := (k + round) % len(built)
			f := built[c]
			runtime.GC()
			hits := 0
			t0 := time.Now()
			for q := 0; q < mix.count; q++ {
				if f.test(mix.buf[q*keyLen : (q+1)*keyLen]) {
					hits++
				}
			}
			d := time.Since(t0)
			if hits != n+rows[c].FalsePos {
				return nil, fmt.Errorf("%s (%s keys): timed pass accepted %d keys, want %d present + %d false positives",
					rows[c].Name, rows[c].Keys, hits, n, rows[c].FalsePos)
			}
			if round == 0 || d < best[c] {
				best[c] = d
			}
		}
	}
	return best, nil
}
