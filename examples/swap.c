// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Ping-pong with tofutex_swap(): two threads hand a turn back and forth;
 * each wakes the other and goes to sleep in one call. With the module the
 * woken thread runs on the caller's CPU; on the futex backend the swap is
 * a wake followed by a wait, with the same result.
 *
 *   cc -o swap swap.c $(pkg-config --cflags --libs tofutex)
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tofutex.h>

#define ROUNDS 10000

/* turn[i] is 1 while thread i may run; the other thread sleeps on its own. */
static uint32_t turn[2] = { 1, 0 };
static long rounds[2];

static void *player(void *arg)
{
	int me = (int)(intptr_t)arg, other = !me;

	for (int i = 0; i < ROUNDS; i++) {
		while (__atomic_load_n(&turn[me], __ATOMIC_ACQUIRE) == 0) {
			int err = tofutex_wait(&turn[me], 0, NULL);

			if (err != 0 && err != EAGAIN && err != EINTR) {
				fprintf(stderr, "tofutex_wait: %s\n", strerror(err));
				exit(EXIT_FAILURE);
			}
		}
		rounds[me]++;
		__atomic_store_n(&turn[me], 0, __ATOMIC_RELAXED);
		__atomic_store_n(&turn[other], 1, __ATOMIC_RELEASE);
		/* Wake the other player and sleep until it is our turn again. */
		int err = tofutex_swap(&turn[me], 0, &turn[other], NULL);

		if (err != 0 && err != EAGAIN && err != EINTR) {
			fprintf(stderr, "tofutex_swap: %s\n", strerror(err));
			exit(EXIT_FAILURE);
		}
	}
	/* The other player may wait for one more turn: give it. */
	__atomic_store_n(&turn[other], 1, __ATOMIC_RELEASE);
	tofutex_wake(&turn[other], 1, NULL);
	return NULL;
}

int main(void)
{
	pthread_t t[2];

	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, player, (void *)(intptr_t)i);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("%ld and %ld rounds, expected %d each\n", rounds[0], rounds[1],
	       ROUNDS);
	return rounds[0] == ROUNDS && rounds[1] == ROUNDS ? EXIT_SUCCESS :
							    EXIT_FAILURE;
}
