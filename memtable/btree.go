package memtable

import (
	"unsafe"

	"github.com/sievedb/sieve/internal/prefetch"
)

// A B-tree specialised for memtable entries: insert-only (a memtable never
// deletes or replaces an entry), with the entries stored inline in fixed
// arrays and compared by direct, mostly inlined calls to lessEntry.
//
// github.com/google/btree served before; its generic nodes compare through
// a less function value inside sort.Search, an indirect call per
// comparison, and an insert into a 190k-entry table cost about 600 ns, most
// of a NoSync Put. Here the same insert costs about half of that (see
// BenchmarkAdd).
//
// Structure: every node holds n sorted items; an inner node also has n+1
// children, child i holding the items between its (i-1)-th and i-th item
// in key order. All leaves are at the same depth. Inserts split full nodes on the way down
// (the root first), so an insert never walks back up.
//
// Concurrency: none inside; MemTable's rwLock makes inserts exclusive and
// lets any number of traversals run together.

// maxItems is a node's capacity: 63 entries of 40 bytes, about 2.5 KiB, in
// the range where a wider node's longer shifts cost as much as a taller
// tree's extra descent (measured with BenchmarkAdd at 31, 63 and 127).
const maxItems = 63

type node struct {
	n int
	// shared reports that every item's p0 is sh: words then repeats the
	// items' p1 instead. Keys that share their first 8 bytes (a prefix
	// such as redis-benchmark's "hll:0000" on every key) would otherwise
	// tie on every word and read an item at every step of a search.
	shared bool
	sh     uint64
	// words repeats the sorted items' p0 (p1 when shared): words[i] is
	// item(i)'s. A search compares these first, and 63 of them fill 8
	// cache lines instead of the 40 the items span, so a descent into a
	// node that is not in the CPU cache misses fewer lines.
	words [maxItems]uint64
	// slot[i] is where the i-th item in key order sits in items, which
	// holds the n items in the order they arrived: an insert appends its
	// entry at items[n] and shifts only words and slot (9 bytes an item,
	// in lines the search just read) instead of 40-byte items through
	// lines it did not touch, which was a fifth of a Put's memtable
	// insert (BenchmarkAddFullTable). A split writes both halves back in
	// key order.
	slot     [maxItems]uint8
	items    [maxItems]entry
	children *[maxItems + 1]*node // nil for a leaf
}

// item returns the i-th item in key order.
func (x *node) item(i int) *entry { return &x.items[x.slot[i]] }

// word is e's word in x's words.
func (x *node) word(e *entry) uint64 {
	if x.shared {
		return e.p1
	}
	return e.p0
}

// unshare makes x's words the items' p0 (x gets an item whose p0 is not
// x.sh).
func (x *node) unshare() {
	x.shared = false
	for i := 0; i < x.n; i++ {
		x.words[i] = x.item(i).p0
	}
}

// reshare makes x shared if its items all have one p0 (after a split).
func (x *node) reshare() {
	if x.shared || x.n == 0 {
		return
	}
	p0 := x.item(0).p0
	for i := 1; i < x.n; i++ {
		if x.item(i).p0 != p0 {
			return
		}
	}
	x.shared, x.sh = true, p0
	for i := 0; i < x.n; i++ {
		x.words[i] = x.item(i).p1
	}
}

type btree struct {
	root *node
	len  int
	// slab holds the zero nodes newNode hands out next, allocated
	// slabNodes at a time.
	slab []node
	// spare holds nodes, and kids children arrays, that reserve set
	// aside so that a split made under the memtable's lock allocates
	// nothing: an allocation there can wait on the garbage collector
	// (an assist) or fault pages in, and every reader of a key in the
	// memtable waits with it.
	spare []*node
	kids  []*[maxItems + 1]*node
	// unreserved counts the slabs and children arrays newNode and
	// newKids had to allocate for want of a reserved one (tests: Add
	// never does after its first node).
	unreserved int
}

