package scanner

import "unsafe"

// prefetch asks the CPU to bring the cache line at p in while other work
// goes on (prefetch_amd64.s); it never faults, and changes nothing else.
//
//go:noescape
func prefetch(p unsafe.Pointer)
