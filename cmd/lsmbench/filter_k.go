package main

import (
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/sievedb/sieve/filter"
)

// kSweep is a classic Bloom filter of fixed m/n measured for each k.
type kSweep struct {
	BitsPerKey float64 `json:"bits_per_key"`
	M          uint64  `json:"m"`
	N          int     `json:"n"`
	// OptimalK is (m/n)·ln 2, where (1 − e^(−kn/m))^k is least;
	// BestMeasuredK is the k whose measured FPR was lowest.
	OptimalK      float64 `json:"optimal_k"`
	BestMeasuredK int     `json:"best_measured_k"`
	Rows          []kRow  `json:"rows"`
}

type kRow struct {
	K int `json:"k"`
	// BitsSet is the fraction of the m bits set after adding n keys;
	// BitsSetTheory is 1 − e^(−kn/m).
	BitsSet         float64 `json:"bits_set"`
	BitsSetTheory   float64 `json:"bits_set_theory"`
	FalsePositives  int64   `json:"false_positives"`
	MeasuredFPR     float64 `json:"measured_fpr"`
	MeasuredFPRLow  float64 `json:"measured_fpr_ci95_low"`
	MeasuredFPRHigh float64 `json:"measured_fpr_ci95_high"`
	TheoryFPR       float64 `json:"theory_fpr"`
}

func (l *filterLab) kSweep() *kSweep {
	n, probes := l.present.len(), l.absent.len()
	m := uint64(math.Ceil(float64(n) * l.cfg.KBits))
	ks := &kSweep{N: n, OptimalK: l.cfg.KBits * math.Ln2}
	ph := l.prog.start("k sweep", int64(l.cfg.KMax))
	defer ph.finish()
	best := math.Inf(1)
	for k := 1; k <= l.cfg.KMax && l.ctx.Err() == nil; k++ {
		f := newKBloom(m, k)
		ks.M = f.m
		for i := range n {
			f.add(l.present.at(i))
		}
		var fp int64
		for j := range probes {
			if f.mayContain(l.absent.at(j)) {
				fp++
			}
		}
		bpk := float64(f.m) / float64(n)
		r := kRow{K: k, BitsSet: f.fillRatio(), BitsSetTheory: 1 - math.Exp(-float64(k)/bpk),
			FalsePositives: fp, TheoryFPR: filter.StandardFPR(bpk, k)}
		r.MeasuredFPR, r.MeasuredFPRLow, r.MeasuredFPRHigh = wilson(fp, int64(probes))
		if r.MeasuredFPR < best {
			best, ks.BestMeasuredK = r.MeasuredFPR, k
		}
		ks.Rows = append(ks.Rows, r)
		ph.add(1)
	}
	ks.BitsPerKey = float64(ks.M) / float64(n)
	return ks
}

func printKSweep(w io.Writer, ks *kSweep) {
	fmt.Fprintf(w, "2. The number of hashes: classic Bloom filter, m/n = %.2f bits/key (m = %s bits, n = %s)\n",
		ks.BitsPerKey, commas(int64(ks.M)), commas(int64(ks.N)))
	fmt.Fprintf(w, "%4s %9s %9s %10s %21s %10s\n", "k", "bits set", "theory", "measured", "95% CI", "theory")
	for _, r := range ks.Rows {
		mark := ""
		if r.K == int(math.Round(ks.OptimalK)) {
			mark = "  ← round((m/n)·ln 2)"
		}
		fmt.Fprintf(w, "%4d %9s %9s %10s %21s %10s%s\n", r.K, pct(r.BitsSet), pct(r.BitsSetTheory),
			pct(r.MeasuredFPR), pct(r.MeasuredFPRLow)+" – "+pct(r.MeasuredFPRHigh), pct(r.TheoryFPR), mark)
	}
	fmt.Fprintf(w, "FPR (1 − e^(−kn/m))^k is least at k = (m/n)·ln 2 = %.2f, where half the bits are set; lowest measured at k = %d.\n\n",
		ks.OptimalK, ks.BestMeasuredK)
}

// overfill is a filter sized for Capacity keys at Rate, made to hold more.
type overfill struct {
	Capacity int     `json:"capacity"`
	Rate     float64 `json:"rate"`
	// The standalone Bloom filter: m bits, k probes.
	BloomM     uint64 `json:"bloom_m"`
	BloomK     int    `json:"bloom_k"`
	BloomBytes int    `json:"bloom_bytes"`
	// The cuckoo filter of the same capacity with the fingerprint width
	// whose bound meets Rate; CuckooFullAt is the number of keys it held
	// when it first refused one with ErrFull (0: it never did).
	CuckooFingerprintBits int           `json:"cuckoo_fingerprint_bits"`
	CuckooBytes           int           `json:"cuckoo_bytes"`
	CuckooFullAt          int64         `json:"cuckoo_full_at"`
	CuckooFullLoad        float64       `json:"cuckoo_full_load"`
	Rows                  []overfillRow `json:"rows"`
}