// newNode returns a zero node from the slab. The nodes of a slab share
// one allocation, which a memtable keeps whole for its life anyway (its
// B-tree never frees a node).
func (t *btree) newNode() *node {
	if n := len(t.spare); n > 0 {
		x := t.spare[n-1]
		t.spare = t.spare[:n-1]
		return x
	}
	if len(t.slab) == 0 {
		t.takeSlab()
		t.unreserved++
	}
	x := &t.slab[0]
	t.slab = t.slab[1:]
	return x
}

// slabNodes is how many B-tree nodes (about 3.1 KiB each) a slab holds.
const slabNodes = 16

// takeSlab replaces the slab with a new one.
func (t *btree) takeSlab() {
	t.slab = make([]node, slabNodes)
}

// newKids returns a zeroed children array, reserved if one is.
func (t *btree) newKids() *[maxItems + 1]*node {
	if n := len(t.kids); n > 0 {
		k := t.kids[n-1]
		t.kids = t.kids[:n-1]
		return k
	}
	t.unreserved++
	return new([maxItems + 1]*node)
}

// reserve sets aside the nodes and children arrays an insert that splits
// every node on a path of depth levels can take (one each per level, and
// one more for a new root), so that the insert allocates nothing. The
// writer calls it before it takes the lock. A slab's nodes left over when
// a new one is needed stay usable (spare).
func (t *btree) reserve(depth int) {
	if depth == 0 {
		return // an empty tree: insert allocates its first node alone
	}
	need := depth + 1
	if len(t.spare)+len(t.slab) < need {
		for i := range t.slab {
			t.spare = append(t.spare, &t.slab[i])
		}
		t.takeSlab()
	}
	for len(t.kids) < need {
		t.kids = append(t.kids, new([maxItems + 1]*node))
	}
}

// searchRange returns the word of p that x's words hold and the range of
// indexes a search for p covers: all of them, or none for a shared node
// whose items p lies wholly below or above (p0 orders p against all of
// them at once).
func (x *node) searchRange(p *entry) (pw uint64, lo, hi int) {
	switch {
	case !x.shared:
		return p.p0, 0, x.n
	case p.p0 < x.sh:
		return 0, 0, 0
	case p.p0 > x.sh:
		return 0, x.n, x.n
	}
	return p.p1, 0, x.n
}

