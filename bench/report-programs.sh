#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/report-programs.sh [-o DIR] FILE - the "real programs" table and
# chart from the guest's bench_programs output (tests/programs/run.sh,
# programs_bench; `make bench` writes it to
# build/bench/<kernel>/bench_programs.txt), on the host.
#
# Input lines (a "[label] " or "| " prefix does not matter):
#   program=P threads=T variant=V run=R unit=U value=X secs=S rc=N
#   lock=.. unlock=.. spins=.. sleeps=.. steals=.. handoffs=.. wait=.. wake=..
# V is stock, tofutex (tofutex-run, module backend) or futex (tofutex-run
# with TOFUTEX_BACKEND=futex); the counters are the module's statistics
# moved by the run; value=FAILED when a run printed no metric.
#
# For each (program, threads) it prints, as a Markdown table, the median
# of each variant's runs in the program's own unit, the ratios of the
# medians to stock, and for the module backend the median kernel calls
# per run: TOFUTEX_IOC_LOCK calls (with the sleeps and steals among them),
# and TOFUTEX_IOC_WAIT / _WAKE calls (condition variables). A variant
# whose runs all failed shows FAILED; every failed run is counted below
# the table. Writes to DIR (default: FILE's directory):
#   programs.md   the table
#   programs.csv  program,threads,unit,stock,tofutex,futex,tofutex_ratio,
#                 futex_ratio,tofutex_ratio_min,tofutex_ratio_max,
#                 futex_ratio_min,futex_ratio_max,runs,lock,unlock,spins,
#                 sleeps,steals,wait,wake,secs
#   programs.png  tofutex/stock and futex/stock per point, the ratios'
#                 medians with bars from the lowest to the highest ratio
#                 of one round (needs gnuplot)
set -euo pipefail

# shellcheck source=bench/report-args.sh
. "$(dirname "$0")/report-args.sh"
md=$outdir/programs.md
csv=$outdir/programs.csv
png=$outdir/programs.png
dat=$outdir/.programs.dat
trap 'rm -f "$dat"' EXIT

