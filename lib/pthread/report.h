/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libtofutex-pthread - where a report written at exit goes (report.c):
 * TOFUTEX_RUN_STATS's line (stats.c) and TOFUTEX_PROFILE's report
 * (profile.c). The variable is read at start; nothing is opened then
 * that could outlive the program's own use of it:
 *
 * - A file (any value but "1", or "all" for the statistics) is named
 *   by its absolute path, taken at start (relative to the working
 *   directory then), and opened only by the process that writes a
 *   report, as it ends: O_APPEND | O_CREAT, O_NOFOLLOW (a symbolic link
 *   there, dangling or not, is refused rather than followed), at a
 *   descriptor above 2, written once and closed. A file that cannot be
 *   opened then is said on standard error, once, by that process. So is
 *   a process that has confined itself with a seccomp filter since it
 *   started (a fork child of one that did): the filter may kill the
 *   process for the open(), as the program, which opens nothing then,
 *   does not expect; such a process writes no file. A process that
 *   starts under a filter already (a container's, a service manager's)
 *   may add its own, which prctl() cannot tell apart: it opens a regular
 *   file at start instead and keeps it (close-on-exec, inherited by its
 *   fork children), and writes it at exit if the descriptor is still
 *   that file (else none, and says so); so does one whose filter hides
 *   the mode (PR_GET_SECCOMP fails with another error than a kernel
 *   without seccomp's EINVAL). A FIFO, a socket or a device, which
 *   it does not keep open (a FIFO's reader would wait for it), is not
 *   written there (it says so).
 * - Standard error ("1"): a pipe or a socket is written as it ends only
 *   if descriptor 2 is still that same pipe or socket; no duplicate is
 *   kept, so a daemon that leaves its caller's pipe holds nothing of it
 *   open. Anything else (a terminal, a file, /dev/null) is duplicated at
 *   start, above 2 and close-on-exec, as programs such as sort(1) close
 *   standard error before their exit handlers end; the duplicate is
 *   written only if it is still the file seen at start (a program that
 *   closes every descriptor may reuse its number).
 *
 * Only system calls at exit, so that _exit() from a signal handler can
 * write.
 */
#ifndef TOFUTEX_PTHREAD_REPORT_H
#define TOFUTEX_PTHREAD_REPORT_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "../internal.h"

struct tfx_report {
	const char *what;	/* the variable, for a message */
	int fd;			/* standard error's duplicate, the file kept, or -1 */
	bool err;		/* standard error, else the file @path */
	dev_t dev;		/* what standard error was at start */
	ino_t ino;
	dev_t file_dev;		/* what the file kept open is */
	ino_t file_ino;
	bool kept;		/* the file was kept open at start */
	int keep_err;		/* else why: open()'s errno, 0 if not regular */
	int seccomp;		/* PR_GET_SECCOMP's mode at start */
	char path[PATH_MAX];	/* the file's absolute path */
};

/*
 * The variable @what's @value "1" (or, with @err_too, "all"): standard
 * error; else a file. 0, or an errno when it cannot be named or seen.
 */
TOFUTEX_HIDDEN int tfx_report_open(struct tfx_report *r, const char *what,
				   const char *value, bool err_too);
TOFUTEX_HIDDEN void tfx_report_write(struct tfx_report *r, const char *buf,
				     size_t len);

#endif /* TOFUTEX_PTHREAD_REPORT_H */
