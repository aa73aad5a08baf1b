#!/bin/sh
# Scanner throughput against the gitleaks command line on the same bodies,
# built from the same module version and with the same regexp engine.
# Usage: scanner/bench.sh   (from the repository root; `make bench` may call it)
set -eu
TAGS=${TAGS:-gore2regex}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/corpus"
SLUICE_BENCH_CORPUS="$tmp/corpus" go test -tags "$TAGS" -count=1 -run '^TestWriteBenchCorpus$' ./scanner/ >/dev/null
# The same gitleaks version as go.mod's, built as its own module (its CLI
# needs dependencies ours does not carry).
v=$(go list -m -f '{{.Version}}' github.com/zricethezav/gitleaks/v8)
GOBIN="$tmp" GOFLAGS= go install -tags "$TAGS" "github.com/zricethezav/gitleaks/v8@$v"
# Three runs of each body: the best is reported, as the one least disturbed
# by other load on the machine (so is gitleaks' best of three, below).
# On one core (CPU time per MB: a busy gateway's cost) and on all of them
# (wall time: what one request waits; a large body is split across idle
# cores, which costs about a fifth more CPU).
go test -tags "$TAGS" -run '^$' -bench '^BenchmarkScan$' -benchtime 5x -count 3 -cpu "1,$(nproc)" ./scanner/ | tee "$tmp/bench.txt"
echo
# gitleaks' start-up (compiling its rules) is measured on an empty file and
# taken off, so that the ratio compares scanning only.
: >"$tmp/empty.txt"
# gitleaks_run FILE prints the best wall and the best CPU (user+system)
# nanoseconds of three runs; CPU time needs GNU time, else it is the wall.
gitleaks_run() {
	for i in 1 2 3; do
		start=$(date +%s%N)
		if [ -x /usr/bin/time ]; then
			/usr/bin/time -f '%U %S' -o "$tmp/time.txt" "$tmp/gitleaks" dir --no-banner --no-color --max-decode-depth 2 \
				--exit-code 0 --log-level error --report-path "$tmp/report.json" "$1" >/dev/null 2>&1
		else
			"$tmp/gitleaks" dir --no-banner --no-color --max-decode-depth 2 --exit-code 0 --log-level error \
				--report-path "$tmp/report.json" "$1" >/dev/null 2>&1
		fi
		ns=$(($(date +%s%N) - start))
		cpu=$ns
		# %.0f, not %d: mawk clamps %d at 2^31-1, which cut every gitleaks run over 2.1 s of CPU.
		[ -s "$tmp/time.txt" ] && cpu=$(awk '{ printf "%.0f", ($1 + $2) * 1e9 }' "$tmp/time.txt")
		echo "$ns $cpu"
	done | awk 'NR == 1 || $1 < w { w = $1 } NR == 1 || $2 < c { c = $2 } END { print w, c }'
}
idle=$(gitleaks_run "$tmp/empty.txt")
printf '%-9s %10s %10s %7s   %10s %10s %7s\n' body sluice gitleaks ratio sluice_cpu gitleaks_cpu ratio
for f in json packages dense code nokw; do
	# The command line gets the body many times over, so that its start-up
	# (about half a second, and as noisy) is small against the scan itself:
	# 64 times the bodies it reads fast, eight times the others.
	one=$(ls "$tmp/corpus/$f".*)
	file="$tmp/big-$(basename "$one")"
	times=8
	case $f in json | nokw) times=64 ;; esac
	i=0
	while [ $i -lt $times ]; do cat "$one"; i=$((i + 1)); done >"$file"
	bytes=$(wc -c <"$file")
	run=$(gitleaks_run "$file")
	# best UNIT CORES: the best figure of the runs on CORES cores ("1" or
	# "all"); the runs on one core are named without a -N suffix.
	best() { awk -v f="BenchmarkScan/$f" -v unit="$1" -v cores="$2" '
		(cores == "1" && $1 == f) || (cores == "all" && index($1, f "-") == 1) {
			for (i = 1; i <= NF; i++) if ($(i+1) == unit && $i > b) b = $i }
		END { print b }' "$tmp/bench.txt"; }
	wall=$(best MB/s all)
	[ -n "$wall" ] || wall=$(best MB/s 1) # a machine of one core
	echo "$f $bytes $run $idle $wall $(best cpu-MB/s 1)" | awk '{
		gw = $2 / (($3 - $5) / 1e9) / 1e6; gc = $2 / (($4 - $6) / 1e9) / 1e6
		printf "%-9s %10.2f %10.2f %6.1fx   %10.2f %10.2f %6.1fx\n", $1, $7, gw, $7 / gw, $8, gc, $8 / gc }'
done
echo "MB/s of wall time (best of three; sluice on all cores), then of CPU time (user+system; sluice on one core);"
echo "gitleaks' start-up on an empty file is taken off."
