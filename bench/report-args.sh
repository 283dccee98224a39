# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/report-args.sh - sourced by bench/report-*.sh: their common command
# line, "[-o DIR] FILE". Sets $in (FILE, readable) and $outdir (DIR, default
# FILE's directory; created), or exits with a usage or read error.

report_usage() {
	echo "usage: ${0##*/} [-o DIR] FILE" >&2
	exit 2
}

outdir=
while getopts "o:h" opt; do
	case $opt in
	o) outdir=$OPTARG ;;
	*) report_usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || report_usage
in=$1
[ -r "$in" ] || { echo "${0##*/}: cannot read $in" >&2; exit 1; }
[ -n "$outdir" ] || outdir=$(dirname "$in")
mkdir -p "$outdir"
