#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# lib/pthread/versions.sh LIBC MAP HEADER SOURCE... - the symbol versions
# of libtofutex-pthread.so, taken from the C library it is built against.
#
# Each pthread function the preload replaces (TFX_SELF(name) and
# TFX_COMPAT(name) in SOURCE...), and each loader function it interposes
# (dlsym, dlvsym, dlopen, dlmopen: TFX_ROUTE_STUB(name, ...) and
# TFX_ROUTE_STUB_3(name, ...)), is defined at every version at which
# LIBC defines that same function (the same address as its default
# version): pthread_rwlock_rdlock@@GLIBC_2.34 and @GLIBC_2.2.5 on x86-64,
# which binaries built against glibc 2.34 and later and before it call;
# pthread_cond_wait only @@GLIBC_2.3.2, since the @GLIBC_2.2.5 one is
# another function, for another object (glibc's condition variables
# before 2.3.2). So dlvsym() finds ours at each of glibc's versions, as
# the dynamic linker finds them for a program's references: a versioned
# lookup refuses unversioned definitions. A name LIBC has only as a compat
# symbol (__pthread_mutex_lock@GLIBC_2.2.5) is defined at that version as
# a compat symbol too (TFX_COMPAT_VERSIONS_name): what dlsym() cannot
# find in glibc it does not find here either. Other names LIBC does not
# have stay unversioned.
#
# Writes MAP, the version script (the default versions; libtofutex's own
# functions inside stay local), and HEADER, one macro TFX_VERSIONS_name a
# pthread function and TFX_DL_VERSIONS_name a loader function: the
# aliases of its other versions (preload.h, TFX_SELF and TFX_DL_VERSION);
# and for every name TFX_LIBC_VERSION_name, its default version in LIBC
# as a string (NULL if LIBC has none): the version whose definition after
# ours is glibc's (real.c, dlsym.c).
# READELF: the readelf to use (any binutils readelf reads any ELF).
set -eu

libc=$1 map=$2 header=$3
shift 3
readelf=${READELF:-readelf}

names=$(sed -n -e 's/^TFX_SELF(\([a-z_]*\));$/pthread_\1/p' \
	-e 's/^TFX_COMPAT(\([a-z_]*\));$/__pthread_\1/p' \
	-e 's/^TFX_ROUTE_STUB\(_3\)\{0,1\}(\([a-z]*\),.*$/\2/p' "$@" | sort -u)
[ -n "$names" ] || { echo "versions.sh: no TFX_SELF or TFX_COMPAT in $*" >&2; exit 1; }

# "name version address default" for LIBC's definitions of those names.
"$readelf" --dyn-syms -W "$libc" | awk -v names="$names" '
	BEGIN { n = split(names, list, /[ \n]/); for (i = 1; i <= n; i++) want[list[i]] = 1 }
	$7 != "UND" && $8 ~ /@/ {
		def = index($8, "@@") ? 1 : 0
		split($8, p, /@+/)
		if (p[1] in want)
			print p[1], p[2], $2, def
	}' >"$map.syms"

awk -v libc="$libc" -v mapfile="$map" -v hdrfile="$header" -v names="$names" '
	function dflt_of(f, v) {
		if (f in dflt)
			return dflt[f]
		split(substr(vers[f], 2), v, " ")
		return v[1]
	}
	{ addr[$1 " " $2] = $3; vers[$1] = vers[$1] " " $2
	  if ($4) dflt[$1] = $2; allv[$2] = 1 }
	END {
		n = split(names, list, /[ \n]/)
		for (i = 1; i <= n; i++) {
			f = list[i]
			if (!(f in vers))
				continue
			m = split(substr(vers[f], 2), v, " ")
			d = dflt_of(f)
			# A compat name stays at its hidden version (preload.h).
			if (f !~ /^__pthread_/)
				node[d] = node[d] "\t\t" f ";\n"
			for (j = 1; j <= m; j++)
				if (v[j] != d && addr[f " " v[j]] == addr[f " " d])
					alias[f] = alias[f] " " v[j]
		}
		print "/* Written by lib/pthread/versions.sh from " libc ". */" >mapfile
		first = 1
		for (ver in allv) order[++nv] = ver
		# The nodes in a stable order (their names sort as versions do not
		# matter to the linker; only stable output does).
		for (i = 1; i <= nv; i++)
			for (j = i + 1; j <= nv; j++)
				if (order[j] < order[i]) { t = order[i]; order[i] = order[j]; order[j] = t }
		for (i = 1; i <= nv; i++) {
			ver = order[i]
			printf "%s {\n", ver >mapfile
			if (ver in node)
				printf "\tglobal:\n%s", node[ver] >mapfile
			if (first)
				printf "\tlocal:\n\t\ttofutex_*;\n\t\ttfx_*;\n" >mapfile
			first = 0
			printf "};\n" >mapfile
		}
		if (!nv)
			printf "TOFUTEX_PTHREAD {\n\tlocal:\n\t\ttofutex_*;\n\t\ttfx_*;\n};\n" >mapfile
		print "/* Written by lib/pthread/versions.sh from " libc ". */" >hdrfile
		for (i = 1; i <= n; i++) {
			f = list[i]
			printf "#define TFX_LIBC_VERSION_%s %s\n", f,
			       (f in vers) ? "\"" dflt_of(f) "\"" : "NULL" >hdrfile
			if (f ~ /^__pthread_/) {
				s = substr(f, 11)
				print "#define TFX_COMPAT_VERSIONS_" s " " \
				      ((f in vers) ? "TFX_COMPAT_VERSION(" s ", \"" dflt_of(f) "\")" : \
				       "TFX_NO_VERSIONS") >hdrfile
				continue
			}
			if (f ~ /^pthread_/) {
				s = substr(f, 9)
				line = "#define TFX_VERSIONS_" s
				mac = "TFX_VERSION"
			} else if (f ~ /^dl/) {
				s = f
				line = "#define TFX_DL_VERSIONS_" s
				mac = "TFX_DL_VERSION"
			} else {
				continue
			}
			m = split(substr(alias[f], 2), a, " ")
			if (!m)
				line = line " TFX_NO_VERSIONS"
			for (j = 1; j <= m; j++) {
				tag = a[j]; gsub(/\./, "_", tag)
				line = line (j > 1 ? ";" : "") " \\\n\t" mac "(" s ", " tag ", \"" a[j] "\")"
			}
			print line >hdrfile
		}
	}' "$map.syms"
rm -f "$map.syms"
