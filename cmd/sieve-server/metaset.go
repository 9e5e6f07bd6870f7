package main

// metaSet holds the Redis cache bytes of the keys of one keyspace stripe
// (keyspace.go): one entry in the set itself (so in the stripe's cache
// lines), the next in a short slice, both found by a 32-bit tag of the
// key's hash (a stripe holds a handful of keys: 65,536 stripes), and a
// map once there are more than metaSetSmall. Not safe for concurrent use
// (the stripe's locks guard it).
type metaSet struct {
	hasFirst bool
	first    metaEnt
	small    []metaEnt
	big      map[string][8]byte
}

// metaEnt is one key's cache bytes; a key of up to metaInlineKey bytes is
// held inline, so that finding it reads no memory but the slice's.
type metaEnt struct {
	tag  uint32
	klen uint32
	c    [8]byte
	kinl [metaInlineKey]byte
	kstr string // a longer key
}

const (
	metaSetSmall  = 16
	metaInlineKey = 24
)

func newMetaEnt(key []byte, tag uint32, c [8]byte) metaEnt {
	e := metaEnt{tag: tag, klen: uint32(len(key)), c: c}
	if len(key) <= metaInlineKey {
		copy(e.kinl[:], key)
	} else {
		e.kstr = string(key)
	}
	return e
}

func (e *metaEnt) key() string {
	if e.klen <= metaInlineKey {
		return string(e.kinl[:e.klen])
	}
	return e.kstr
}

func (e *metaEnt) is(key []byte) bool {
	if int(e.klen) != len(key) {
		return false
	}
	if len(key) <= metaInlineKey {
		return string(e.kinl[:len(key)]) == string(key)
	}
	return e.kstr == string(key)
}

// find returns key's entry, nil if none. REQUIRES: m.big == nil.
func (m *metaSet) find(key []byte, tag uint32) *metaEnt {
	if !m.hasFirst {
		return nil // small is empty too
	}
	if m.first.tag == tag && m.first.is(key) {
		return &m.first
	}
	for i := range m.small {
		if e := &m.small[i]; e.tag == tag && e.is(key) {
			return e
		}
	}
	return nil
}

func (m *metaSet) get(key []byte, tag uint32) ([8]byte, bool) {
	if m.big != nil {
		c, ok := m.big[string(key)]
		return c, ok
	}
	if e := m.find(key, tag); e != nil {
		return e.c, true
	}
	return [8]byte{}, false
}

func (m *metaSet) put(key []byte, tag uint32, c [8]byte) {
	if m.big != nil {
		m.big[string(key)] = c
		return
	}
	if e := m.find(key, tag); e != nil {
		e.c = c
		return
	}
	switch {
	case !m.hasFirst:
		m.first, m.hasFirst = newMetaEnt(key, tag, c), true
		return
	case len(m.small) < metaSetSmall-1:
		m.small = append(m.small, newMetaEnt(key, tag, c))
		return
	}
	m.big = make(map[string][8]byte, 2*metaSetSmall)
	m.big[m.first.key()] = m.first.c
	for i := range m.small {
		m.big[m.small[i].key()] = m.small[i].c
	}
	m.first, m.hasFirst, m.small = metaEnt{}, false, nil
	m.big[string(key)] = c
}

func (m *metaSet) del(key []byte, tag uint32) {
	if m.big != nil {
		delete(m.big, string(key))
		return
	}
	e := m.find(key, tag)
	if e == nil {
		return
	}
	last := len(m.small) - 1
	switch {
	case last >= 0:
		*e = m.small[last] // the first or one of small
		m.small[last] = metaEnt{}
		m.small = m.small[:last]
	default: // e is the first, alone
		m.first, m.hasFirst = metaEnt{}, false
	}
}
