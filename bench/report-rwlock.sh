#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/report-rwlock.sh [-o DIR] FILE - tables, targets and a chart from
# bench_rwlock's raw output, on the host.
#
# FILE is what bench_rwlock printed (e.g. build/bench/<kernel>/bench_rwlock.txt
# from `make bench`): only the lines starting with "bench_rwlock," are read.
# Prints the method (the "meta" records: kernel, CPUs, load average at the
# start and end, backend, handoff_ns) and one table, a row per mix
# (reads per write) and thread count: ops/s of tofutex, glibc's default
# rwlock (pthread, the baseline) and its writer-preferring kind (wpref),
# medians over the repetitions; tofutex's ratio of medians to pthread with
# the lowest and highest ratio of one repetition ("tie" within 0.25 of
# 1.00); and each implementation's writer wait p99 and max (of its median
# run, in us), beside handoff_ns. Then the targets:
#   - 1:1 read:write, 4-16 threads: ratio >= 1.5;
#   - 99:1: ratio >= 0.95;
#   - 99:1: the longest wait of a tofutex writer that found no other
#     writer ahead of it <= handoff_ns plus the longest write critical
#     section of that run (tofutex(4)'s bound; a writer queued behind k
#     others may also wait for theirs), with every writer's longest wait,
#     the most writers one found ahead, how many went past the bound, and
#     pthread's figures and whether it went past the same bound (the
#     starvation) beside it.
# Each "met" or "missed", plus "inside spread" when the repetitions reach
# both sides of the target.
# Writes DIR/rwlock-raw.csv (the records), DIR/rwlock-summary.csv (one line
# per point and implementation) and, with gnuplot (Debian: gnuplot-nox,
# installed by tests/deps.sh), DIR/rwlock-ratio.png: tofutex's ratio to
# pthread against threads, one line per mix, log ratio axis, 1.0 dashed.
set -euo pipefail

# shellcheck source=bench/report-args.sh
. "$(dirname "$0")/report-args.sh"

raw=$outdir/rwlock-raw.csv
summary=$outdir/rwlock-summary.csv
dat=$outdir/rwlock-ratio.dat
png=$outdir/rwlock-ratio.png
tr -d '\r' <"$in" | sed -n 's/^.*\(bench_rwlock,\(meta\|record\|run\|over\),\)/\1/p' >"$raw.new"
mv "$raw.new" "$raw"
if ! grep -q '^bench_rwlock,run,' "$raw"; then
	echo "report-rwlock: no bench_rwlock run records in $in" >&2
	exit 1
fi

