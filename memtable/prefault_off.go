//go:build sieve_noprefault

package memtable

// prefault is off (build tag sieve_noprefault): the writer allocates its
// chunks and slabs inline and faults their pages in as it fills them.
const prefault = false