tr -d '\r' <"$in" | sed -E 's/^(\[[^]]*\] )?(\| )?//' |
awk -v csv="$csv" -v dat="$dat" '
	function median(list,   n, i, j, t, a) {
		n = split(list, a, " ")
		if (!n)
			return ""
		for (i = 1; i <= n; i++)
			for (j = i + 1; j <= n; j++)
				if (a[j] + 0 < a[i] + 0) {
					t = a[i]; a[i] = a[j]; a[j] = t
				}
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	function num(v) {
		if (v == "")
			return "FAILED"
		return sprintf(v >= 100 ? "%.0f" : "%.2f", v)
	}
	function pair(sp) {
		return sp ~ /-/ ? "," : sp
	}
	function cell(r, sp,   a) {
		split(sp, a, /[ ,]/)
		return r == "-" || a[1] == "-" ? r : r " (" a[1] "-" a[2] ")"
	}
	function ratio(a, b) {
		return (a > 0 && b != "") ? sprintf("%.2f", b / a) : "-"
	}
	# The lowest and highest ratio of one round (the variants run side
	# by side) over the rounds where both ran: "min,max", or "- -".
	function spread(pt, v,   r, lo, hi, x) {
		lo = hi = ""
		for (r = 1; r <= nround[pt]; r++) {
			if (!((pt " stock", r) in round) || !((pt " " v, r) in round) ||
			    round[pt " stock", r] <= 0)
				continue
			x = round[pt " " v, r] / round[pt " stock", r]
			if (lo == "" || x < lo)
				lo = x
			if (hi == "" || x > hi)
				hi = x
		}
		return lo == "" ? "- -" : sprintf("%.2f,%.2f", lo, hi)
	}
	/^program=/ {
		delete f
		for (i = 1; i <= NF; i++) {
			split($i, kv, "=")
			f[kv[1]] = substr($i, length(kv[1]) + 2)
		}
		pt = f["program"] " " f["threads"]
		if (!(pt in seen)) {
			seen[pt] = 1
			order[++np] = pt
		}
		if (f["unit"] != "-")
			unit[pt] = f["unit"]
		key = pt " " f["variant"]
		runs[key]++
		if (f["value"] ~ /^[0-9.]+([eE][-+]?[0-9]+)?$/) {
			vals[key] = vals[key] " " f["value"]
			round[key, f["run"]] = f["value"]
			nround[pt] = f["run"] > nround[pt] ? f["run"] : nround[pt]
		} else {
			failed[key]++
			nfail++
			why[nfail] = f["program"] " threads=" f["threads"] " " \
				     f["variant"] " run " f["run"] ": rc=" f["rc"] \
				     (f["rc"] == 124 || f["rc"] == 143 ? " (timed out)" : "")
		}
		secs[key] = secs[key] " " f["secs"]
		if (f["variant"] == "tofutex")
			for (k in f)
				if (k ~ /^(lock|unlock|spins|sleeps|steals|wait|wake)$/)
					calls[pt, k] = calls[pt, k] " " f[k]
	}
	END {
		if (!np)
			exit 1
		nk = split("lock unlock spins sleeps steals wait wake", keys, " ")
		print "| program | threads | unit | stock | tofutex-run | ratio | futex backend | ratio | LOCK | UNLOCK | spins | sleeps | steals | WAIT | WAKE |"
		print "|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
		print "program,threads,unit,stock,tofutex,futex,tofutex_ratio,futex_ratio,tofutex_ratio_min,tofutex_ratio_max,futex_ratio_min,futex_ratio_max,runs,lock,unlock,spins,sleeps,steals,wait,wake,secs" > csv
		for (i = 1; i <= np; i++) {
			pt = order[i]
			split(pt, p, " ")
			s = median(vals[pt " stock"])
			t = median(vals[pt " tofutex"])
			u = median(vals[pt " futex"])
			rt = ratio(s, t)
			ru = ratio(s, u)
			st = spread(pt, "tofutex")
			su = spread(pt, "futex")
			line = ""
			cline = ""
			for (j = 1; j <= nk; j++) {
				c = median(calls[pt, keys[j]])
				line = line " " c " |"
				cline = cline "," c
			}
			printf "| %s | %s | %s | %s | %s | %s | %s | %s |%s\n", p[1], p[2],
			       unit[pt], num(s), num(t), cell(rt, st), num(u), cell(ru, su), line
			printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%d%s,%s\n", p[1], p[2], unit[pt],
			       s, t, u, rt == "-" ? "" : rt, ru == "-" ? "" : ru,
			       pair(st), pair(su),
			       runs[pt " stock"], cline,
			       median(secs[pt " stock"] secs[pt " tofutex"] secs[pt " futex"]) > csv
			if (rt != "-" && ru != "-" && st !~ /-/ && su !~ /-/) {
				gsub(/,/, " ", st)
				gsub(/,/, " ", su)
				printf "\"%s/%s\" %s %s %s %s\n", p[1], p[2], rt, st, ru, su > dat
			}
		}
		print ""
		printf "Medians of %d runs per variant in one boot, the three variants interleaved;\n",
		       runs[order[1] " stock"]
		print "ratio = median / stock median (higher is better), in brackets the lowest and"
		print "highest ratio of one round (the variants run side by side). futex backend: tofutex-run"
		print "with TOFUTEX_BACKEND=futex. Kernel calls: the module'"'"'s statistics moved by a"
		print "run of tofutex-run on the module backend, median over its runs."
		if (nfail) {
			printf "\n%d runs printed no value:\n", nfail
			for (i = 1; i <= nfail && i <= 20; i++)
				print "- " why[i]
		}
	}' | tee "$md"
echo "wrote $md"
echo "wrote $csv"

if [ -s "$dat" ] && command -v gnuplot >/dev/null; then
	gnuplot <<EOG
set terminal pngcairo size 1100,520
set output '$png'
set title 'Real programs under tofutex-run: throughput / stock (medians of one boot; bars: lowest to highest ratio of one round)'
set style data histograms
set style histogram errorbars gap 1 lw 1
set style fill solid 0.8 border -1
set ylabel 'throughput / stock'
set xtics rotate by -30
set yrange [0:*]
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2
set key top left
plot '$dat' using 2:3:4:xtic(1) title 'tofutex-run (module)', \\
     '' using 5:6:7 title 'tofutex-run (futex backend)'
EOG
	echo "wrote $png"
fi
