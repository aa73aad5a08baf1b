package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// ByteSize is a number of bytes, written in YAML as a plain integer or with a unit:
// "512KiB", "10MiB", "1GiB" (powers of 1024) or "10KB", "10MB", "1GB" (powers of 1000).
type ByteSize int64

var byteUnits = []struct {
	suffix string
	mult   int64
}{
	// Longest first so that "KiB" is not read as "B".
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9},
	{"b", 1},
}

// ParseByteSize parses "10MiB", "512KiB", "100KB", "42B" or "42" (units case-insensitive).
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	lower := strings.ToLower(t)
	for _, u := range byteUnits {
		if strings.HasSuffix(lower, u.suffix) {
			mult = u.mult
			t = strings.TrimSpace(t[:len(t)-len(u.suffix)])
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad byte size %q: want a non-negative integer with an optional unit (B, KiB, MiB, GiB, KB, MB, GB)", s)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("bad byte size %q: too large", s)
	}
	return ByteSize(n * mult), nil
}

// String formats the size with the largest binary unit that divides it.
func (b ByteSize) String() string {
	switch {
	case b != 0 && b%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", b>>30)
	case b != 0 && b%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", b>>20)
	case b != 0 && b%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", b>>10)
	}
	return strconv.FormatInt(int64(b), 10)
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	return unmarshalScalar(n, b, "a byte size such as 10MiB", ParseByteSize)
}

// MarshalYAML implements yaml.Marshaler.
func (b ByteSize) MarshalYAML() (any, error) { return b.String(), nil }

// Duration is a time.Duration written in YAML as a Go duration string: "24h", "90m".
type Duration time.Duration

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	return unmarshalScalar(n, d, "a duration such as 24h", func(s string) (Duration, error) {
		v, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil || v < 0 {
			return 0, fmt.Errorf("bad duration %q: want a non-negative duration such as 24h or 90m", s)
		}
		return Duration(v), nil
	})
}

// unmarshalScalar decodes a YAML scalar into *dst with parse; any other node is an
// error that asks for want.
func unmarshalScalar[T any](n *yaml.Node, dst *T, want string, parse func(string) (T, error)) error {
	if n.Kind != yaml.ScalarNode {
		return errors.New("want " + want)
	}
	v, err := parse(n.Value)
	if err != nil {
		return err
	}
	*dst = v
	return nil
}

// MarshalYAML implements yaml.Marshaler.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// String formats the duration as time.Duration does.
func (d Duration) String() string { return time.Duration(d).String() }

// Period is a duration written in YAML with a day or week unit ("90d",
// "2w") or as a Go duration ("36h").
type Period time.Duration

// ParsePeriod parses "90d", "2w" or a Go duration such as "36h"; negative
// periods are refused.
func ParsePeriod(s string) (Period, error) {
	t := strings.TrimSpace(s)
	bad := fmt.Errorf("bad period %q: want days (90d), weeks (2w) or a duration such as 36h", s)
	unit := time.Duration(0)
	switch {
	case strings.HasSuffix(t, "d"):
		unit = 24 * time.Hour
	case strings.HasSuffix(t, "w"):
		unit = 7 * 24 * time.Hour
	}
	if unit != 0 {
		n, err := strconv.ParseInt(t[:len(t)-1], 10, 64)
		if err != nil || n < 0 || t[0] == '+' {
			return 0, bad
		}
		if n > math.MaxInt64/int64(unit) {
			return 0, fmt.Errorf("bad period %q: too long", s)
		}
		return Period(time.Duration(n) * unit), nil
	}
	d, err := time.ParseDuration(t)
	if err != nil || d < 0 {
		return 0, bad
	}
	return Period(d), nil
}

// String formats the period in days when it is whole days ("90d").
func (p Period) String() string {
	d := time.Duration(p)
	if d != 0 && d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (p *Period) UnmarshalYAML(n *yaml.Node) error {
	return unmarshalScalar(n, p, "a period such as 90d", ParsePeriod)
}

// MarshalYAML implements yaml.Marshaler.
func (p Period) MarshalYAML() (any, error) { return p.String(), nil }
