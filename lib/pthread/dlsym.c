// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex-pthread - dlsym() and dlvsym(), so that a program that takes
 * a lock function from a handle of glibc (dlopen("libc.so.6") or
 * dlopen("libpthread.so.0"), then dlsym(h, "pthread_mutex_lock")) gets
 * ours: glibc's code cannot run on our objects. Its mutex code does not
 * keep our waiters' wake-ups (its unlock wakes only when the old word as
 * an int is above 1; WAITERS is the sign bit); its rwlock's phase bits are the low
 * bits of our writer's TID; its condition variables' words mean other
 * things than ours (preload.h). This is one of the ways in that hand out
 * ours, all listed in tofutex-run(1), NOTES:
 *
 * - the global scope (a program's calls, RTLD_DEFAULT, RTLD_NEXT from an
 *   object before ours): the preload is ahead of glibc, and each of our
 *   functions is also defined at glibc's default version of its name
 *   (lib/pthread/versions.sh writes the aliases), so that dlvsym(), whose
 *   lookups refuse unversioned definitions, finds it there too;
 * - a handle of glibc: here;
 * - an RTLD_DEEPBIND plugin's references and tables: deepbind.c.
 *
 * Rules:
 * - A lookup on a real handle of a name of the lock functions
 *   (tfx_lock_fn_name()) or of the loader functions interposed here
 *   (dlsym, dlvsym, dlopen, dlmopen) calls glibc's dlsym()/dlvsym() and,
 *   when the answer is one of glibc's functions we replace (by address:
 *   every name and version of one has one; the condition variables'
 *   default version, GLIBC_2.3.2), gives ours instead: "the real dlsym"
 *   taken from glibc's handle is ours too. Another library's function
 *   of that name, and glibc's pre-2.3.2 condition variables, which keep
 *   their own object behind the pointer they store, are left alone.
 * - Every other lookup, RTLD_DEFAULT and RTLD_NEXT above all, reaches
 *   glibc's function by a tail jump, with the caller's own return address:
 *   glibc finds the calling object from it (RTLD_NEXT is "after the
 *   caller", RTLD_DEFAULT searches the caller's scope, and a handle's
 *   object gets a dependency on the caller). From the program, they find
 *   our definitions first already; from a plugin loaded with
 *   RTLD_DEEPBIND they would find glibc's: deepbind.c makes its calls of
 *   dlsym() ours, and its RTLD_DEFAULT lookups of the names deepbind.c
 *   interposes are made from here (the global scope, as its references
 *   now bind); its RTLD_NEXT stays glibc's (tofutex-run(1), BUGS).
 * - Nothing here calls the C library's string functions (str.h): the
 *   first dlsym() of a process may come from a sanitizer's runtime that
 *   has not set up its interceptors of them yet.
 * - glibc's dlsym() and dlvsym() are those of the first object loaded
 *   after this one that defines them at glibc's version (libc.so.6),
 *   found in its dynamic symbol table as the dynamic linker binds a
 *   reference to that version (another library's dlsym@@ITS_1 is not
 *   glibc's): dlsym() cannot look itself up once it is ours. They
 *   are found at the first call (which may come from another library's
 *   constructor before ours ran), by any thread; the stores are
 *   idempotent, and dlvsym's, tested by every call, comes last.
 * - Only x86-64 and arm64 have the tail-jumping entry (an assembler
 *   stub, preload.h: C cannot jump to another function keeping its
 *   caller's return address); elsewhere nothing is interposed and a
 *   handle's lookup stays glibc's.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>

#include "../elfsym.h"
#include "preload.h"
#include "str.h"

/* Ours for glibc's @fn in @map, else NULL (preload.h). */
void *tfx_fn_pair_find(const struct tfx_fn_pair *map, size_t n,
		       const void *fn)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (map[i].glibc == fn)
			return map[i].ours;
	return NULL;
}

void *tfx_fn_ours(const void *fn)
{
	void *ours = tfx_mutex_fn_ours(fn);

	if (!ours)
		ours = tfx_rwlock_ours(fn);
	if (!ours)
		ours = tfx_cond_fn_ours(fn);
	return ours;
}

bool tfx_lock_fn_name(const char *name)
{
	if (!name)
		return false;
	if (tfx_str_prefix(name, "__"))
		name += 2;
	return tfx_str_prefix(name, "pthread_mutex_") ||
	       tfx_str_prefix(name, "pthread_rwlock_") ||
	       tfx_str_prefix(name, "pthread_cond_");
}

#ifdef TFX_ELF_HOOKS

typedef void *(*tfx_dlsym_fn)(void *, const char *);
typedef void *(*tfx_dlvsym_fn)(void *, const char *, const char *);

static tfx_dlsym_fn tfx_next_dlsym;
static tfx_dlvsym_fn tfx_next_dlvsym;

const ElfW(Dyn) *tfx_dyn_entry(const struct link_map *l, ElfW(Sxword) tag)
{
	const ElfW(Dyn) *d;

	for (d = l->l_ld; d->d_tag != DT_NULL; d++)
		if (d->d_tag == tag)
			return d;
	return NULL;
}

const void *tfx_dyn_ptr(const struct link_map *l, ElfW(Sxword) tag)
{
	const ElfW(Dyn) *d = tfx_dyn_entry(l, tag);
	ElfW(Addr) p;

	if (!d)
		return NULL;
	/* ld.so relocates these in place, but not everywhere. */
	p = d->d_un.d_ptr;
	return (const void *)(p < l->l_addr ? p + l->l_addr : p);
}

void *tfx_elf_sym(const struct link_map *l, const char *name,
		  const char *version)
{
	const struct tofutex_elf_versions vers = {
		.versym = tfx_dyn_ptr(l, DT_VERSYM),
		.verdef = tfx_dyn_ptr(l, DT_VERDEF),
	};
	const ElfW(Sym) *s = tofutex__elf_find(tfx_dyn_ptr(l, DT_GNU_HASH),
					       tfx_dyn_ptr(l, DT_HASH),
					       tfx_dyn_ptr(l, DT_SYMTAB), &vers,
					       tfx_dyn_ptr(l, DT_STRTAB), name,
					       version);

	return s ? (void *)(l->l_addr + s->st_value) : NULL;
}

struct link_map *tfx_self_map(void)
{
	struct link_map *l = NULL;
	Dl_info info;

	if (!dladdr1((void *)tfx_self_map, &info, (void **)&l,
		     RTLD_DL_LINKMAP))
		l = NULL;
	return l;
}

void *tfx_elf_after(const char *name, const char *version)
{
	struct link_map *l = tfx_self_map();
	void *fn = NULL;

	for (l = l ? l->l_next : NULL; l && !fn; l = l->l_next)
		fn = tfx_elf_sym(l, name, version);
	return fn;
}

void *tfx_elf_next(const char *name, const char *version)
{
	void *fn = tfx_elf_after(name, version);

	if (!fn) {
		fprintf(stderr, "libtofutex-pthread: no %s@%s after this library\n",
			name, version ? version : "");
		abort();
	}
	return fn;
}

static void tfx_dlsym_resolve(void)
{
	void *next = tfx_elf_next("dlsym", TFX_LIBC_VERSION_dlsym);
	void *nextv = tfx_elf_next("dlvsym", TFX_LIBC_VERSION_dlvsym);

	__atomic_store_n(&tfx_next_dlsym, (tfx_dlsym_fn)next, __ATOMIC_RELEASE);
	/* Last: tfx_dlsym_route() tests this one. */
	__atomic_store_n(&tfx_next_dlvsym, (tfx_dlvsym_fn)nextv,
			 __ATOMIC_RELEASE);
}

/* Ours for glibc's loader function @fn (dlsym, ...), else NULL. */
static void *tfx_dl_fn_ours(const void *fn)
{
	if (fn == (const void *)tfx_next_dlsym)
		return tfx_stub_dlsym;
	if (fn == (const void *)tfx_next_dlvsym)
		return tfx_stub_dlvsym;
	return tfx_dlopen_fn_ours(fn);
}

/* Ours in place of glibc's lock or loader function @fn, else @fn. */
static void *tfx_dlsym_swap(void *fn)
{
	void *ours = fn ? tfx_fn_ours(fn) : NULL;

	if (fn && !ours)
		ours = tfx_dl_fn_ours(fn);
	return ours ? ours : fn;
}

/* The loader functions this library interposes (the stubs below). */
static bool tfx_dl_fn_name(const char *name)
{
	return name && (tfx_str_eq(name, "dlsym") || tfx_str_eq(name, "dlvsym") ||
			tfx_str_eq(name, "dlopen") || tfx_str_eq(name, "dlmopen"));
}

/* glibc's answer, or our function in place of glibc's. */
static void *tfx_dlsym_ours(void *handle, const char *name)
{
	return tfx_dlsym_swap(tfx_next_dlsym(handle, name));
}

static void *tfx_dlvsym_ours(void *handle, const char *name,
			     const char *version)
{
	return tfx_dlsym_swap(tfx_next_dlvsym(handle, name, version));
}

/*
 * RTLD_DEFAULT from an object deepbind.c patched: answered from here, the
 * global scope, as its references now are, not from its own scope first.
 * Not tail calls: glibc takes the calling object from the return address,
 * which must be in this library.
 */
static void *tfx_dlsym_global(void *handle, const char *name)
{
	void *fn = tfx_next_dlsym(handle, name);

	__asm__ volatile("" : : "r"(fn) : "memory");
	return fn;
}

static void *tfx_dlvsym_global(void *handle, const char *name,
			       const char *version)
{
	void *fn = tfx_next_dlvsym(handle, name, version);

	__asm__ volatile("" : : "r"(fn) : "memory");
	return fn;
}

/*
 * The stubs' choice: where dlsym() (@versioned: dlvsym()) of @name on
 * @handle jumps, with the caller's arguments and return address.
 */
TOFUTEX_HIDDEN __attribute__((used)) void *
tfx_dlsym_route(void *handle, const char *name, int versioned,
		const void *caller)
{
	/*
	 * The global scope finds ours by itself, in every version we define
	 * (see above); RTLD_NEXT is glibc's answer for the caller, which a
	 * wrapper library may rely on.
	 */
	bool fix = handle != RTLD_NEXT && handle != RTLD_DEFAULT &&
		   (tfx_lock_fn_name(name) || tfx_dl_fn_name(name));

	if (!__atomic_load_n(&tfx_next_dlvsym, __ATOMIC_ACQUIRE))
		tfx_dlsym_resolve();
	if (handle == RTLD_DEFAULT && tfx_deepbind_caller(caller, name))
		return versioned ? (void *)tfx_dlvsym_global :
				   (void *)tfx_dlsym_global;
	if (versioned)
		return fix ? (void *)tfx_dlvsym_ours : (void *)tfx_next_dlvsym;
	return fix ? (void *)tfx_dlsym_ours : (void *)tfx_next_dlsym;
}

/*
 * dlsym() and dlvsym(): jump where tfx_dlsym_route() says (preload.h),
 * at each of glibc's versions of them too, so that a versioned lookup
 * (an interposer's dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5")) finds ours.
 */
TFX_ROUTE_STUB(dlsym, tfx_dlsym_route, 0);
TFX_ROUTE_STUB(dlvsym, tfx_dlsym_route, 1);
TFX_DL_VERSIONS_dlsym;
TFX_DL_VERSIONS_dlvsym;

#endif /* TFX_ELF_HOOKS */
