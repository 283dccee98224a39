// SPDX-License-Identifier: GPL-2.0
/*
 * bench_lock - the implementations and unit kinds by name, setting a lock
 * up and tearing it down (the lock and unlock paths are inline, in
 * locks.h), and the one way a part gives up. Called only while no worker
 * thread runs, apart from die(), which any thread may call.
 */
#include <stdarg.h>
#include <stdlib.h>

#include "locks.h"

struct impl_info impls[NR_IMPLS] = {
	[IMPL_TOFUTEX]	= { "tofutex", "tofutex_mutex_t (libtofutex, /dev/tofutex)" },
	[IMPL_PTHREAD]	= { "pthread", "glibc pthread_mutex_t, default type" },
	[IMPL_ADAPTIVE]	= { "adaptive", "glibc PTHREAD_MUTEX_ADAPTIVE_NP (spins, then futex)" },
	[IMPL_PI]	= { "pi", "glibc PTHREAD_PRIO_INHERIT (FUTEX_LOCK_PI)" },
	[IMPL_FUTEX3]	= { "futex3", "three-state futex mutex, Drepper's mutex3" },
	[IMPL_TAS]	= { "tas", "test-and-test-and-set spinlock, pause while spinning" },
	[IMPL_NONE]	= { "none", "no lock (not in \"all\"): shows the counter check at\n"
			    "                                   work; threads that overlap lose counts, exit 2" },
};

const char *const unit_names[NR_UNITS] = {
	[UNIT_PAUSE] = "pause",
	[UNIT_LOOP] = "loop",
};

const char *const cs_kind_names[NR_CS_KINDS] = {
	[CS_PLAIN] = "plain",
	[CS_SLEEP] = "sleep",
	[CS_FAULT] = "fault",
};

unsigned long loop_iters;

void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("bench_lock: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

void lock_init(enum impl_id impl, struct bench_lock *l)
{
	pthread_mutexattr_t attr;
	int err = 0;

	memset(l, 0, sizeof(*l));
	switch (impl) {
	case IMPL_TOFUTEX:
		err = tofutex_mutex_init(&l->u.tofutex);
		break;
	case IMPL_PTHREAD:
		err = pthread_mutex_init(&l->u.pthread, NULL);
		break;
	case IMPL_ADAPTIVE:
	case IMPL_PI:
		err = pthread_mutexattr_init(&attr);
		if (!err && impl == IMPL_ADAPTIVE)
			err = pthread_mutexattr_settype(&attr,
					PTHREAD_MUTEX_ADAPTIVE_NP);
		if (!err && impl == IMPL_PI)
			err = pthread_mutexattr_setprotocol(&attr,
					PTHREAD_PRIO_INHERIT);
		if (!err)
			err = pthread_mutex_init(&l->u.pthread, &attr);
		pthread_mutexattr_destroy(&attr);
		break;
	case IMPL_FUTEX3:
	case IMPL_TAS:
	case IMPL_NONE:
	case IMPL_SPIN_FIRST:
	case NR_IMPLS:
		break;
	}
	if (err)
		die("%s: init: %s", impls[impl].name, strerror(err));
}

void lock_destroy(enum impl_id impl, struct bench_lock *l)
{
	int err = 0;

	if (impl == IMPL_TOFUTEX)
		err = tofutex_mutex_destroy(&l->u.tofutex);
	else if (impl == IMPL_PTHREAD || impl == IMPL_ADAPTIVE ||
		 impl == IMPL_PI)
		err = pthread_mutex_destroy(&l->u.pthread);
	if (err)
		die("%s: destroy: %s", impls[impl].name, strerror(err));
}
