// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Producer/consumer on a tofutex mutex and condition variable: one
 * producer fills a bounded ring, two consumers empty it; the sum of what
 * they consumed must equal the sum produced.
 *
 *   cc -o prodcons prodcons.c $(pkg-config --cflags --libs tofutex)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tofutex.h>

#define RING      16
#define ITEMS     100000
#define CONSUMERS 2

static tofutex_mutex_t lock = TOFUTEX_MUTEX_INITIALIZER;
static tofutex_cond_t not_empty = TOFUTEX_COND_INITIALIZER;
static tofutex_cond_t not_full = TOFUTEX_COND_INITIALIZER;
static long ring[RING];
static unsigned int head, tail;    /* tail - head items are in the ring */
static int done;

static void check(const char *what, int err)
{
	if (err != 0) {
		fprintf(stderr, "%s: %s\n", what, strerror(err));
		exit(EXIT_FAILURE);
	}
}

static void *producer(void *arg)
{
	(void)arg;
	for (long i = 1; i <= ITEMS; i++) {
		check("lock", tofutex_mutex_lock(&lock));
		while (tail - head == RING)
			check("wait", tofutex_cond_wait(&not_full, &lock));
		ring[tail++ % RING] = i;
		check("signal", tofutex_cond_signal(&not_empty));
		check("unlock", tofutex_mutex_unlock(&lock));
	}
	check("lock", tofutex_mutex_lock(&lock));
	done = 1;
	check("broadcast", tofutex_cond_broadcast(&not_empty));
	check("unlock", tofutex_mutex_unlock(&lock));
	return NULL;
}

static void *consumer(void *arg)
{
	long *sum = arg;

	for (;;) {
		check("lock", tofutex_mutex_lock(&lock));
		while (tail == head && !done)
			check("wait", tofutex_cond_wait(&not_empty, &lock));
		if (tail == head) {
			check("unlock", tofutex_mutex_unlock(&lock));
			return NULL;
		}
		*sum += ring[head++ % RING];
		check("signal", tofutex_cond_signal(&not_full));
		check("unlock", tofutex_mutex_unlock(&lock));
	}
}

int main(void)
{
	pthread_t p, c[CONSUMERS];
	long sums[CONSUMERS] = { 0 }, total = 0;

	pthread_create(&p, NULL, producer, NULL);
	for (int i = 0; i < CONSUMERS; i++)
		pthread_create(&c[i], NULL, consumer, &sums[i]);
	pthread_join(p, NULL);
	for (int i = 0; i < CONSUMERS; i++) {
		pthread_join(c[i], NULL);
		total += sums[i];
	}
	printf("consumed %ld, expected %ld (backend: %s)\n", total,
	       (long)ITEMS * (ITEMS + 1) / 2,
	       tofutex_backend() == TOFUTEX_BACKEND_MODULE ? "module" : "futex");
	return total == (long)ITEMS * (ITEMS + 1) / 2 ? EXIT_SUCCESS : EXIT_FAILURE;
}
