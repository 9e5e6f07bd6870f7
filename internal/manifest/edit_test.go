package manifest

import (
	"errors"
	"fmt"
	"math/rand"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

func meta(num uint64, lo, hi string, seqLo, seqHi uint64) *FileMetadata {
	return &FileMetadata{FileNum: num, Size: num * 100,
		Smallest:    base.MakeInternalKey([]byte(lo), seqHi, base.KindSet),
		Largest:     base.MakeInternalKey([]byte(hi), seqLo, base.KindDelete),
		SmallestSeq: seqLo, LargestSeq: seqHi}
}

func sampleEdits() []*VersionEdit {
	return []*VersionEdit{
		{},
		{HasLogNum: true, LogNum: 7, HasNextFileNum: true, NextFileNum: 12, HasLastSeq: true, LastSeq: 1 << 40},
		{HasSealedLog: true, SealedLog: 9},
		{AddedCFs: []ColumnFamily{{ID: 0, Name: "default"}, {ID: 3, Name: "sketch", Merger: "sieve.sketch"}}},
		{DroppedCFs: []uint32{3}, SetMergers: []ColumnFamily{{ID: 1, Merger: "m"}}},
		{DeletedFiles: []DeletedFile{{CF: 0, Level: 1, FileNum: 5}, {CF: 2, Level: 6, FileNum: 9}},
			NewFiles: []NewFile{{CF: 0, Level: 2, Meta: meta(10, "a", "m", 3, 9)}, {CF: 1, Level: 0, Meta: meta(11, "", "\xff\x00", 0, 0)}}},
		{HasLastSeq: true, LastSeq: 77, Ingested: [][]byte{[]byte("0123456789abcdef")},
			NewFiles: []NewFile{{CF: 0, Level: 6, Meta: meta(12, "a", "b", 77, 77)}}},
		{HasNextCFID: true, NextCFID: 7, DroppedCFs: []uint32{5, 6}},
	}
}

func TestEditRoundTrip(t *testing.T) {
	for i, e := range sampleEdits() {
		enc := e.Encode(nil)
		var d VersionEdit
		require.NoError(t, d.Decode(enc), "edit %d", i)
		require.Equal(t, e.String(), d.String(), "edit %d", i)
		require.Equal(t, enc, d.Encode(nil), "edit %d re-encodes identically", i)
	}
}

func TestEditDecodeRejects(t *testing.T) {
	good := sampleEdits()[5].Encode(nil)
	cases := map[string][]byte{
		"empty":              {},
		"bad version":        append([]byte{99}, good[1:]...),
		"unknown tag":        {EditFormatVersion, 100, 0},
		"reserved tag 9":     {EditFormatVersion, 9, 1, 1},
		"empty ingested id":  {EditFormatVersion, 11, 1, 0},
		"truncated":          good[:len(good)-3],
		"cf id too large":    {EditFormatVersion, 11, 5, 0x80, 0x80, 0x80, 0x80, 0x09},
		"level too large":    (&VersionEdit{DeletedFiles: []DeletedFile{{Level: 9}}}).Encode(nil),
		"smallest > largest": (&VersionEdit{NewFiles: []NewFile{{Meta: meta(1, "z", "a", 1, 2)}}}).Encode(nil),
	}
	for name, b := range cases {
		var e VersionEdit
		err := e.Decode(b)
		require.ErrorIs(t, err, base.ErrCorruption, name)
	}
}

// FuzzDecodeEdit: any bytes decode without panicking; what decodes
// re-encodes to bytes that decode to the same edit.
func FuzzDecodeEdit(f *testing.F) {
	for _, e := range sampleEdits() {
		f.Add(e.Encode(nil))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var e VersionEdit
		if err := e.Decode(b); err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("decode error not marked as corruption: %v", err)
			}
			return
		}
		var d VersionEdit
		if err := d.Decode(e.Encode(nil)); err != nil {
			t.Fatalf("re-encoded edit does not decode: %v", err)
		}
		if d.String() != e.String() {
			t.Fatalf("round trip changed the edit:\n%s\nvs\n%s", e.String(), d.String())
		}
	})
}

