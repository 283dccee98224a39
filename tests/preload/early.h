/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What plugin_early.c's library, which test_pthread_report is linked
 * with, does in its constructor, before the preload's constructor runs,
 * when EARLY_ENV is in the environment: EARLY_ROUNDS rounds, each of
 * one mutex and one condition variable initialised, one condition wait
 * that times out, and one contention of a mutex with the waiter asleep
 * in its lock. tfx_early() says how many rounds went so, on the
 * preload's locks (the holder's TID in the word), and @bad what went
 * wrong in the one that did not.
 */
#ifndef TOFUTEX_TESTS_PRELOAD_EARLY_H
#define TOFUTEX_TESTS_PRELOAD_EARLY_H

#define EARLY_ENV	"TOFUTEX_TEST_EARLY"
#define EARLY_ROUNDS	16

struct early {
	int bad;
	unsigned int rounds;
};

const struct early *tfx_early(void);

#endif /* TOFUTEX_TESTS_PRELOAD_EARLY_H */
