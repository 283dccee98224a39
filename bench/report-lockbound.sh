#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/report-lockbound.sh [-o DIR] FILE - the lock-bound programs' table
# (bench_lockbound.txt from the guest or bench/programs-native.sh -l):
# bench/report-programs.sh's table, the targets its "targets:" line names.
exec "$(dirname "$0")/report-programs.sh" "$@"