// TestWriteFuzzSeeds regenerates testdata/fuzz/FuzzDecodeEdit when
// SIEVE_WRITE_FUZZ_SEEDS is set.
func TestWriteFuzzSeeds(t *testing.T) {
	for i, e := range sampleEdits() {
		testutil.WriteFuzzSeed(t, "FuzzDecodeEdit", fmt.Sprintf("seed-%d", i), e.Encode(nil))
	}
}

func TestVersionApplyAndCheckLevels(t *testing.T) {
	v := &Version{CFs: map[uint32]*Levels{0: {}}}
	var obsolete []uint64
	onZero := func(fs []*FileMetadata) {
		for _, f := range fs {
			obsolete = append(obsolete, f.FileNum)
		}
	}
	v1, err := v.Apply(&VersionEdit{NewFiles: []NewFile{
		{Level: 0, Meta: meta(1, "a", "z", 1, 10)}, {Level: 0, Meta: meta(2, "b", "c", 11, 20)},
		{Level: 1, Meta: meta(3, "a", "f", 0, 0)}, {Level: 1, Meta: meta(4, "g", "k", 0, 0)},
	}}, onZero)
	require.NoError(t, err)
	v1.Ref()
	require.Equal(t, uint64(2), v1.CFs[0][0][0].FileNum, "L0 newest first")
	require.NoError(t, v1.CheckLevels())
	// L0 overlap is transitive: "d" is in table 1, whose range takes in 2.
	require.Len(t, v1.CFs[0].Overlapping(0, []byte("d"), []byte("d")), 2)
	require.Len(t, v1.CFs[0].Overlapping(1, []byte("f"), []byte("g")), 2)
	require.Len(t, v1.CFs[0].Overlapping(1, []byte("l"), nil), 0)

	// Overlap in L1 is refused.
	_, err = v1.Apply(&VersionEdit{NewFiles: []NewFile{{Level: 1, Meta: meta(5, "e", "h", 0, 0)}}}, onZero)
	require.ErrorIs(t, err, base.ErrCorruption)
	// Deleting a table that is not there is refused.
	_, err = v1.Apply(&VersionEdit{DeletedFiles: []DeletedFile{{Level: 2, FileNum: 3}}}, onZero)
	require.ErrorIs(t, err, base.ErrCorruption)

	v2, err := v1.Apply(&VersionEdit{DeletedFiles: []DeletedFile{{Level: 1, FileNum: 3}}}, onZero)
	require.NoError(t, err)
	v2.Ref()
	v1.Unref()
	require.Equal(t, []uint64{3}, obsolete, "table 3 is obsolete once no version holds it")
	v2.Unref()
	require.Len(t, obsolete, 4)
}

// TestCheckLevelsRandom builds random valid levels and checks CheckLevels
// accepts them, then breaks one invariant and checks it is caught.
func TestCheckLevelsRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(testutil.Seed(t)))
	for round := 0; round < 200; round++ {
		lv := &Levels{}
		num := uint64(1)
		for level := 1; level < NumLevels; level++ {
			k := 0
			for i := rng.Intn(5); i > 0; i-- {
				lo := k + rng.Intn(3)
				hi := lo + rng.Intn(3)
				lv[level] = append(lv[level], meta(num, fmt.Sprintf("k%03d", lo), fmt.Sprintf("k%03d", hi), 0, 0))
				num++
				k = hi + 1
			}
		}
		v := &Version{CFs: map[uint32]*Levels{0: lv}}
		require.NoError(t, v.CheckLevels())
		for level := 1; level < NumLevels; level++ {
			if n := len(lv[level]); n >= 2 {
				lv[level][n-1].Smallest.UserKey = lv[level][n-2].Largest.UserKey
				require.ErrorIs(t, v.CheckLevels(), base.ErrCorruption)
				break
			}
		}
	}
}
