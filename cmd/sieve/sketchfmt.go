package main

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/sketchcol"
)

// sketchView decodes the values of sketchcol's families ("sketch" and
// "sketch-pages") for "sieve get" and "sieve scan": what a sketch holds,
// as its INFO command would say, instead of its bytes. A paged filter's
// header says little alone: st (a Store on the read-only database) reads
// the whole filter through its pages; without it (no pages family) only
// whole values are decoded.
type sketchView struct {
	st    *sketchcol.Store
	pages *sieve.ColumnFamily
	bf    *byteFmt // renders what is not decoded
}

// topKShown is how many of a Top-K sketch's items a value's line lists.
const topKShown = 5

// describe decodes a value of the sketch family at key.
func (s *sketchView) describe(key, v []byte) string {
	if len(v) > 0 && v[0] == 0x00 { // sieve-server's Redis string (tagString)
		return fmt.Sprintf("string, %d bytes: %s", len(v)-1, s.bf.value(v[1:]))
	}
	if sketchcol.IsStrHeader(v) {
		return s.pagedString(key, v)
	}
	k, err := sketchcol.KindOf(v)
	if err != nil {
		return fmt.Sprintf("not a sketch (%s): %s", errText(err), s.bf.value(v))
	}
	var desc string
	switch k {
	case sketchcol.KindHLL:
		desc, err = hllDesc(v)
	case sketchcol.KindBloom:
		desc, err = s.bloomDesc(key, v)
	case sketchcol.KindCuckoo:
		desc, err = s.cuckooDesc(key, v)
	case sketchcol.KindCMS:
		desc, err = s.cmsDesc(key, v)
	case sketchcol.KindTopK:
		desc, err = s.topKDesc(key, v)
	}
	if err != nil {
		return fmt.Sprintf("%s, %d bytes, not decoded: %s", k, len(v), errText(err))
	}
	return desc
}

func hllDesc(v []byte) (string, error) {
	n, err := sketchcol.PFCountValues(v)
	if err != nil {
		return "", err
	}
	enc := "dense"
	if len(v) > 4 && v[4] == 1 {
		enc = "sparse"
	}
	return fmt.Sprintf("hyperloglog: cardinality %d (%s, %d bytes)", n, enc, len(v)), nil
}

func (s *sketchView) bloomDesc(key, v []byte) (string, error) {
	var info sketchcol.BFInfo
	var err error
	if s.st != nil {
		info, err = s.st.BFInfo(key)
	} else {
		info, err = sketchcol.BFInfoReply(v)
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("bloom: %d items inserted, capacity %d, %s, expansion %d, %d bytes",
		info.ItemsInserted, info.Capacity, count(int(info.Filters), "sub-filter"), info.ExpansionRate, info.Size), nil
}

func (s *sketchView) cuckooDesc(key, v []byte) (string, error) {
	var info sketchcol.CFInfo
	var err error
	if s.st != nil {
		info, err = s.st.CFInfo(key)
	} else {
		info, err = sketchcol.CFInfoReply(v)
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("cuckoo: %d items (%d deleted), %d buckets of %d, %s, expansion %d, max iterations %d, %d bytes",
		info.NumItemsInserted, info.NumItemsDeleted, info.NumBuckets, info.BucketSize, count(int(info.NumFilters), "sub-filter"),
		info.ExpansionRate, info.MaxIteration, info.Size), nil
}

func (s *sketchView) cmsDesc(key, v []byte) (string, error) {
	var info sketchcol.CMSInfo
	var err error
	if s.st != nil {
		info, err = s.st.CMSInfo(key)
	} else {
		info, err = sketchcol.CMSInfoReply(v)
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("count-min: width %d, depth %d, total count %d", info.Width, info.Depth, info.Count), nil
}

func (s *sketchView) topKDesc(key, v []byte) (string, error) {
	var info sketchcol.TopKInfo
	var items []sketchcol.TopKItem
	var err error
	if s.st != nil {
		info, err = s.st.TopKInfo(key)
		if err == nil {
			items, err = s.st.TopKListWithCount(key)
		}
	} else {
		info, err = sketchcol.TopKInfoReply(v)
		if err == nil {
			items, err = sketchcol.TopKListReply(v)
		}
	}
	if err != nil {
		return "", err
	}
	var top []string
	for _, it := range items[:min(len(items), topKShown)] {
		top = append(top, fmt.Sprintf("%s=%d", s.bf.key(it.Item), it.Count))
	}
	more := ""
	if len(items) > topKShown {
		more = fmt.Sprintf(" (%d more)", len(items)-topKShown)
	}
	return fmt.Sprintf("topk: k %d, width %d, depth %d, decay %g, %s: %s%s",
		info.K, info.Width, info.Depth, info.Decay, count(len(items), "item"), strings.Join(top, " "), more), nil
}

// pagedString decodes a paged string's header (kind 0x60: a Redis string
// that became a bitmap) and counts its pages and set bits.
func (s *sketchView) pagedString(key, v []byte) string {
	length, _, err := sketchcol.ParseStrHeader(v)
	if err != nil {
		return fmt.Sprintf("paged string, not decoded: %s", errText(err))
	}
	desc := fmt.Sprintf("bitmap (paged string): %d bytes", length)
	if s.pages == nil {
		return desc
	}
	start, end := sketchcol.StrPageRange(key)
	it := s.pages.NewIter(&sieve.IterOptions{LowerBound: start, UpperBound: end})
	pages, set := 0, 0
	for ok := it.First(); ok; ok = it.Next() {
		b, err := sketchcol.StrPageBytes(it.Value())
		if err != nil {
			it.Close()
			return fmt.Sprintf("%s, page %s not decoded: %s", desc, s.bf.key(it.Key()), errText(err))
		}
		pages++
		for _, c := range b {
			set += bits.OnesCount8(c)
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Sprintf("%s, pages not read: %s", desc, errText(err))
	}
	return fmt.Sprintf("%s, %s set, %s of %d stored", desc, count(set, "bit"), count(pages, "page"), sketchcol.StrPageSize)
}

// pageKinds names the kinds of the values and operands of the pages
// family (sketchcol/FORMAT.md, "Kinds").
var pageKinds = map[byte]string{
	0x28: "Bloom page", 0x29: "Bloom page operand",
	0x38: "cuckoo page", 0x39: "cuckoo page operand",
	0x4a: "Count-Min page", 0x4b: "Count-Min page operand",
	0x58: "Top-K page", 0x59: "Top-K page operand",
	0x68: "string page", 0x69: "string page operand",
}

// describePage decodes a value of the pages family: whose page it is, of
// what kind, and its size (a string page: its set bits).
func (s *sketchView) describePage(key, v []byte) string {
	owner, sub, ok := sketchcol.PageOwner(key)
	whose := "a key of no sketch (not a page key)"
	if ok {
		whose = fmt.Sprintf("of %s (sub 0x%02x)", s.bf.key(owner), sub)
	}
	if len(v) == 0 {
		return "empty page value " + whose
	}
	kind, known := pageKinds[v[0]]
	if !known {
		return fmt.Sprintf("unknown page kind 0x%02x %s, %d bytes", v[0], whose, len(v))
	}
	if v[0] == 0x68 {
		if b, err := sketchcol.StrPageBytes(v); err == nil {
			set := 0
			for _, c := range b {
				set += bits.OnesCount8(c)
			}
			return fmt.Sprintf("%s %s, %d bytes, %s set", kind, whose, len(b), count(set, "bit"))
		}
	}
	return fmt.Sprintf("%s %s, %d bytes", kind, whose, len(v))
}
