//go:build amd64 || arm64

package prefetch

// lines issues a prefetch for each cache line of [p, p+n); n > 0.
//
//go:noescape
func lines(p *byte, n int)

// linesW is lines for memory about to be written.
//
//go:noescape
func linesW(p *byte, n int)
