//go:build race

package scanner

// raceEnabled: the race detector makes sync.Pool drop what it is given at
// random, so memory bounds that rely on reused buffers are not measured there.
const raceEnabled = true
