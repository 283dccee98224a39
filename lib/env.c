// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex - the environment: every TOFUTEX_* variable the library
 * reads is parsed here, and nowhere else.
 *
 *   TOFUTEX_BACKEND  "module", "futex" or "auto" (backend.c)
 *   TOFUTEX_SPIN_NS  "N" (0 to TOFUTEX_USER_SPIN_MAX_NS), "auto" or
 *                    "auto:N" (1 to TOFUTEX_USER_SPIN_MAX_NS) (spin.c)
 *
 * They are read with secure_getenv(): in a set-user-ID or otherwise
 * secure-execution program they are ignored, so that the caller cannot
 * steer a privileged program's locks. A value that is set but not valid
 * is reported on stderr in one line that names the variable and says
 * what is used instead, once per variable and process image; an empty
 * value counts as unset.
 *
 * The callers read their variable lazily, on first use and again in the
 * child of fork(), which may be inside a cancellation point's caller: the
 * report is written with cancellation disabled, so that reading the
 * environment is never a cancellation point.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Variables already reported, one bit each. */
enum { TOFUTEX_ENV_BACKEND = 1, TOFUTEX_ENV_SPIN = 2 };
static unsigned int tofutex_env_reported;

void tofutex__env_quiet(void)
{
	__atomic_store_n(&tofutex_env_reported, ~0u, __ATOMIC_RELAXED);
}

static void tofutex_env_report(unsigned int which, const char *name,
			       const char *value, const char *instead)
{
	int state;

	if (__atomic_fetch_or(&tofutex_env_reported, which, __ATOMIC_RELAXED) &
	    which)
		return;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
	fprintf(stderr, "libtofutex: %s=%s is not valid; using %s\n", name,
		value, instead);
	pthread_setcancelstate(state, NULL);
}

static const char *tofutex_env_get(const char *name)
{
	const char *v = secure_getenv(name);

	return v && *v ? v : NULL;
}

int tofutex__env_backend(void)
{
	const char *v = tofutex_env_get("TOFUTEX_BACKEND");

	if (!v || !strcmp(v, "auto"))
		return 0;
	if (!strcmp(v, "futex"))
		return TOFUTEX_BACKEND_FUTEX;
	if (!strcmp(v, "module"))
		return TOFUTEX_BACKEND_MODULE;
	tofutex_env_report(TOFUTEX_ENV_BACKEND, "TOFUTEX_BACKEND", v,
			   "auto (valid: module, futex, auto)");
	return 0;
}

/* "N" with N in [@min, @max]: true and *@ns = N. */
static bool tofutex_env_ns(const char *s, unsigned long min,
			   unsigned long max, uint32_t *ns)
{
	unsigned long v;
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (*end || errno || v < min || v > max)
		return false;
	*ns = (uint32_t)v;
	return true;
}

bool tofutex__env_spin(uint32_t max_ns, uint32_t *ns, bool *autospin)
{
	const char *v = tofutex_env_get("TOFUTEX_SPIN_NS");
	int saved_errno = errno;
	char instead[80];
	bool ok = false;

	if (!v)
		return false;
	*autospin = !strncmp(v, "auto", 4);
	if (!strcmp(v, "auto")) {
		*ns = 0;
		ok = true;
	} else if (*autospin && v[4] == ':') {
		ok = tofutex_env_ns(v + 5, 1, max_ns, ns);
	} else if (!*autospin) {
		ok = tofutex_env_ns(v, 0, max_ns, ns);
	}
	if (!ok) {
		snprintf(instead, sizeof(instead),
			 "the default (valid: N, auto, auto:N; N in ns up to %u)",
			 (unsigned int)max_ns);
		tofutex_env_report(TOFUTEX_ENV_SPIN, "TOFUTEX_SPIN_NS", v,
				   instead);
	}
	errno = saved_errno;
	return ok;
}
