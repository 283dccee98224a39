#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/report-swap.sh [-o DIR] FILE - CSV and a chart from bench_swap's
# output, on the host.
#
# FILE is what bench_swap printed (e.g. build/<kernel>/bench/bench_swap.txt
# from `make bench`); only its summary table and header line are read, and
# a "[label] " or "| " prefix on each line does not matter. Writes to DIR
# (default: FILE's directory):
#   swap.csv   one line per mechanism: median, min and max ns per swap and
#              the % of swaps with the wakee on the waker's CPU, unpinned
#              and pinned to one CPU ("" where a mechanism did not run)
#   swap.png   ns per swap per mechanism, unpinned and pinned, min-max bars
# and prints SWAP's ratios against the project's targets: >= 2.5x faster
# than futex WAKE+WAIT, unpinned <= 2.0x the one-CPU floor (futex with
# both threads pinned), pinned <= 1.1x that floor, wakee on the waker's
# CPU in >= 95 % of the unpinned swaps.
# Charts need gnuplot (Debian: gnuplot-nox, installed by tests/deps.sh).
set -euo pipefail

# shellcheck source=bench/report-args.sh
. "$(dirname "$0")/report-args.sh"
csv=$outdir/swap.csv
png=$outdir/swap.png
dat=$outdir/.swap.dat
trap 'rm -f "$dat"' EXIT

# The summary rows: "<name> <med> [<min>-<max>] <pl>|- <med> [...] <pl>",
# a cell being "-" where that half did not run.
tr -d '\r' <"$in" | sed -E 's/^(\[[^]]*\] )?(\| )?//' | awk -v csv="$csv" -v dat="$dat" '
	function cell(s,   a) {
		if (s == "-")
			return ",,"
		gsub(/[][-]/, " ", s)
		split(s, a, / +/)
		return a[1] "," a[2] "," a[3]
	}
	/bench_swap: kernel / && !head {
		head = substr($0, index($0, "bench_swap: kernel"))
	}
	/^summary: median ns per swap/ { in_sum = 1; next }
	in_sum && /mechanism +unpinned/ { next }
	in_sum && (/swap vs / || NF < 5) { in_sum = 0; next }
	in_sum {
		# name, unpinned "med [min-max]" as two fields, pl, same pinned
		n = split($0, f, / +/)
		i = 2
		u = f[i] == "-" ? "-" : f[i] " " f[i + 1]
		i += (f[i] == "-") ? 1 : 2
		upl = f[i++]
		p = f[i] == "-" ? "-" : f[i] " " f[i + 1]
		i += (f[i] == "-") ? 1 : 2
		ppl = f[i]
		rows[++nr] = f[1] "," cell(u) "," (upl == "-" ? "" : upl) "," \
			     cell(p) "," (ppl == "-" ? "" : ppl)
	}
	END {
		if (!nr)
			exit 1
		print "mechanism,unpinned_ns,unpinned_min,unpinned_max," \
		      "unpinned_on_cpu_pct,pinned_ns,pinned_min,pinned_max," \
		      "pinned_on_cpu_pct" > csv
		for (r = 1; r <= nr; r++) {
			print rows[r] > csv
			nf = split(rows[r], v, ",")
			line = r - 1
			for (k = 1; k <= nf; k++)
				line = line " " (v[k] == "" ? "?" : v[k])
			print line > dat
		}
		print head > "/dev/stderr"
	}' 2>"$dat.head" || {
	rm -f "$dat.head"
	echo "report-swap: no bench_swap summary in $in" >&2
	exit 1
}
head=$(cat "$dat.head")
rm -f "$dat.head"

echo "report-swap: $head"
column -t -s, "$csv"
val() {
	awk -F, -v m="$1" -v c="$2" '$1 == m && $c != "" { print $c }' "$csv"
}
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'
}
futex=$(val futex 2)
swap=$(val swap 2)
floor=$(val futex 6)
pinned=$(val swap 6)
oncpu=$(val swap 5)
# target WHAT VALUE OP LIMIT UNIT: one line, "met" or "missed".
target() {
	echo "report-swap: $1 $2$5 (target $3 $4$5: $(awk -v v="$2" -v l="$4" -v op="$3" \
		'BEGIN { print ((op == ">=") ? v >= l : v <= l) ? "met" : "missed" }'))"
}
if [ -n "$futex" ] && [ -n "$swap" ]; then
	target "SWAP is faster than FUTEX_WAKE+FUTEX_WAIT by" "$(ratio "$futex" "$swap")" ">=" 2.5 x
fi
if [ -n "$floor" ] && [ -n "$swap" ]; then
	target "SWAP unpinned, over the one-CPU floor (futex pinned):" "$(ratio "$swap" "$floor")" "<=" 2.0 x
fi
if [ -n "$floor" ] && [ -n "$pinned" ]; then
	target "SWAP pinned, over the one-CPU floor:" "$(ratio "$pinned" "$floor")" "<=" 1.1 x
fi
if [ -n "$oncpu" ]; then
	target "SWAP unpinned, wakee on the waker's CPU:" "$oncpu" ">=" 95 " %"
fi
echo "report-swap: csv: $csv"

if ! command -v gnuplot >/dev/null; then
	echo "report-swap: gnuplot is missing (apt-get install gnuplot-nox): no chart"
	exit 0
fi
# The method line, wrapped at its commas to fit the chart's width.
title=$(awk -v w=72 '{
	n = split($0, part, /, /)
	line = part[1]
	for (i = 2; i <= n; i++) {
		if (length(line) + 2 + length(part[i]) > w) {
			printf "%s,\\n", line
			line = part[i]
		} else {
			line = line ", " part[i]
		}
	}
	print line
}' <<<"${head#bench_swap: }")
gnuplot <<-EOF
set terminal pngcairo size 900,600 noenhanced
set output '$png'
set title "bench_swap: ns per swap, median (bars: min-max)\n$title"
set ylabel 'ns per swap (log scale)'
set logscale y
set format y '%.0f'
set grid ytics
set key top left
set xtics rotate by -30
set xrange [-0.6:$(($(wc -l <"$dat") - 1)).6]
set datafile missing '?'
plot '$dat' using (\$1 - 0.15):3:4:5:xtic(2) with yerrorbars pt 7 ps 1.5 lw 2 title 'unpinned', \
     '$dat' using (\$1 + 0.15):7:8:9 with yerrorbars pt 5 ps 1.5 lw 2 title 'both pinned to one CPU'
EOF
echo "report-swap: chart: $png"
