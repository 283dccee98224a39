#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# man/pages.sh - the per-function manual pages and the manual page lint.
#
#   pages.sh funcs       the public functions: every function declared in
#                        lib/tofutex.h, one per line
#   pages.sh stage DIR   the installable manual tree: man/*.[1-8] copied to
#                        DIR/man<section>/, and DIR/man3/<function>.3 for each
#                        public function, a one-line page ".so man3/tofutex.3"
#                        so that `man tofutex_mutex_lock` finds tofutex(3);
#                        link pages of functions that are gone are removed
#   pages.sh lint DIR    groff -ww and mandoc -Tlint on every page of a staged
#                        DIR; any warning fails. Every function must also be
#                        named in tofutex(3)'s NAME section and declared in its
#                        SYNOPSIS, so a new function cannot ship undocumented.
#
# The function list comes from the header, so a function added there gets
# its link page without an edit here.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
header=$top/lib/tofutex.h
page3=$top/man/tofutex.3

# A declaration starts at the beginning of a line with its return type
# ("int", "uint32_t", "static inline int", ...) and has the name right
# before the "(": comment lines start with "/" or " *" and never match.
funcs() {
	sed -n 's/^[a-z][a-z0-9_ ]*[ *]\(tofutex_[a-z0-9_]*\)(.*/\1/p' "$header" |
		sort -u
}

stage() {
	dir=$1
	list=$(funcs)
	[ -n "$list" ] || { echo "pages.sh: no functions in $header" >&2; exit 1; }
	for p in "$top"/man/*.[1-8]; do
		mkdir -p "$dir/man${p##*.}"
		cp -p "$p" "$dir/man${p##*.}/"
	done
	for f in "$dir"/man3/tofutex_*.3; do
		[ -e "$f" ] || continue
		printf '%s\n' "$list" | grep -qx "$(basename "$f" .3)" || rm -f "$f"
	done
	for n in $list; do
		printf '%s\n' '.so man3/tofutex.3' >"$dir/man3/$n.3"
	done
}

# documented NAME: fails unless tofutex(3) names every function in its NAME
# section and declares it in its SYNOPSIS.
documented() {
	name=$(sed -n '/^\.SH NAME/,/^\.SH/p' "$page3")
	synopsis=$(sed -n '/^\.SH SYNOPSIS/,/^\.SH/p' "$page3")
	undoc=0
	for n in $(funcs); do
		if ! printf '%s\n' "$name" | grep -qw "$n"; then
			echo "man/tofutex.3: NAME does not list $n (lib/tofutex.h declares it)" >&2
			undoc=1
		fi
		if ! printf '%s\n' "$synopsis" | grep -q "[ *]$n("; then
			echo "man/tofutex.3: SYNOPSIS does not declare $n()" >&2
			undoc=1
		fi
	done
	return $undoc
}

# is_link PAGE: whether PAGE is a one-line .so page.
is_link() {
	[ "$(sed -n '1{/^\.so /p};2q' "$1")" ] && [ "$(wc -l <"$1")" = 1 ]
}

lint() {
	dir=$1
	for tool in groff mandoc; do
		command -v $tool >/dev/null ||
			{ echo "pages.sh: $tool is missing (tests/deps.sh man)" >&2; exit 1; }
	done
	bad=0
	count=0
	# From the top of the tree, so that ".so man3/tofutex.3" resolves as it
	# does for man(1).
	cd "$dir"
	for p in man*/*.[1-8]; do
		count=$((count + 1))
		# A link page is as good as the page it names.
		if is_link "$p"; then
			target=$(sed 's/^\.so //' "$p")
			[ -f "$target" ] || { echo "$p: .so to missing $target" >&2; bad=1; }
			continue
		fi
		# Preprocessors as man(1) runs them, from the page's '\" line
		# (tbl for tofutex.3).
		pre=$(sed -n "1s/^'\\\\\" //p" "$p" | sed 's/./-& /g')
		# shellcheck disable=SC2086 # $pre is a list of options
		out=$(groff -ww -z -man -Tutf8 $pre "$p" 2>&1) || bad=1
		[ -z "$out" ] || { printf '%s\n' "$out" >&2; bad=1; }
		out=$(mandoc -Tlint -W warning "$p" 2>&1) || bad=1
		[ -z "$out" ] || { printf '%s\n' "$out" >&2; bad=1; }
	done
	cd - >/dev/null
	documented || bad=1
	[ $bad = 0 ] || { echo "pages.sh: manual pages have warnings (above)" >&2; exit 1; }
	echo "man: $count pages clean (groff -ww, mandoc -Tlint), every function of lib/tofutex.h in tofutex(3)"
}

case ${1-} in
funcs) funcs ;;
stage|lint)
	[ $# = 2 ] || { echo "usage: $0 $1 DIR" >&2; exit 2; }
	"$1" "$2"
	;;
*) echo "usage: $0 funcs | stage DIR | lint DIR" >&2; exit 2 ;;
esac
