// SPDX-License-Identifier: GPL-2.0
/*
 * A clock_gettime() interposer as tracers and time virtualisers are: it
 * looks the real function up in its constructor (so it must not be
 * called before that runs) and does its bookkeeping under a pthread
 * mutex, which clockprog's threads contend for (so the drop-in's own
 * contended path must not call it back).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

static int (*tfx_real_clock)(clockid_t, struct timespec *);
static pthread_mutex_t tfx_clock_lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((constructor)) static void tfx_clockshim_start(void)
{
	tfx_real_clock = (int (*)(clockid_t, struct timespec *))
		dlsym(RTLD_NEXT, "clock_gettime");
}

int clock_gettime(clockid_t clock, struct timespec *ts)
{
	volatile unsigned int i;
	int ret;

	pthread_mutex_lock(&tfx_clock_lock);
	ret = tfx_real_clock(clock, ts);
	for (i = 0; i < 20000; i++)
		;
	pthread_mutex_unlock(&tfx_clock_lock);
	return ret;
}
