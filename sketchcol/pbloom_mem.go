package sketchcol

import (
	"encoding/binary"
	"slices"
)

// PagedBloom is a paged Bloom filter in memory: the filter a Store keeps
// as a header and pages, built without a database (to load one with
// Store.Restore, or to check the Store against). Its bytes
// (MarshalBinary) are what Store.Dump returns for the same adds, and what
// Store.Restore and BFExistsReply take. The add policy is written here
// again, apart from the Store's (RedisBloom's: an item positive in some
// sub-filter is not added; the newest takes it, stacked first when full).
// A PagedBloom is not safe for concurrent use.
type PagedBloom struct {
	h     *pagedBloom
	pages map[string][]byte // by pageKey(nil, nil, i, p)
}

// NewPagedBloom returns an empty filter of spec's geometry.
func NewPagedBloom(spec BloomSpec) (*PagedBloom, error) {
	h, err := newPagedBloom(spec)
	if err != nil {
		return nil, err
	}
	return &PagedBloom{h: h, pages: map[string][]byte{}}, nil
}

// Kind returns KindBloom.
func (*PagedBloom) Kind() Kind { return KindBloom }

// Exists reports whether item is possibly present (BF.EXISTS).
func (m *PagedBloom) Exists(item []byte) bool {
	h := m.h.hashOf(item)
	for i := range m.h.counts {
		l := m.h.layer(i)
		p := m.h.probe(h, i)
		if testPage(m.pages[string(pageKey(nil, nil, i, p.page))], p, l) {
			return true
		}
	}
	return false
}

// Add adds item as BF.ADD does and reports whether it was added (false:
// possibly present already). A full non-scaling filter returns
// ErrFilterFull.
func (m *PagedBloom) Add(item []byte) (bool, error) { return m.add(item, false) }

// add is Add; overfill puts the item in a full filter anyway (blind adds).
func (m *PagedBloom) add(item []byte, overfill bool) (bool, error) {
	if m.Exists(item) {
		return false, nil
	}
	top := len(m.h.counts) - 1
	if m.h.counts[top] >= m.h.layer(top).capacity {
		switch {
		case !m.h.spec.NonScaling && top+1 < maxBloomLayers:
			m.h.counts = append(m.h.counts, 0)
			top++
		case !overfill:
			return false, ErrFilterFull
		}
	}
	l := m.h.layer(top)
	p := m.h.probe(m.h.hashOf(item), top)
	k := string(pageKey(nil, nil, top, p.page))
	if m.pages[k] == nil {
		m.pages[k] = make([]byte, l.pageBits/8)
	}
	setPage(m.pages[k], p, l, nil)
	m.h.counts[top]++
	return true, nil
}

// Card returns the items added (BF.CARD).
func (m *PagedBloom) Card() int64 { return m.h.card() }

// MarshalBinary returns the filter's dump (FORMAT.md, "Paged Bloom dump").
func (m *PagedBloom) MarshalBinary() ([]byte, error) { return m.appendValue(nil), nil }

// appendValue is the dump: header, then the pages in key order.
func (m *PagedBloom) appendValue(dst []byte) []byte {
	hdr := m.h.appendValue(nil)
	dst = append(dst, kindPagedBloomDump, version1)
	dst = binary.AppendUvarint(dst, uint64(len(hdr)))
	dst = append(dst, hdr...)
	keys := make([]string, 0, len(m.pages))
	for k := range m.pages {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		dst = append(dst, k[len(pagePrefix(nil)):]...)
		dst = binary.AppendUvarint(dst, uint64(len(m.pages[k])))
		dst = append(dst, m.pages[k]...)
	}
	return dst
}

// memPagedOf is the in-memory filter of a dump.
func memPagedOf(d *pagedDump) *PagedBloom {
	h, _ := parsePagedBloom(d.raw)
	m := &PagedBloom{h: h, pages: map[string][]byte{}}
	for k, bits := range d.pages {
		m.pages[k] = slices.Clone(bits)
	}
	return m
}
