// Command benchharness measures requests through the Sluice gateway against the same
// requests sent directly to the upstream, through an open CONNECT tunnel and through
// squid ssl-bump, in one run, and prints the ratios (`make bench`).
package main

import (
	"bufio"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/internal/benchharness/bench"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// run parses args, checks the setup, measures every selected case via every path and
// prints the table to out. With -serve-gateways it is the gateways' process instead.
func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("benchharness", flag.ContinueOnError)
	benchtime := fs.String("benchtime", "1s", "time (or `N`x iterations) per measurement, as go test -benchtime")
	count := fs.Int("count", 3, "measurements per case and path; the table shows the median")
	match := fs.String("cases", "", "run only cases whose name matches this `regexp`")
	viaMatch := fs.String("vias", "", "measure only the paths (direct, tunnel, squid, gateway, gateway+scan) whose name matches this `regexp`, as for a profile")
	squidBin := fs.String("squid", "squid", "squid `binary` (built with OpenSSL) to measure with ssl-bump beside the gateway; empty or not found: no squid rows")
	inProcess := fs.Bool("inprocess", false, "run the gateways in the harness's process (no proxy CPU, no idle-tunnel memory)")
	idle := fs.Int("idle", 2000, "idle inspected tunnels to open for the memory reading; 0: none")
	idleMany := fs.Int("idle-gateway", 10_000, "then this many idle inspected tunnels through the gateway alone (the 10,000-tunnel reading; the other paths hold two descriptors a tunnel in the harness); 0: none")
	idleSettle := fs.Duration("idle-settle", 2*time.Second, "wait this long after opening the idle tunnels before reading the RSS (over 2m: the gateways' runtime has collected on its own)")
	cpuProfile := fs.String("cpuprofile", "", "write the gateways' process's CPU profile (all cases run) to `file`")
	memProfile := fs.String("memprofile", "", "write the gateways' process's allocation profile to `file`, and the heap in use with the idle tunnels open to file.idle")
	mutexProfile := fs.String("mutexprofile", "", "write the gateways' process's lock contention profile to `file`")
	kex := fs.String("sandbox-kex", "", "the gateways' tls.sandbox_key_exchange (`post-quantum` or classical); empty: the config's default")
	serveDir := fs.String("serve-gateways", "", "internal: be the gateways' process for the files in `dir`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *serveDir != "" {
		return serveGateways(*serveDir, *cpuProfile, *memProfile, *mutexProfile)
	}
	if *count < 1 {
		return fmt.Errorf("-count %d: must be at least 1", *count)
	}
	re, err := regexp.Compile(*match)
	if err != nil {
		return fmt.Errorf("-cases: %w", err)
	}
	viaRE, err := regexp.Compile(*viaMatch)
	if err != nil {
		return fmt.Errorf("-vias: %w", err)
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

	opts := bench.Options{SandboxKeyExchange: *kex}
	if !*inProcess {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("the gateways' process: %w", err)
		}
		opts.Child = []string{self, "-cpuprofile", *cpuProfile, "-memprofile", *memProfile, "-mutexprofile", *mutexProfile,
			"-serve-gateways"}
	} else if *cpuProfile != "" || *memProfile != "" || *mutexProfile != "" {
		return errors.New("-cpuprofile, -memprofile and -mutexprofile profile the gateways' process: not with -inprocess")
	}
	squidNote := "squid: not measured (-squid empty)"
	if *squidBin != "" {
		if p, err := exec.LookPath(*squidBin); err == nil {
			opts.Squid = p
			squidNote = "squid: " + squidVersion(p) + ", ssl-bump of every CONNECT, no cache, 1 worker, separate process"
		} else {
			squidNote = fmt.Sprintf("squid: not measured (%s not found; apt-get install squid-openssl)", *squidBin)
		}
	}
	env, err := bench.StartWith(opts)
	if err != nil {
		return err
	}
	defer env.Close()
	if err := bench.Check(env); err != nil {
		return fmt.Errorf("setup check failed, nothing measured: %w", err)
	}

	where := "gateways in a separate process (proxy CPU from /proc)"
	if *inProcess {
		where = "gateways in the harness's process (proxy CPU not measured)"
	}
	fmt.Fprintf(out, "sluice bench: direct, an open CONNECT tunnel, squid ssl-bump, and the gateway without and with the secret scanner, same run\n")
	fmt.Fprintf(out, "go: %s %s/%s   GOMAXPROCS: %d   CPU: %s (%d logical)   build tags: %s\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), cpuModel(), runtime.NumCPU(), buildTags())
	fmt.Fprintf(out, "%s; %s\n", where, squidNote)
	fmt.Fprintf(out, "the client's TLS with the gateway: tls.sandbox_key_exchange %s (-sandbox-kex)\n", cmp.Or(*kex, config.KeyExchangePostQuantum+", the default"))
	fmt.Fprintf(out, "benchtime %s, median of %d, paths interleaved; client: HTTP/1.1, TLS 1.3, one connection, sequential\n"+
		"(except small-get-16: 16 clients back to back, one request per op; h1-16conns and h2-16streams: 16 requests at once per op)\n\n",
		*benchtime, *count)

	start := time.Now()
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tvia\tns/op\trate\ttime/tunnel\ttime/squid\tp50/op\tp99/op\tp99/tunnel's\tproxy CPU/req\t")
	all := map[string]map[bench.Via]measured{} // by case name
	for _, c := range cases {
		var vias []bench.Via
		for _, v := range env.Vias(c) {
			if viaRE.MatchString(v.String()) {
				vias = append(vias, v)
			}
		}
		results := map[bench.Via][]measured{}
		for range *count {
			for _, v := range vias {
				r := testing.Benchmark(func(b *testing.B) { c.Run(b, env, v) })
				if r.N == 0 {
					return fmt.Errorf("case %s via %s failed: %w", c.Name, v, cmpOr(env.LastError(), errors.New("no iterations")))
				}
				results[v] = append(results[v], measured{r, env.LastRun()})
			}
		}
		m := map[bench.Via]measured{}
		for _, v := range vias {
			m[v] = median(results[v])
		}
		all[c.Name] = m
		for _, v := range vias {
			r := m[v]
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", c.Name, v, r.NsPerOp(), rate(c, r.BenchmarkResult),
				ratio(r, m, bench.Tunnel), ratio(r, m, bench.Squid), dur(r.quantile(0.5)), dur(r.quantile(0.99)),
				p99Ratio(r, m), cpuPerReq(c, r))
		}
	}
	tw.Flush()
	if h1, h2 := all["h1-16conns"], all["h2-16streams"]; h1 != nil && h2 != nil {
		fmt.Fprintf(out, "\nh2-16streams/h1-16conns, ns/op in this run (below 1: one HTTP/2 connection is faster):")
		for _, v := range []bench.Via{bench.Direct, bench.Tunnel, bench.Gateway, bench.GatewayScan} {
			a, okA := h1[v]
			b, okB := h2[v]
			if okA && okB && a.NsPerOp() > 0 {
				fmt.Fprintf(out, " %s %.2fx", v, float64(b.NsPerOp())/float64(a.NsPerOp()))
			}
		}
		fmt.Fprintln(out)
	}
	var idle1 idleReading
	if *idle > 0 && !*inProcess {
		fmt.Fprintf(out, "\nidle tunnels (CONNECT, TLS handshake, one small GET, then idle; RSS of the proxy's process %v after, %d opened first and kept):\n", *idleSettle, 100)
		for _, v := range []bench.Via{bench.Tunnel, bench.Squid, bench.Gateway} {
			if v == bench.Squid && opts.Squid == "" {
				continue
			}
			if most := bench.MaxIdleTunnels(v); *idle > most {
				fmt.Fprintf(out, "  %-8s not read: %d tunnels need more file descriptors than this process may hold (at most %d via %s; ulimit -n)\n", v, *idle, most, v)
				continue
			}
			i, err := env.IdleTunnels(v, *idle, *idleSettle)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "  %-8s %d tunnels: RSS %.1f -> %.1f MiB, %.1f KiB per tunnel", v, i.N,
				float64(i.Before)/(1<<20), float64(i.After)/(1<<20), i.PerTunnel())
			if v == bench.Gateway {
				idle1.small = i
			}
			if v != bench.Squid {
				fmt.Fprintf(out, " (after a collection, per tunnel: RSS %.1f KiB, heap %.1f KiB, stacks %.1f KiB, %.1f goroutines)",
					i.PerTunnelCollected(), i.Heap/1024, i.Stack/1024, i.Goroutines)
			}
			fmt.Fprintln(out)
		}
		if *idleMany > 0 {
			i, err := env.IdleTunnels(bench.Gateway, *idleMany, *idleSettle)
			if err != nil {
				return err
			}
			idle1.many = i
			fmt.Fprintf(out, "  %-8s %d tunnels: RSS %.1f -> %.1f MiB, %.1f KiB per tunnel (after a collection: %.1f KiB)\n", bench.Gateway, i.N,
				float64(i.Before)/(1<<20), float64(i.After)/(1<<20), i.PerTunnel(), i.PerTunnelCollected())
		}
	}

	goals(out, all, idle1)

	fmt.Fprintf(out, "\nrate: req/s, or MB/s (10^6 bytes) for the cases that move a body; time/tunnel, time/squid: ns/op as ratios\n"+
		"(above 1: slower); p50/op, p99/op: of each operation in the run the median reports; proxy CPU/req: user+system\n"+
		"CPU time of the proxy's process (squid with its certificate helpers) over the requests made (- : not measured).\n"+
		"tunnel is the gateway's passthrough (same listener, identification and policy, bytes spliced); gateway has no\n"+
		"scanner, gateway+scan scans every request as `sluice serve` does. Machine noise moves single runs: for\n"+
		"confidence intervals, go test -run '^$' -bench . -count 6 ./gateway > b.txt && benchstat -col .name b.txt\n")
	for _, c := range cases {
		fmt.Fprintf(out, "  %-16s %s\n", c.Name, c.Desc)
	}
	fmt.Fprintf(out, "measured in %s\n", time.Since(start).Round(time.Second))
	return nil
}

