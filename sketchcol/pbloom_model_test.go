package sketchcol

import (
	"encoding/binary"
	"slices"
)

// memPaged is the model of a paged Bloom filter for the Store's model
// tests: its header and its pages in memory, with the add policy written
// again here (RedisBloom's: an item positive in some sub-filter is not
// added; the newest takes it, stacked first when full). Its value is the
// Store's Dump of the same filter.
type memPaged struct {
	h     *pagedBloom
	pages map[string][]byte // by pageKey(nil, nil, i, p)
}

func newMemPaged(spec BloomSpec) (*memPaged, error) {
	h, err := newPagedBloom(spec)
	if err != nil {
		return nil, err
	}
	return &memPaged{h: h, pages: map[string][]byte{}}, nil
}

func (*memPaged) Kind() Kind { return KindBloom }

func (m *memPaged) Exists(item []byte) bool {
	h := itemHash(item)
	for i := range m.h.counts {
		l := m.h.layer(i)
		p := probeOf(h, i, l)
		if testPage(m.pages[string(pageKey(nil, nil, i, p.page))], p, l) {
			return true
		}
	}
	return false
}

// Add adds item; overfill puts it in a full filter anyway.
func (m *memPaged) Add(item []byte, overfill bool) (bool, error) {
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
	p := probeOf(itemHash(item), top, l)
	k := string(pageKey(nil, nil, top, p.page))
	if m.pages[k] == nil {
		m.pages[k] = make([]byte, l.pageBits/8)
	}
	setPage(m.pages[k], p, l, nil)
	m.h.counts[top]++
	return true, nil
}

func (m *memPaged) Card() int64 { return m.h.card() }

// appendValue is the dump: header, then the pages in key order.
func (m *memPaged) appendValue(dst []byte) []byte {
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

// memPagedOf is the model of a restored dump.
func memPagedOf(d *pagedDump) *memPaged {
	h, _ := parsePagedBloom(d.raw)
	m := &memPaged{h: h, pages: map[string][]byte{}}
	for k, bits := range d.pages {
		m.pages[k] = slices.Clone(bits)
	}
	return m
}
