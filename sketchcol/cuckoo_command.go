package sketchcol

// Per-command helpers for cuckoo values; see bloom_command.go for the
// Reply/Op pattern.

func cuckooSpecOrDefault(spec *CuckooSpec) (CuckooSpec, error) {
	if spec == nil {
		return DefaultCuckooSpec(), nil
	}
	return spec.normalized(), spec.Validate()
}

// CFReserveOp returns the operand of CF.RESERVE: create a filter of spec
// if the key is missing.
//
// Deprecated: the operand is of the whole-value encoding, which the
// Store still reads but no longer creates: merged onto a missing key it
// creates a whole-value cuckoo filter, and onto a paged one (every cuckoo filter the Store
// creates) it is dropped. Write through Store.NewBatch or Store.WrapBatch,
// whose adds apply to both encodings.
func CFReserveOp(spec CuckooSpec) ([]byte, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	return appendCuckooOp(nil, &cuckooOp{spec: spec.normalized()}), nil
}

func cuckooRecordsOp(spec *CuckooSpec, kind byte, items [][]byte) ([]byte, error) {
	s, err := cuckooSpecOrDefault(spec)
	if err != nil {
		return nil, err
	}
	o := &cuckooOp{spec: s, recs: make([]cuckooRecord, len(items))}
	for i, it := range items {
		o.recs[i] = cuckooRecord{op: kind, hash: itemHash(it)}
	}
	return appendCuckooOp(nil, o), nil
}

// CFAddOp returns the operand of CF.ADD/CF.INSERT of items: one copy of
// each, creating a filter of spec (nil: the defaults, capacity 1024) if
// the key is missing. A blind add that finds the filter full when merged
// is dropped and counted (CFInfo.ItemsDropped).
//
// Deprecated: the operand is of the whole-value encoding, which the
// Store still reads but no longer creates: merged onto a missing key it
// creates a whole-value cuckoo filter, and onto a paged one (every cuckoo filter the Store
// creates) it is dropped. Write through Store.NewBatch or Store.WrapBatch,
// whose adds apply to both encodings.
func CFAddOp(spec *CuckooSpec, items ...[]byte) ([]byte, error) {
	return cuckooRecordsOp(spec, cuckooAdd, items)
}

// CFAddNXOp returns the operand of CF.ADDNX/CF.INSERTNX: add each item
// unless it is possibly present when the operand is merged.
//
// Deprecated: the operand is of the whole-value encoding, which the
// Store still reads but no longer creates: merged onto a missing key it
// creates a whole-value cuckoo filter, and onto a paged one (every cuckoo filter the Store
// creates) it is dropped. Write through Store.NewBatch or Store.WrapBatch,
// whose adds apply to both encodings.
func CFAddNXOp(spec *CuckooSpec, items ...[]byte) ([]byte, error) {
	return cuckooRecordsOp(spec, cuckooAddNX, items)
}

// CFDelOp returns the operand of CF.DEL item: remove one copy, newest
// sub-filter first, if there is one when the operand is merged. CF.DEL
// reads first (its reply says whether it found the item), so the
// operand meets a missing key only if the key is deleted in between; it
// then leaves an empty filter of the default geometry.
//
// Deprecated: the operand is of the whole-value encoding, which the
// Store still reads but no longer creates: merged onto a missing key it
// creates a whole-value cuckoo filter, and onto a paged one (every cuckoo filter the Store
// creates) it is dropped. Write through Store.NewBatch or Store.WrapBatch,
// whose adds apply to both encodings.
func CFDelOp(item []byte) []byte {
	b, _ := cuckooRecordsOp(nil, cuckooDel, [][]byte{item})
	return b
}

// CFAddReply simulates CF.ADD/CF.INSERT of items in order on cur (nil:
// a new filter of spec, nil spec the defaults) and returns how many were
// added; at the first that does not fit it returns an error wrapping
// ErrFilterFull. Write CFAddOp of the items added.
func CFAddReply(cur []byte, spec *CuckooSpec, items ...[]byte) (int, error) {
	c, err := cuckooOrNew(cur, spec)
	if err != nil {
		return 0, err
	}
	for i, it := range items {
		if err := c.Add(it); err != nil {
			return i, err
		}
	}
	return len(items), nil
}

// CFAddNXReply returns CF.ADDNX's answers for items in order: true when
// an item was absent and is added.
func CFAddNXReply(cur []byte, spec *CuckooSpec, items ...[]byte) ([]bool, error) {
	c, err := cuckooOrNew(cur, spec)
	if err != nil {
		return nil, err
	}
	out := make([]bool, 0, len(items))
	for _, it := range items {
		added, err := c.AddNX(it)
		if err != nil {
			return out, err
		}
		out = append(out, added)
	}
	return out, nil
}

// CFDelReply returns CF.DEL's answer: whether a copy of item's
// fingerprint is there to remove (false for a missing key).
func CFDelReply(cur []byte, item []byte) (bool, error) {
	return replyOn(cur, KindCuckoo, parseCuckooAny, false, func(c *CuckooFilter) bool { return c.Exists(item) })
}

// CFExistsReply returns CF.EXISTS/CF.MEXISTS for items.
func CFExistsReply(cur []byte, items ...[]byte) ([]bool, error) {
	return replyOn(cur, KindCuckoo, parseCuckooAny, make([]bool, len(items)), func(c *CuckooFilter) []bool {
		return existsAll(c.Exists, items)
	})
}

// CFCountReply returns CF.COUNT of item (it may over-count).
func CFCountReply(cur []byte, item []byte) (int64, error) {
	return replyOn(cur, KindCuckoo, parseCuckooAny, 0, func(c *CuckooFilter) int64 { return c.Count(item) })
}

// CFInfoReply returns CF.INFO of a value, a paged filter's header or its
// dump.
func CFInfoReply(cur []byte) (CFInfo, error) {
	if len(cur) > 0 && cur[0] == kindPagedCuckoo {
		h, err := parsePagedCuckoo(cur)
		if err != nil {
			return CFInfo{}, err
		}
		return h.info(), nil
	}
	c, err := parseCuckooKey(cur)
	if err != nil {
		return CFInfo{}, err
	}
	return c.Info(), nil
}

func parseCuckooKey(cur []byte) (*CuckooFilter, error) {
	return parseValue(cur, KindCuckoo, parseCuckooAny)
}

func cuckooOrNew(cur []byte, spec *CuckooSpec) (*CuckooFilter, error) {
	return valueOrNew(cur, KindCuckoo, parseCuckooAny, func() (*CuckooFilter, error) {
		s, err := cuckooSpecOrDefault(spec)
		if err != nil {
			return nil, err
		}
		return NewCuckooFilter(s)
	})
}