// idleReading is the gateway's idle-tunnel memory: on the load every path gets, and
// on the many tunnels of the goal; N is 0 where not read.
type idleReading struct{ small, many bench.Idle }

// goals prints this run's figures against the performance goals, where measured.
func goals(out io.Writer, all map[string]map[bench.Via]measured, idle idleReading) {
	fmt.Fprintf(out, "\ngoals, this run (gateway = without scanner):\n")
	// x is how many times faster (rate) the gateway was than via in case.
	x := func(c string, via bench.Via) string {
		g, ok1 := all[c][bench.Gateway]
		o, ok2 := all[c][via]
		if !ok1 || !ok2 || g.NsPerOp() == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2fx", float64(o.NsPerOp())/float64(g.NsPerOp()))
	}
	// The goals are set on the load, 16 clients; one sequential client is shown too.
	for _, name := range []string{"small-get-16", "small-get"} {
		m, ok := all[name]
		if !ok {
			continue
		}
		g := m[bench.Gateway]
		p99 := "-"
		if t, ok := m[bench.Tunnel]; ok && t.quantile(0.99) > 0 {
			p99 = fmt.Sprintf("%.2fx", float64(g.quantile(0.99))/float64(t.quantile(0.99)))
		}
		fmt.Fprintf(out, "  %s: %s squid's req/s (goal >= 2x), %s the open tunnel's (goal about 0.75x), "+
			"proxy CPU %s/req (goal <= 60µs), p99 %s the tunnel's (goal <= 1.5x)\n",
			name, x(name, bench.Squid), x(name, bench.Tunnel), cpuPerReq(bench.Case{}, g), p99)
	}
	if _, ok := all["newconn-warm"]; ok {
		fmt.Fprintf(out, "  new TLS connections: %s squid's req/s with the leaf cached, %s with a new host each, %s resumed (goal >= 1.5x)\n",
			x("newconn-warm", bench.Squid), x("newconn-cold", bench.Squid), x("newconn-resumed", bench.Squid))
	}
	if h1, h2 := all["h1-16conns"][bench.Gateway], all["h2-16streams"][bench.Gateway]; h1.NsPerOp() > 0 && h2.NsPerOp() > 0 {
		fmt.Fprintf(out, "  16 HTTP/2 streams take %.2fx the time of 16 HTTP/1.1 connections (goal <= 1x)\n",
			float64(h2.NsPerOp())/float64(h1.NsPerOp()))
	}
	// The scanning gateway against its own throughput unscanned, and against squid.
	for _, name := range []string{"upload-1MiB", "chat-turn-1MiB"} {
		m := all[name]
		g, s, q := m[bench.Gateway], m[bench.GatewayScan], m[bench.Squid]
		if g.NsPerOp() == 0 || s.NsPerOp() == 0 {
			continue
		}
		squid := "-"
		if q.NsPerOp() > 0 {
			squid = fmt.Sprintf("%.2fx", float64(q.NsPerOp())/float64(s.NsPerOp()))
		}
		fmt.Fprintf(out, "  %s scanned: %.0f%% of the gateway's throughput unscanned (goal >= 60%%), %s squid's (goal > 1x)\n",
			name, 100*float64(g.NsPerOp())/float64(s.NsPerOp()), squid)
	}
	if i := idle.small; i.N > 0 {
		fmt.Fprintf(out, "  an idle inspected tunnel (%d open): %.1f KiB of RSS, %.1f KiB after a collection (goal <= 30 KiB)\n",
			i.N, i.PerTunnel(), i.PerTunnelCollected())
	}
	if i := idle.many; i.N > 0 {
		fmt.Fprintf(out, "  %d idle inspected tunnels: %.0f MB of RSS, %.1f KiB each (goal <= 300 MB for 10,000)\n",
			i.N, float64(i.After-i.Before)/1e6, i.PerTunnel())
	}
}

