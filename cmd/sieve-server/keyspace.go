package main

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/sketchcol"
)

// The keyspace: one Redis database over the sketch column family.
//
// Every key lives in the Store's family ("sketch"), so one read finds a
// key of any type. A value's first byte says what it is:
//
//	0x00 + bytes        a Redis string (tagString)
//	'H' (Redis's HYLL)  a string that passes Redis's HyperLogLog header
//	                    check, stored as it is, so the Store's PF* commands
//	                    use it and GET returns it byte for byte
//	0x20, 0x30          a Bloom or cuckoo filter (sketchcol's values)
//
// A string's tag keeps it from being taken for a sketch (a SET value
// starting with 0x20 is not a Bloom filter); KindOf sees 0x00 as no
// sketch, so the Store's commands answer WRONGTYPE on strings.
//
// Redis's cached cardinality. A PFADD that raises a register leaves
// Redis's HLL with a stale cache (byte 15's top bit set over the old
// count) until a PFCOUNT recomputes it; the Store's merged values always
// carry the computed count. The server keeps, for each HLL whose Redis
// cache would be stale, the 8 cache bytes Redis would show, in the
// column family "server-hllmeta" (mirrored in memory, loaded at start),
// and GET shows them over the merged value. PFCOUNT drops them.
//
// Atomicity: every command holds the stripe locks of its keys (sorted,
// so multi-key commands do not deadlock) and a read lock of the whole
// keyspace (FLUSHALL takes it exclusively); reads of one key take none.
//
// The cache bytes of a key live in its stripe (ksStripe.meta, beside the
// stripe's lock, so the PFADD that holds the lock finds them in the same
// cache line instead of a map of its own). They are written holding the
// stripe's lock and its metaMu, and read holding either: a command that
// holds the key's lock reads them without metaMu, a GET (no key lock)
// takes metaMu. metaMu is a leaf: held for one access, never while
// taking another lock.
type keyspace struct {
	*ksState
	st *sketchcol.Store
	tx *txn // a transaction's view (MULTI/EXEC): nil for the keyspace itself
}

// ksState is what the keyspace and its transaction views share.
type ksState struct {
	// First, so that the stripes are aligned to cache lines (a keyspace is
	// large enough to be allocated page-aligned).
	stripes [1 << 16]ksStripe // many: a pipelining client holds its keys' stripes until its batch commits

	db   *sieve.DB
	cf   *sieve.ColumnFamily
	meta *sieve.ColumnFamily
	wo   *sieve.WriteOptions

	expCF *sieve.ColumnFamily // the deadlines (expires.go)
	exp   expTable
	// expired counts the keys deleted because their deadline had come
	// (INFO's expired_keys, /metrics' sieve_server_expired_keys_total).
	expired atomic.Int64

	all  sync.RWMutex
	seed maphash.Seed

	cursorMu   sync.Mutex
	cursors    map[uint64][]byte
	cursorNext uint64

	watch watchers // WATCH's registry (multi.go)

	// replicated: cluster mode, where the OnApply hook writes the cache
	// bytes holding metaMu only (not the keys' locks), so every reader
	// takes metaMu.
	replicated bool

	bits bitCache // pages of paged strings (bitmap_cache.go)
}

// ksStripe is one stripe of the keyspace: the lock of its keys and the
// cache bytes kept for them.
type ksStripe struct {
	sync.Mutex
	metaMu sync.Mutex
	meta   metaSet
	_      [16]byte // two cache lines a stripe (TestStripeSize)
}

const (
	tagString       = 0x00
	kindBloom       = 0x20
	kindPagedBloom  = 0x22 // a paged Bloom filter's header (sketchcol)
	kindCuckoo      = 0x30
	kindPagedCF     = 0x32 // a paged cuckoo filter's header (sketchcol)
	kindCMS         = 0x40
	kindPagedCMS    = 0x42 // a paged Count-Min sketch's header (sketchcol)
	kindTopK        = 0x50
	kindPagedTopK   = 0x52 // a paged Top-K sketch's header (sketchcol)
	kindHLL         = 'H'
	kindPagedString = 0x60 // a paged string's header (sketchcol, bitmap_store.go)
	metaCFName      = "server-hllmeta"
	hllHdrLen       = 16
	hllDenseLen     = 16 + 16384*6/8
)

type keyType uint8

