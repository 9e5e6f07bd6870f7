package compaction

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/sievedb/sieve/internal/base"
)

// entry is one internal key and its value, as the tests write them:
// "a.SET.5:v", "b.DEL.3", "c.MERGE.7:x".
type entry struct {
	key   base.InternalKey
	value []byte
}

func parseKind(s string) (base.Kind, error) {
	switch s {
	case "SET":
		return base.KindSet, nil
	case "DEL":
		return base.KindDelete, nil
	case "MERGE":
		return base.KindMerge, nil
	}
	return 0, fmt.Errorf("unknown kind %q", s)
}

// parseEntry parses "ukey.KIND.seq[:value]".
func parseEntry(s string) (entry, error) {
	k, v, hasValue := strings.Cut(s, ":")
	parts := strings.Split(k, ".")
	if len(parts) != 3 {
		return entry{}, fmt.Errorf("bad entry %q: want ukey.KIND.seq[:value]", s)
	}
	kind, err := parseKind(parts[1])
	if err != nil {
		return entry{}, err
	}
	seq, err := strconv.ParseUint(parts[2], 10, 64)
	if err != nil {
		return entry{}, fmt.Errorf("bad seq in %q", s)
	}
	e := entry{key: base.MakeInternalKey([]byte(parts[0]), seq, kind)}
	if hasValue {
		e.value = []byte(v)
	}
	return e, nil
}

