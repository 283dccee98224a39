// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex - tofutex_version() and tofutex_stats(): what the loaded
 * module offers and what it counted (TOFUTEX_IOC_VERSION, _STATS). On the
 * futex backend there is no module to ask: ENOTSUP.
 */
#include <string.h>

#include "internal.h"

int tofutex_version(uint32_t *abi_version, uint64_t *features)
{
	struct tofutex_version arg;
	int err;

	if (tofutex__on_futex())
		return ENOTSUP;
	memset(&arg, 0, sizeof(arg));
	err = tofutex__ioctl(TOFUTEX_IOC_VERSION, &arg, NULL);
	if (err)
		return err;
	if (abi_version)
		*abi_version = arg.abi_version;
	if (features)
		*features = arg.features;
	return 0;
}

int tofutex_stats(uint32_t scope, struct tofutex_stats *out)
{
	struct tofutex_stats arg;
	int err;

	if (!out)
		return EINVAL;
	if (tofutex__on_futex())
		return ENOTSUP;
	/* Reserved and padding fields must reach the kernel as zero. */
	memset(&arg, 0, sizeof(arg));
	arg.flags = scope;
	err = tofutex__ioctl(TOFUTEX_IOC_STATS, &arg, NULL);
	if (!err)
		*out = arg;
	return err;
}