const (
	typeNone keyType = iota
	typeString
	typeHLL // a string holding HLL bytes
	typeBloom
	typeCuckoo
	typeCMS
	typeTopK
)

// isSketch reports whether t is a RedisBloom type (not a string): string
// commands answer WRONGTYPE on it.
func (t keyType) isSketch() bool { return t >= typeBloom }

func (t keyType) redisType() string {
	switch t {
	case typeString, typeHLL:
		return "string"
	case typeBloom:
		return "MBbloom--"
	case typeCuckoo:
		return "MBbloomCF"
	case typeCMS:
		return "CMSk-TYPE"
	case typeTopK:
		return "TopK-TYPE"
	}
	return "none"
}

func openKeyspace(db *sieve.DB, sync bool, pageCacheMiB int) (*keyspace, error) {
	pc := int64(pageCacheMiB) << 20
	if pc == 0 {
		pc = -1 // off
	}
	st, err := sketchcol.OpenWithOptions(db, &sketchcol.StoreOptions{Sync: sync, PageCacheSize: pc})
	if err != nil {
		return nil, err
	}
	meta, err := db.OpenColumnFamily(metaCFName, nil)
	if err != nil {
		return nil, err
	}
	expCF, err := db.OpenColumnFamily(expiresCFName, nil)
	if err != nil {
		return nil, err
	}
	ks := &keyspace{st: st, ksState: &ksState{db: db, cf: st.ColumnFamily(), meta: meta, expCF: expCF, wo: sieve.NoSync, seed: maphash.MakeSeed(), cursors: map[uint64][]byte{}}}
	ks.bits.limit = defaultBitCacheSize
	if err := ks.loadExpires(); err != nil {
		return nil, err
	}
	if sync {
		ks.wo = sieve.Sync
	}
	it := meta.NewIter(nil)
	for ok := it.First(); ok; ok = it.Next() {
		var c [8]byte
		copy(c[:], it.Value())
		ks.noteMeta(it.Key(), c)
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("loading %s: %w", metaCFName, err)
	}
	return ks, nil
}

// quiesce waits for running commands (Close comes next).
func (ks *keyspace) quiesce() {
	ks.all.Lock()
	ks.all.Unlock() //nolint:staticcheck // a barrier
}

func (ks *keyspace) stripe(key []byte) int {
	i, _ := ks.hash(key)
	return i
}

// hash returns key's stripe and the tag its cache bytes are found by.
func (ks *keyspace) hash(key []byte) (int, uint32) {
	h := maphash.Bytes(ks.seed, key)
	return int(h % uint64(len(ks.stripes))), uint32(h >> 32)
}

// lock locks key for a command. In a transaction (EXEC holds the
// keyspace exclusively) it does nothing.
func (ks *keyspace) lock(key []byte) func() {
	if ks.tx != nil {
		return func() {}
	}
	ks.all.RLock()
	m := &ks.stripes[ks.stripe(key)]
	m.Lock()
	return func() { m.Unlock(); ks.all.RUnlock() }
}

// lockWrite is lock for a RedisBloom command that opens key for writing:
// like a module's key, it counts as modified (for WATCH) whether or not
// the command changed it.
func (ks *keyspace) lockWrite(key []byte) func() {
	unlock := ks.lock(key)
	return func() { ks.modified(key); unlock() }
}

// modified marks the clients that WATCH key (Redis's signalModifiedKey);
// in a transaction it notes key, whose watchers EXEC marks once the
// transaction is applied. REQUIRES: key's lock (so that an EXEC cannot
// run between a write and its mark).
func (ks *keyspace) modified(key []byte) {
	if ks.tx != nil {
		ks.tx.wrote(key)
		return
	}
	ks.watch.touch(key)
}

// lockKeys locks several keys' stripes in order (see lock).
func (ks *keyspace) lockKeys(keys [][]byte) func() {
	if ks.tx != nil {
		return func() {}
	}
	ks.all.RLock()
	idx := make([]int, 0, len(keys))
	for _, k := range keys {
		idx = append(idx, ks.stripe(k))
	}
	slices.Sort(idx)
	idx = slices.Compact(idx)
	for _, i := range idx {
		ks.stripes[i].Lock()
	}
	return func() {
		for _, i := range idx {
			ks.stripes[i].Unlock()
		}
		ks.all.RUnlock()
	}
}

