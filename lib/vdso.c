// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex - the kernel's clock, read through the vDSO the library finds
 * itself.
 *
 * The contended paths read CLOCK_MONOTONIC or CLOCK_REALTIME for the spin's
 * budget, the polls and the deadlines they hand to the kernel. libc's
 * clock_gettime() is interposable: a test clock that stands still,
 * libfaketime's offsets, a shim that takes a lock and so re-enters the
 * spin. The system call is not, but it costs a kernel entry on every read
 * of a spin and is what a seccomp filter sees, where glibc's locks make no
 * such call. So the library calls the vDSO's clock_gettime itself: the
 * code the kernel maps into every process (the auxiliary vector's
 * AT_SYSINFO_EHDR), the one libc's own clock_gettime() calls, which reads
 * the kernel's clock (time namespaces included) without a system call
 * where the clock source allows. Without a vDSO (valgrind hides it), or
 * without the symbol, it makes the system call (sys.h); elsewhere than on
 * x86-64 and arm64 it calls libc's clock_gettime(), which knows the
 * port's time64 call and struct timespec. The symbol is found through
 * the vDSO's hash table (elfsym.c), GNU or SysV as its kernel was linked.
 *
 * The symbol is looked up once, by the library's constructor (fork.c), or
 * by a read before it (another object's constructor): both find the same
 * address, published with one store. The vDSO a child of fork() inherits
 * is its parent's; only exec replaces it, and the library with it. The
 * look-up compares names itself: a sanitizer's string interceptors may not
 * be ready while constructors run (elfsym.c).
 */
#include <elf.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/auxv.h>
#include <time.h>

#include "elfsym.h"
#include "internal.h"
#include "sys.h"

#if defined(__x86_64__) && !defined(__ILP32__) || defined(__aarch64__)

#if defined(__x86_64__)
#define TOFUTEX_VDSO_CLOCK "__vdso_clock_gettime"
#else
#define TOFUTEX_VDSO_CLOCK "__kernel_clock_gettime"
#endif

typedef int (*tofutex_vdso_clock_fn)(clockid_t, struct timespec *);

/* NULL: not looked up yet; tofutex_no_vdso: looked up, not there. */
static tofutex_vdso_clock_fn tofutex_vdso_clock;

static int tofutex_no_vdso(clockid_t clock, struct timespec *ts)
{
	return (int)tofutex__sys(SYS_clock_gettime, clock, (long)ts, 0, 0, 0,
				 0);
}

/*
 * The vDSO's tables, from its dynamic section: a symbol table and a GNU
 * or a SysV hash table (which one depends on the kernel's release).
 */
static bool tofutex_vdso_tables(uintptr_t base, uintptr_t *load,
				const char **strtab, const ElfW(Sym) **symtab,
				const uint32_t **gnu_hash,
				const uint32_t **sysv_hash)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)base;
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(base + eh->e_phoff);
	const ElfW(Dyn) *dyn = NULL;
	bool loaded = false;
	int i;

	for (i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && !loaded) {
			*load = base + ph[i].p_offset - ph[i].p_vaddr;
			loaded = true;
		} else if (ph[i].p_type == PT_DYNAMIC) {
			dyn = (const ElfW(Dyn) *)(base + ph[i].p_offset);
		}
	}
	if (!loaded || !dyn)
		return false;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		if (dyn->d_tag == DT_STRTAB)
			*strtab = (const char *)(*load + dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_SYMTAB)
			*symtab = (const ElfW(Sym) *)(*load + dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_GNU_HASH)
			*gnu_hash = (const uint32_t *)(*load + dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_HASH)
			*sysv_hash = (const uint32_t *)(*load + dyn->d_un.d_ptr);
	}
	return true;
}

static tofutex_vdso_clock_fn tofutex_vdso_lookup(void)
{
	uintptr_t base = getauxval(AT_SYSINFO_EHDR), load = 0;
	const uint32_t *gnu_hash = NULL, *sysv_hash = NULL;
	const ElfW(Sym) *symtab = NULL, *sym;
	const char *strtab = NULL;

	if (!base || !tofutex_vdso_tables(base, &load, &strtab, &symtab,
					  &gnu_hash, &sysv_hash))
		return tofutex_no_vdso;
	sym = tofutex__elf_find(gnu_hash, sysv_hash, symtab, NULL, strtab,
				TOFUTEX_VDSO_CLOCK, NULL);
	if (!sym || ELF64_ST_TYPE(sym->st_info) != STT_FUNC)
		return tofutex_no_vdso;
	return (tofutex_vdso_clock_fn)(load + sym->st_value);
}

void tofutex__vdso_find(void)
{
	if (!__atomic_load_n(&tofutex_vdso_clock, __ATOMIC_RELAXED))
		__atomic_store_n(&tofutex_vdso_clock, tofutex_vdso_lookup(),
				 __ATOMIC_RELAXED);
}

void tofutex__clock_read(clockid_t clock, struct timespec *ts)
{
	tofutex_vdso_clock_fn fn = __atomic_load_n(&tofutex_vdso_clock,
						   __ATOMIC_RELAXED);

	if (!fn) {
		tofutex__vdso_find();
		fn = __atomic_load_n(&tofutex_vdso_clock, __ATOMIC_RELAXED);
	}
	/* The callers' clocks are CLOCK_MONOTONIC and CLOCK_REALTIME. */
	fn(clock, ts);
}

#else

void tofutex__vdso_find(void)
{
}

void tofutex__clock_read(clockid_t clock, struct timespec *ts)
{
	clock_gettime(clock, ts);
}

#endif
