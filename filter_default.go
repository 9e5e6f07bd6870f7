package sieve

import "github.com/sievedb/sieve/filter"

// defaultFilterPolicy is the filter of column families that set none.
func defaultFilterPolicy() filter.Policy { return filter.Bloom(10) }