// lockAll excludes every other command (FLUSHALL).
func (ks *keyspace) lockAll() func() {
	if ks.tx != nil {
		return func() {}
	}
	ks.all.Lock()
	return ks.all.Unlock
}

// isHLLString is Redis's isHLLObjectOrReply on a string's bytes.
func isHLLString(v []byte) bool {
	if len(v) < hllHdrLen || string(v[:4]) != "HYLL" || v[4] > 1 {
		return false
	}
	return v[4] != 0 || len(v) == hllDenseLen
}

// encodeString returns how a string value is stored.
func encodeString(v []byte) []byte { return appendString(nil, v) }

// appendString appends how a string value is stored to dst, unless it is
// stored as it is (then it returns v).
func appendString(dst, v []byte) []byte {
	if isHLLString(v) {
		return v
	}
	dst = append(dst, tagString)
	return append(dst, v...)
}

// raw reads key's stored value (nil when missing or expired).
func (ks *keyspace) raw(key []byte) ([]byte, error) {
	if ks.expiredNow(key) {
		return nil, nil
	}
	var v []byte
	var err error
	if ks.tx != nil {
		v, err = ks.tx.b.GetCF(ks.cf, key)
	} else {
		v, err = ks.cf.Get(key)
	}
	if errors.Is(err, sieve.ErrNotFound) {
		return nil, nil
	}
	if err == nil && len(v) == 0 {
		return nil, errors.New("ERR empty stored value")
	}
	return v, err
}

func typeOf(raw []byte) keyType {
	if raw == nil {
		return typeNone
	}
	switch raw[0] {
	case tagString:
		return typeString
	case kindHLL:
		return typeHLL
	case kindBloom, kindPagedBloom:
		return typeBloom
	case kindCuckoo, kindPagedCF:
		return typeCuckoo
	case kindCMS, kindPagedCMS:
		return typeCMS
	case kindTopK, kindPagedTopK:
		return typeTopK
	case kindPagedString:
		return typeString
	}
	return typeString // not written by the server; shown as bytes
}

// lookup returns key's type and, for strings, the bytes Redis would
// return (an HLL with its Redis cache bytes).
func (ks *keyspace) lookup(key []byte) (keyType, []byte, error) {
	raw, err := ks.raw(key)
	if err != nil {
		return typeNone, nil, err
	}
	t := typeOf(raw)
	switch {
	case t == typeString && raw[0] == tagString:
		return t, raw[1:], nil
	case raw != nil && raw[0] == kindPagedString:
		v, err := ks.assemble(key)
		if errors.Is(err, errReread) {
			return ks.lookup(key) // replaced between the two reads
		}
		return t, v, err
	case t == typeHLL:
		return t, ks.present(key, raw), nil
	}
	return t, raw, nil
}

// present applies the Redis cache bytes kept for key to an HLL value.
func (ks *keyspace) present(key, raw []byte) []byte {
	c, ok := ks.metaLocked(key)
	if !ok || len(raw) < hllHdrLen {
		return raw
	}
	out := bytes.Clone(raw)
	copy(out[8:16], c[:])
	return out
}

// metaLocked is metaOf for a caller without key's lock (it takes
// metaMu).
func (ks *keyspace) metaLocked(key []byte) ([8]byte, bool) {
	if c, ok, pending := ks.tx.metaOf(key); pending {
		return c, ok
	}
	i, tag := ks.hash(key)
	st := &ks.stripes[i]
	st.metaMu.Lock()
	defer st.metaMu.Unlock()
	return st.meta.get(key, tag)
}

// metaOf returns the cache bytes kept for key (in a transaction, as it
// left them). REQUIRES: key's lock.
func (ks *keyspace) metaOf(key []byte) ([8]byte, bool) {
	if c, ok, pending := ks.tx.metaOf(key); pending {
		return c, ok
	}
	if ks.replicated {
		return ks.metaLocked(key)
	}
	i, tag := ks.hash(key)
	return ks.stripes[i].meta.get(key, tag)
}

// setMeta records the Redis cache bytes of key. REQUIRES: key's lock.
func (ks *keyspace) setMeta(key []byte, c [8]byte) error {
	var err error
	defer ks.modified(key) // once the write is visible, under the key's lock
	if ks.tx != nil {
		err = ks.tx.b.PutCF(ks.meta, key, c[:])
	} else {
		err = ks.meta.Put(key, c[:], ks.wo)
	}
	if err != nil {
		return err
	}
	ks.noteMeta(key, c)
	return nil
}

