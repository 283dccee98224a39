#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/report-programs.sh [-o DIR] FILE - the "real programs" table and
# chart from the guest's bench_programs output (tests/programs/run.sh,
# programs_bench; `make bench` writes it to
# build/bench/<kernel>/bench_programs.txt), on the host.
#
# Input lines: "program=P threads=T variant=V run=R unit=U value=X", V one
# of stock, tofutex (tofutex-run, module) and futex (tofutex-run with
# TOFUTEX_BACKEND=futex). For each (program, threads) it prints the median
# of each variant's runs, in the program's own unit, and the ratios to
# stock; a run that printed no value counts as failed and is shown as
# such. Writes to DIR (default: FILE's directory):
#   programs.csv  program,threads,unit,stock,tofutex,futex,tofutex_ratio,futex_ratio
#   programs.png  tofutex/stock and futex/stock per point (needs gnuplot)
set -euo pipefail

# shellcheck source=bench/report-args.sh
. "$(dirname "$0")/report-args.sh"
csv=$outdir/programs.csv
png=$outdir/programs.png
dat=$outdir/.programs.dat
trap 'rm -f "$dat"' EXIT

tr -d '\r' <"$in" | sed -E 's/^(\[[^]]*\] )?(\| )?//' | awk -v csv="$csv" -v dat="$dat" '
	function median(key,   n, i, j, t, a) {
		n = split(vals[key], a, " ")
		if (!n)
			return ""
		for (i = 1; i <= n; i++)
			for (j = i + 1; j <= n; j++)
				if (a[j] + 0 < a[i] + 0) {
					t = a[i]; a[i] = a[j]; a[j] = t
				}
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
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
		if (f["unit"] != "")
			unit[pt] = f["unit"]
		key = pt " " f["variant"]
		if (f["value"] ~ /^[0-9.]+$/)
			vals[key] = vals[key] " " f["value"]
		else
			failed[key]++
		runs[key]++
	}
	END {
		if (!np)
			exit 1
		printf "%-26s %7s %-11s %12s %12s %12s %8s %8s\n", "program", "threads",
		       "unit", "stock", "tofutex-run", "(futex)", "ratio", "(futex)"
		print "program,threads,unit,stock,tofutex,futex,tofutex_ratio,futex_ratio" > csv
		for (i = 1; i <= np; i++) {
			pt = order[i]
			split(pt, p, " ")
			s = median(pt " stock"); t = median(pt " tofutex"); u = median(pt " futex")
			rt = (s > 0 && t != "") ? sprintf("%.2f", t / s) : "-"
			ru = (s > 0 && u != "") ? sprintf("%.2f", u / s) : "-"
			printf "%-26s %7s %-11s %12s %12s %12s %8s %8s\n", p[1], p[2], unit[pt],
			       s == "" ? "FAILED" : sprintf("%.1f", s),
			       t == "" ? "FAILED" : sprintf("%.1f", t),
			       u == "" ? "FAILED" : sprintf("%.1f", u), rt, ru
			printf "%s,%s,%s,%s,%s,%s,%s,%s\n", p[1], p[2], unit[pt], s, t, u,
			       rt == "-" ? "" : rt, ru == "-" ? "" : ru > csv
			if (rt != "-" && ru != "-")
				printf "\"%s/%s\" %s %s\n", p[1], p[2], rt, ru > dat
		}
		nfail = 0
		for (k in failed)
			nfail += failed[k]
		printf "medians of %s runs per variant, in one boot; ratio = tofutex-run / stock;\n", runs[order[1] " stock"]
		print "(futex): tofutex-run with TOFUTEX_BACKEND=futex. Raw runs: the input file."
		if (nfail)
			printf "%d runs printed no value (FAILED above if all runs of a variant did)\n", nfail
	}'
echo "wrote $csv"

if [ -s "$dat" ] && command -v gnuplot >/dev/null; then
	gnuplot <<EOG
set terminal pngcairo size 1000,500
set output '$png'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set ylabel 'throughput / stock'
set xtics rotate by -30
set yrange [0:*]
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2
set key top left
plot '$dat' using 2:xtic(1) title 'tofutex-run (module)', '' using 3 title 'tofutex-run (futex)'
EOG
	echo "wrote $png"
fi
