// SPDX-License-Identifier: GPL-2.0
/*
 * A plugin for test_pthread_glibc_code that needs plugin_nested.c's
 * library (DT_NEEDED) and finds it, and what it loads by a bare name,
 * through its RUNPATH ($ORIGIN): a dependency loaded with it, and a
 * dlopen() whose answer depends on the calling object.
 */
#include <dlfcn.h>

void *tfx_runpath_dlopen(const char *name, int mode);

/* Not a tail call: glibc takes the calling object from the return address. */
void *tfx_runpath_dlopen(const char *name, int mode)
{
	void *h = dlopen(name, mode);

	__asm__ volatile("" : : "r"(h) : "memory");
	return h;
}
