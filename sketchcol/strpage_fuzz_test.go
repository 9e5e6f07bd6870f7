package sketchcol

import (
	"bytes"
	"testing"
)

// FuzzStrPageDecode feeds arbitrary bytes to the paged string's decoders
// and checks the merge algebra on the operands that decode: folding
// operands with PartialMerge and then applying the fold gives the bytes
// that applying them one by one gives.
func FuzzStrPageDecode(f *testing.F) {
	f.Add([]byte{}, []byte{}, []byte{})
	f.Add(AppendStrPage(nil, []byte{1, 2, 3}),
		AppendStrPageOp(nil, []StrRun{{Off: 1, Data: []byte{0x80}, Mask: []byte{0x80}}}),
		AppendStrPageOp(nil, []StrRun{{Off: 0, Data: []byte{7, 7}}, {Off: 4095, Data: []byte{1}, Mask: []byte{3}}}))
	f.Add(AppendStrHeader(nil, 12, 99), []byte{kindStrPageOp, 1, 1, 0, 1, 0, 0xff}, []byte{kindStrPageOp, 1, 1, 0x80, 0, 1, 0, 1})
	f.Fuzz(func(t *testing.T, base, op1, op2 []byte) {
		_, _, _ = ParseStrHeader(base)
		_, _, _ = PageOwner(base)
		_, _ = StrPageBytes(base)
		var m PageMerger
		for _, hasBase := range []bool{false, true} {
			full, err := m.FullMerge([]byte("k"), base, hasBase, [][]byte{op1, op2})
			_, err1 := parseStrPageOp(op1)
			_, err2 := parseStrPageOp(op2)
			if err != nil || err1 != nil || err2 != nil {
				continue
			}
			if len(full) > 2+StrPageSize {
				t.Fatalf("merged page of %d bytes", len(full))
			}
			fold, ok := m.PartialMerge([]byte("k"), [][]byte{op1, op2})
			if !ok {
				t.Fatalf("operands that merge do not fold")
			}
			again, err := m.FullMerge([]byte("k"), base, hasBase, [][]byte{fold})
			if err != nil || !bytes.Equal(again, full) {
				t.Fatalf("fold then apply %x (%v) != apply %x", again, err, full)
			}
		}
	})
}