// deleteMeta deletes the cache bytes of key. REQUIRES: key's lock.
func (ks *keyspace) deleteMeta(key []byte) error {
	var err error
	defer ks.modified(key) // once the write is visible, under the key's lock
	if ks.tx != nil {
		err = ks.tx.b.DeleteCF(ks.meta, key)
	} else {
		err = ks.meta.Delete(key, ks.wo)
	}
	if err != nil {
		return err
	}
	ks.forgetMeta(key)
	return nil
}

// newBatch returns a batch for a command's writes (a transaction's own),
// to be applied with apply.
func (ks *keyspace) newBatch() *sieve.Batch {
	if ks.tx != nil {
		return ks.tx.b
	}
	return ks.db.NewBatch()
}

// apply applies b, from newBatch, whose writes are to keys (nil: any), and
// keeps the Store's cache exact. In a transaction the writes wait for EXEC.
func (ks *keyspace) apply(b *sieve.Batch, keys [][]byte) error {
	defer func() { // once the writes are visible, under the keys' locks
		for _, k := range keys {
			ks.modified(k)
		}
	}()
	if ks.tx != nil {
		if err := b.Err(); err != nil {
			return err
		}
		return nil
	}
	return ks.st.Apply(b, keys)
}

// dropMeta adds the deletion of key's cache bytes to b if it has any.
// REQUIRES: key's lock.
func (ks *keyspace) dropMeta(b *sieve.Batch, key []byte) bool {
	if _, ok := ks.metaOf(key); !ok {
		return false
	}
	_ = b.DeleteCF(ks.meta, key)
	return true
}

// noteMeta records cache bytes in memory only (their write is in a
// pending batch). REQUIRES: key's lock.
func (ks *keyspace) noteMeta(key []byte, c [8]byte) {
	if ks.tx != nil {
		ks.tx.pendMeta(key, &c) // shown to others once EXEC's batch is applied
		return
	}
	i, tag := ks.hash(key)
	st := &ks.stripes[i]
	st.metaMu.Lock()
	st.meta.put(key, tag, c)
	st.metaMu.Unlock()
}

// reloadMeta rereads the cache bytes of keys from disk (after a failed
// batch). REQUIRES: the keys' locks.
func (ks *keyspace) reloadMeta(keys [][]byte) {
	for _, k := range keys {
		v, err := ks.meta.Get(k)
		if err == nil && len(v) == 8 {
			ks.noteMeta(k, [8]byte(v))
		} else {
			ks.forgetMeta(k)
		}
	}
}

// forgetMeta drops the cache bytes kept for keys. REQUIRES: their locks.
func (ks *keyspace) forgetMeta(keys ...[]byte) {
	for _, k := range keys {
		if ks.tx != nil {
			ks.tx.pendMeta(k, nil)
			continue
		}
		i, tag := ks.hash(k)
		st := &ks.stripes[i]
		st.metaMu.Lock()
		st.meta.del(k, tag)
		st.metaMu.Unlock()
	}
}

// setString stores a string value at key. REQUIRES: key's lock.
func (ks *keyspace) setString(key, v []byte) error {
	if err := checkSize(key, len(v)+1); err != nil {
		return err
	}
	defer ks.modified(key) // once the write is visible, under the key's lock
	paged, err := ks.isPagedString(key)
	if err != nil {
		return err
	}
	_, hasMeta := ks.metaOf(key)
	hadTTL := ks.deadline(key) != 0
	if !hasMeta && !hadTTL && !paged {
		return ks.st.Put(key, encodeString(v))
	}
	b := ks.newBatch()
	_ = b.PutCF(ks.cf, key, encodeString(v))
	ks.dropMeta(b, key)
	ks.putDeadline(b, key, 0)
	if paged {
		ks.dropPaged(b, key)
	}
	err = ks.apply(b, [][]byte{key})
	ks.forgetMeta(key)
	if err == nil && hadTTL {
		ks.noteDeadline(key, 0)
	}
	return err
}