// measured is one run of a case via one path.
type measured struct {
	testing.BenchmarkResult
	bench.Run
}

// quantile is the q-quantile of the run's operation times; 0 without any.
func (m measured) quantile(q float64) time.Duration {
	if len(m.Latencies) == 0 {
		return 0
	}
	s := slices.Clone(m.Latencies)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// ratio is r's ns/op over that of via in m; "-" where via was not measured.
func ratio(r measured, m map[bench.Via]measured, via bench.Via) string {
	o, ok := m[via]
	if !ok || o.NsPerOp() == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", float64(r.NsPerOp())/float64(o.NsPerOp()))
}

func p99Ratio(r measured, m map[bench.Via]measured) string {
	t, ok := m[bench.Tunnel]
	if !ok || t.quantile(0.99) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", float64(r.quantile(0.99))/float64(t.quantile(0.99)))
}

// cpuPerReq is the proxy's CPU time per request of the run.
func cpuPerReq(c bench.Case, r measured) string {
	if r.ProxyCPU < 0 || len(r.Latencies) == 0 {
		return "-"
	}
	return dur(r.ProxyCPU / time.Duration(len(r.Latencies)*max(c.Requests, 1)))
}

func dur(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fµs", float64(d)/1e3)
}

// squidVersion is the first line of squid -v, "squid" if it does not say.
func squidVersion(bin string) string {
	b, err := exec.Command(bin, "-v").Output()
	first, _, _ := strings.Cut(string(b), "\n")
	if err != nil || first == "" {
		return "squid"
	}
	return strings.TrimPrefix(first, "Squid Cache: ")
}

// serveGateways is the gateways' process: it serves until its stdin ends, profiling
// all the while if asked.
func serveGateways(dir, cpuProfile, memProfile, mutexProfile string) error {
	if memProfile != "" {
		runtime.MemProfileRate = 4096
	}
	if mutexProfile != "" {
		runtime.SetMutexProfileFraction(1)
	}
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	heapProfile := ""
	if memProfile != "" {
		heapProfile = memProfile + ".idle"
	}
	if err := bench.ServeGateways(dir, os.Stdin, os.Stdout, heapProfile); err != nil {
		return err
	}
	for _, p := range []struct{ file, name string }{{memProfile, "allocs"}, {mutexProfile, "mutex"}} {
		if p.file == "" {
			continue
		}
		f, err := os.Create(p.file)
		if err != nil {
			return err
		}
		err = pprof.Lookup(p.name).WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
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

// median returns the run with the median ns/op (the lower middle one for an even count).
func median(rs []measured) measured {
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b measured) int { return int(a.NsPerOp() - b.NsPerOp()) })
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
