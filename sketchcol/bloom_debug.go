package sketchcol

// BFLayer is one sub-filter of a Bloom filter as BF.DEBUG reports it.
type BFLayer struct {
	Bytes     int64   // its bit array's bytes (of the pages when every one is written)
	Bits      int64   // its bits
	Hashes    int     // bits set per item
	Capacity  int64   // items it is built for
	Items     int64   // items added to it
	ErrorRate float64 // the false-positive rate it is built for
}

// BFDebug returns the sub-filters of key's Bloom filter, oldest first
// (BF.DEBUG); a missing key is sieve.ErrNotFound, another kind
// ErrWrongType.
func (s *Store) BFDebug(key []byte) ([]BFLayer, error) {
	cur, err := s.get(key)
	if err == nil && cur == nil {
		err = notFound(key)
	}
	if err != nil {
		return nil, err
	}
	if err := expectKind(cur, KindBloom); err != nil {
		return nil, err
	}
	if cur[0] == kindPagedBloom {
		b, err := parsePagedBloom(cur)
		if err != nil {
			return nil, err
		}
		out := make([]BFLayer, len(b.counts))
		for i, n := range b.counts {
			l := b.layer(i)
			out[i] = BFLayer{Bytes: l.bits() / 8, Bits: l.bits(), Hashes: l.k, Capacity: l.capacity, Items: n, ErrorRate: l.rate}
		}
		return out, nil
	}
	sb, err := ParseBloom(cur)
	if err != nil {
		return nil, err
	}
	out := make([]BFLayer, len(sb.layers))
	for i, f := range sb.layers {
		out[i] = BFLayer{Bytes: int64(f.M()+7) / 8, Bits: int64(f.M()), Hashes: f.K(), Capacity: int64(f.Capacity()), Items: int64(f.Count()), ErrorRate: f.ErrorRate()}
	}
	return out, nil
}
