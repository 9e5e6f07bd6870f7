package filter

import "fmt"

// None is the policy for tables without a filter. Its builder ignores keys
// and Finish returns nil; a table writer should then write no filter block
// at all. Reading such a table costs a data-block search for every lookup.
//
// None.NewReader accepts only an empty block and returns a reader whose
// MayContain is always true, so code that always opens a reader still gets
// correct answers; OpenBlock does the same for an empty block.
var None Policy = nonePolicy{}

type nonePolicy struct{}

var (
	_ Policy  = nonePolicy{}
	_ Builder = noneBuilder{}
	_ Reader  = noFilter{}
)

func (nonePolicy) Name() string        { return "sieve.none" }
func (nonePolicy) NewBuilder() Builder { return noneBuilder{} }

func (nonePolicy) NewReader(data []byte) (Reader, error) {
	if len(data) == 0 {
		return noFilter{}, nil
	}
	f := blockFormat(data)
	if !isBlockFormat(f) {
		return nil, fmt.Errorf("%w: block format code %d, None reads only empty blocks", ErrUnknownType, uint8(f))
	}
	return nil, fmt.Errorf("%w: %s block, None reads only empty blocks", ErrTypeMismatch, f)
}

type noneBuilder struct{}

func (noneBuilder) Add([]byte)     {}
func (noneBuilder) Finish() []byte { return nil }
