// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex - tofutex_library_version(): the version of the library the
 * program runs with, which may be newer than the <tofutex.h> it was built
 * against (TOFUTEX_VERSION_NUMBER). The module's interface has its own
 * version, tofutex_version(). The Makefile's check-docs target keeps the
 * header's TOFUTEX_VERSION_* equal to the release (module/tofutex.h,
 * dkms.conf, debian/changelog).
 */
#include "internal.h"

unsigned long tofutex_library_version(void)
{
	return TOFUTEX_VERSION_NUMBER;
}
