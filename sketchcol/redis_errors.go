package sketchcol

import (
	"errors"

	"github.com/sievedb/sieve"
)

// commandError is an error whose text is RedisBloom's reply for the case
// (so a RESP server can send err.Error() as is) and that also matches the
// package's generic error for it under errors.Is.
type commandError struct {
	msg string
	is  error
}

func (e *commandError) Error() string        { return e.msg }
func (e *commandError) Is(target error) bool { return target == e.is }

// Count-Min sketch errors, with RedisBloom's texts.
var (
	ErrCMSKeyNotFound  error = &commandError{"CMS: key does not exist", sieve.ErrNotFound}
	ErrCMSKeyExists    error = &commandError{"CMS: key already exists", ErrItemExists}
	ErrCMSInvalidWidth error = &commandError{"CMS: invalid width", ErrInvalidArgument}
	ErrCMSInvalidDepth error = &commandError{"CMS: invalid depth", ErrInvalidArgument}
	ErrCMSInvalidError error = &commandError{"CMS: invalid overestimation value", ErrInvalidArgument}
	ErrCMSInvalidProb  error = &commandError{"CMS: invalid prob value", ErrInvalidArgument}
	ErrCMSInvalidInit  error = &commandError{"CMS: invalid init arguments", ErrInvalidArgument}
	// ErrCMSTooLarge: more counters than sieve holds in one sketch
	// (RedisBloom's text for a sketch it cannot allocate).
	ErrCMSTooLarge      error = &commandError{"CMS: Insufficient memory to create the key", ErrInvalidArgument}
	ErrCMSNegative      error = &commandError{"CMS: Number cannot be negative", ErrInvalidArgument}
	ErrCMSNumKeys       error = &commandError{"CMS: Number of keys must be positive", ErrInvalidArgument}
	ErrCMSKeysWeights   error = &commandError{"CMS: wrong number of keys/weights", ErrInvalidArgument}
	ErrCMSDimensions    error = &commandError{"CMS: width/depth is not equal", ErrInvalidArgument}
	ErrCMSMergeOverflow error = &commandError{"CMS: MERGE overflow", ErrInvalidArgument}
	// ErrCMSIncrByOverflow is returned (after the write) by a CMSIncrBy
	// whose item's estimate saturated at 2³²−1, as RedisBloom replies
	// "CMS: INCRBY overflow" for that item.
	ErrCMSIncrByOverflow error = &commandError{"CMS: INCRBY overflow", ErrInvalidArgument}
)

// Top-K errors, with RedisBloom's texts.
var (
	ErrTopKKeyNotFound   error = &commandError{"TopK: key does not exist", sieve.ErrNotFound}
	ErrTopKKeyExists     error = &commandError{"TopK: key already exists", ErrItemExists}
	ErrTopKInvalidK      error = &commandError{"TopK: invalid k", ErrInvalidArgument}
	ErrTopKInvalidWidth  error = &commandError{"TopK: invalid width", ErrInvalidArgument}
	ErrTopKInvalidDepth  error = &commandError{"TopK: invalid depth", ErrInvalidArgument}
	ErrTopKInvalidDecay  error = &commandError{"TopK: invalid decay value. must be '<= 1' & '> 0'", ErrInvalidArgument}
	ErrTopKInvalidIncr   error = &commandError{"TopK: increment must be an integer greater or equal to 0 and smaller or equal to 100,000", ErrInvalidArgument}
	ErrTopKTooLarge      error = &commandError{"ERR Insufficient memory to create topk data structure", ErrInvalidArgument}
	ErrTopKItemsMismatch error = &commandError{"TopK: items and increments differ in number", ErrInvalidArgument}
)

// ErrCFTooLarge is a cuckoo filter larger than sieve holds, with
// RedisBloom's text for a filter it cannot allocate.
var ErrCFTooLarge error = &commandError{"ERR Insufficient memory to create filter", ErrInvalidArgument}

// RedisBloomText returns the RedisBloom reply text of a Count-Min or Top-K
// command error (the Store wraps them with the key they concern), and
// false for any other error.
func RedisBloomText(err error) (string, bool) {
	var ce *commandError
	if errors.As(err, &ce) {
		return ce.msg, true
	}
	return "", false
}
