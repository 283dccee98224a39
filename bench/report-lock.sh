#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/report-lock.sh [-o DIR] FILE - tables and charts from bench_lock's
# raw output, on the host.
#
# FILE is what bench_lock printed (e.g. build/bench/<kernel>/bench_lock.txt
# from `make bench`) or the file of its --csv option: only the lines
# starting with "bench_lock," are read, so the human tables around them and
# a prefix a harness may add to each line do not matter.
#
# Prints, from the "run" records (one per repetition): the method (the
# "meta" records), throughput per block (median [min-max] over the
# repetitions), the ratio to glibc's default mutex ("tie" within 0.25 of
# 1.00), the share of the serial bound (ops/s x the critical section's
# time alone, from the "bound" records), kernel calls per 1000 operations,
# fairness (per-thread min/mean completion time) and acquisition latency.
# A block is named by its unit, "+sleep" or "+fault" when its critical
# section blocks, and "-cs<K>" when K is not the method's cs_units (the
# oversubscribed block). Writes to DIR (default: FILE's directory):
#   lock-raw.csv                 the CSV records, as extracted
#   lock-summary.csv             one line per point: medians, spreads, ratio
#   lock-<block>-w<work>.png     one chart per block (e.g.
#                                lock-pause-w10.png): throughput
#                                relative to glibc's default mutex against
#                                threads, one line per implementation
# Charts need gnuplot (Debian: gnuplot-nox, installed by tests/deps.sh);
# without it the tables are still printed and the script says so.
set -euo pipefail

# shellcheck source=bench/report-args.sh
. "$(dirname "$0")/report-args.sh"

raw=$outdir/lock-raw.csv
summary=$outdir/lock-summary.csv
# Scratch files from the awk pass to the chart step.
dats=$outdir/.lock-dats
impls=$outdir/.lock-impls
title=$outdir/.lock-title
trap 'rm -f "$dats" "$impls" "$title" "$raw.new" "$outdir"/lock-*.dat' EXIT

# Serial ports add carriage returns; harnesses may prefix lines.
# Through a temporary file: FILE may be an earlier lock-raw.csv itself.
tr -d '\r' <"$in" | sed -n 's/^.*\(bench_lock,\(meta\|record\|run\|uncontended\|bound\),\)/\1/p' >"$raw.new"
mv "$raw.new" "$raw"
if ! grep -q '^bench_lock,run,' "$raw"; then
	echo "report-lock: no bench_lock run records in $in" >&2
	exit 1
fi

# One awk pass computes everything; it writes the summary CSV and a data
# file per block for gnuplot, and prints the tables.
awk -F, -v summary="$summary" -v outdir="$outdir" -v dats="$dats" \
	-v impls="$impls" -v title="$title" '
