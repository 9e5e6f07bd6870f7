package memtable

import (
	"bytes"

	"github.com/sievedb/sieve/filter"
)

// prefixFilter puts the prefixes of a memtable's keys in its key filter
// beside the keys (filter.HashPrefix, which no whole key's hash shares),
// so that a prefix seek can pass a memtable that holds none of the
// prefix's keys, as it passes such a table. Writer-owned but for name and
// fn, which are set before the first Add.
type prefixFilter struct {
	fn   func([]byte) int
	name string
	last []byte // the prefix added last: sequential keys share it
	any  bool
}

// SetPrefix makes the key filter also hold each key's prefix
// key[:fn(key)] (clamped to the key), cut by the function called name.
// REQUIRES: no Add yet; the table has a key filter (else it does
// nothing).
func (m *MemTable) SetPrefix(fn func([]byte) int, name string) {
	if m.filter != nil && fn != nil && name != "" {
		m.prefix = prefixFilter{fn: fn, name: name}
	}
}

// addPrefix adds ukey's prefix to the filter. REQUIRES: the writer.
func (m *MemTable) addPrefix(ukey []byte) {
	pf := &m.prefix
	if pf.fn == nil {
		return
	}
	p := ukey[:min(max(pf.fn(ukey), 0), len(ukey))]
	if pf.any && bytes.Equal(p, pf.last) {
		return
	}
	m.filter.add(filter.HashPrefix(p))
	pf.last, pf.any = append(pf.last[:0], p...), true
}

// MayContainPrefix reports false only if the table certainly holds no
// key whose prefix, cut by the function called name, has hash h
// (filter.HashPrefix): its filter holds that function's prefixes and
// rules h out.
func (m *MemTable) MayContainPrefix(name string, h uint64) bool {
	if m.prefix.fn == nil || m.prefix.name != name {
		return true
	}
	return m.filter.mayContain(h)
}
