package gateway_test

import (
	"testing"

	"github.com/sluice-egress/sluice/internal/benchharness/bench"
)

// The same cases as `make bench`, as Go benchmarks: compare the two paths with
//
//	go test -run '^$' -bench . -count 6 ./gateway > bench.txt
//	benchstat -col .name bench.txt
//
// which puts Direct and Gateway side by side per case.

func BenchmarkDirect(b *testing.B)  { benchVia(b, bench.Direct) }
func BenchmarkGateway(b *testing.B) { benchVia(b, bench.Gateway) }

func benchVia(b *testing.B, v bench.Via) {
	env, err := bench.Start()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { env.Close() })
	for _, c := range bench.Cases() {
		b.Run("case="+c.Name, func(b *testing.B) {
			if c.Bytes > 0 {
				b.SetBytes(c.Bytes)
			}
			c.Run(b, env, v)
		})
	}
}
