//go:build !race

package cache

const poison = false
