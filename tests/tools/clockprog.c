// SPDX-License-Identifier: GPL-2.0
/*
 * Four threads that read the clock and take a mutex, over and over, so
 * that clockshim.c's lock is contended from the start. Prints "ok".
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static unsigned long count;

static void *worker(void *arg)
{
	struct timespec ts;
	int i;

	(void)arg;
	for (i = 0; i < 500; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		pthread_mutex_lock(&m);
		count++;
		pthread_mutex_unlock(&m);
	}
	return NULL;
}

int main(void)
{
	pthread_t t[4];
	int i;

	for (i = 0; i < 4; i++)
		if (pthread_create(&t[i], NULL, worker, NULL))
			return 1;
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	printf("ok %lu\n", count);
	return 0;
}
