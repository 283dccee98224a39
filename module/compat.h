/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tofutex - the one place where differences between the supported kernels
 * (Debian's 6.1 and 6.12, and newer mainline) are papered over. Code
 * elsewhere uses only the names defined or re-exported here.
 */
#ifndef _TOFUTEX_COMPAT_H
#define _TOFUTEX_COMPAT_H

#include <linux/version.h>

#endif /* _TOFUTEX_COMPAT_H */
