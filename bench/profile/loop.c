// SPDX-License-Identifier: GPL-2.0
/*
 * bench/profile/loop.c THREADS PAIRS - THREADS threads lock and unlock one
 * pthread mutex PAIRS times in all (a counter increment inside), then
 * print the wall time per pair. Dynamically linked (the Makefile's
 * build/bench/bin/profile-loop), so that bench/profile-cost.sh can run it
 * stock and under tofutex-run, with and without TOFUTEX_PROFILE; 1
 * thread is the uncontended fast path, 2 and more contend.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long counter;
static unsigned long pairs_each;

static void *worker(void *arg)
{
	unsigned long i;

	for (i = 0; i < pairs_each; i++) {
		pthread_mutex_lock(&lock);
		counter++;
		pthread_mutex_unlock(&lock);
	}
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t t[64];
	struct timespec a, b;
	unsigned long threads, i;
	double ns;

	if (argc != 3 || (threads = strtoul(argv[1], NULL, 10)) < 1 ||
	    threads > 64) {
		fprintf(stderr, "usage: %s THREADS(1-64) PAIRS\n", argv[0]);
		return 2;
	}
	pairs_each = strtoul(argv[2], NULL, 10) / threads;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 1; i < threads; i++)
		if (pthread_create(&t[i], NULL, worker, NULL))
			return 1;
	worker(NULL);
	for (i = 1; i < threads; i++)
		pthread_join(t[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
	printf("threads=%lu pairs=%lu ns_per_pair=%.2f\n", threads,
	       pairs_each * threads,
	       pairs_each ? ns / (double)(pairs_each * threads) : 0.0);
	return counter == pairs_each * threads ? 0 : 1;
}
