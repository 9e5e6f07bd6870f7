package manifest

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/stretchr/testify/require"
)

// TestFormatExample checks the worked example of FORMAT.md.
func TestFormatExample(t *testing.T) {
	e := &VersionEdit{HasLogNum: true, LogNum: 7, NewFiles: []NewFile{{CF: 0, Level: 2, Meta: &FileMetadata{
		FileNum: 10, Size: 1000,
		Smallest:    base.MakeInternalKey([]byte("a"), 9, base.KindSet),
		Largest:     base.MakeInternalKey([]byte("m"), 3, base.KindDelete),
		SmallestSeq: 3, LargestSeq: 9,
	}}}}
	want := strings.Join([]string{"01", "010107", "051b", "00020ae807",
		"09610109000000000000", "096d0003000000000000", "0309"}, "")
	require.Equal(t, want, hex.EncodeToString(e.Encode(nil)))
}
