package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/sketchcol"
)

// storeRun is the lab's "store" section: -capacity IDs written blind
// through sketchcol.Store into one HyperLogLog, one Bloom filter reserved
// for -capacity at -p and one cuckoo filter reserved for -capacity, in a
// temporary database, then compacted. Per structure: the stored value's
// bytes, whether they equal the value built in memory from the same IDs
// (the merge operands and compaction change nothing), the ingest rate and
// the answers read back through the Store.
type storeRun struct {
	IDs  int        `json:"ids"`
	Rate float64    `json:"rate"`
	Rows []storeRow `json:"rows"`
	// TableBytes is the sketch column family's tables after compaction:
	// the three values with their keys, blocks, index and filter.
	TableBytes int64 `json:"table_bytes"`
}

type storeRow struct {
	Structure        string  `json:"structure"`
	ValueBytes       int     `json:"value_bytes"`
	SameAsStandalone bool    `json:"same_as_standalone"`
	IDsPerSec        float64 `json:"ingest_ids_per_sec"`
	// Count is PFCount (HyperLogLog); the filters report false negatives
	// over every ID added and the false-positive rate over -probes IDs
	// never added.
	Count          int64   `json:"count,omitempty"`
	FalseNegatives int64   `json:"false_negatives"`
	FPR            float64 `json:"fpr"`
}

// storeChunk is how many IDs one blind add carries.
const storeChunk = 1000

func (l *sketchLab) storeSketches() (*storeRun, error) {
	c := l.cfg
	s, done, err := tempStore("lsmbench-sketchstore-")
	if err != nil {
		return nil, err
	}
	defer done()
	ph := l.prog.start("store", 4)
	defer ph.finish()

	ks := keyspace{num: c.Capacity, keySize: c.KeySize}
	ids := make([][]byte, c.Capacity)
	for i := range ids {
		ids[i] = ks.present(make([]byte, c.KeySize), uint64(i))
	}
	rates, err := storeBlindAdds(s, c, ids, ph)
	if err != nil {
		return nil, err
	}
	if err := s.ColumnFamily().Compact(nil, nil); err != nil {
		return nil, err
	}
	sr := &storeRun{IDs: c.Capacity, Rate: c.Rate}
	for _, lv := range s.ColumnFamily().Metrics().Levels {
		sr.TableBytes += lv.Size
	}
	standalone, err := standaloneSketches(c, ids)
	if err != nil {
		return nil, err
	}
	probes := make([][]byte, c.Probes)
	for j := range probes {
		probes[j] = ks.missing(make([]byte, c.KeySize), uint64(j))
	}
	names := []string{"HyperLogLog", fmt.Sprintf("Bloom (BF.RESERVE %s %s)", pct(c.Rate), commas(int64(c.Capacity))),
		fmt.Sprintf("cuckoo (CF.RESERVE %s)", commas(int64(c.Capacity)))}
	for i, a := range storeAdds(s) {
		v, err := s.Dump([]byte(a.key))
		if err != nil {
			return nil, err
		}
		row := storeRow{Structure: names[i], ValueBytes: len(v), SameAsStandalone: string(v) == string(standalone[i]), IDsPerSec: rates[i]}
		if a.key == "hll" {
			row.Count, err = s.PFCount([]byte(a.key))
		} else {
			row.FalseNegatives, row.FPR, err = storeProbe(s, a.key, ids, probes)
		}
		if err != nil {
			return nil, err
		}
		sr.Rows = append(sr.Rows, row)
	}
	ph.add(1)
	return sr, l.ctx.Err()
}

// storeAdds are the sketch values the store run writes, by key, with the
// blind add that writes each.
func storeAdds(s *sketchcol.Store) []storeAdd {
	return []storeAdd{{"hll", s.PFAddBlind}, {"bloom", s.BFAddBlind}, {"cuckoo", s.CFAddBlind}}
}

// storeAdd is one sketch value of the store run and its blind add.
type storeAdd struct {
	key string
	add func(key []byte, ids ...[]byte) error
}

// storeBlindAdds reserves the Bloom and cuckoo values and adds every ID to
// each value in chunks of storeChunk, returning each value's IDs/s.
func storeBlindAdds(s *sketchcol.Store, c sketchLabConfig, ids [][]byte, ph *phase) ([]float64, error) {
	if err := s.BFReserve([]byte("bloom"), c.Rate, int64(c.Capacity), nil); err != nil {
		return nil, err
	}
	if err := s.CFReserve([]byte("cuckoo"), int64(c.Capacity), nil); err != nil {
		return nil, err
	}
	adds := storeAdds(s)
	rates := make([]float64, len(adds))
	for i, a := range adds {
		start := time.Now()
		for off := 0; off < len(ids); off += storeChunk {
			if err := a.add([]byte(a.key), ids[off:min(off+storeChunk, len(ids))]...); err != nil {
				return nil, fmt.Errorf("%s: %w", a.key, err)
			}
		}
		rates[i] = float64(len(ids)) / time.Since(start).Seconds()
		ph.add(1)
	}
	return rates, nil
}

