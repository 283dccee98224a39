#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The pthread preload built under ThreadSanitizer, for its suites run
# with it preloaded ahead of TSan's runtime (make check-native) and for
# tests/tsan/weaken.sh. Ahead: the suites' calls reach the preload's
# functions, not TSan's interceptors, which would model every lock as a
# correct one whatever runs behind them; so TSan orders the suites' data
# only by the atomics of the lock words, in the preload's code and in
# libtofutex's, both instrumented here.
#
# Not instrumented: the preload's dlsym() and what it resolves with
# (dlsym.c, deepbind.c, elfsym.c). TSan's runtime calls dlsym() while it
# starts, before it can record anything; instrumented, that code would
# enter TSan first. It orders no lock word.
#
# The library is named as the installed one: the suites check by that
# name that their calls are the preload's.
#
# usage: tests/tsan/build-preload.sh LIBDIR GENDIR INCDIR OUT
#   LIBDIR  a tree's lib/ (weaken.sh passes a weakened copy)
#   GENDIR  the preload's version script and aliases (build/lib/pthread-gen)
#   INCDIR  the uapi include directory (build/include)
#   OUT     the library to write: .../libtofutex-pthread.so.N
set -eu
libdir=$1 gen=$2 inc=$3 out=$4
cc=${CC:-gcc}
objs=$(mktemp -d)
trap 'rm -rf "$objs"' EXIT

for src in "$libdir"/*.c "$libdir"/pthread/*.c; do
	case ${src##*/} in
	tofutex-run.c) continue ;;
	dlsym.c | deepbind.c | elfsym.c) tsan= ;;
	*) tsan=-fsanitize=thread ;;
	esac
	obj=$objs/$(basename "$(dirname "$src")")-$(basename "$src" .c).o
	"$cc" -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -pthread \
		-I"$inc" -I"$libdir" -I"$gen" -O1 -g -fPIC $tsan \
		-c -o "$obj" "$src"
done
mkdir -p "$(dirname "$out")"
"$cc" -shared -pthread -fsanitize=thread \
	-Wl,-soname,"${out##*/}" -Wl,-z,defs \
	-Wl,--version-script="$gen/libtofutex-pthread.map" \
	-o "$out" "$objs"/*.o
