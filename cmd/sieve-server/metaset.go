package main

// metaSet holds the Redis cache bytes of the keys of one keyspace stripe
// (keyspace.go): a short slice searched by a 32-bit tag of the key's hash
// (a stripe holds a handful of keys: 65,536 stripes), a map once it grows
// past metaSetSmall. Not safe for concurrent use (the stripe's locks
// guard it).
type metaSet struct {
	small []metaEnt
	big   map[string][8]byte
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

func (m *metaSet) find(key []byte, tag uint32) int {
	for i := range m.small {
		if e := &m.small[i]; e.tag == tag && e.is(key) {
			return i
		}
	}
	return -1
}

func (m *metaSet) get(key []byte, tag uint32) ([8]byte, bool) {
	if m.big != nil {
		c, ok := m.big[string(key)]
		return c, ok
	}
	if i := m.find(key, tag); i >= 0 {
		return m.small[i].c, true
	}
	return [8]byte{}, false
}

func (m *metaSet) put(key []byte, tag uint32, c [8]byte) {
	if m.big != nil {
		m.big[string(key)] = c
		return
	}
	if i := m.find(key, tag); i >= 0 {
		m.small[i].c = c
		return
	}
	if len(m.small) < metaSetSmall {
		m.small = append(m.small, newMetaEnt(key, tag, c))
		return
	}
	m.big = make(map[string][8]byte, 2*metaSetSmall)
	for i := range m.small {
		m.big[m.small[i].key()] = m.small[i].c
	}
	m.small = nil
	m.big[string(key)] = c
}

func (m *metaSet) del(key []byte, tag uint32) {
	if m.big != nil {
		delete(m.big, string(key))
		return
	}
	if i := m.find(key, tag); i >= 0 {
		last := len(m.small) - 1
		m.small[i] = m.small[last]
		m.small[last] = metaEnt{}
		m.small = m.small[:last]
	}
}
