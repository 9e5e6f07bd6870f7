//go:build ignore

// gen_fuzz_seeds writes the seed corpora of the fuzz targets into
// testdata/fuzz/<FuzzName>/, in the go test corpus format:
//
//	cd filter && go run gen_fuzz_seeds.go
//
// Seeds are valid blocks and values of every format and size class, plus a
// few near misses (truncated, one byte changed) that reach the checks.
package main

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/sievedb/sieve/filter"
)

func main() {
	blocks := map[string][]byte{"empty": {}}
	for _, n := range []int{0, 1, 7, 100} {
		for _, p := range []filter.Policy{filter.Bloom(10), filter.Bloom(3.5), filter.StandardBloom(10), filter.Cuckoo(12), filter.Cuckoo(7), filter.Cuckoo(16), filter.BinaryFuse(8), filter.BinaryFuse(16), filter.Ribbon(7), filter.Ribbon(9.5)} {
			b := p.NewBuilder()
			for i := range n {
				b.Add(fmt.Appendf(nil, "key%013d", i))
			}
			data := b.Finish()
			name := fmt.Sprintf("%s-n%d", strings.NewReplacer("sieve.", "", "/", "-", ".", "-").Replace(p.Name()), n)
			blocks[name] = data
			if len(data) > 2 {
				blocks[name+"-truncated"] = data[1:]
				flipped := append([]byte(nil), data...)
				flipped[len(flipped)-2]++
				blocks[name+"-trailer-changed"] = flipped
			}
		}
	}
	for name, data := range blocks {
		write("FuzzOpenBlock", name, fmt.Sprintf("[]byte(%q)", data))
	}

	write("FuzzBuildRoundTrip", "keys-bloom", fmt.Sprintf("[]byte(%q)\nuint8(%d)", "a\x00bb\x00ccc\x00\x00a", 0))
	write("FuzzBuildRoundTrip", "keys-standard", fmt.Sprintf("[]byte(%q)\nuint8(%d)", "k1\x00k2\x00k3", 1))
	write("FuzzBuildRoundTrip", "keys-cuckoo", fmt.Sprintf("[]byte(%q)\nuint8(%d)", "x\x00x\x00x\x00y", 2))

	for _, capacity := range []uint64{1, 100} {
		for _, p := range []float64{0.1, 0.001} {
			bf, err := filter.NewStandardBloomFilter(capacity, p)
			if err != nil {
				log.Fatal(err)
			}
			bf.Add([]byte("a"))
			enc, _ := bf.MarshalBinary()
			name := fmt.Sprintf("cap%d-p%g", capacity, p)
			write("FuzzBloomUnmarshal", name, fmt.Sprintf("[]byte(%q)", enc))
			write("FuzzBloomUnmarshal", name+"-short", fmt.Sprintf("[]byte(%q)", enc[:len(enc)-1]))
		}
	}
	for _, f := range []int{4, 8, 12, 13, 16} {
		cf, err := filter.NewCuckooTableFilter(40, f)
		if err != nil {
			log.Fatal(err)
		}
		for i := range 30 {
			_ = cf.Add(fmt.Appendf(nil, "k%d", i%20)) // f = 4 may be full: fine for a seed
		}
		enc, _ := cf.MarshalBinary()
		name := fmt.Sprintf("f%d", f)
		write("FuzzCuckooUnmarshal", name, fmt.Sprintf("[]byte(%q)\n[]byte(%q)", enc, "k3"))
		write("FuzzCuckooUnmarshal", name+"-short", fmt.Sprintf("[]byte(%q)\n[]byte(%q)", enc[:len(enc)-1], "k3"))
	}
}

func write(target, name, body string) {
	dir := filepath.Join("testdata", "fuzz", target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte("go test fuzz v1\n"+body+"\n"), 0o644); err != nil {
		log.Fatal(err)
	}
}
