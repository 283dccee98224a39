/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libtofutex-pthread - string tests that call nothing.
 *
 * dlsym(), dlvsym() and dlopen() are ours (dlsym.c, deepbind.c), and the
 * first callers of dlsym() in a process are often runtimes that are not
 * set up yet: a sanitizer's (ThreadSanitizer, AddressSanitizer) looks up
 * the functions it intercepts while it starts, and its own strcmp(),
 * strchr(), ... are interceptors that crash until it has. Our references
 * to the C library's string functions bind to the first definition in
 * the lookup order, which is theirs when they come first. So every
 * string test on the paths of those three calls is one of these.
 */
#ifndef TOFUTEX_PTHREAD_STR_H
#define TOFUTEX_PTHREAD_STR_H

#include <stdbool.h>
#include <stddef.h>

/* Are @a and @b the same string? */
static inline bool tfx_str_eq(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return *a == *b;
}

/* Does @s start with @prefix? */
static inline bool tfx_str_prefix(const char *s, const char *prefix)
{
	while (*prefix && *s == *prefix) {
		s++;
		prefix++;
	}
	return !*prefix;
}

/* Does @s hold the character @c? */
static inline bool tfx_str_has(const char *s, char c)
{
	for (; *s; s++)
		if (*s == c)
			return true;
	return false;
}

/* The part of @path after its last '/'. */
static inline const char *tfx_str_base(const char *path)
{
	const char *base = path;

	for (; *path; path++)
		if (*path == '/')
			base = path + 1;
	return base;
}

#endif /* TOFUTEX_PTHREAD_STR_H */
