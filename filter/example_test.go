package filter_test

import (
	"errors"
	"fmt"

	"github.com/sievedb/sieve/filter"
)

func Example() {
	p := filter.Bloom(10)
	b := p.NewBuilder()
	for _, k := range []string{"apple", "banana", "cherry"} {
		b.Add([]byte(k))
	}
	block := b.Finish()

	r, err := filter.OpenBlock(block)
	if errors.Is(err, filter.ErrUnknownType) {
		return // a newer format: read the table without its filter
	}
	fmt.Println(p.Name(), len(block), "bytes")
	fmt.Println(r.MayContain([]byte("banana")))
	// Output:
	// sieve.bloom.blocked/10 79 bytes
	// true
}

func ExampleExpectedFPR() {
	for _, p := range []filter.Policy{filter.Bloom(10), filter.StandardBloom(10), filter.Cuckoo(12)} {
		fpr, _ := filter.ExpectedFPR(p, 1_000_000)
		fmt.Printf("%-24s %.3f%%\n", p.Name(), 100*fpr)
	}
	// Output:
	// sieve.bloom.blocked/10   0.829%
	// sieve.bloom.standard/10  0.819%
	// sieve.cuckoo/12          0.185%
}

func ExampleBitsPerKey() {
	fmt.Printf("classic Bloom at 1%%: %.2f bits/key, k = %d\n", filter.BitsPerKey(0.01), filter.OptimalK(filter.BitsPerKey(0.01)))
	fmt.Printf("blocked Bloom at 1%%: %.2f bits/key\n", filter.BloomBitsPerKey(0.01))
	fmt.Printf("cuckoo at 0.1%%: %d-bit fingerprints\n", filter.CuckooFingerprintBits(0.001))
	// Output:
	// classic Bloom at 1%: 9.59 bits/key, k = 7
	// blocked Bloom at 1%: 9.60 bits/key
	// cuckoo at 0.1%: 13-bit fingerprints
}

func ExampleCuckooTableFilter() {
	cf, _ := filter.NewCuckooTableFilter(1000, 12)
	_ = cf.Add([]byte("session-17"))
	fmt.Println(cf.Test([]byte("session-17")))
	fmt.Println(cf.Delete([]byte("session-17")), cf.Test([]byte("session-17")))
	fmt.Println(cf.Delete([]byte("never-added")))
	// Output:
	// true
	// true false
	// false
}

func ExampleStandardBloomFilter() {
	bf, _ := filter.NewStandardBloomFilter(1_000_000, 0.01)
	fmt.Println(bf.M(), "bits,", bf.K(), "probes")
	fmt.Println(bf.Add([]byte("user:1")), bf.Add([]byte("user:1")))
	fmt.Println(bf.Test([]byte("user:1")))
	// Output:
	// 9585088 bits, 7 probes
	// true false
	// true
}
