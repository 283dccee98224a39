// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex - tofutex_version() and tofutex_stats(): what the loaded
 * module offers and what it counted, the backend's ->version() and
 * ->stats() (backend.h; TOFUTEX_IOC_VERSION and _STATS on the module). On
 * the futex backend there is no module to ask: ENOTSUP.
 */
#include "backend.h"

int tofutex_version(uint32_t *abi_version, uint64_t *features)
{
	return tofutex__ops()->version(abi_version, features);
}

int tofutex_stats(uint32_t scope, struct tofutex_stats *out)
{
	if (!out)
		return EINVAL;
	return tofutex__ops()->stats(scope, out);
}
