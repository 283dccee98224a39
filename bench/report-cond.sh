#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/report-cond.sh [-o DIR] FILE - tables from bench_cond's raw output,
# on the host.
#
# FILE is what bench_cond printed (e.g. build/bench/<kernel>/bench_cond.txt
# from `make bench`): only the lines starting with "bench_cond," are read.
# Prints the method (the "meta" records) and, per workload, ops/s per
# thread count and implementation, median [min-max] over the repetitions
# ("*": a run stopped at its budget), and the ratio of medians to glibc's
# default mutex+condvar ("tie" within 0.25 of 1.00, as report-lock.sh).
# Writes DIR/cond-raw.csv (the records) and DIR/cond-summary.csv (one line
# per point: workload, impl, threads, median, min, max, ratio).
set -euo pipefail

# shellcheck source=bench/report-args.sh
. "$(dirname "$0")/report-args.sh"

raw=$outdir/cond-raw.csv
summary=$outdir/cond-summary.csv
tr -d '\r' <"$in" | sed -n 's/^.*\(bench_cond,\(meta\|record\|run\),\)/\1/p' >"$raw.new"
mv "$raw.new" "$raw"
if ! grep -q '^bench_cond,run,' "$raw"; then
	echo "report-cond: no bench_cond run records in $in" >&2
	exit 1
fi

awk -F, -v summary="$summary" '
function isort(a, n,   i, j, t) {
	for (i = 2; i <= n; i++) {
		t = a[i]
		for (j = i - 1; j >= 1 && a[j] > t; j--)
			a[j + 1] = a[j]
		a[j + 1] = t
	}
}
function stats(s,   v, n, i) {
	n = split(s, v, "|")
	for (i = 1; i <= n; i++)
		v[i] += 0
	isort(v, n)
	MIN = v[1]; MAX = v[n]
	MED = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
# (mawk creates vals[key] before it evaluates the right-hand side, so the
# test must not share a statement with the assignment.)
function add(key, val) {
	if (key in vals)
		val = vals[key] "|" val
	vals[key] = val
}
function remember(list, x, key) {
	if (!((key, x) in seen)) {
		seen[key, x] = 1
		order[key] = order[key] (order[key] == "" ? "" : "|") x
	}
}
$2 == "meta" { printf "method: %s = %s\n", $3, $4; next }
$2 == "run" {
	k = $3 SUBSEP $4 SUBSEP $5
	v = $7 * 1e9 / $8
	add(k, v)
	rep[k, $6] = v
	if ($6 + 1 > nrep)
		nrep = $6 + 1
	if ($9 == 1)
		cut[k] = 1
	remember(order, $3, "wl"); remember(order, $4, "impl")
	remember(order, $5, "t")
}
END {
	print "workload,impl,threads,median_ops_s,min_ops_s,max_ops_s,ratio_to_pthread" > summary
	nw = split(order["wl"], wls, "|")
	ni = split(order["impl"], ims, "|")
	nt = split(order["t"], ts, "|")
	for (w = 1; w <= nw; w++) {
		printf "\n%s: ops/s, median [min-max] over the repetitions; ratio to pthread\n", wls[w]
		printf "%7s", "threads"
		for (i = 1; i <= ni; i++)
			printf "  %-31s", ims[i]
		printf "\n"
		for (t = 1; t <= nt; t++) {
			base = wls[w] SUBSEP "pthread" SUBSEP ts[t]
			if (!(base in vals))
				continue
			stats(vals[base]); bmed = MED
			printf "%7s", ts[t]
			for (i = 1; i <= ni; i++) {
				k = wls[w] SUBSEP ims[i] SUBSEP ts[t]
				if (!(k in vals)) {
					printf "  %-31s", "n/a"
					continue
				}
				stats(vals[k])
				r = bmed > 0 ? MED / bmed : 0
				rs = (r > 1 - 0.25 && r < 1 + 0.25 && ims[i] != "pthread") ? sprintf("%.2f tie", r) : sprintf("%.2f", r)
				printf "  %-31s", sprintf("%.0f%s [%.0f-%.0f] %s", MED, (k in cut) ? "*" : "", MIN, MAX, rs)
				printf "%s,%s,%s,%.0f,%.0f,%.0f,%.3f\n", wls[w], ims[i], ts[t], MED, MIN, MAX, r >> summary
			}
			printf "\n"
		}
	}
	printf "\n(* a repetition stopped at its budget)\n"
	# The target: each tofutex column >= 1.0 x pthread at every point;
	# the range is the lowest and highest ratio of one repetition (the
	# implementations of a repetition run one after the other).
	printf "\nTargets (ratio of medians to pthread, in brackets one repetition'"'"'s lowest-highest;\n\"inside spread\": the repetitions reach both sides of the target):\n\n"
	printf "| target | point | ratio | verdict |\n|---|---|--:|---|\n"
	for (w = 1; w <= nw; w++)
		for (i = 1; i <= ni; i++) {
			if (ims[i] !~ /^tofutex/)
				continue
			for (t = 1; t <= nt; t++) {
				base = wls[w] SUBSEP "pthread" SUBSEP ts[t]
				k = wls[w] SUBSEP ims[i] SUBSEP ts[t]
				if (!(base in vals) || !(k in vals))
					continue
				stats(vals[base]); bmed = MED
				stats(vals[k])
				r = bmed > 0 ? MED / bmed : 0
				lo = hi = ""
				for (x = 0; x < nrep; x++)
					if ((k, x) in rep && (base, x) in rep && rep[base, x] > 0) {
						q = rep[k, x] / rep[base, x]
						if (lo == "" || q < lo) lo = q
						if (hi == "" || q > hi) hi = q
					}
				inside = lo != "" && lo < 1 && hi >= 1
				verdict = r >= 1 ? "met" : "missed"
				if (inside)
					verdict = verdict ", inside spread"
				ntarget++
				nmet += r >= 1
				printf "| >= 1.0 x pthread | %s %s T=%s | %.2f (%.2f-%.2f) | %s |\n",
				       wls[w], ims[i], ts[t], r, lo, hi, verdict
			}
		}
	printf "\n%d of %d targets met.\n", nmet, ntarget
}' "$raw"
echo "report-cond: wrote $raw and $summary"
