/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libtofutex-pthread - where a report written at exit goes (exit.c):
 * TOFUTEX_RUN_STATS's line (stats.c) and TOFUTEX_PROFILE's report
 * (profile.c). Opened at start, when the variable is read; written as
 * the process ends, by then the program may have closed the descriptor
 * and opened one of its own files under the same number (daemons close
 * every descriptor above 2): the descriptor is written only if it is
 * still the file opened at start, else a file is opened again by its
 * absolute path, and a duplicate of standard error that is gone is
 * given up. Only system calls at exit, so that _exit() from a signal
 * handler can write.
 */
#ifndef TOFUTEX_PTHREAD_REPORT_H
#define TOFUTEX_PTHREAD_REPORT_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "../internal.h"

struct tfx_report {
	int fd;			/* -1: not opened */
	dev_t dev;		/* what @fd was at start */
	ino_t ino;
	char path[PATH_MAX];	/* absolute; "": standard error's duplicate */
};

/* @value "1" (or @err_too, "all"): standard error; else a file. */
TOFUTEX_HIDDEN int tfx_report_open(struct tfx_report *r, const char *value,
				   bool err_too);
TOFUTEX_HIDDEN void tfx_report_write(struct tfx_report *r, const char *buf,
				     size_t len);

#endif /* TOFUTEX_PTHREAD_REPORT_H */