// lowerBound returns the index of the first item >= p (n if none). A tie
// on the word goes to lessEntryTail, which compares p1 and the rest (for
// a shared node, p1 again: equal).
func (x *node) lowerBound(p *entry) int {
	pw, lo, hi := x.searchRange(p)
	x.prefetchWords(lo, hi)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if w := x.words[m]; w < pw || (w == pw && lessEntryTail(x.item(m), p)) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// prefetchWords asks for the lines of words[lo:hi] at once. A binary
// search over them reads about four of a node's eight lines, each
// depending on the last: in a memtable larger than the CPU caches (a
// 32 MiB one, say) every level of a descent waited on four memory
// round trips one after another, where the lines fetched together cost
// about one (BenchmarkIterSeekNextRandom, BenchmarkAddFullTable).
func (x *node) prefetchWords(lo, hi int) {
	if hi-lo > wordsPerLine {
		prefetch.Object(unsafe.Pointer(&x.words[lo]), uintptr(hi-lo)*8)
		if x.children != nil {
			prefetch.Object(unsafe.Pointer(&x.children[lo]), uintptr(hi-lo+1)*8)
		}
	}
}

// wordsPerLine is how many words a cache line holds: a range within one
// line needs no prefetch.
const wordsPerLine = 8

// upperBound returns the index of the first item > p (n if none).
func (x *node) upperBound(p *entry) int {
	pw, lo, hi := x.searchRange(p)
	x.prefetchWords(lo, hi)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if w := x.words[m]; pw < w || (pw == w && lessEntryTail(p, x.item(m))) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// split moves the upper half of a full node into a new right sibling and
// returns the middle item, which the caller puts in the parent between x
// and the sibling. Both halves come out with their items in key order.
func (x *node) split(t *btree) (entry, *node) {
	const mid = maxItems / 2
	r := t.newNode()
	r.n, r.shared, r.sh = maxItems-mid-1, x.shared, x.sh
	copy(r.words[:], x.words[mid+1:])
	for i := range r.n {
		r.items[i] = *x.item(mid + 1 + i)
		r.slot[i] = uint8(i)
	}
	if x.children != nil {
		r.children = t.newKids()
		copy(r.children[:], x.children[mid+1:])
		clear(x.children[mid+1:])
	}
	m := *x.item(mid)
	var lower [mid]entry
	for i := range lower {
		lower[i] = *x.item(i)
	}
	copy(x.items[:], lower[:])
	clear(x.items[mid:]) // drop references into the arena
	for i := range mid {
		x.slot[i] = uint8(i)
	}
	x.n = mid
	x.reshare()
	r.reshare()
	return m, r
}

// insertAt puts e at index i of x in key order, shifting the words and
// slots after it (and, for an inner node, puts child right after e).
func (x *node) insertAt(i int, e entry, right *node) {
	switch {
	case x.n == 0:
		x.shared, x.sh = true, e.p0
	case x.shared && e.p0 != x.sh:
		x.unshare()
	}
	copy(x.words[i+1:x.n+1], x.words[i:x.n])
	copy(x.slot[i+1:x.n+1], x.slot[i:x.n])
	x.words[i] = x.word(&e)
	x.slot[i] = uint8(x.n)
	x.items[x.n] = e
	if x.children != nil {
		copy(x.children[i+2:x.n+2], x.children[i+1:x.n+1])
		x.children[i+1] = right
	}
	x.n++
}

// leafFor returns the leaf an insert of e puts it in and its index there
// when no node on the way down is full, so that the insert splits nothing
// and is that leaf's insertAt alone (ok). Otherwise it returns the tree's
// depth, for reserve. It only reads the tree: the one goroutine that
// modifies it (MemTable.Add's caller) runs it without the lock, beside
// readers, and takes the lock for the insert only.
func (t *btree) leafFor(e *entry) (x *node, i int, depth int, ok bool) {
	full := false
	for x = t.root; x != nil; x = x.children[i] {
		depth++
		full = full || x.n == maxItems
		i = x.upperBound(e)
		if x.children == nil {
			break
		}
	}
	if x == nil || full {
		return nil, 0, depth, false
	}
	return x, i, depth, true
}

// insertLeaf inserts e at index i of leaf x, as leafFor found them.
func (t *btree) insertLeaf(x *node, i int, e entry) {
	x.insertAt(i, e, nil)
	t.len++
}

// insert adds e, which must not equal an entry already in the tree.
func (t *btree) insert(e entry) {
	if t.root == nil {
		// The first node is allocated alone: a memtable of at most
		// maxItems entries (one per column family a write touched) takes
		// no slab.
		t.root = new(node)
	}
	if t.root.n == maxItems {
		m, r := t.root.split(t)
		root := t.newNode()
		root.n, root.shared, root.sh, root.children = 1, true, m.p0, t.newKids()
		root.words[0], root.items[0], root.slot[0] = m.p1, m, 0
		root.children[0], root.children[1] = t.root, r
		t.root = root
	}
	x := t.root
	for {
		i := x.upperBound(&e)
		if x.children == nil {
			x.insertAt(i, e, nil)
			t.len++
			return
		}
		c := x.children[i]
		if c.n == maxItems {
			m, r := c.split(t)
			x.insertAt(i, m, r)
			if lessEntry(&m, &e) {
				c = r
			}
		}
		x = c
	}
}

// ascend calls fn on the entries >= pivot (all entries when pivot is nil)
// in increasing order until fn returns false; it reports whether fn never
// did. fn must not modify the tree.
func (t *btree) ascend(pivot *entry, fn func(*entry) bool) bool {
	if t.root == nil {
		return true
	}
	return t.root.ascend(pivot, fn)
}

func (x *node) ascend(pivot *entry, fn func(*entry) bool) bool {
	i := 0
	if pivot != nil {
		i = x.lowerBound(pivot)
	}
	// Child i holds the entries between item(i-1) and item(i): some of
	// them may be >= pivot; every later subtree lies wholly above it.
	if x.children != nil && !x.children[i].ascend(pivot, fn) {
		return false
	}
	if x.children == nil {
		x.prefetchItems(i, i+prefetchItems)
	}
	for ; i < x.n; i++ {
		if !fn(x.item(i)) {
			return false
		}
		if x.children != nil && !x.children[i+1].ascend(nil, fn) {
			return false
		}
	}
	return true
}

// prefetchItems is how many items from its start a leaf's traversal asks
// the CPU for at once: a memtable iterator's first run (minRun).
const prefetchItems = minRun

// prefetchItems hints the items from the i-th to the j-th (exclusive) in
// key order, which lie in arrival order across the node's 40 lines rather
// than one after another.
func (x *node) prefetchItems(i, j int) {
	for ; i < min(j, x.n); i++ {
		prefetch.Object(unsafe.Pointer(x.item(i)), unsafe.Sizeof(entry{}))
	}
}

// descend calls fn on the entries <= pivot (all entries when pivot is nil)
// in decreasing order until fn returns false; it reports whether fn never
// did. fn must not modify the tree.
func (t *btree) descend(pivot *entry, fn func(*entry) bool) bool {
	if t.root == nil {
		return true
	}
	return t.root.descend(pivot, fn)
}

func (x *node) descend(pivot *entry, fn func(*entry) bool) bool {
	j := x.n
	if pivot != nil {
		j = x.upperBound(pivot)
	}
	// Child j holds the entries between item(j-1) and item(j): some of
	// them may be <= pivot; every earlier subtree lies wholly below it.
	if x.children != nil && !x.children[j].descend(pivot, fn) {
		return false
	}
	for i := j - 1; i >= 0; i-- {
		if !fn(x.item(i)) {
			return false
		}
		if x.children != nil && !x.children[i].descend(nil, fn) {
			return false
		}
	}
	return true
}

// check verifies the tree's invariants (sorted items, separators between
// their children's items, leaves at one depth, node sizes, length) and
// returns a description of the first violation, or "".
func (t *btree) check() string {
	if t.root == nil {
		if t.len != 0 {
			return "empty tree with nonzero length"
		}
		return ""
	}
	count := 0
	leafDepth := -1
	var walk func(x *node, lo, hi *entry, depth int) string
	walk = func(x *node, lo, hi *entry, depth int) string {
		if x.n < 0 || x.n > maxItems || (x != t.root && x.n == 0) {
			return "node size out of range"
		}
		var seen [maxItems]bool
		for i := 0; i < x.n; i++ {
			if int(x.slot[i]) >= x.n || seen[x.slot[i]] {
				return "slots are not a permutation of the items"
			}
			seen[x.slot[i]] = true
			e := x.item(i)
			if x.words[i] != x.word(e) || (x.shared && e.p0 != x.sh) {
				return "word does not match its item"
			}
			if (i > 0 && !lessEntry(x.item(i-1), e)) || (lo != nil && !lessEntry(lo, e)) || (hi != nil && !lessEntry(e, hi)) {
				return "items out of order"
			}
		}
		count += x.n
		if x.children == nil {
			if leafDepth == -1 {
				leafDepth = depth
			} else if leafDepth != depth {
				return "leaves at different depths"
			}
			return ""
		}
		for i := 0; i <= x.n; i++ {
			clo, chi := lo, hi
			if i > 0 {
				clo = x.item(i - 1)
			}
			if i < x.n {
				chi = x.item(i)
			}
			if x.children[i] == nil {
				return "missing child"
			}
			if s := walk(x.children[i], clo, chi, depth+1); s != "" {
				return s
			}
		}
		return ""
	}
	if s := walk(t.root, nil, nil, 0); s != "" {
		return s
	}
	if count != t.len {
		return "length does not match the items"
	}
	return ""
}
