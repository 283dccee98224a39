#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/report-page.sh DIR - the one-page benchmark report, and the summary
# `make bench` prints, from what is in DIR (build/bench/<kernel>/).
#
# Reads the outputs of the bench/report-*.sh scripts, saved by
# tests/qemu/run.sh as DIR/<name>-report.txt (lock, swap, cond, rwlock,
# programs; each optional), and the raw output DIR/bench_<name>.txt of any
# benchmark that has no report script (printed as it is). Writes
# DIR/report.md: Markdown that opens with the charts (every PNG the report
# scripts name, in their order), then the method, the lock ratio and
# kernel-call tables, the swap, condition-variable and reader/writer-lock
# tables (the last with its targets), the real-programs table, the other
# benchmarks' output, and links to the full reports and raw records.
# Prints the same tables as plain text, with the method once.
set -euo pipefail

if [ $# -ne 1 ] || [ ! -d "$1" ]; then
	echo "usage: ${0##*/} DIR" >&2
	exit 2
fi
dir=$1
here=$(cd "$(dirname "$0")" && pwd)
page=$dir/report.md

# section FILE REGEX: the "== ... ==" section of FILE whose heading
# matches REGEX, heading included, up to the next heading or tool message,
# without trailing blank lines.
section() {
	[ -r "$1" ] || return 0
	awk -v re="$2" '
	/^== .* ==$/ || /^report-[a-z]+: / { on = !n && $0 ~ re }
	on { line[++n] = $0; if (NF) last = n }
	END { for (i = 1; i <= last; i++) print line[i] }' "$1"
}

# lock_table REGEX: that section of the lock report, and the footnote on
# "*" when there is one.
lock_table() {
	section "$lock" "$1"
	[ -r "$lock" ] || return 0
	grep '^\* = ' "$lock" || true
}

# rwlock_targets: the targets section of the rwlock report (a Markdown
# table, then its notes).
rwlock_targets() {
	section "$dir/rwlock-report.txt" '^== reader/writer lock targets'
}

# tables FILE: a report script's output without its method lines and its
# messages about the files it wrote; "report-swap: " and the like dropped
# from the lines that remain, and leading blank lines.
tables() {
	[ -r "$1" ] || return 0
	sed -E '/^method: /d; /^== bench_[a-z]+ report ==$/d
		/^report-[a-z]+: (csv|chart|raw records|point summary|wrote)/d
		/^wrote /d; s/^report-[a-z]+: //' "$1" | awk 'NF { seen = 1 } seen'
}

# method REPORT...: the "method: key = value" lines of the reports, each
# key = value once: the first report's as they are, what later reports add
# on one line per report ("bench_cond: ops = 20000, ...").
method() {
	local f first="" name add

	for f in "$@"; do
		[ -r "$f" ] || continue
		name=${f##*/}
		name=bench_${name%-report.txt}
		if [ -z "$first" ]; then
			first=$f
			sed -n 's/^method: //p' "$f"
			continue
		fi
		add=$(sed -n 's/^method: //p' "$f" | grep -vxF -f <(sed -n 's/^method: //p' "$first") |
		      paste -sd'|' | sed 's/|/, /g')
		[ -z "$add" ] || echo "$name: $add"
	done
}

# The reports, the method's first; benchmarks without a report script.
reports=()
for f in lock cond swap rwlock programs lockbound; do
	[ ! -r "$dir/$f-report.txt" ] || reports+=("$dir/$f-report.txt")
done
lock=$dir/lock-report.txt
others=()
for f in "$dir"/bench_*.txt; do
	[ -e "$f" ] || continue
	name=${f##*/bench_}
	name=${name%.txt}
	[ -x "$here/report-$name.sh" ] || others+=("$f")
done

# print_block STYLE TITLE COMMAND...: what COMMAND prints, under TITLE, as
# Markdown (STYLE md) or plain text; nothing when it prints nothing. A
# first line "== HEADING ==" goes into the title: "TITLE: HEADING".
print_block() {
	local style=$1 title=$2 text fence='```' first
	shift 2

	text=$("$@")
	[ -n "$text" ] || return 0
	first=${text%%$'\n'*}
	if [[ $first =~ ^==\ (.*)\ ==$ ]]; then
		title="$title: ${BASH_REMATCH[1]}"
		text=${text#"$first"}
		text=${text#$'\n'}
	fi
	if [ "$style" = md ] && [[ $text == '| '* ]]; then
		# Already a Markdown table (report-programs.sh).
		printf '\n## %s\n\n%s\n' "$title" "$text"
	elif [ "$style" = md ]; then
		printf '\n## %s\n\n%s\n%s\n%s\n' "$title" "$fence" "$text" "$fence"
	else
		printf '\n== %s ==\n%s\n' "$title" "$text"
	fi
}

# blocks STYLE: the report's tables.
blocks() {
	local f name style=$1

	print_block "$style" "Method" method "${reports[@]}"
	print_block "$style" bench_lock lock_table '^== ops/s ratio to pthread'
	print_block "$style" bench_lock lock_table '^== kernel calls per 1000'
	print_block "$style" bench_lock lock_table '^== targets with work between locks'
	print_block "$style" "bench_swap: ns per hand-over" tables "$dir/swap-report.txt"
	print_block "$style" "bench_cond: condition variables" tables "$dir/cond-report.txt"
	print_block "$style" bench_rwlock section "$dir/rwlock-report.txt" '^== reader/writer locks: ops/s'
	print_block "$style" bench_rwlock rwlock_targets
	print_block "$style" "real programs under tofutex-run" tables "$dir/programs-report.txt"
	print_block "$style" "lock-bound programs under tofutex-run" tables "$dir/lockbound-report.txt"
	for f in "${others[@]}"; do
		name=${f##*/}
		print_block "$style" "${name%.txt}" cat "$f"
	done
}

# Every chart the reports name, in their order.
charts() {
	local f

	for f in "${reports[@]}"; do
		[ -r "$f" ] || continue
		sed -nE 's/^(report-[a-z]+: chart: |wrote )(.*\.png)$/\2/p' "$f"
	done | while read -r png; do
		[ -e "$dir/${png##*/}" ] && echo "${png##*/}"
	done
}

{
	kernel=$(cat "${reports[@]}" /dev/null | sed -n 's/^method: kernel = //p' | head -n 1)
	printf '# tofutex benchmarks: kernel %s\n\n' "${kernel:-?}"
	echo "Made by \`make bench\` (tests/qemu/run.sh, bench/report-*.sh); every number"
	echo 'below is from the raw files linked at the end. Ratios are of medians taken'
	echo 'side by side in one run; "tie" is within 0.25 of 1.00.'
	if [ -n "$(charts)" ]; then
		printf '\n## Charts\n\n'
		charts | while read -r png; do
			printf '![chart %s](%s)\n\n' "${png%.png}" "$png"
		done
	fi
	blocks md
	printf '\n## Files\n\n'
	for f in "$dir"/*-report.txt "$dir"/bench_*.txt "$dir"/*.csv; do
		[ -e "$f" ] && printf -- '- [%s](%s)\n' "${f##*/}" "${f##*/}"
	done
} >"$page.new"
mv "$page.new" "$page"

blocks text