awk -F, -v summary="$summary" -v dat="$dat" '
function isort(a, n,   i, j, t) {
	for (i = 2; i <= n; i++) {
		t = a[i]
		for (j = i - 1; j >= 1 && a[j] > t; j--)
			a[j + 1] = a[j]
		a[j + 1] = t
	}
}
# MED, MIN, MAX of the ops/s of point K over the repetitions; MEDREP: the
# repetition of the median run (the upper middle one for an even count),
# as bench_rwlock picks it.
function stats(k,   v, n, i, x) {
	n = split(ops[k], v, "|")
	for (i = 1; i <= n; i++)
		v[i] += 0
	isort(v, n)
	MIN = v[1]; MAX = v[n]
	MED = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
	x = v[n % 2 ? (n + 1) / 2 : n / 2 + 1]
	for (i = 0; i < nrep; i++)
		if ((k, i) in rops && rops[k, i] == x) {
			MEDREP = i
			break
		}
}
# (mawk creates ops[key] before it evaluates the right-hand side, so the
# test must not share a statement with the assignment.)
function add(key, val) {
	if (key in ops)
		val = ops[key] "|" val
	ops[key] = val
}
function remember(x, key) {
	if (!((key, x) in seen)) {
		seen[key, x] = 1
		order[key] = order[key] (order[key] == "" ? "" : "|") x
	}
}
# LO, HI: the lowest and highest ratio of tofutex to pthread within one
# repetition (the implementations of a repetition run one after the other).
function spread(m, t,   k, b, x, q) {
	k = "tofutex" SUBSEP m SUBSEP t
	b = "pthread" SUBSEP m SUBSEP t
	LO = HI = ""
	for (x = 0; x < nrep; x++)
		if ((k, x) in rops && (b, x) in rops && rops[b, x] > 0) {
			q = rops[k, x] / rops[b, x]
			if (LO == "" || q < LO) LO = q
			if (HI == "" || q > HI) HI = q
		}
}
function ratio(m, t,   b) {
	stats("pthread" SUBSEP m SUBSEP t); b = MED
	stats("tofutex" SUBSEP m SUBSEP t)
	return b > 0 ? MED / b : 0
}
function verdict(ok, inside) {
	return (ok ? "met" : "missed") (inside ? ", inside spread" : "")
}
$2 == "meta" { printf "method: %s = %s\n", $3, $4; meta[$3] = $4; next }
$2 == "run" {
	k = $3 SUBSEP $4 SUBSEP $5
	add(k, $7)
	rops[k, $6] = $7; p99[k, $6] = $8; wmax[k, $6] = $9; hold[k, $6] = $10
	if ($6 + 1 > nrep)
		nrep = $6 + 1
	remember($4, "mix"); remember($5, "t")
}
$2 == "over" {
	k = $3 SUBSEP $4 SUBSEP $5
	nover[k, $6] = $7; nalone[k, $6] = $8; amax[k, $6] = $9; ahead[k, $6] = $10
}
END {
	hand = meta["handoff_ns"] + 0
	nm = split(order["mix"], ms, "|")
	nt = split(order["t"], ts, "|")
	n = split("tofutex pthread pthread-wpref", im, " ")
	print "impl,mix,threads,median_ops_s,min_ops_s,max_ops_s,ratio_to_pthread,ratio_lo,ratio_hi,wait_p99_us,wait_max_us,hold_max_us" > summary
	printf "== reader/writer locks: ops/s and writer waits ==\n"
	printf "ops/s: median over %d repetition(s); ratio: tofutex / pthread, medians [lowest-highest of one repetition];\n", nrep
	printf "wait: writer wait p99/max in us, of the median run; handoff_ns = %s\n\n", meta["handoff_ns"]
	printf "%-5s %3s %10s %10s %10s %-22s %-17s %-17s %-17s %s\n", "mix", "T",
	       "tofutex", "pthread", "wpref", "ratio", "tofutex wait", "pthread wait",
	       "wpref wait", "handoff"
	for (m = 1; m <= nm; m++) {
		for (t = 1; t <= nt; t++) {
			printf "%-5s %3s", ms[m] ":1", ts[t]
			for (i = 1; i <= n; i++) {
				k = im[i] SUBSEP ms[m] SUBSEP ts[t]
				if (!(k in ops)) { printf " %10s", "n/a"; continue }
				stats(k)
				printf " %10.0f", MED
			}
			r = ratio(ms[m], ts[t]); spread(ms[m], ts[t])
			rs = sprintf("%.2f%s [%.2f-%.2f]", r, (r > 0.75 && r < 1.25) ? " tie" : "", LO, HI)
			printf " %-22s", rs
			for (i = 1; i <= n; i++) {
				k = im[i] SUBSEP ms[m] SUBSEP ts[t]
				if (!(k in ops)) { printf " %-17s", "n/a"; continue }
				stats(k)
				printf " %-17s", sprintf("%.1f/%.0f", p99[k, MEDREP], wmax[k, MEDREP])
				b = "pthread" SUBSEP ms[m] SUBSEP ts[t]
				rr = im[i] == "tofutex" ? r : (im[i] == "pthread" ? 1 : "")
				printf "%s,%s,%s,%.0f,%.0f,%.0f,%s,%s,%s,%.1f,%.1f,%.1f\n", im[i], ms[m], ts[t],
				       MED, MIN, MAX, rr, im[i] == "tofutex" ? LO : "", im[i] == "tofutex" ? HI : "",
				       p99[k, MEDREP], wmax[k, MEDREP], hold[k, MEDREP] >> summary
			}
			printf " %.0f us\n", hand / 1000
		}
		if (m < nm)
			printf "\n"
	}

	# Chart data: a row per thread count, a column per mix.
	printf "# threads" > dat
	for (m = 1; m <= nm; m++)
		printf " %s:1", ms[m] > dat
	printf "\n" > dat
	for (t = 1; t <= nt; t++) {
		printf "%s", ts[t] > dat
		for (m = 1; m <= nm; m++) {
			v = "NaN"
			if (("tofutex" SUBSEP ms[m] SUBSEP ts[t]) in ops)
				v = sprintf("%.4f", ratio(ms[m], ts[t]))
			printf " %s", v > dat
		}
		printf "\n" > dat
	}
	close(dat)

	printf "\n== reader/writer lock targets ==\n"
	printf "| target | point | measured | verdict |\n|---|---|---|---|\n"
	for (m = 1; m <= nm; m++)
		for (t = 1; t <= nt; t++) {
			if (!(("tofutex" SUBSEP ms[m] SUBSEP ts[t]) in ops) ||
			    !(("pthread" SUBSEP ms[m] SUBSEP ts[t]) in ops))
				continue
			r = ratio(ms[m], ts[t]); spread(ms[m], ts[t])
			goal = ""
			if (ms[m] == 1 && ts[t] >= 4 && ts[t] <= 16)
				goal = 1.5
			else if (ms[m] == 99)
				goal = 0.95
			if (goal == "")
				continue
			ntarget++; nmet += r >= goal
			printf "| ops/s >= %.2f x pthread | %s:1 T=%s | %.2f [%.2f-%.2f] | %s |\n",
			       goal, ms[m], ts[t], r, LO, HI, verdict(r >= goal, LO < goal && HI >= goal)
		}
	for (t = 1; t <= nt; t++) {
		k = "tofutex" SUBSEP 99 SUBSEP ts[t]
		b = "pthread" SUBSEP 99 SUBSEP ts[t]
		if (!(k in ops) || !(b in ops) || hand <= 0)
			continue
		stats(b); bw = wmax[b, MEDREP]; bb = hand / 1000 + hold[b, MEDREP]
		stats(k); mr = MEDREP; bound = hand / 1000 + hold[k, mr]
		# Without "over" records (older output): every writer counts.
		w = (k, mr) in amax ? amax[k, mr] : wmax[k, mr]
		inside = 0; lo = hi = ""
		for (x = 0; x < nrep; x++) {
			if (!((k, x) in wmax))
				continue
			v = (k, x) in amax ? amax[k, x] : wmax[k, x]
			if (lo == "" || v < lo) lo = v
			if (hi == "" || v > hi) hi = v
			q = v <= hand / 1000 + hold[k, x]
			if (x && q != q0) inside = 1
			q0 = q
		}
		ntarget++; nmet += w <= bound
		printf "| writer wait max <= bound | 99:1 T=%s | tofutex %.0f [%.0f-%.0f], bound %.0f; all writers %.0f, up to %s ahead, %s of them past the bound; pthread %.0f, %s its bound %.0f | %s |\n",
		       ts[t], w, lo, hi, bound, wmax[k, mr], ahead[k, mr] + 0,
		       nover[k, mr] + 0, bw, (bw > bb ? "past" : "within"), bb,
		       verdict(w <= bound, inside)
	}
	if (hand <= 0)
		printf "\nhandoff_ns unknown (%s): the writer-wait target is not judged.\n", meta["handoff_ns"]
	printf "\n%d of %d targets met. Ratio: of medians, in brackets one repetition'"'"'s\n", nmet, ntarget
	printf "lowest-highest. Writer wait: us, of the median run, in brackets the lowest-highest\n"
	printf "over the repetitions, of the writers that found no other writer ahead of them;\n"
	printf "bound: handoff_ns + that run'"'"'s longest write critical section (tofutex(4)).\n"
	printf "\"inside spread\": the repetitions reach both sides of the target.\n"
}' "$raw"

