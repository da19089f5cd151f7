package testenv

import "io"

// Pattern returns n bytes of a deterministic, incompressible-enough
// stream (xorshift from seed, which must not be 0): the content of the
// big objects the transfer tests and benchmarks move and compare.
func Pattern(seed uint64, n int64) io.Reader { return io.LimitReader(&xorshift{x: seed}, n) }

type xorshift struct{ x uint64 }

func (p *xorshift) Read(b []byte) (int, error) {
	for i := range b {
		p.x ^= p.x << 13
		p.x ^= p.x >> 7
		p.x ^= p.x << 17
		b[i] = byte(p.x)
	}
	return len(b), nil
}
