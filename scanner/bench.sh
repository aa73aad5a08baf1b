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
go test -tags "$TAGS" -run '^$' -bench '^BenchmarkScan$' -benchtime 5x -count 3 ./scanner/ | tee "$tmp/bench.txt"
echo
# gitleaks' start-up (compiling its rules) is measured on an empty file and
# taken off, so that the ratio compares scanning only.
: >"$tmp/empty.txt"
gitleaks_ns() {
	best=0
	for i in 1 2 3; do
		start=$(date +%s%N)
		"$tmp/gitleaks" dir --no-banner --no-color --max-decode-depth 2 --exit-code 0 --log-level error \
			--report-path "$tmp/report.json" "$1" >/dev/null 2>&1
		ns=$(($(date +%s%N) - start))
		if [ "$best" -eq 0 ] || [ "$ns" -lt "$best" ]; then best=$ns; fi
	done
	echo "$best"
}
idle=$(gitleaks_ns "$tmp/empty.txt")
printf '%-10s %12s %14s %8s\n' body sluice_MB/s gitleaks_MB/s ratio
for f in json packages dense code nokw; do
	# The command line gets the body eight times over, so that its start-up
	# noise is small against the scan itself.
	one=$(ls "$tmp/corpus/$f".*)
	file="$tmp/big-$(basename "$one")"
	for i in 1 2 3 4 5 6 7 8; do cat "$one"; done >"$file"
	bytes=$(wc -c <"$file")
	ns=$(($(gitleaks_ns "$file") - idle))
	gl=$(awk -v b="$bytes" -v ns="$ns" 'BEGIN { printf "%.2f", b / (ns / 1e9) / 1e6 }')
	sl=$(awk -v f="BenchmarkScan/$f-" 'index($1, f) == 1 { for (i = 1; i <= NF; i++) if ($(i+1) == "MB/s" && $i > best) best = $i } END { print best }' "$tmp/bench.txt")
	awk -v n="$f" -v s="$sl" -v g="$gl" 'BEGIN { printf "%-10s %12s %14s %7.2fx\n", n, s, g, s / g }'
done
