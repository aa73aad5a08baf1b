package store

import (
	"crypto/rand"
	"encoding/binary"
	"time"
)

// crockford is Crockford's base32 alphabet: no I, L, O or U to misread.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// Id prefixes, so that an id says what it names.
const (
	PrefixIncident = "inc_"
	PrefixRun      = "run_"
	PrefixAccess   = "req_"
)

// NewID returns prefix followed by 26 characters: 48 bits of milliseconds
// since the epoch, then 80 random bits (crypto/rand), in Crockford base32
// (the ULID layout). Ids sort by creation time and cannot be guessed.
func NewID(prefix string, t time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixMilli())<<16)
	rand.Read(b[6:]) // never fails (crypto/rand panics rather than return short)
	// 128 bits into 26 five-bit digits: the first digit holds the top 3 bits.
	hi := binary.BigEndian.Uint64(b[:8])
	lo := binary.BigEndian.Uint64(b[8:])
	out := make([]byte, len(prefix)+26)
	copy(out, prefix)
	d := out[len(prefix):]
	for i := 25; i >= 0; i-- {
		d[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out)
}