echo
echo "report-rwlock: raw records: $raw"
echo "report-rwlock: point summary: $summary"

if ! command -v gnuplot >/dev/null; then
	echo "report-rwlock: gnuplot is missing (apt-get install gnuplot-nox): no chart"
	exit 0
fi
meta() { sed -n "s/^bench_rwlock,meta,$1,//p" "$raw" | head -n 1; }
max_thr=$(awk 'NR > 1 && $1 > m { m = $1 } END { print m + 0 }' "$dat")
nmix=$(($(head -n 1 "$dat" | wc -w) - 1))
plot="1 with lines dt 2 lw 2 lc rgb 'black' title 'glibc default = 1.0'"
for ((c = 2; c <= nmix; c++)); do
	mix=$(head -n 1 "$dat" | cut -d' ' -f"$((c + 1))")
	plot+=", '$dat' using 1:$c with linespoints lw 2 pt 7 title '$mix read:write'"
done
gnuplot <<-EOF
set terminal pngcairo size 900,600 noenhanced
set output '$png'
set title "tofutex rwlock ops/s relative to glibc's default rwlock\nkernel $(meta kernel), $(meta cpus) CPUs, $(meta backend) backend\nmedian of $(meta reps) x $(meta secs_per_run) s per point; load average at start (as this kernel saw it) $(meta loadavg_start)"
set xlabel 'threads'
set ylabel 'ops/s ratio to glibc default rwlock (log scale)'
set logscale x 2
set xrange [1.6:$max_thr * 1.25]
set xtics (1, 2, 4, 8, 16, 32, 64)
set logscale y 2
set ytics ("1/8" 0.125, "1/4" 0.25, "1/2" 0.5, "1" 1, "1.5" 1.5, "2" 2, "4" 4, "8" 8)
set grid
set key outside right top
set offsets 0, 0, graph 0.04, graph 0.04
set datafile missing 'NaN'
plot $plot
EOF
echo "report-rwlock: chart: $png"