// setStringKeepTTL stores a string value at key keeping the key's
// deadline (APPEND, SETRANGE, INCR... keep it in Redis). REQUIRES: key's
// lock.
func (ks *keyspace) setStringKeepTTL(key, v []byte) error {
	d := ks.deadline(key)
	if d == 0 {
		return ks.setString(key, v)
	}
	if err := checkSize(key, len(v)+1); err != nil {
		return err
	}
	defer ks.modified(key)
	return ks.writeValue(key, encodeString(v), d)
}

// checkSize refuses a key or stored value over the engine's limits before
// anything is written (in a transaction's batch, the engine's error would
// fail the whole transaction instead of the one command).
func checkSize(key []byte, vlen int) error {
	switch {
	case len(key) > sieve.MaxKeySize:
		return fmt.Errorf("key of %d bytes exceeds sieve's limit of %d", len(key), sieve.MaxKeySize)
	case vlen > sieve.MaxValueSize:
		return fmt.Errorf("value of %d bytes exceeds sieve's limit of %d", vlen-1, sieve.MaxValueSize-1)
	}
	return nil
}

// del deletes keys that exist (the caller checked). REQUIRES: their locks.
func (ks *keyspace) del(keys ...[]byte) error {
	defer func() { // once the deletions are visible, under the keys' locks
		for _, k := range keys {
			ks.modified(k)
		}
	}()
	if len(keys) == 1 {
		if _, ok := ks.metaOf(keys[0]); !ok && ks.deadline(keys[0]) == 0 {
			ks.bits.drop(keys[0])
			return ks.st.Delete(keys[0])
		}
	}
	b := ks.newBatch()
	var timed [][]byte
	for _, k := range keys {
		_ = b.DeleteCF(ks.cf, k)
		_ = ks.st.DropPages(b, k)
		ks.dropMeta(b, k)
		if ks.deadline(k) != 0 {
			ks.putDeadline(b, k, 0)
			timed = append(timed, k)
		}
		ks.bits.drop(k)
	}
	err := ks.apply(b, keys)
	ks.forgetMeta(keys...)
	if err == nil {
		for _, k := range timed {
			ks.noteDeadline(k, 0)
		}
	}
	return err
}

// flush deletes every key, and marks the clients watching a key that
// existed (Redis 7.0 marks those only). REQUIRES: lockAll.
func (ks *keyspace) flush() error {
	var existed [][]byte
	for _, k := range ks.watch.keys() {
		if v, err := ks.raw(k); err == nil && v != nil {
			existed = append(existed, k)
		}
	}
	defer func() { // once the deletions are visible (lockAll held)
		for _, k := range existed {
			ks.modified(k)
		}
	}()
	if ks.tx != nil {
		return ks.tx.flush(ks)
	}
	for _, cf := range []*sieve.ColumnFamily{ks.cf, ks.meta, ks.expCF} {
		it := cf.NewIter(nil)
		b := ks.db.NewBatch()
		for ok := it.First(); ok; ok = it.Next() {
			_ = b.DeleteCF(cf, it.Key())
			if b.Len() >= 1000 {
				if err := ks.st.Apply(b, nil); err != nil {
					_ = it.Close()
					return err
				}
				b = ks.db.NewBatch()
			}
		}
		if err := it.Close(); err != nil {
			return err
		}
		if cf == ks.cf {
			_ = ks.st.DropAllPages(b)
		}
		if err := ks.st.Apply(b, nil); err != nil {
			return err
		}
	}
	ks.bits.clear()
	for i := range ks.stripes {
		st := &ks.stripes[i]
		st.metaMu.Lock()
		st.meta = metaSet{}
		st.metaMu.Unlock()
	}
	ks.exp.clear()
	ks.cursorMu.Lock()
	ks.cursors = map[uint64][]byte{}
	ks.cursorMu.Unlock()
	return nil
}

// cursor registers where a SCAN stopped and returns its number.
func (ks *keyspace) cursor(next []byte) uint64 {
	ks.cursorMu.Lock()
	defer ks.cursorMu.Unlock()
	if len(ks.cursors) >= 100000 {
		for k := range ks.cursors { // drop an arbitrary old one
			delete(ks.cursors, k)
			break
		}
	}
	ks.cursorNext++
	ks.cursors[ks.cursorNext] = bytes.Clone(next)
	return ks.cursorNext
}

func (ks *keyspace) resume(c uint64) ([]byte, bool) {
	ks.cursorMu.Lock()
	defer ks.cursorMu.Unlock()
	k, ok := ks.cursors[c]
	return k, ok
}
