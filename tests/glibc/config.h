/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The config.h that glibc's configure would generate, reduced to what its
 * support/ library and the tests in tests.list read: built against the
 * installed glibc, not inside glibc's build tree (tests/glibc/build.sh).
 */
#ifndef TOFUTEX_GLIBC_TESTS_CONFIG_H
#define TOFUTEX_GLIBC_TESTS_CONFIG_H

/* configure --with-timeoutfactor: the environment's TIMEOUTFACTOR scales it. */
#define TIMEOUTFACTOR 1

/* glibc's own headers bring <limits.h> in everywhere (temp_file.c uses NAME_MAX). */
#include <limits.h>

#endif