type overfillRow struct {
	Fill float64 `json:"fill"` // keys offered / capacity
	Keys int64   `json:"keys"`
	// Bloom: measured rate, the filter's own estimate FillRatio^k, and
	// (1 − e^(−k·keys/m))^k.
	BloomFPR         float64 `json:"bloom_fpr"`
	BloomFPRLow      float64 `json:"bloom_fpr_ci95_low"`
	BloomFPRHigh     float64 `json:"bloom_fpr_ci95_high"`
	BloomFillRatio   float64 `json:"bloom_fill_ratio"`
	BloomEstimate    float64 `json:"bloom_expected_fpr"`
	BloomTheory      float64 `json:"bloom_theory_fpr"`
	CuckooHeld       int64   `json:"cuckoo_held"`
	CuckooLoad       float64 `json:"cuckoo_load"`
	CuckooFPR        float64 `json:"cuckoo_fpr"`
	CuckooTheory     float64 `json:"cuckoo_theory_fpr"`
	CuckooRefusedAny bool    `json:"cuckoo_refused"`
}

func (l *filterLab) overfill() (*overfill, error) {
	capacity, probes := l.cfg.N, l.absent.len()
	bf, err := filter.NewStandardBloomFilter(uint64(capacity), l.cfg.OverfillP)
	if err != nil {
		return nil, err
	}
	fbits := filter.CuckooFingerprintBits(l.cfg.OverfillP)
	cf, err := filter.NewCuckooTableFilter(uint64(capacity), fbits)
	if err != nil {
		return nil, err
	}
	blob, _ := bf.MarshalBinary()
	cblob, _ := cf.MarshalBinary()
	o := &overfill{Capacity: capacity, Rate: l.cfg.OverfillP, BloomM: bf.M(), BloomK: bf.K(), BloomBytes: len(blob),
		CuckooFingerprintBits: fbits, CuckooBytes: len(cblob)}
	ks := keyspace{num: capacity, keySize: l.cfg.KeySize}
	key := make([]byte, l.cfg.KeySize)
	maxKeys := int64(math.Ceil(l.cfg.Overfill[len(l.cfg.Overfill)-1] * float64(capacity)))
	ph := l.prog.start("overfill", maxKeys)
	defer ph.finish()
	var added int64
	cuckooFull := false
	for _, fill := range l.cfg.Overfill {
		target := int64(math.Round(fill * float64(capacity)))
		for ; added < target; added++ {
			k := ks.present(key, uint64(added))
			bf.Add(k)
			if !cuckooFull {
				if err := cf.Add(k); errors.Is(err, filter.ErrFull) {
					cuckooFull = true
					o.CuckooFullAt, o.CuckooFullLoad = int64(cf.Len()), cf.Load()
				} else if err != nil {
					return nil, err
				}
			}
			if added%progressChunk == 0 {
				ph.add(progressChunk)
			}
		}
		if err := l.ctx.Err(); err != nil {
			return nil, err
		}
		var bfp, cfp int64
		for j := range probes {
			a := l.absent.at(j)
			if bf.Test(a) {
				bfp++
			}
			if cf.Test(a) {
				cfp++
			}
		}
		r := overfillRow{Fill: fill, Keys: added, BloomFillRatio: bf.FillRatio(), BloomEstimate: bf.ExpectedFPR(),
			BloomTheory: math.Pow(1-math.Exp(-float64(bf.K())*float64(added)/float64(bf.M())), float64(bf.K())),
			CuckooHeld:  int64(cf.Len()), CuckooLoad: cf.Load(), CuckooFPR: float64(cfp) / float64(probes),
			CuckooTheory: filter.CuckooFPR(fbits, cf.Load()), CuckooRefusedAny: cuckooFull}
		r.BloomFPR, r.BloomFPRLow, r.BloomFPRHigh = wilson(bfp, int64(probes))
		o.Rows = append(o.Rows, r)
	}
	return o, nil
}

func printOverfill(w io.Writer, o *overfill) {
	fmt.Fprintf(w, "3. Overfill: filters sized for %s keys at %s, holding more\n", commas(int64(o.Capacity)), pct(o.Rate))
	fmt.Fprintf(w, "   Bloom: m = %s bits (%s), k = %d.  Cuckoo: f = %d bits (%s).\n",
		commas(int64(o.BloomM)), humanBytes(int64(o.BloomBytes)), o.BloomK, o.CuckooFingerprintBits, humanBytes(int64(o.CuckooBytes)))
	fmt.Fprintf(w, "%6s %11s | %9s %21s %9s %9s | %11s %7s %9s\n",
		"fill", "keys", "bloom FPR", "95% CI", "theory", "bits set", "cuckoo held", "load", "FPR")
	for _, r := range o.Rows {
		held := commas(r.CuckooHeld)
		if r.CuckooRefusedAny {
			held += "*"
		}
		fmt.Fprintf(w, "%5.2fn %11s | %9s %21s %9s %9s | %11s %7s %9s\n", r.Fill, commas(r.Keys),
			pct(r.BloomFPR), pct(r.BloomFPRLow)+" – "+pct(r.BloomFPRHigh), pct(r.BloomTheory), pct(r.BloomFillRatio),
			held, pct(r.CuckooLoad), pct(r.CuckooFPR))
	}
	if o.CuckooFullAt > 0 {
		fmt.Fprintf(w, "* the cuckoo filter refused a key (ErrFull) when it held %s (load %s) and takes no more:\n",
			commas(o.CuckooFullAt), pct(o.CuckooFullLoad))
		fmt.Fprintf(w, "  it fails loudly where the Bloom filter silently drifts.\n")
	}
	fmt.Fprintf(w, "A Bloom filter never refuses a key; it gets worse: watch FillRatio or ExpectedFPR, or stack filters\n")
	fmt.Fprintf(w, "(sieve's table filters are sized per table and cannot overfill).\n\n")
}
