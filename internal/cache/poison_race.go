//go:build race

package cache

// poison makes Release overwrite a pooled block's memory when its last
// reference goes, so that a use after release reads garbage and fails the
// tests loudly (the race-detector builds run the concurrent packages' tests
// in CI) instead of reading a stale copy that happens to be intact.
const poison = true