function isort(a, n,   i, j, t) {
	for (i = 2; i <= n; i++) {
		t = a[i]
		for (j = i - 1; j >= 1 && a[j] > t; j--)
			a[j + 1] = a[j]
		a[j + 1] = t
	}
}
# Median, min and max of the "|"-separated values in s (n/a if any is).
function stats(s,   v, n, i) {
	n = split(s, v, "|")
	for (i = 1; i <= n; i++) {
		if (v[i] == "n/a") {
			MED = MIN = MAX = "n/a"
			return
		}
		v[i] += 0
	}
	isort(v, n)
	MIN = v[1]
	MAX = v[n]
	MED = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
# (mawk creates vals[key] before it evaluates the right-hand side, so the
# test must not share a statement with the assignment.)
function add(key, val) {
	if (key in vals)
		val = vals[key] "|" val
	vals[key] = val
}
# "*" when a repetition of point k stopped at the budget. (A plain cut[k]
# would create the element.)
function mark(k) {
	return (k in cut) ? "*" : ""
}
function cell(s) {
	printf " %15s", s
}
function ratio(r, impl) {
	if (impl == "pthread")
		return "1.00"
	if (r >= 1 - tie && r <= 1 + tie)
		return sprintf("%.2f tie", r)
	return sprintf("%.2f", r)
}
function header(first,   i) {
	printf "%-20s", first
	for (i = 1; i <= n_impl; i++)
		cell(impl_name[i])
	printf "\n"
}
# The unit column of a block: the unit, +kind for a blocking critical section,
# -cs<K> for a critical section other than the one of the method.
function label(unit, cs, kind) {
	if (kind != "" && kind != "plain")
		unit = unit "+" kind
	if (cs != meta["cs_units"])
		unit = unit "-cs" cs
	return unit
}
# One cell of summary table @what (point_table()) for point @k of block
# @blk and implementation @impl.
function point_cell(what, k, blk, impl) {
	if (!(k in have))
		return "-"
	if (what == "ratio")
		return rat[k] == "n/a" ? "n/a" : ratio(rat[k], impl) mark(k)
	if (what == "share")
		return sprintf("%.2f%s", tp[k] * bound[blk] / 1e9, mark(k))
	if (what == "calls")
		return lc[k] == "n/a" || uc[k] == "n/a" ? "n/a" : \
			sprintf("%.1f/%.1f%s", lc[k] * 1000 / od[k], uc[k] * 1000 / od[k], mark(k))
	if (what == "fair")
		return sprintf("%.2f%s", fair[k], mark(k))
	return p50[k] == "n/a" ? "n/a" : sprintf("%.2f/%.2f", p50[k] / 1e3, p99[k] / 1e3)
}
# A summary table over every block and thread count: a row per point, a
# column per implementation, cells from point_cell().
function point_table(what, title,   b, t, i, bu) {
	printf "\n== %s ==\n", title
	printf "%-10s %4s %7s", "unit", "work", "threads"
	for (i = 1; i <= n_impl; i++)
		cell(impl_name[i])
	printf "\n"
	for (b = 1; b <= n_blk; b++) {
		if (what == "share" && !(blk_list[b] in bound))
			continue
		split(blk_list[b], bu, SUBSEP)
		for (t = 1; t <= n_thr; t++) {
			if (!((blk_list[b] SUBSEP thr_list[t]) in blk_thr))
				continue
			printf "%-10s %4s %7s", bu[1], bu[2], thr_list[t]
			for (i = 1; i <= n_impl; i++)
				cell(point_cell(what, blk_list[b] SUBSEP thr_list[t] SUBSEP impl_name[i], blk_list[b], impl_name[i]))
			printf "\n"
		}
	}
}
BEGIN { tie = 0.25 }
$2 == "meta" {
	v = $4
	for (i = 5; i <= NF; i++)
		v = v "," $i
	if (!($3 in meta))
		meta_key[++n_meta] = $3
	meta[$3] = v
	next
}
$2 == "record" {
	for (i = 3; i <= NF; i++)
		col[$i] = i
	n_need = split("impl unit work_units threads ops ops_per_s elapsed_ns lock_calls unlock_calls vcsw lat_p50_ns lat_p99_ns lat_max_ns sleeps handoffs fair ops_done cut", need, " ")
	for (i = 1; i <= n_need; i++)
		if (!(need[i] in col)) {
			printf "report-lock: the records have no %s field: output of an older bench_lock?\n", need[i] > "/dev/stderr"
			bad = 1
			exit 1
		}
	next
}
$2 == "bound" {
	# unit, cs_units, work_units, kind, ns of the critical section alone
	bound[label($3, $4, $6) SUBSEP $5] = $7
	next
}
$2 == "uncontended" {
	# impl, rep, ops, ns per lock+unlock pair
	if (!($3 in un_have)) {
		un_have[$3] = 1
		un_name[++n_un] = $3
	}
	add("un" SUBSEP $3, $6)
	next
}
$2 == "run" {
	if (!("impl" in col)) {
		print "report-lock: run records before the header record" > "/dev/stderr"
		exit 1
	}
	impl = $col["impl"]; work = $col["work_units"]
	unit = label($col["unit"], $col["cs_units"], ("kind" in col) ? $col["kind"] : "")
	thr = $col["threads"]; ops = $col["ops"]
	blk = unit SUBSEP work
	if (!(blk in seen_blk)) {
		seen_blk[blk] = 1
		blk_list[++n_blk] = blk
	}
	if (!(impl in seen_impl)) {
		seen_impl[impl] = 1
		impl_name[++n_impl] = impl
	}
	if (!(thr in seen_thr)) {
		seen_thr[thr] = 1
		thr_list[++n_thr] = thr
	}
	k = blk SUBSEP thr SUBSEP impl
	have[k] = 1
	blk_thr[blk SUBSEP thr] = 1
	if (!(blk in blk_unit)) {
		blk_unit[blk] = $col["unit"]
		blk_cs[blk] = $col["cs_units"]
		blk_what[blk] = ("kind" in col) && $col["kind"] != "plain" ? " + " $col["kind"] : ""
		blk_thr1[blk] = thr
	}
	ops_of[k] = ops
	add(k SUBSEP "ops_per_s", $col["ops_per_s"])
	add(k SUBSEP "elapsed_ns", $col["elapsed_ns"])
	add(k SUBSEP "lock_calls", $col["lock_calls"])
	add(k SUBSEP "unlock_calls", $col["unlock_calls"])
	add(k SUBSEP "vcsw", $col["vcsw"])
	add(k SUBSEP "lat_p50_ns", $col["lat_p50_ns"])
	add(k SUBSEP "lat_p99_ns", $col["lat_p99_ns"])
	add(k SUBSEP "lat_max_ns", $col["lat_max_ns"])
	add(k SUBSEP "sleeps", $col["sleeps"])
	add(k SUBSEP "handoffs", $col["handoffs"])
	add(k SUBSEP "fair", $col["fair"])
	add(k SUBSEP "ops_done", $col["ops_done"])
	if ($col["cut"] == 1)
		cut[k] = "*"
	reps[k]++
	next
}
END {
	if (bad || !n_blk)
		exit 1
	print "== bench_lock report =="
	for (i = 1; i <= n_meta; i++)
		printf "method: %s = %s\n", meta_key[i], meta[meta_key[i]]

	if (n_un) {
		printf "\n== uncontended lock+unlock, 1 thread, no critical section or work: ns per pair, median [min-max] ==\n"
		printf "%-20s", ""
		for (i = 1; i <= n_un; i++)
			cell(un_name[i])
		printf "\n%-20s", "ns per pair"
		for (i = 1; i <= n_un; i++) {
			stats(vals["un" SUBSEP un_name[i]])
			un_med[un_name[i]] = MED
			cell(sprintf("%.1f[%.1f-%.1f]", MED, MIN, MAX))
		}
		printf "\n"
		n_base = split("tas tas-call", base_of, " ")
		for (b = 1; b <= n_base; b++) {
			if (!(base_of[b] in un_med))
				continue
			printf "%-20s", "ratio to " base_of[b]
			for (i = 1; i <= n_un; i++)
				cell(sprintf("%.2f", un_med[un_name[i]] / un_med[base_of[b]]))
			printf "\n"
		}
	}

	# Point medians, for every table below and the summary CSV.
	printf "unit,work_units,threads,impl,reps,ops,ops_done_med,cut,ops_per_s_med,ops_per_s_min,ops_per_s_max,ratio_to_pthread,lock_calls_med,unlock_calls_med,lock_per_1000,unlock_per_1000,vcsw_med,fair_min_mean_med,lat_p50_ns_med,lat_p99_ns_med,lat_max_ns_med,sleeps_med,handoffs_med\n" > summary
	for (b = 1; b <= n_blk; b++) {
		blk = blk_list[b]
		for (t = 1; t <= n_thr; t++) {
			thr = thr_list[t]
			base = ""
			kb = blk SUBSEP thr SUBSEP "pthread"
			if (kb in have) {
				stats(vals[kb SUBSEP "ops_per_s"])
				base = MED
			}
			for (i = 1; i <= n_impl; i++) {
				k = blk SUBSEP thr SUBSEP impl_name[i]
				if (!(k in have))
					continue
				stats(vals[k SUBSEP "ops_per_s"])
				tp[k] = MED; tpmin[k] = MIN; tpmax[k] = MAX
				rat[k] = base == "" ? "n/a" : MED / base
				stats(vals[k SUBSEP "lock_calls"]); lc[k] = MED
				stats(vals[k SUBSEP "unlock_calls"]); uc[k] = MED
				stats(vals[k SUBSEP "vcsw"]); cs[k] = MED
				stats(vals[k SUBSEP "fair"]); fair[k] = MED
				stats(vals[k SUBSEP "lat_p50_ns"]); p50[k] = MED
				stats(vals[k SUBSEP "lat_p99_ns"]); p99[k] = MED
				stats(vals[k SUBSEP "lat_max_ns"]); pmax[k] = MED
				stats(vals[k SUBSEP "sleeps"]); sl[k] = MED
				stats(vals[k SUBSEP "handoffs"]); ho[k] = MED
				stats(vals[k SUBSEP "ops_done"]); od[k] = MED
				split(blk, bu, SUBSEP)
				printf "%s,%s,%s,%s,%d,%s,%.0f,%d,%.0f,%.0f,%.0f,%s,%s,%s,%s,%s,%s,%.3f,%s,%s,%s,%s,%s\n", \
					bu[1], bu[2], thr, impl_name[i], reps[k], ops_of[k], \
					od[k], (k in cut), \
					tp[k], tpmin[k], tpmax[k], \
					rat[k] == "n/a" ? "n/a" : sprintf("%.3f", rat[k]), \
					lc[k], uc[k], \
					lc[k] == "n/a" ? "n/a" : sprintf("%.2f", lc[k] * 1000 / od[k]), \
					uc[k] == "n/a" ? "n/a" : sprintf("%.2f", uc[k] * 1000 / od[k]), \
					cs[k], fair[k], p50[k], p99[k], pmax[k], sl[k], ho[k] > summary
			}
		}
	}
	close(summary)

	# Throughput tables and the gnuplot data, one per block.
	for (b = 1; b <= n_blk; b++) {
		blk = blk_list[b]
		split(blk, bu, SUBSEP)
		k1 = blk SUBSEP blk_thr1[blk] SUBSEP impl_name[1]
		blk_title = sprintf("critical section %s %s%s, work %s %s", \
			blk_cs[blk], blk_unit[blk], blk_what[blk], bu[2], blk_unit[blk])
		printf "\n== %s: throughput, kops/s, median [min-max] of %d ==\n", blk_title, reps[k1]
		header("threads")
		# Chart data: the ratio of medians to pthread per implementation.
		dat = outdir "/lock-" bu[1] "-w" bu[2] ".dat"
		printf "# threads" > dat
		for (i = 1; i <= n_impl; i++)
			printf " %s", impl_name[i] > dat
		printf "\n" > dat
		for (t = 1; t <= n_thr; t++) {
			thr = thr_list[t]
			if (!((blk SUBSEP thr) in blk_thr))
				continue
			printf "%-20s", thr
			printf "%s", thr > dat
			for (i = 1; i <= n_impl; i++) {
				k = blk SUBSEP thr SUBSEP impl_name[i]
				if (k in have) {
					cell(sprintf("%.0f[%.0f-%.0f]%s", tp[k] / 1e3, tpmin[k] / 1e3, tpmax[k] / 1e3, mark(k)))
					printf " %s", rat[k] == "n/a" ? "NaN" : sprintf("%.4f", rat[k]) > dat
				} else {
					cell("-")
					printf " NaN" > dat
				}
			}
			printf "\n"
			printf "\n" > dat
		}
		close(dat)
		# The chart step reads "data file|block title" lines.
		dat_list = dat_list dat "|" blk_title "\n"
	}

	point_table("ratio", sprintf("ops/s ratio to pthread default (medians; \"tie\": within %.2f of 1.00)", tie))
	point_table("share", "share of the serial bound: ops/s x the critical section alone, one thread (medians)")
	point_table("calls", "kernel calls per 1000 operations, lock/unlock (medians)")
	point_table("fair", "fairness: per-thread completion time min/mean (medians)")
	point_table("latency", sprintf("acquisition latency p50/p99, us (medians; sampled on 1 in %s operations)", meta["lat_sample_every"]))

	for (k in cut) {
		printf "\n* = at least one repetition stopped at the %s s budget (--budget): ops/s from the operations done, fairness from operations done per thread\n", meta["budget_s"]
		break
	}

	# For the chart step: implementation names, then the data files.
	printf "%s", dat_list > dats
	for (i = 1; i <= n_impl; i++)
		printf "%s\n", impl_name[i] > impls
	max_thr = 1
	for (t = 1; t <= n_thr; t++)
		if (thr_list[t] + 0 > max_thr)
			max_thr = thr_list[t] + 0
	printf "%s|%s|%s|%s|%s|%s\n", meta["kernel"], meta["vcpus"], meta["emulation"], meta["ops"], meta["reps"], max_thr > title
}' "$raw"

# The targets with work between locks: tofutex >= adaptive (the step) and
# >= 1.2x adaptive (the moonshot) at every plain point (pause and loop
# units, work > 0, 2 threads and more). "inside spread" when the two
# implementations' min-max ranges of ops/s overlap.
awk -F, '
	NR > 1 && ($1 == "pause" || $1 == "loop") && $2 > 0 && $3 >= 2 &&
	($4 == "tofutex" || $4 == "adaptive") {
		k = $1 " w" $2 " T=" $3
		if (!(k in seen)) {
			seen[k] = 1
			order[++n] = k
		}
		med[k, $4] = $9; lo[k, $4] = $10; hi[k, $4] = $11
	}
	END {
		if (!n)
			exit
		print ""
		print "== targets with work between locks: tofutex / adaptive ratio of medians =="
		print "(\"inside spread\": the two implementations min-max ranges of ops/s overlap)"
		print ""
		print "| point | ratio | >= 1.0 (step) | >= 1.2 (moonshot) |"
		print "|---|--:|---|---|"
		for (i = 1; i <= n; i++) {
			k = order[i]
			if (!((k, "tofutex") in med) || !((k, "adaptive") in med) || med[k, "adaptive"] <= 0)
				continue
			r = med[k, "tofutex"] / med[k, "adaptive"]
			ov = hi[k, "tofutex"] >= lo[k, "adaptive"] && lo[k, "tofutex"] <= hi[k, "adaptive"]
			v1 = (r >= 1 ? "met" : "missed") (ov ? ", inside spread" : "")
			v2 = (r >= 1.2 ? "met" : "missed") (ov ? ", inside spread" : "")
			nstep += r >= 1
			nmoon += r >= 1.2
			npt++
			printf "| %s | %.2f | %s | %s |\n", k, r, v1, v2
		}
		printf "\nstep met at %d of %d points, moonshot at %d.\n", nstep, npt, nmoon
	}' "$summary"

echo
echo "report-lock: raw records: $raw"
echo "report-lock: point summary: $summary"

if ! command -v gnuplot >/dev/null; then
	echo "report-lock: gnuplot is missing (apt-get install gnuplot-nox): no charts"
	exit 0
fi

IFS='|' read -r kernel vcpus emulation ops reps max_thr < <(tr -d "\"'" <"$title")
# "TCG (hypervisor signature ...)": the first word is enough for a title.
emulation=${emulation%% (*}
mapfile -t names <"$impls"
# Ratio tics at powers of two, small ones as fractions: 1/1024 ... 64.
ytics=$(awk 'BEGIN {
	for (e = -10; e <= 6; e++)
		printf "%s\"%s\" %.10g", (e > -10 ? ", " : ""), (e < 0 ? "1/" 2 ^ -e : 2 ^ e), 2 ^ e
}')
while IFS='|' read -r dat block; do
	[ -n "$dat" ] || continue
	png=${dat%.dat}.png
	# pthread is the 1.0 line itself; every other implementation is a
	# line of its ratios (column 2 + its index among the names).
	plot="1 with lines dt 2 lw 2 lc rgb 'black' title 'pthread = 1.0'"
	for i in "${!names[@]}"; do
		[ "${names[$i]}" != pthread ] || continue
		plot+=", '$dat' using 1:$((i + 2)) with linespoints lw 2 pt 7 title '${names[$i]}'"
	done
	gnuplot <<-EOF
	set terminal pngcairo size 900,600 noenhanced
	set output '$png'
	set title "Throughput relative to glibc's default mutex\n$block\nkernel $kernel, $vcpus vCPUs ($emulation); median of $reps x $ops ops"
	set xlabel 'threads'
	set ylabel 'ops/s ratio to glibc default mutex (log scale)'
	set logscale x 2
	set xrange [0.8:$max_thr * 1.25]
	set xtics (1, 2, 4, 8, 16, 32, 64, 128)
	set logscale y 2
	set ytics ($ytics)
	set grid
	set key outside right top
	set offsets 0, 0, graph 0.04, graph 0.04
	set datafile missing 'NaN'
	plot $plot
	EOF
	echo "report-lock: chart: $png"
done <"$dats"
