// SPDX-License-Identifier: GPL-2.0
/*
 * lockcost API KIND OP N - N uncontended lock operations in one thread,
 * for bench/lockcost.sh, which counts their instructions with callgrind
 * (collecting only inside measure()) and divides by N.
 *
 * API: pthread (glibc's, or tofutex's under tofutex-run's preload) or
 * tofutex (tofutex_mutex_* and tofutex_rwlock_*, linked in statically).
 * KIND: normal, errorcheck, recursive, adaptive (pthread mutex types),
 * mutex (the tofutex mutex), rdlock or wrlock (the rwlock, default
 * attributes). OP: lock (lock + unlock), trylock (trylock + unlock) or
 * relock (a recursive mutex locked once outside, then lock + unlock
 * inside: the nested case). measure() checks every return value and
 * exits 1 on any error, so a count is never that of a failing call.
 *
 * Lifetimes: the lock objects are static and live for the whole run.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tofutex.h>

static pthread_mutex_t pm;
static pthread_rwlock_t prw;
static tofutex_mutex_t tm = TOFUTEX_MUTEX_INITIALIZER;
static tofutex_rwlock_t trw = TOFUTEX_RWLOCK_INITIALIZER;

enum api { API_PTHREAD, API_TOFUTEX };
enum kind { K_MUTEX, K_RD, K_WR };
enum op { OP_LOCK, OP_TRY, OP_RELOCK };

static int lock_once(enum api api, enum kind kind, enum op op)
{
	int try = op == OP_TRY;

	if (api == API_PTHREAD) {
		if (kind == K_RD)
			return try ? pthread_rwlock_tryrdlock(&prw) : pthread_rwlock_rdlock(&prw);
		if (kind == K_WR)
			return try ? pthread_rwlock_trywrlock(&prw) : pthread_rwlock_wrlock(&prw);
		return try ? pthread_mutex_trylock(&pm) : pthread_mutex_lock(&pm);
	}
	if (kind == K_RD)
		return try ? tofutex_rwlock_tryrdlock(&trw) : tofutex_rwlock_rdlock(&trw);
	if (kind == K_WR)
		return try ? tofutex_rwlock_trywrlock(&trw) : tofutex_rwlock_wrlock(&trw);
	return try ? tofutex_mutex_trylock(&tm) : tofutex_mutex_lock(&tm);
}

static int unlock_once(enum api api, enum kind kind)
{
	if (api == API_PTHREAD)
		return kind == K_MUTEX ? pthread_mutex_unlock(&pm) : pthread_rwlock_unlock(&prw);
	return kind == K_MUTEX ? tofutex_mutex_unlock(&tm) : tofutex_rwlock_unlock(&trw);
}

/* The loop callgrind counts (--toggle-collect=measure). */
__attribute__((noinline)) static int measure(enum api api, enum kind kind, enum op op, long n)
{
	long i;

	for (i = 0; i < n; i++)
		if (lock_once(api, kind, op) || unlock_once(api, kind))
			return -1;
	return 0;
}

static int set_kind(const char *name)
{
	static const struct {
		const char *name;
		int type;
	} types[] = {
		{ "normal", PTHREAD_MUTEX_NORMAL },
		{ "errorcheck", PTHREAD_MUTEX_ERRORCHECK },
		{ "recursive", PTHREAD_MUTEX_RECURSIVE },
		{ "adaptive", PTHREAD_MUTEX_ADAPTIVE_NP },
	};
	pthread_mutexattr_t a;
	size_t i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcmp(name, types[i].name)) {
			pthread_mutexattr_init(&a);
			pthread_mutexattr_settype(&a, types[i].type);
			return pthread_mutex_init(&pm, &a);
		}
	return -1;
}

int main(int argc, char **argv)
{
	enum api api;
	enum kind kind = K_MUTEX;
	enum op op;
	long n;

	if (argc != 5 || (n = atol(argv[4])) < 1)
		goto usage;
	api = !strcmp(argv[1], "tofutex") ? API_TOFUTEX : API_PTHREAD;
	if (strcmp(argv[1], "tofutex") && strcmp(argv[1], "pthread"))
		goto usage;
	op = !strcmp(argv[3], "trylock") ? OP_TRY : !strcmp(argv[3], "relock") ? OP_RELOCK : OP_LOCK;
	if (strcmp(argv[3], "lock") && op == OP_LOCK)
		goto usage;
	if (!strcmp(argv[2], "rdlock") || !strcmp(argv[2], "wrlock")) {
		kind = argv[2][0] == 'r' ? K_RD : K_WR;
		pthread_rwlock_init(&prw, NULL);
	} else if (strcmp(argv[2], "mutex") ? api == API_TOFUTEX || set_kind(argv[2])
					   : api == API_PTHREAD) {
		goto usage;
	}
	if (op == OP_RELOCK && (kind != K_MUTEX || api != API_PTHREAD ||
				strcmp(argv[2], "recursive") || pthread_mutex_lock(&pm)))
		goto usage;
	if (measure(api, kind, op, n)) {
		fprintf(stderr, "lockcost: %s %s %s: a call failed\n", argv[1], argv[2], argv[3]);
		return 1;
	}
	return 0;
usage:
	fprintf(stderr, "usage: lockcost pthread|tofutex normal|errorcheck|recursive|adaptive|"
		"mutex|rdlock|wrlock lock|trylock|relock N\n");
	return 2;
}
