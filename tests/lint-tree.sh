#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/lint-tree.sh - the tree describes the project, not its history.
#
# Fails, naming file and line, when a tracked source, test, script, man
# page or README cites a tracker item by its number (an issue, a session
# stop or an item of either), or narrates development ("before ... was fixed", "measured here"): a
# reader cannot check any of that against the tree. Numbers
# belong next to the command that reproduces them. `make check` runs this
# on the host before it boots any guest.
set -euo pipefail

cd "$(dirname "$0")/.."

patterns=(
	'\b(issue|stop|item|tracker item) [0-9]+'
	'\b(issue|tracker) #[0-9]+'
	'before [^.]* (was|were|got) fixed'
	'measured here'
)

files=$(git ls-files -- '*.c' '*.h' '*.sh' '*.md' Makefile Kbuild \
	'man/*' 'tests/qemu/*' '.ci/*' ':!tests/lint-tree.sh')
status=0
for p in "${patterns[@]}"; do
	# shellcheck disable=SC2086
	if grep -nHiE -- "$p" $files; then
		status=1
	fi
done
if [ "$status" != 0 ]; then
	echo "lint-tree: the lines above narrate history or cite tracker items;" >&2
	echo "  say what is true of the code, and where a number comes from." >&2
fi
exit "$status"
