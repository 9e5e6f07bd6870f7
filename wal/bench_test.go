package wal

import (
	"bytes"
	"fmt"
	"testing"
)

func BenchmarkWriteRecord(b *testing.B) {
	for _, size := range []int{100, 4 << 10} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			w, err := NewWriter(discard{}, testLogNum)
			if err != nil {
				b.Fatal(err)
			}
			rec := pattern(1, size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := w.WriteRecord(rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkReader(b *testing.B) {
	for _, size := range []int{100, 4 << 10} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			var ops []op
			for i := range (4 << 20) / size {
				ops = append(ops, op{rec: pattern(i, size)})
			}
			data := writeLog(b, ops, true).data
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				r := NewReader(bytes.NewReader(data), int64(len(data)), testLogNum)
				for {
					if _, err := r.Next(); err != nil {
						break
					}
				}
			}
		})
	}
}

// BenchmarkTornTailScan measures the search of rule 11 over a torn tail of
// 4 MiB of unsynced records.
func BenchmarkTornTailScan(b *testing.B) {
	var ops []op
	for i := range 1000 {
		ops = append(ops, op{rec: pattern(i, 4<<10)})
	}
	data := writeLog(b, ops, false).data
	data[fileHeaderSize+headerSize] ^= 1 // the first record: everything after it is scanned
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := readAll(data); err == nil {
			b.Fatal("no error")
		}
	}
}
