//go:build !amd64 && !arm64

package prefetch

// lines is a no-op where no prefetch instruction is wired up.
func lines(p *byte, n int) {}

// linesW is a no-op where no prefetch instruction is wired up.
func linesW(p *byte, n int) {}
