package sketchcol

import (
	"bytes"
	"fmt"
	"slices"
	"sync/atomic"
)

// Count-Min and Top-K in TestStoreStress (store_stress_test.go).
//
//   - Count-Min: one key shared by every goroutine, each incrementing its
//     own items (replied, blind and in batches). An estimate never falls
//     below what the item's acknowledged increments sum to (the owner's
//     CMS.INCRBY reply: below that sum plus the increment), and CMS.INFO's
//     count lies between the increments acknowledged before the read and
//     those started after it. At the end of a round the count is exact and
//     the value (a paged sketch's dump) is byte for byte a sketch built in
//     memory from every increment (Count-Min commutes: the interleaving
//     does not matter).
//   - Top-K: one key per goroutine, written by its owner only, so the
//     owner's model (a TopK fed the same adds in the same order) is exact:
//     every TOPK.ADD reply and the owner's TOPK.LIST equal the model's,
//     and at the end of a round the value is the model's bytes. Other
//     goroutines read the key while it changes: it must decode, and list
//     at most k items.

type cmsTopKStress struct {
	cmsKey         []byte
	cmsSpec        CMSSpec
	started, acked atomic.Uint64
	owned          []map[string]uint64 // per goroutine: item → acknowledged sum
	topKKeys       [][]byte
	topKSpec       TopKSpec
	topKModels     []*TopK
}

func newCMSTopKStress(goroutines int) *cmsTopKStress {
	c := &cmsTopKStress{cmsKey: []byte("cms:0"), cmsSpec: CMSSpec{Width: 256, Depth: 4},
		topKSpec: TopKSpec{K: 5, Width: 16, Depth: 3, Decay: 0.9}}
	for g := range goroutines {
		c.owned = append(c.owned, map[string]uint64{})
		c.topKKeys = append(c.topKKeys, fmt.Appendf(nil, "topk:g%d", g))
		m, _ := NewTopK(c.topKSpec)
		c.topKModels = append(c.topKModels, m)
	}
	return c
}

// reserve creates the keys (the first round).
func (c *cmsTopKStress) reserve(s *stress) {
	if err := s.st.CMSInitByDim(c.cmsKey, c.cmsSpec.Width, c.cmsSpec.Depth); err != nil {
		s.violation("CMS.INITBYDIM: %v", err)
	}
	for _, key := range c.topKKeys {
		sp := c.topKSpec
		if err := s.st.TopKReserve(key, sp.K, sp.Width, sp.Depth, sp.Decay); err != nil {
			s.violation("TOPK.RESERVE: %v", err)
		}
	}
}

func (c *cmsTopKStress) keys() [][]byte { return append([][]byte{c.cmsKey}, c.topKKeys...) }

func (w *stressWorker) cmsTopKOp() {
	if w.rng.IntN(2) == 0 {
		w.cmsOp()
	} else {
		w.topKOp()
	}
}

func (w *stressWorker) cmsItems() ([][]byte, []int64) {
	n := 1 + w.rng.IntN(4)
	items, incrs := make([][]byte, n), make([]int64, n)
	for i := range items {
		items[i] = fmt.Appendf(nil, "cms:g%d:%d", w.g, w.rng.IntN(20))
		incrs[i] = int64(1 + w.rng.IntN(5))
	}
	return items, incrs
}

