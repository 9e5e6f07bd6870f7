package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/sievedb/sieve"
)

// errKeyNotFound is StableStore's missing-key error: hashicorp/raft
// compares its text with "not found" (api.go, raft.go), so the text is
// exactly that.
var errKeyNotFound = errors.New("not found")

// Key prefixes in the log DB's default column family: log entries under
// 'l' + the big-endian index (so that the key order is the index order),
// stable-store keys under 's' + the key.
const (
	prefixLog    = 'l'
	prefixStable = 's'
)

// LogStore is a sieve database used as hashicorp/raft's LogStore and
// StableStore: a DB of its own (the state machine's DB is another), every
// write synced, StoreLogs one atomic batch, DeleteRange one range
// tombstone. The first and last indexes are kept in memory (read once at
// open), so FirstIndex and LastIndex cost no I/O.
type LogStore struct {
	db *sieve.DB

	mu          sync.Mutex // serializes writes with the index bounds
	first, last uint64     // 0, 0: no entry
}

var (
	_ raft.LogStore    = (*LogStore)(nil)
	_ raft.StableStore = (*LogStore)(nil)
)

// OpenLogStore opens (creating it if needed) the log store in dir.
func OpenLogStore(dir string, o *sieve.Options) (*LogStore, error) {
	var opts sieve.Options
	if o != nil {
		opts = *o
	}
	db, err := sieve.Open(dir, &opts)
	if err != nil {
		return nil, err
	}
	s := &LogStore{db: db}
	if err := s.loadBounds(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// loadBounds reads the first and last log index from the DB.
func (s *LogStore) loadBounds() error {
	it := s.db.NewIter(&sieve.IterOptions{LowerBound: []byte{prefixLog}, UpperBound: []byte{prefixLog + 1}})
	defer it.Close()
	if it.First() {
		s.first = binary.BigEndian.Uint64(it.Key()[1:])
	}
	if it.Last() {
		s.last = binary.BigEndian.Uint64(it.Key()[1:])
	}
	return it.Error()
}

// Close closes the database.
func (s *LogStore) Close() error { return s.db.Close() }

func logKey(index uint64) []byte {
	k := make([]byte, 9)
	k[0] = prefixLog
	binary.BigEndian.PutUint64(k[1:], index)
	return k
}

// FirstIndex returns the first index written, 0 for none.
func (s *LogStore) FirstIndex() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first, nil
}

// LastIndex returns the last index written, 0 for none.
func (s *LogStore) LastIndex() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last, nil
}

// GetLog reads the entry at index into log; raft.ErrLogNotFound if absent.
func (s *LogStore) GetLog(index uint64, log *raft.Log) error {
	v, err := s.db.Get(logKey(index))
	if errors.Is(err, sieve.ErrNotFound) {
		return raft.ErrLogNotFound
	}
	if err != nil {
		return err
	}
	return decodeLog(v, log)
}

// StoreLog stores one entry.
func (s *LogStore) StoreLog(log *raft.Log) error { return s.StoreLogs([]*raft.Log{log}) }

// StoreLogs stores the entries in one synced batch: all or none.
func (s *LogStore) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	b := s.db.NewBatch()
	lo, hi := logs[0].Index, logs[0].Index
	for _, l := range logs {
		if err := b.Put(logKey(l.Index), encodeLog(l)); err != nil {
			return err
		}
		lo, hi = min(lo, l.Index), max(hi, l.Index)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.db.Apply(b, sieve.Sync); err != nil {
		return err
	}
	if s.first == 0 || lo < s.first {
		s.first = lo
	}
	s.last = max(s.last, hi)
	return nil
}

// DeleteRange deletes the entries in [min, max], both inclusive, with one
// synced range tombstone.
func (s *LogStore) DeleteRange(lo, hi uint64) error {
	if lo > hi {
		return nil
	}
	end := logKey(hi + 1)
	if hi == ^uint64(0) {
		end = []byte{prefixLog + 1}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.db.DeleteRange(logKey(lo), end, sieve.Sync); err != nil {
		return err
	}
	switch {
	case lo <= s.first && hi >= s.last:
		s.first, s.last = 0, 0
	case lo <= s.first && hi >= s.first:
		s.first = hi + 1
	case hi >= s.last && lo <= s.last:
		s.last = lo - 1
	}
	return nil
}

func stableKey(key []byte) []byte { return append([]byte{prefixStable}, key...) }

// Set stores key's value, synced.
func (s *LogStore) Set(key, val []byte) error {
	return s.db.Put(stableKey(key), val, sieve.Sync)
}

// Get returns key's value, or an error whose text is "not found".
func (s *LogStore) Get(key []byte) ([]byte, error) {
	v, err := s.db.Get(stableKey(key))
	if errors.Is(err, sieve.ErrNotFound) {
		return nil, errKeyNotFound
	}
	return v, err
}

// SetUint64 stores val (8 bytes, big-endian) under key, synced.
func (s *LogStore) SetUint64(key []byte, val uint64) error {
	return s.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 returns key's value, or an error whose text is "not found".
func (s *LogStore) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("replica: stable key %q holds %d bytes, not a uint64", key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// encodeLog encodes an entry: index, term (uvarints), type (1 byte),
// AppendedAt (varint Unix nanoseconds, 0 for the zero time), then Data
// and Extensions, each with a uvarint length.
func encodeLog(l *raft.Log) []byte {
	b := make([]byte, 0, 32+len(l.Data)+len(l.Extensions))
	b = binary.AppendUvarint(b, l.Index)
	b = binary.AppendUvarint(b, l.Term)
	b = append(b, byte(l.Type))
	var at int64
	if !l.AppendedAt.IsZero() {
		at = l.AppendedAt.UnixNano()
	}
	b = binary.AppendVarint(b, at)
	b = binary.AppendUvarint(b, uint64(len(l.Data)))
	b = append(b, l.Data...)
	b = binary.AppendUvarint(b, uint64(len(l.Extensions)))
	return append(b, l.Extensions...)
}

func decodeLog(b []byte, l *raft.Log) error {
	d := decoder{b: b}
	l.Index = d.uvarint()
	l.Term = d.uvarint()
	l.Type = raft.LogType(d.byte())
	at := d.varint()
	l.AppendedAt = time.Time{}
	if at != 0 {
		l.AppendedAt = time.Unix(0, at)
	}
	l.Data = d.bytes()
	l.Extensions = d.bytes()
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	return d.err
}
