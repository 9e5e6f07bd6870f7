// Package base holds the definitions every layer of sieve shares: the
// internal key encoding (user key plus an 8-byte trailer of sequence number
// and kind), its ordering, and the one corruption marker, ErrCorruption.
//
// Everything here is immutable or pure; it is safe for concurrent use.
package base
