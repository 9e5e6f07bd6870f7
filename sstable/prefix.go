package sstable

import (
	"bytes"

	"github.com/sievedb/sieve/filter"
)

// prefixAdder adds the prefixes of a table's keys to its filter
// (WriterOptions.Prefix): each distinct prefix once, for the keys arrive
// sorted and the keys sharing a prefix are adjacent.
type prefixAdder struct {
	b     filter.HashBuilder // nil: no prefixes
	fn    func([]byte) int
	label string
	last  []byte
	any   bool
}

func (a *prefixAdder) init(b filter.Builder, o WriterOptions) {
	hb, ok := b.(filter.HashBuilder)
	if !ok || o.Prefix == nil || o.PrefixName == "" {
		return
	}
	a.b, a.fn, a.label = hb, o.Prefix, o.PrefixName
}

// rebind makes the adder add to b, the builder of the next filter
// partition (nil: none), keeping which prefix it added last.
func (a *prefixAdder) rebind(b filter.Builder) {
	if a.b == nil {
		return
	}
	hb, _ := b.(filter.HashBuilder)
	a.b = hb
}

// add adds the prefix of ukey, a new user key, unless it is the previous
// key's.
func (a *prefixAdder) add(ukey []byte, props *Properties) {
	if a.b == nil {
		return
	}
	p := ukey[:PrefixLen(a.fn, ukey)]
	if a.any && bytes.Equal(p, a.last) {
		return
	}
	a.b.AddHash(filter.HashPrefix(p))
	a.last, a.any = append(a.last[:0], p...), true
	props.FilterPrefixes++
}

// name is what the table records as its prefix extractor: "" when it
// holds no prefixes.
func (a *prefixAdder) name() string {
	if a.b == nil {
		return ""
	}
	return a.label
}

// PrefixLen is fn(ukey) clamped to [0, len(ukey)]: the length of ukey's
// prefix under fn.
func PrefixLen(fn func([]byte) int, ukey []byte) int {
	return min(max(fn(ukey), 0), len(ukey))
}

// PrefixUsable reports whether the table's filter may rule out prefixes
// cut by the function called name: it holds that function's prefixes and
// a reader able to take their hashes. A table without them is never
// ruled out.
func (r *Reader) PrefixUsable(name string) bool {
	return name != "" && r.props.PrefixExtractor == name && r.filterState == FilterLoaded && r.prefixHashes
}

// ProbePrefix probes the table's filter for prefix, whose
// filter.HashPrefix is h, as ProbeFilter does a key. REQUIRES:
// PrefixUsable; it answers true otherwise.
func (r *Reader) ProbePrefix(prefix []byte, h uint64, stats *ReadStats) (bool, error) {
	if !r.prefixHashes {
		return true, nil
	}
	if r.filterTop != nil {
		return r.probePrefixPartitioned(prefix, h, stats)
	}
	if !r.charged {
		return r.residentFilter.mayHash(h), nil
	}
	fo, v, err := r.acquireFilter(stats)
	if err != nil {
		return true, err
	}
	ok := fo.mayHash(h)
	if v != nil {
		v.Release()
	}
	return ok, nil
}

// mayHash probes fo (nil: no filter, true) by hash only; a filter that
// cannot take a hash answers true.
func (fo *filterObj) mayHash(h uint64) bool {
	return fo == nil || fo.hr == nil || fo.hr.MayContainHash(h)
}
