// SPDX-License-Identifier: GPL-2.0
/*
 * A plugin for test_pthread_glibc_code whose constructor stops inside
 * the dlopen() that loads it: when the environment names two
 * descriptors, TFX_PLUGIN_READY_FD and TFX_PLUGIN_WAIT_FD, it writes a
 * byte to the first and reads one from the second. The test holds a
 * thread there, inside glibc's loader, while it does something else.
 */
#include <stdlib.h>
#include <unistd.h>

static int tfx_env_fd(const char *name)
{
	const char *v = getenv(name);

	return v ? atoi(v) : -1;
}

__attribute__((constructor)) static void tfx_blocking_ctor(void)
{
	int ready = tfx_env_fd("TFX_PLUGIN_READY_FD");
	int wait = tfx_env_fd("TFX_PLUGIN_WAIT_FD");
	char c = 0;

	if (ready < 0 || wait < 0)
		return;
	if (write(ready, &c, 1) == 1 && read(wait, &c, 1) < 0)
		_exit(99);
}
