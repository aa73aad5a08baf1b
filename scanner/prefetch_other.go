//go:build !amd64

package scanner

import "unsafe"

// prefetch does nothing without the assembly: the lookup it would speed
// up then waits for its cache line.
func prefetch(p unsafe.Pointer) {}
