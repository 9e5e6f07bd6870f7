package sketchcol

// Per-command helpers for the Store: a Reply function computes Redis's
// answer from the current value (nil for a missing key) without changing
// it, an Op function builds the merge operand to write. A command whose
// answer needs the value reads, calls the Reply, then writes the Op; its
// blind variant writes the Op alone.

func bloomSpecOrDefault(spec *BloomSpec) (BloomSpec, error) {
	if spec == nil {
		return DefaultBloomSpec(), nil
	}
	return spec.normalized(), spec.Validate()
}

// BFReserveOp returns the operand of BF.RESERVE: create a filter of spec
// if the key is missing. (BF.RESERVE on an existing key is an error in
// Redis; the Store checks before writing. Should the key be created
// concurrently, the operand finds it and changes nothing.)
//
// Deprecated: the operand is of the whole-value encoding, which the
// Store still reads but no longer creates: merged onto a missing key it
// creates a whole-value Bloom filter, and onto a paged one (every Bloom filter the Store
// creates) it is dropped. Write through Store.NewBatch or Store.WrapBatch,
// whose adds apply to both encodings.
func BFReserveOp(spec BloomSpec) ([]byte, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	return appendBloomOp(nil, &bloomOp{spec: spec.normalized()}), nil
}

// BFAddOp returns the operand of BF.ADD/BF.MADD/BF.INSERT of items: add
// each with BF.ADD's rule, creating a filter of spec (nil: the defaults,
// error 0.01 and capacity 100) if the key is missing. A blind add that
// does not fit a non-scaling filter overfills it rather than being lost.
//
// Deprecated: the operand is of the whole-value encoding, which the
// Store still reads but no longer creates: merged onto a missing key it
// creates a whole-value Bloom filter, and onto a paged one (every Bloom filter the Store
// creates) it is dropped. Write through Store.NewBatch or Store.WrapBatch,
// whose adds apply to both encodings.
func BFAddOp(spec *BloomSpec, items ...[]byte) ([]byte, error) {
	s, err := bloomSpecOrDefault(spec)
	if err != nil {
		return nil, err
	}
	o := &bloomOp{spec: s, hashes: make([]uint64, len(items))}
	for i, it := range items {
		o.hashes[i] = itemHash(it)
	}
	return appendBloomOp(nil, foldBloomOps([]op{o})), nil
}

// BFAddReply returns BF.ADD's answers for adding items in order to cur:
// true when an item was certainly absent (and is added), false when it is
// possibly present (an earlier item of the same call included). At the
// first item that does not fit a non-scaling filter it stops and returns
// the answers so far with an error wrapping ErrFilterFull; write only
// those items.
func BFAddReply(cur []byte, spec *BloomSpec, items ...[]byte) ([]bool, error) {
	b, err := bloomOrNew(cur, spec)
	if err != nil {
		return nil, err
	}
	out := make([]bool, 0, len(items))
	for _, it := range items {
		added, err := b.addHash(itemHash(it), false)
		if err != nil {
			return out, err
		}
		out = append(out, added)
	}
	return out, nil
}

// BFExistsReply returns BF.EXISTS/BF.MEXISTS for items (all false for a
// missing key).
func BFExistsReply(cur []byte, items ...[]byte) ([]bool, error) {
	if d, err := dumpOf(cur); d != nil || err != nil {
		if err != nil {
			return nil, err
		}
		return d.exists(items), nil
	}
	return replyOn(cur, KindBloom, ParseBloom, make([]bool, len(items)), func(b *ScalableBloom) []bool {
		return existsAll(b.Exists, items)
	})
}

// BFCardReply returns BF.CARD (0 for a missing key).
func BFCardReply(cur []byte) (int64, error) {
	if d, err := dumpOf(cur); d != nil || err != nil {
		if err != nil {
			return 0, err
		}
		return d.header.card(), nil
	}
	return replyOn(cur, KindBloom, ParseBloom, 0, (*ScalableBloom).Card)
}

// BFInfoReply returns BF.INFO of a value; Size is the value's length.
func BFInfoReply(cur []byte) (BFInfo, error) {
	if d, err := dumpOf(cur); d != nil || err != nil {
		if err != nil {
			return BFInfo{}, err
		}
		return d.header.info(), nil
	}
	b, err := parseBloomKey(cur)
	if err != nil {
		return BFInfo{}, err
	}
	info := b.Info()
	info.Size = int64(len(cur))
	return info, nil
}

// dumpOf decodes cur if it is a paged filter's dump (Store.Dump).
func dumpOf(cur []byte) (*pagedDump, error) {
	if len(cur) == 0 || cur[0] != kindPagedBloomDump {
		return nil, nil
	}
	return parsePagedDump(cur)
}

func parseBloomKey(cur []byte) (*ScalableBloom, error) {
	return parseValue(cur, KindBloom, ParseBloom)
}

func bloomOrNew(cur []byte, spec *BloomSpec) (*ScalableBloom, error) {
	return valueOrNew(cur, KindBloom, ParseBloom, func() (*ScalableBloom, error) {
		s, err := bloomSpecOrDefault(spec)
		if err != nil {
			return nil, err
		}
		return NewScalableBloom(s)
	})
}
