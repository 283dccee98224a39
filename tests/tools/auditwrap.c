// SPDX-License-Identifier: GPL-2.0
/*
 * libtfx-auditwrap.so - an LD_AUDIT module for tests/tools/run.sh that
 * wraps the program's mutex lock and unlock, as a lock tracer built on
 * the audit interface may: la_symbind64() hands back its own wrapper for
 * every binding of pthread_mutex_lock() and pthread_mutex_unlock() it is
 * shown (the program's, and since glibc 2.35 every dlsym() answer) and
 * keeps the last definition it was shown, which the wrapper calls. It
 * counts the locks on standard error at exit.
 */
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static int (*next_lock)(pthread_mutex_t *);
static int (*next_unlock)(pthread_mutex_t *);
static unsigned long locks;

unsigned int la_version(unsigned int version)
{
	return version < LAV_CURRENT ? version : LAV_CURRENT;
}

unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie)
{
	(void)map;
	(void)lmid;
	(void)cookie;
	return LA_FLG_BINDTO | LA_FLG_BINDFROM;
}

static int wrap_lock(pthread_mutex_t *m)
{
	__atomic_add_fetch(&locks, 1, __ATOMIC_RELAXED);
	return next_lock(m);
}

static int wrap_unlock(pthread_mutex_t *m)
{
	return next_unlock(m);
}

uintptr_t la_symbind64(Elf64_Sym *sym, unsigned int ndx, uintptr_t *refcook,
		       uintptr_t *defcook, unsigned int *flags,
		       const char *name)
{
	(void)ndx;
	(void)refcook;
	(void)defcook;
	(void)flags;
	if (!strcmp(name, "pthread_mutex_lock")) {
		next_lock = (int (*)(pthread_mutex_t *))sym->st_value;
		return (uintptr_t)wrap_lock;
	}
	if (!strcmp(name, "pthread_mutex_unlock")) {
		next_unlock = (int (*)(pthread_mutex_t *))sym->st_value;
		return (uintptr_t)wrap_unlock;
	}
	return sym->st_value;
}

__attribute__((destructor)) static void auditwrap_report(void)
{
	fprintf(stderr, "auditwrap: %lu locks\n", locks);
}
