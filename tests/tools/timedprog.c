// SPDX-License-Identifier: GPL-2.0
/*
 * A timed lock of a mutex that the main thread holds for a second, with
 * a deadline 100 ms away by the real clock (read with the system call,
 * whatever clock_gettime() says): prints what pthread_mutex_timedlock()
 * returned, ETIMEDOUT as glibc's does.
 *
 * "timedprog cond": a condition wait with a deadline 200 ms away by the
 * clock the program sees (clock_gettime(), which faketime moves, as it
 * moves the deadline pthread_cond_timedwait() is given): prints what it
 * returned; an alarm ends the program after 10 s instead.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static void *locker(void *arg)
{
	struct timespec ts;
	int r;

	syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts);
	ts.tv_nsec += 100000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	r = pthread_mutex_timedlock(&m, &ts);
	*(int *)arg = r;
	if (!r)
		pthread_mutex_unlock(&m);
	return NULL;
}

static int cond_wait_200ms(void)
{
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	struct timespec ts;
	int r;

	alarm(10);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 200000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&m);
	r = pthread_cond_timedwait(&c, &m, &ts);
	pthread_mutex_unlock(&m);
	printf("cond: %s\n", r == ETIMEDOUT ? "ETIMEDOUT" : r == 0 ? "0" : "other");
	return 0;
}

int main(int argc, char **argv)
{
	struct timespec hold = { 1, 0 };
	pthread_t t;
	int r = -1;

	if (argc > 1 && argv[1][0] == 'c')
		return cond_wait_200ms();
	pthread_mutex_lock(&m);
	if (pthread_create(&t, NULL, locker, &r))
		return 1;
	nanosleep(&hold, NULL);
	pthread_mutex_unlock(&m);
	pthread_join(t, NULL);
	printf("timedlock: %s\n", r == ETIMEDOUT ? "ETIMEDOUT" :
	       r == 0 ? "0" : "other");
	return 0;
}
