// SPDX-License-Identifier: GPL-2.0
/*
 * A plugin for test_pthread_glibc_code whose constructor loads
 * plugin_nested.c's library, from its own directory, with RTLD_DEEPBIND:
 * a dlopen() made inside the loader, while glibc's loader lock is held by
 * the dlopen() of this plugin. Its handle stays open with this plugin
 * (closed by the destructor).
 */
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

void *tfx_ctor_nested(void);

static void *nested;

void *tfx_ctor_nested(void)
{
	return nested;
}

__attribute__((constructor)) static void tfx_ctor_load(void)
{
	char self[PATH_MAX], path[PATH_MAX + 32];
	Dl_info info;

	if (!dladdr((void *)tfx_ctor_load, &info) || !info.dli_fname ||
	    strlen(info.dli_fname) >= sizeof(self))
		return;
	strcpy(self, info.dli_fname);
	snprintf(path, sizeof(path), "%s/libtfx-plugin-nested.so",
		 dirname(self));
	nested = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
}

__attribute__((destructor)) static void tfx_ctor_unload(void)
{
	if (nested)
		dlclose(nested);
}
