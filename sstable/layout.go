package sstable

import "sort"

// BlockLocation locates one block of a table: its kind ("data", "index",
// "filter", "rangedel", "properties", "metaindex", "footer"), its offset and its stored
// length including the trailer. (A filter block's parameters are
// filter.BlockInfo.)
type BlockLocation struct {
	Kind           string
	Offset, Length uint64
}

// Layout lists the table's blocks in file order, footer last. Tests use it
// to damage each kind of block. (A charged index that can no longer be
// read leaves the data blocks out.)
func (r *Reader) Layout() []BlockLocation {
	var out []BlockLocation
	add := func(kind string, h blockHandle) {
		out = append(out, BlockLocation{Kind: kind, Offset: h.offset, Length: h.length + blockTrailerLen})
	}
	for i := range r.indexParts {
		add("index partition", r.indexParts[i].h)
	}
	for i := range r.filterTop {
		add("filter partition", r.filterTop[i].h)
	}
	if index, iv, err := r.flatIndex(); err == nil {
		for i := range index {
			add("data", index[i].h)
		}
		if iv != nil {
			iv.Release()
		}
	}
	for name, h := range r.metaHandles {
		switch name {
		case "sieve.filter":
			add("filter", h)
		case "sieve.filter.top":
			add("filter top-level", h)
		case "sieve.properties":
			add("properties", h)
		case rangeDelBlockName:
			add("rangedel", h)
		default:
			add(name, h)
		}
	}
	add("metaindex", r.footer.metaindex)
	add("index", r.footer.index)
	sort.Slice(out, func(i, j int) bool { return out[i].Offset < out[j].Offset })
	out = append(out, BlockLocation{Kind: "footer", Offset: uint64(r.size) - footerLen, Length: footerLen})
	return out
}
