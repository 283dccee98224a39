/* SPDX-License-Identifier: GPL-2.0 */
/*
 * How deep a function goes into a thread's stack: it runs in a fresh
 * thread whose stack was painted with a byte, and the bytes it wrote over
 * are counted from the bottom. Shared by the preload suites that compare
 * the stack the drop-in's paths take with glibc's.
 */
#ifndef TOFUTEX_TESTS_PRELOAD_STACK_DEPTH_H
#define TOFUTEX_TESTS_PRELOAD_STACK_DEPTH_H

#include "../common.h"

#define PAINT		0xa5
#define PAINT_STACK	(256 * 1024)

/* Bytes of a painted stack that a thread running @fn(@arg) wrote. */
static inline size_t stack_depth(void *(*fn)(void *), void *arg)
{
	unsigned char *stack = mmap(NULL, PAINT_STACK, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pthread_attr_t a;
	pthread_t t;
	size_t i;

	ck_assert(stack != MAP_FAILED);
	memset(stack, PAINT, PAINT_STACK);
	ck_assert_int_eq(pthread_attr_init(&a), 0);
	ck_assert_int_eq(pthread_attr_setstack(&a, stack, PAINT_STACK), 0);
	ck_assert_int_eq(pthread_create(&t, &a, fn, arg), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	pthread_attr_destroy(&a);
	for (i = 0; i < PAINT_STACK && stack[i] == PAINT; i++)
		;
	munmap(stack, PAINT_STACK);
	return PAINT_STACK - i;
}

#endif /* TOFUTEX_TESTS_PRELOAD_STACK_DEPTH_H */
