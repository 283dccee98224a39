// SPDX-License-Identifier: GPL-2.0
/*
 * A plugin for test_pthread_glibc_code: looks symbols up with
 * RTLD_DEFAULT and RTLD_NEXT from its own code, whose answers depend on
 * the calling object, and wraps getpid() the way interposing libraries
 * do, finding the real one with dlsym(RTLD_NEXT).
 */
#include <dlfcn.h>
#include <unistd.h>

int tfx_plugin_marker(void);
void *tfx_plugin_default(const char *name);
void *tfx_plugin_next(const char *name);

/* Defined here alone: RTLD_DEFAULT finds it from this object's scope. */
int tfx_plugin_marker(void)
{
	return 1;
}

/*
 * Not a tail call: glibc takes the calling object from dlsym()'s return
 * address, which must be in this object.
 */
void *tfx_plugin_default(const char *name)
{
	void *fn = dlsym(RTLD_DEFAULT, name);

	__asm__ volatile("" : : "r"(fn) : "memory");
	return fn;
}

void *tfx_plugin_next(const char *name)
{
	void *fn = dlsym(RTLD_NEXT, name);

	__asm__ volatile("" : : "r"(fn) : "memory");
	return fn;
}

pid_t getpid(void)
{
	pid_t (*next)(void) = (pid_t (*)(void))dlsym(RTLD_NEXT, "getpid");

	return next ? next() : -1;
}
