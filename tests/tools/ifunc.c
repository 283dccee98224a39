// SPDX-License-Identifier: GPL-2.0
/*
 * An interposer that defines strlen() as an IFUNC, as string libraries
 * that pick an implementation per CPU do; its resolver calls getenv()
 * through its own PLT. Loaded before the drop-in, it must still run: the
 * drop-in binds its imports lazily (lib/bind.c says why), so the loader
 * never runs this resolver before this library is relocated.
 */
#include <stddef.h>
#include <stdlib.h>

static int tfx_ifunc_fast;

static size_t tfx_strlen(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

static size_t (*tfx_strlen_resolver(void))(const char *)
{
	tfx_ifunc_fast = getenv("TFX_IFUNC_FAST") != NULL;
	return tfx_strlen;
}

size_t strlen(const char *s) __attribute__((ifunc("tfx_strlen_resolver")));