// standaloneSketches builds the three values in memory, one ID at a time
// through the sketch types' own methods.
func standaloneSketches(c sketchLabConfig, ids [][]byte) ([][]byte, error) {
	h := sketchcol.NewHLL()
	b, err := sketchcol.NewPagedBloom(sketchcol.BloomSpec{ErrorRate: c.Rate, Capacity: int64(c.Capacity), Expansion: 2})
	if err != nil {
		return nil, err
	}
	spec := sketchcol.DefaultCuckooSpec()
	spec.Capacity = int64(c.Capacity)
	cf, err := sketchcol.NewCuckooFilter(spec)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		h.Add(id)
		if _, err := b.Add(id); err != nil {
			return nil, err
		}
		if err := cf.Add(id); err != nil {
			return nil, err
		}
	}
	bb, _ := b.MarshalBinary()
	return [][]byte{h.Bytes(), bb, cf.PagedDump()}, nil
}

// storeProbe reads a filter back through the Store: IDs added that test
// negative, and the rate of never-added probes that test positive.
func storeProbe(s *sketchcol.Store, key string, ids, probes [][]byte) (falseNeg int64, fpr float64, err error) {
	exists := s.CFMExists
	if key == "bloom" {
		exists = s.BFMExists
	}
	count := func(items [][]byte, want bool) (int64, error) {
		var n int64
		for off := 0; off < len(items); off += 10 * storeChunk {
			got, err := exists([]byte(key), items[off:min(off+10*storeChunk, len(items))]...)
			if err != nil {
				return 0, err
			}
			for _, ok := range got {
				if ok == want {
					n++
				}
			}
		}
		return n, nil
	}
	if falseNeg, err = count(ids, false); err != nil {
		return 0, 0, err
	}
	fp, err := count(probes, true)
	return falseNeg, float64(fp) / float64(max(len(probes), 1)), err
}

func printStore(w io.Writer, sr *storeRun) {
	fmt.Fprintf(w, "5. Through the sketch column family (sketchcol.Store): %s IDs added blind (%d per operand) into a temporary database, then compacted\n",
		commas(int64(sr.IDs)), storeChunk)
	fmt.Fprintf(w, "%-34s %12s %12s %12s  %s\n", "structure", "value", "= in memory", "IDs/s", "read back through the Store")
	for _, r := range sr.Rows {
		answer := fmt.Sprintf("PFCount %s (%+.2f%%)", commas(r.Count), 100*(float64(r.Count)/float64(sr.IDs)-1))
		if r.Count == 0 {
			answer = fmt.Sprintf("%d false negatives, FPR %s", r.FalseNegatives, pct(r.FPR))
		}
		same := "yes"
		if !r.SameAsStandalone {
			same = "NO"
		}
		fmt.Fprintf(w, "%-34s %12s %12s %12s  %s\n", r.Structure, humanBytes(int64(r.ValueBytes)), same, commas(int64(r.IDsPerSec)), answer)
	}
	fmt.Fprintf(w, "The column family's tables after compaction: %s (the three values with keys, index and filter; snappy).\n\n", humanBytes(sr.TableBytes))
}

func storeCSV(w io.Writer, sr *storeRun) error {
	var out [][]string
	for _, r := range sr.Rows {
		out = append(out, []string{r.Structure, fi(int64(sr.IDs)), fi(int64(r.ValueBytes)), fmt.Sprint(r.SameAsStandalone),
			ff(r.IDsPerSec), fi(r.Count), fi(r.FalseNegatives), ff(r.FPR)})
	}
	return writeRows(w, []string{"structure", "ids", "value_bytes", "same_as_standalone", "ingest_ids_per_sec", "count",
		"false_negatives", "fpr"}, out)
}

// tempStore opens a sketch Store on a new database in a temporary
// directory named after prefix; done closes it and removes the directory.
func tempStore(prefix string) (s *sketchcol.Store, done func(), err error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, nil, err
	}
	db, err := sieve.Open(dir, nil)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	if s, err = sketchcol.Open(db); err != nil {
		db.Close()
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return s, func() { db.Close(); os.RemoveAll(dir) }, nil
}