func (w *stressWorker) cmsOp() {
	s, c := w.s, w.s.ct
	own := c.owned[w.g]
	items, incrs := w.cmsItems()
	var sum uint64
	for _, n := range incrs {
		sum += uint64(n)
	}
	switch r := w.rng.IntN(4); r {
	case 0, 1:
		c.started.Add(sum)
		var est []int64
		var err error
		if r == 0 {
			est, err = s.st.CMSIncrBy(c.cmsKey, items, incrs)
		} else {
			err = s.st.CMSIncrByBlind(c.cmsKey, items, incrs)
		}
		if err != nil {
			s.violation("%s: %v", w.where("CMS.INCRBY"), err)
			return
		}
		for i, it := range items {
			own[string(it)] += uint64(incrs[i])
			if est != nil && uint64(est[i]) < own[string(it)] {
				s.violation("%s: estimate %d of %q below its acknowledged %d", w.where("CMS.INCRBY"), est[i], it, own[string(it)])
			}
		}
		c.acked.Add(sum)
	case 2:
		est, err := s.st.CMSQuery(c.cmsKey, items...)
		s.reads.Add(1)
		for i, it := range items {
			if err == nil && uint64(est[i]) < own[string(it)] {
				s.violation("%s: estimate %d of %q below its acknowledged %d", w.where("CMS.QUERY"), est[i], it, own[string(it)])
			}
		}
		if err != nil {
			s.violation("%s: %v", w.where("CMS.QUERY"), err)
		}
	default:
		lo := c.acked.Load()
		info, err := s.st.CMSInfo(c.cmsKey)
		hi := c.started.Load()
		s.reads.Add(1)
		if err != nil || info.Count < lo || info.Count > hi {
			s.violation("%s: count %d outside [%d, %d] (%v)", w.where("CMS.INFO"), info.Count, lo, hi, err)
		}
	}
}

func (w *stressWorker) topKOp() {
	s, c := w.s, w.s.ct
	if r := w.rng.IntN(5); r == 0 {
		g := w.rng.IntN(len(c.topKKeys))
		l, err := s.st.TopKList(c.topKKeys[g])
		s.reads.Add(1)
		if err != nil || len(l) > c.topKSpec.K {
			s.violation("%s: %d items (%v)", w.where("TOPK.LIST of another"), len(l), err)
		}
		return
	}
	key, m := c.topKKeys[w.g], c.topKModels[w.g]
	items := make([][]byte, 1+w.rng.IntN(3))
	for i := range items {
		items[i] = fmt.Appendf(nil, "tk:%d", w.rng.IntN(30)%(1+w.rng.IntN(30)))
	}
	want := make([][]byte, len(items))
	for i, it := range items {
		want[i] = m.Add(it, 1)
	}
	if w.rng.IntN(3) == 0 {
		if err := s.st.TopKAddBlind(key, items...); err != nil {
			s.violation("%s: %v", w.where("TOPK.ADD blind"), err)
		}
		return
	}
	got, err := s.st.TopKAdd(key, items...)
	if err != nil || !slices.EqualFunc(got, want, bytes.Equal) {
		s.violation("%s: expelled %q, the model %q (%v)", w.where("TOPK.ADD"), got, want, err)
	}
	l, err := s.st.TopKListWithCount(key)
	s.reads.Add(1)
	if err != nil || !slices.EqualFunc(l, m.List(), func(a, b TopKItem) bool { return a.Count == b.Count && bytes.Equal(a.Item, b.Item) }) {
		s.violation("%s: %v, the model %v (%v)", w.where("TOPK.LIST"), l, m.List(), err)
	}
}

// verify checks the values exactly while nothing runs.
func (c *cmsTopKStress) verify(s *stress, stage string) {
	want, _ := NewCMS(c.cmsSpec)
	var total uint64
	for _, own := range c.owned {
		for it, n := range own {
			want.IncrBy([]byte(it), n)
			total += n
		}
	}
	want.count = total
	if got, err := s.st.Dump(c.cmsKey); err != nil || !bytes.Equal(got, pagedDumpOf(want)) {
		s.violation("%s: the Count-Min value differs from the model of every increment (%v)", stage, err)
	}
	if total != c.acked.Load() || total != c.started.Load() {
		s.violation("%s: Count-Min increments: model %d, acknowledged %d, started %d", stage, total, c.acked.Load(), c.started.Load())
	}
	for g, key := range c.topKKeys {
		if got, err := s.st.Dump(key); err != nil || !bytes.Equal(got, pagedDumpOf(c.topKModels[g])) {
			s.violation("%s: Top-K %s differs from its owner's model (%v)", stage, key, err)
		}
	}
}
