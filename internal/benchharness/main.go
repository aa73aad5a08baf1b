// Command benchharness measures requests through the Sluice gateway against the same
// requests sent directly to the upstream, in one process run, and prints the ratios
// (`make bench`).
package main

import (
	"bufio"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/sluice-egress/sluice/internal/benchharness/bench"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// run parses args, checks the setup, measures every selected case via both paths and
// prints the table to out.
func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("benchharness", flag.ContinueOnError)
	benchtime := fs.String("benchtime", "1s", "time (or `N`x iterations) per measurement, as go test -benchtime")
	count := fs.Int("count", 3, "measurements per case and path; the table shows the median")
	match := fs.String("cases", "", "run only cases whose name matches this `regexp`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *count < 1 {
		return fmt.Errorf("-count %d: must be at least 1", *count)
	}
	re, err := regexp.Compile(*match)
	if err != nil {
		return fmt.Errorf("-cases: %w", err)
	}
	var cases []bench.Case
	for _, c := range bench.Cases() {
		if re.MatchString(c.Name) {
			cases = append(cases, c)
		}
	}
	if len(cases) == 0 {
		return fmt.Errorf("-cases %q matches no case", *match)
	}
	// testing.Benchmark reads its duration from the testing flags.
	testing.Init()
	if err := flag.Set("test.benchtime", *benchtime); err != nil {
		return fmt.Errorf("-benchtime %q: %w", *benchtime, err)
	}

	env, err := bench.Start()
	if err != nil {
		return err
	}
	defer env.Close()
	if err := bench.Check(env); err != nil {
		return fmt.Errorf("setup check failed, nothing measured: %w", err)
	}

	fmt.Fprintf(out, "sluice bench: direct vs. through the gateway without and with the secret scanner, same process, same run\n")
	fmt.Fprintf(out, "go: %s %s/%s   GOMAXPROCS: %d   CPU: %s (%d logical)   build tags: %s\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), cpuModel(), runtime.NumCPU(), buildTags())
	fmt.Fprintf(out, "benchtime %s, median of %d, paths interleaved; client: HTTP/1.1, TLS 1.3, one connection, sequential\n"+
		"(except h1-16conns and h2-16streams: 16 requests at once per op)\n\n",
		*benchtime, *count)

	start := time.Now()
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tdirect ns/op\tgateway ns/op\tgateway+scan ns/op\tgateway/direct\tgateway+scan/direct\t"+
		"direct\tgateway\tgateway+scan\tdirect allocs/op\tgateway allocs/op\tgateway+scan allocs/op\t")
	medians := map[string]map[bench.Via]testing.BenchmarkResult{} // by case name
	for _, c := range cases {
		vias := []bench.Via{bench.Direct, bench.Gateway}
		if c.Scan {
			vias = append(vias, bench.GatewayScan)
		}
		results := map[bench.Via][]testing.BenchmarkResult{}
		for range *count {
			for _, v := range vias {
				r := testing.Benchmark(func(b *testing.B) { c.Run(b, env, v) })
				if r.N == 0 {
					return fmt.Errorf("case %s via %s failed: %w", c.Name, v, cmpOr(env.LastError(), errors.New("no iterations")))
				}
				results[v] = append(results[v], r)
			}
		}
		d, g := median(results[bench.Direct]), median(results[bench.Gateway])
		medians[c.Name] = map[bench.Via]testing.BenchmarkResult{bench.Direct: d, bench.Gateway: g}
		ns, ratio, rt, allocs := "-", "-", "-", "-"
		if rs := results[bench.GatewayScan]; len(rs) > 0 {
			s := median(rs)
			ns = strconv.FormatInt(s.NsPerOp(), 10)
			ratio = fmt.Sprintf("%.2fx", float64(s.NsPerOp())/float64(d.NsPerOp()))
			rt = rate(c, s)
			allocs = strconv.FormatInt(s.AllocsPerOp(), 10)
			medians[c.Name][bench.GatewayScan] = s
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%.2fx\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t\n", c.Name,
			d.NsPerOp(), g.NsPerOp(), ns, float64(g.NsPerOp())/float64(d.NsPerOp()), ratio,
			rate(c, d), rate(c, g), rt, d.AllocsPerOp(), g.AllocsPerOp(), allocs)
	}
	tw.Flush()
	if h1, h2 := medians["h1-16conns"], medians["h2-16streams"]; h1 != nil && h2 != nil {
		r := func(v bench.Via) float64 { return float64(h2[v].NsPerOp()) / float64(h1[v].NsPerOp()) }
		fmt.Fprintf(out, "\nh2-16streams/h1-16conns, ns/op in this run (below 1: one HTTP/2 connection is faster): "+
			"direct %.2fx, gateway %.2fx, gateway+scan %.2fx\n", r(bench.Direct), r(bench.Gateway), r(bench.GatewayScan))
	}

	fmt.Fprintf(out, "\ngateway/direct and gateway+scan/direct are ratios of ns/op (above 1: slower than direct);\n"+
		"gateway has no scanner, gateway+scan scans every request as `sluice serve` does (- : not measured).\n"+
		"allocs/op count the whole process (client, gateways and upstream). Machine noise moves single runs: for\n"+
		"confidence intervals, go test -run '^$' -bench . -count 6 ./gateway > b.txt && benchstat -col .name b.txt\n")
	for _, c := range cases {
		fmt.Fprintf(out, "  %-14s %s\n", c.Name, c.Desc)
	}
	fmt.Fprintf(out, "measured in %s\n", time.Since(start).Round(time.Second))
	return nil
}

// buildTags returns the -tags the binary was built with. Without gore2regex the scanner's
// rules run on regexp, about 12x slower than in the release build: say so.
func buildTags() string {
	tags := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-tags" {
				tags = s.Value
			}
		}
	}
	if !slices.Contains(strings.Split(tags, ","), "gore2regex") {
		return cmp.Or(tags, "none") + " (WITHOUT gore2regex: the scanner runs ~12x slower than built by make; use make bench)"
	}
	return tags
}

// rate is MB/s (10^6 bytes, as go test prints it) for cases that move a body, req/s otherwise.
func rate(c bench.Case, r testing.BenchmarkResult) string {
	ns := float64(r.NsPerOp())
	if ns <= 0 {
		return "-"
	}
	if c.Bytes > 0 {
		return fmt.Sprintf("%.1f MB/s", float64(c.Bytes)*1e3/ns)
	}
	return fmt.Sprintf("%.0f req/s", float64(max(c.Requests, 1))*1e9/ns)
}

// median returns the result with the median ns/op (the lower middle one for an even count).
func median(rs []testing.BenchmarkResult) testing.BenchmarkResult {
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b testing.BenchmarkResult) int { return int(a.NsPerOp() - b.NsPerOp()) })
	return s[(len(s)-1)/2]
}

// cpuModel reads the first "model name" of /proc/cpuinfo; "unknown" elsewhere.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func cmpOr(err, def error) error {
	if err != nil {
		return err
	}
	return def
}
