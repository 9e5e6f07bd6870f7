package filter

import (
	"fmt"
	"testing"
)

// TestMayContainHash: every table filter's reader answers MayContainHash
// of a key's HashKey exactly as MayContain of the key, present or absent.
func TestMayContainHash(t *testing.T) {
	policies := []Policy{Bloom(10), StandardBloom(10), Cuckoo(12), BinaryFuse(8), BinaryFuse(16), Ribbon(7), None}
	for _, p := range policies {
		b := p.NewBuilder()
		for i := 0; i < 5000; i++ {
			b.Add([]byte(fmt.Sprintf("k%06d", 2*i)))
		}
		data := b.Finish()
		r, err := OpenBlock(data)
		if err != nil {
			t.Fatalf("%s: %v", p.Name(), err)
		}
		hr, ok := r.(HashReader)
		if !ok {
			t.Fatalf("%s: reader %T is not a HashReader", p.Name(), r)
		}
		for i := 0; i < 10000; i++ {
			k := []byte(fmt.Sprintf("k%06d", i))
			if hr.MayContainHash(HashKey(k)) != r.MayContain(k) {
				t.Fatalf("%s: MayContainHash and MayContain disagree on %s", p.Name(), k)
			}
		}
	}
}