func parseEntries(fields []string) ([]entry, error) {
	var out []entry
	for _, f := range fields {
		e, err := parseEntry(f)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

func formatEntry(k base.InternalKey, v []byte) string {
	s := fmt.Sprintf("%s.%s.%d", k.UserKey, k.Kind(), k.SeqNum())
	if len(v) > 0 {
		s += ":" + string(v)
	}
	return s
}

func (e entry) String() string { return formatEntry(e.key, e.value) }

func sortEntries(es []entry) {
	sort.SliceStable(es, func(i, j int) bool { return base.CompareInternal(es[i].key, es[j].key) < 0 })
}

// sliceIter is a base.InternalIterator over sorted entries that checks the
// contract from the caller's side: Key and Value panic when the iterator is
// not positioned. failAt > 0 makes the failAt-th positioning call fail
// with errInjected.
type sliceIter struct {
	es      []entry
	pos     int // -1 or len(es) when unpositioned
	lower   []byte
	upper   []byte
	calls   int
	failAt  int
	err     error
	closed  bool
	onClose func()
}

var errInjected = errors.New("injected error")

var _ base.InternalIterator = (*sliceIter)(nil)

func newSliceIter(es []entry) *sliceIter { return &sliceIter{es: es, pos: -1} }

func (s *sliceIter) fail() bool {
	s.calls++
	if s.failAt > 0 && s.calls >= s.failAt {
		s.err = errInjected
	}
	if s.err != nil {
		s.pos = -1
		return true
	}
	return false
}

func (s *sliceIter) ok() bool {
	if s.pos < 0 || s.pos >= len(s.es) {
		s.pos = -1
		return false
	}
	uk := s.es[s.pos].key.UserKey
	if (s.lower != nil && bytes.Compare(uk, s.lower) < 0) || (s.upper != nil && bytes.Compare(uk, s.upper) >= 0) {
		s.pos = -1
		return false
	}
	return true
}

func (s *sliceIter) seekGE(ukey []byte) int {
	return sort.Search(len(s.es), func(i int) bool { return bytes.Compare(s.es[i].key.UserKey, ukey) >= 0 })
}

func (s *sliceIter) First() bool {
	if s.fail() {
		return false
	}
	s.pos = 0
	if s.lower != nil {
		s.pos = s.seekGE(s.lower)
	}
	return s.ok()
}

func (s *sliceIter) Last() bool {
	if s.fail() {
		return false
	}
	s.pos = len(s.es) - 1
	if s.upper != nil {
		s.pos = s.seekGE(s.upper) - 1
	}
	return s.ok()
}

func (s *sliceIter) SeekGE(ukey []byte) bool {
	if s.fail() {
		return false
	}
	if s.lower != nil && bytes.Compare(ukey, s.lower) < 0 {
		ukey = s.lower
	}
	s.pos = s.seekGE(ukey)
	return s.ok()
}

func (s *sliceIter) SeekLT(ukey []byte) bool {
	if s.fail() {
		return false
	}
	if s.upper != nil && bytes.Compare(ukey, s.upper) > 0 {
		ukey = s.upper
	}
	s.pos = s.seekGE(ukey) - 1
	return s.ok()
}

func (s *sliceIter) Next() bool {
	if s.pos < 0 || s.fail() {
		return false
	}
	s.pos++
	return s.ok()
}

func (s *sliceIter) Prev() bool {
	if s.pos < 0 || s.fail() {
		return false
	}
	s.pos--
	return s.ok()
}

func (s *sliceIter) Key() base.InternalKey {
	if s.pos < 0 {
		panic("sliceIter: Key while unpositioned")
	}
	return s.es[s.pos].key
}

func (s *sliceIter) Value() []byte {
	if s.pos < 0 {
		panic("sliceIter: Value while unpositioned")
	}
	return s.es[s.pos].value
}

func (s *sliceIter) Error() error { return s.err }

func (s *sliceIter) Close() error {
	if s.closed {
		panic("sliceIter: closed twice")
	}
	s.closed = true
	if s.onClose != nil {
		s.onClose()
	}
	return s.err
}

// appendMerger concatenates operands onto the base: not commutative, so
// any reordering shows. With refuseOdd, PartialMerge declines runs of odd
// length.
type appendMerger struct{ refuseOdd bool }

func (appendMerger) Name() string { return "append" }

func (appendMerger) FullMerge(key, b []byte, hasBase bool, ops [][]byte) ([]byte, error) {
	out := append([]byte(nil), b...)
	for _, op := range ops {
		out = append(out, op...)
	}
	return out, nil
}

func (m appendMerger) PartialMerge(key []byte, ops [][]byte) ([]byte, bool) {
	if m.refuseOdd && len(ops)%2 == 1 {
		return nil, false
	}
	return bytes.Join(ops, nil), true
}

// counterMerger adds decimal integers. An operand or base that is not a
// number makes FullMerge fail and PartialMerge decline.
type counterMerger struct{}

func (counterMerger) Name() string { return "counter" }

var errNotNumber = errors.New("counter: not a number")

func sumOperands(ops [][]byte) (int64, error) {
	var n int64
	for _, op := range ops {
		v, err := strconv.ParseInt(string(op), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: %q", errNotNumber, op)
		}
		n += v
	}
	return n, nil
}

func (counterMerger) FullMerge(key, b []byte, hasBase bool, ops [][]byte) ([]byte, error) {
	if hasBase {
		ops = append([][]byte{b}, ops...)
	}
	n, err := sumOperands(ops)
	if err != nil {
		return nil, err
	}
	return strconv.AppendInt(nil, n, 10), nil
}

func (counterMerger) PartialMerge(key []byte, ops [][]byte) ([]byte, bool) {
	n, err := sumOperands(ops)
	if err != nil {
		return nil, false
	}
	return strconv.AppendInt(nil, n, 10), true
}

func mergerByName(name string) (Merger, error) {
	switch name {
	case "", "none":
		return nil, nil
	case "append":
		return appendMerger{}, nil
	case "append-refuse-odd":
		return appendMerger{refuseOdd: true}, nil
	case "counter":
		return counterMerger{}, nil
	}
	return nil, fmt.Errorf("unknown merger %q", name)
}

// collect drains a compaction iterator.
func collect(t testing.TB, it *Iter) []entry {
	var out []entry
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, entry{key: it.Key().Clone(), value: append([]byte(nil), it.Value()...)})
	}
	if err := it.Error(); err != nil {
		t.Fatalf("compaction iterator: %v", err)
	}
	return out
}

// trials scales a randomized test's trial count down under the race
// detector, which makes each trial several times slower; the plain run
// keeps the full count.
func trials(n int) int {
	if raceEnabled {
		return max(1, n/3)
	}
	return n
}
