#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/report-pairs.sh A B[,B...] FILE - bench_lock's implementations
# compared repetition by repetition, on the host.
#
# On a shared machine a point's ops/s move by more than the difference
# between two spin policies, and the medians of report-lock.sh then cannot
# tell them apart. The implementations of one repetition run one after the
# other, within a fraction of a second, so the ratio of two of them in the
# same repetition cancels most of what the machine did meanwhile. For
# implementation A against each B (names as bench_lock prints them, e.g.
# tofutex, tofutex-u5000, adaptive), per point (unit, work, threads): the
# median of the per-repetition ratios A/B, in brackets their quartiles,
# and in how many repetitions A was the faster. FILE: bench_lock's output
# (only its "bench_lock,run," lines are read, a prefix on each line is
# ignored). Meant for many repetitions (bench_lock -r 21 or more).
set -euo pipefail

usage() {
	echo "usage: ${0##*/} A B[,B...] FILE" >&2
	exit 2
}
[ $# -eq 3 ] || usage
[ -r "$3" ] || { echo "${0##*/}: cannot read $3" >&2; exit 1; }

sed -n 's/^.*\(bench_lock,run,\)/\1/p' "$3" |
awk -F, -v a="$1" -v bs="$2" '
# Insertion sort of x[1..n], for mawk (no asort).
function isort(x, n,   i, j, t) {
	for (i = 2; i <= n; i++) {
		t = x[i]
		for (j = i - 1; j >= 1 && x[j] > t; j--)
			x[j + 1] = x[j]
		x[j + 1] = t
	}
}
function med(x, n) {
	return n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
}
{
	# impl, unit, cs, work, threads, rep, ... ops_per_s (field 11)
	pt = $4 " " $6 " " $7
	v[$3, pt, $8] = $11
	if (!(pt in seen)) {
		seen[pt] = 1
		pts[++np] = pt
	}
	if (!($8 in rseen)) {
		rseen[$8] = 1
		reps[++nr] = $8
	}
}
END {
	nb = split(bs, b, ",")
	printf "%-14s", "unit work T"
	for (k = 1; k <= nb; k++)
		printf "  %-26s", a "/" b[k]
	printf "\n"
	for (i = 1; i <= np; i++) {
		printf "%-14s", pts[i]
		for (k = 1; k <= nb; k++) {
			n = 0
			wins = 0
			for (r = 1; r <= nr; r++) {
				ka = a SUBSEP pts[i] SUBSEP reps[r]
				kb = b[k] SUBSEP pts[i] SUBSEP reps[r]
				if (!(ka in v) || !(kb in v) || v[kb] <= 0)
					continue
				x[++n] = v[ka] / v[kb]
				if (x[n] > 1)
					wins++
			}
			if (!n) {
				printf "  %-26s", "-"
				continue
			}
			isort(x, n)
			printf "  %4.2f [%4.2f-%4.2f] %3d/%-3d", med(x, n),
			       x[int((n + 3) / 4)], x[int((3 * n + 3) / 4)],
			       wins, n
		}
		printf "\n"
	}
	print "(median of the per-repetition ratios [quartiles], repetitions in which " a " was faster / all)"
}'
