package compaction

import (
	"testing"

	"github.com/sievedb/sieve/internal/manifest"
	"github.com/stretchr/testify/require"
)

func TestCompactionEdit(t *testing.T) {
	a := fileMeta(1, rkey(0), rkey(9), 1, 2, 100)
	b := fileMeta(2, rkey(0), rkey(4), 1, 1, 100)
	c2 := fileMeta(3, rkey(5), rkey(9), 1, 1, 100)
	out := fileMeta(4, rkey(0), rkey(9), 1, 2, 200)

	c := &Compaction{StartLevel: 2, OutputLevel: 3, Inputs: [2][]*manifest.FileMetadata{{a}, {b, c2}}}
	require.Equal(t, &manifest.VersionEdit{
		DeletedFiles: []manifest.DeletedFile{
			{CF: 7, Level: 2, FileNum: 1}, {CF: 7, Level: 3, FileNum: 2}, {CF: 7, Level: 3, FileNum: 3},
		},
		NewFiles: []manifest.NewFile{{CF: 7, Level: 3, Meta: out}},
	}, c.Edit(7, []*manifest.FileMetadata{out}))

	// A move deletes its table from the start level and adds it to the
	// output level.
	m := &Compaction{StartLevel: 0, OutputLevel: 6, IsMove: true, Inputs: [2][]*manifest.FileMetadata{{a}}}
	require.Equal(t, &manifest.VersionEdit{
		DeletedFiles: []manifest.DeletedFile{{CF: 0, Level: 0, FileNum: 1}},
		NewFiles:     []manifest.NewFile{{CF: 0, Level: 6, Meta: a}},
	}, m.Edit(0, m.Inputs[0]))
}
