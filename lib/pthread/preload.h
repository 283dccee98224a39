/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libtofutex-pthread - pthread mutexes, condition variables and rwlocks on
 * libtofutex, for LD_PRELOAD (see tofutex-run(1)). Internal header.
 *
 * Which objects are ours. A pthread_mutex_t is dispatched on its __kind,
 * which glibc's pthread_mutex_init() writes (and pthread_mutex_destroy()
 * sets to -1) and nothing else changes while the mutex is in use: a
 * process-private NORMAL/DEFAULT (0; also every PTHREAD_MUTEX_INITIALIZER
 * mutex never passed to init), RECURSIVE (1), ERRORCHECK (2) or
 * ADAPTIVE_NP (3) mutex, with or without glibc's elision bits, is ours;
 * any other __kind (robust, priority inheritance or protection,
 * PTHREAD_PROCESS_SHARED, destroyed) goes to glibc untouched. A
 * pthread_cond_t is ours unless PTHREAD_PROCESS_SHARED (bit 0 of
 * __wrefs, which glibc's pthread_cond_init() writes): a process-shared
 * one may be shared with processes that do not run the preload.
 *
 * Layout of our mutexes (glibc 2.36, x86-64 and arm64, struct
 * __pthread_mutex_s; checked at build time, at the end of this file):
 *   __lock  (0)  the TO lock word: tofutex_mutex_t.word (0 or the owner's
 *                TID, WAITERS, OWNER_DIED), so the kernel sees the word;
 *                1 or 2 while glibc's own code holds it (lib/glibc.c)
 *   __count (4)  tofutex_mutex_t.state (libtofutex's own: 0, or not
 *                recoverable, which here means stalled, see mutex.c);
 *                RECURSIVE, while held: the number of levels, as glibc
 *                keeps it (its own code on the mutex counts on ours),
 *                0 again before the release, which libtofutex's next
 *                lock reads it after
 *   __owner (8)  ERRORCHECK, RECURSIVE: the owner's TID, as glibc keeps
 *                it (its own code checks it); 0 otherwise
 *   __nusers(12) not ours: glibc's own code counts in it
 *   __kind  (16) the type, read only
 * Every field we use is zero in a mutex glibc's pthread_mutex_init() or
 * PTHREAD_MUTEX_INITIALIZER made, and zero means free: there is no
 * conversion step, so no thread, ours or glibc's, ever sees a
 * half-converted object.
 *
 * What is interposed: every pthread function that takes a mutex and
 * locks or unlocks it (pthread_cond_* included), by name in any version
 * a program asks for, and glibc's compat names __pthread_mutex_{init,
 * destroy,lock,trylock,unlock}@GLIBC_2.2.5; the rest (prioceiling) accept
 * only priority-protect mutexes, which are glibc's. Each is defined at
 * every version glibc has that function at (versions.sh); dlsym() and
 * dlvsym() on a handle of glibc give ours (dlsym.c, x86-64 and arm64); a plugin
 * loaded with RTLD_DEEPBIND gets ours once glibc's dlopen() has loaded it
 * (deepbind.c, x86-64 and arm64). What is not: glibc's own code still reaches our
 * mutexes from such a plugin where deepbind.c cannot act (its
 * constructors, other architectures), through a handle's function on
 * other architectures, and inside glibc's wait on a process-shared
 * condition variable used with one of our mutexes (cond.c). libtofutex interoperates with glibc's protocol
 * on the word (lib/glibc.c), and the ERRORCHECK and RECURSIVE owner is
 * kept where glibc looks (mutex.c); what remains is in tofutex-run(1),
 * BUGS.
 *
 * Layout of our condition variables (struct __pthread_cond_s):
 *   bytes 0-23   a tofutex_cond_t (glibc's __wseq, __g1_start, __g_refs,
 *                which only glibc's own wait would use); bytes 4-27 when
 *                the object is 4- but not 8-byte aligned (packed)
 *   __wrefs (36) read only: bit 0 process-shared, bit 1 CLOCK_MONOTONIC
 *                (pthread_condattr_setclock())
 * Again all zero after pthread_cond_init() or PTHREAD_COND_INITIALIZER.
 *
 * A pthread_rwlock_t is ours unless __shared (28) is set, which glibc's
 * pthread_rwlock_init() writes for PTHREAD_PROCESS_SHARED; __flags (48),
 * the kind, read only, is 0 (also PTHREAD_RWLOCK_INITIALIZER), 1 or 2
 * (PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP); anything else is
 * left to glibc. Layout of ours (struct __pthread_rwlock_arch_t):
 *   bytes 0-7  a tofutex_rwlock_t (glibc's __readers, __writers): the TO
 *              reader/writer word, and the field that must be 0
 * All zero after pthread_rwlock_init() or the initialisers, and glibc's
 * destroy writes nothing; every pthread_rwlock_* function is interposed,
 * and the compat names __pthread_rwlock_{init,destroy,rdlock,tryrdlock,
 * wrlock,trywrlock,unlock}@GLIBC_2.2.5; dlsym() and dlvsym() on a handle
 * give ours for glibc's (dlsym.c, x86-64 and arm64), and an RTLD_DEEPBIND
 * plugin's references are made ours after it is loaded (deepbind.c).
 * glibc's rwlock code reached where those cannot act is not made safe
 * (tofutex-run(1), BUGS): its phase bits are the low bits of our
 * writer's TID.
 *
 * No path allocates: the state is in the objects, the real glibc
 * functions are looked up once when the library is loaded (the report
 * of TOFUTEX_PROFILE, profile.c, allocates at exit).
 */
#ifndef TOFUTEX_PTHREAD_PRELOAD_H
#define TOFUTEX_PTHREAD_PRELOAD_H

#include <pthread.h>

#include "../mutex.h"
#include "pthread-versions.h"
#include "probe.h"
#include "profile.h"
#include "stats.h"

/* glibc's functions, for the objects that stay glibc's (real.c). */
struct tfx_real {
	int (*mutex_init)(pthread_mutex_t *, const pthread_mutexattr_t *);
	int (*mutex_destroy)(pthread_mutex_t *);
	int (*mutex_lock)(pthread_mutex_t *);
	int (*mutex_trylock)(pthread_mutex_t *);
	int (*mutex_timedlock)(pthread_mutex_t *, const struct timespec *);
	int (*mutex_clocklock)(pthread_mutex_t *, clockid_t,
			       const struct timespec *);
	int (*mutex_unlock)(pthread_mutex_t *);
	int (*mutex_consistent)(pthread_mutex_t *);
	int (*cond_init)(pthread_cond_t *, const pthread_condattr_t *);
	int (*cond_destroy)(pthread_cond_t *);
	int (*cond_wait)(pthread_cond_t *, pthread_mutex_t *);
	int (*cond_timedwait)(pthread_cond_t *, pthread_mutex_t *,
			      const struct timespec *);
	int (*cond_clockwait)(pthread_cond_t *, pthread_mutex_t *, clockid_t,
			      const struct timespec *);
	int (*cond_signal)(pthread_cond_t *);
	int (*cond_broadcast)(pthread_cond_t *);
	int (*rwlock_init)(pthread_rwlock_t *, const pthread_rwlockattr_t *);
	int (*rwlock_destroy)(pthread_rwlock_t *);
	int (*rwlock_rdlock)(pthread_rwlock_t *);
	int (*rwlock_tryrdlock)(pthread_rwlock_t *);
	int (*rwlock_timedrdlock)(pthread_rwlock_t *, const struct timespec *);
	int (*rwlock_clockrdlock)(pthread_rwlock_t *, clockid_t,
				  const struct timespec *);
	int (*rwlock_wrlock)(pthread_rwlock_t *);
	int (*rwlock_trywrlock)(pthread_rwlock_t *);
	int (*rwlock_timedwrlock)(pthread_rwlock_t *, const struct timespec *);
	int (*rwlock_clockwrlock)(pthread_rwlock_t *, clockid_t,
				  const struct timespec *);
	int (*rwlock_unlock)(pthread_rwlock_t *);
};

/*
 * glibc's compat name __pthread_NAME of our pthread_NAME, which binaries
 * built against glibc before 2.34 may call directly: exported at the one
 * version glibc has it at, and as glibc has it, not as a default version
 * (TFX_COMPAT_VERSIONS_NAME, from versions.sh): such a call reaches ours,
 * so that glibc's own code never runs behind it on our objects, while
 * dlsym() of the name finds nothing, as with glibc.
 */
#define TFX_COMPAT(name) \
	extern __typeof(pthread_##name) tfx_compat_##name \
		__attribute__((copy(pthread_##name), alias("pthread_" #name))); \
	TFX_COMPAT_VERSIONS_##name
#define TFX_COMPAT_VERSION(name, ver) \
	__asm__(".symver tfx_compat_" #name ", __pthread_" #name "@" ver)

/*
 * Our own entry of pthread_NAME as tfx_self_NAME, whatever the name
 * resolves to (a program's reference may make its PLT slot the canonical
 * address): a hidden alias. And pthread_NAME at each version of glibc's
 * that is the same function as its default one (TFX_VERSIONS_NAME,
 * written by versions.sh with the version script): dlvsym() finds ours
 * at every version a program may ask for.
 */
#define TFX_SELF(name) \
	extern __typeof(pthread_##name) tfx_self_##name \
		__attribute__((copy(pthread_##name), alias("pthread_" #name), \
			       visibility("hidden"))); \
	TFX_VERSIONS_##name

/*
 * One such version, @ver (@tag, the same as a C name): an entry that
 * jumps to ours. Not an alias: the linker drops a plain definition that
 * has an alias at another version of the same name in its object.
 */
#if defined(__x86_64__)
#define TFX_VERSION_JUMP "endbr64\n\tjmp "
#elif defined(__aarch64__)
#define TFX_VERSION_JUMP "bti c\n\tb "
#endif
#ifdef TFX_VERSION_JUMP
#define TFX_VERSION(name, tag, ver) \
	__asm__(".text\n" \
		".globl tfx_v_" #name "_" #tag "\n" \
		".type tfx_v_" #name "_" #tag ", %function\n" \
		"tfx_v_" #name "_" #tag ":\n\t" \
		TFX_VERSION_JUMP "tfx_self_" #name "\n" \
		".size tfx_v_" #name "_" #tag ", .-tfx_v_" #name "_" #tag "\n" \
		".symver tfx_v_" #name "_" #tag ", pthread_" #name "@" ver)
#else
#define TFX_VERSION(name, tag, ver) TFX_NO_VERSIONS
#endif
#define TFX_NO_VERSIONS _Static_assert(1, "")

/* One row of a map from glibc's function (struct tfx_real) to ours. */
struct tfx_fn_pair {
	void *glibc, *ours;
};

#define TFX_OURS(g, name) { (void *)(g)->name, (void *)tfx_self_##name }

/*
 * mutex.c, rwlock.c, cond.c: our function for glibc's mutex, rwlock or
 * condition variable function at @fn (each name and version of one glibc
 * function has one address), else NULL; tfx_fn_ours() (dlsym.c) asks
 * all three.
 */
TOFUTEX_HIDDEN void *tfx_mutex_fn_ours(const void *fn);
TOFUTEX_HIDDEN void *tfx_rwlock_ours(const void *fn);
TOFUTEX_HIDDEN void *tfx_cond_fn_ours(const void *fn);
TOFUTEX_HIDDEN void *tfx_fn_ours(const void *fn);
TOFUTEX_HIDDEN void *tfx_fn_pair_find(const struct tfx_fn_pair *map,
				      size_t n, const void *fn);
/*
 * dlsym.c: is @name one of the lock functions' names we interpose
 * (pthread_{mutex,cond,rwlock}_*, glibc's __pthread_{mutex,rwlock}_*)?
 */
TOFUTEX_HIDDEN bool tfx_lock_fn_name(const char *name);

/*
 * TFX_ELF_HOOKS: the architectures with a tail-jumping entry below and
 * the relocation types of deepbind.c: dlsym() and dlvsym() on a handle
 * and an RTLD_DEEPBIND plugin's references give ours there.
 */
#if defined(__x86_64__) || defined(__aarch64__)
#define TFX_ELF_HOOKS 1
#endif

#ifdef TFX_ELF_HOOKS
#include <link.h>

/* dlsym.c: the entry @tag of @l's dynamic section, or NULL. */
TOFUTEX_HIDDEN const ElfW(Dyn) *tfx_dyn_entry(const struct link_map *l,
					     ElfW(Sxword) tag);
/* dlsym.c: an entry @tag of @l's dynamic section, as an address, or NULL. */
TOFUTEX_HIDDEN const void *tfx_dyn_ptr(const struct link_map *l,
				       ElfW(Sxword) tag);
/*
 * dlsym.c: @name's definition in @l (its hash table), or NULL: the one a
 * reference to @name@@version binds to, or with @version NULL the
 * default version.
 */
TOFUTEX_HIDDEN void *tfx_elf_sym(const struct link_map *l, const char *name,
				 const char *version);
/* dlsym.c: this library's link map (dladdr1(): takes the loader's lock). */
TOFUTEX_HIDDEN struct link_map *tfx_self_map(void);
/*
 * dlsym.c: @name's definition at @version (tfx_elf_sym()) in the first
 * object loaded after this library that defines it so (glibc's dlsym,
 * dlopen, ... at TFX_LIBC_VERSION_name), or NULL: none is, or this
 * library was loaded by dlopen(), after them.
 */
TOFUTEX_HIDDEN void *tfx_elf_after(const char *name, const char *version);
/* dlsym.c: tfx_elf_after(), which must find it; aborts if not. */
TOFUTEX_HIDDEN void *tfx_elf_next(const char *name, const char *version);
/*
 * deepbind.c: is @caller's object one deepbind.c patched and @name one it
 * interposes (dlsym.c answers its RTLD_DEFAULT lookup from the global
 * scope)?
 */
TOFUTEX_HIDDEN bool tfx_deepbind_caller(const void *caller, const char *name);

/*
 * An entry point @name that keeps the first three argument registers
 * across @route(first, second, @third, caller's return address) and
 * jumps where it says, so that the callee returns to our caller with the
 * caller's return address: glibc's dlsym() and dlopen() find the calling
 * object from it (C cannot jump to another function keeping its caller's
 * return address). TFX_ROUTE_STUB_3() passes the caller's own third
 * argument on to @route instead. On x86-64 the registers are %rdi, %rsi
 * and %rdx (three pushes align the stack for the call; %rcx, the fourth
 * argument register, is no argument of the functions stubbed) and the
 * return address is on the stack; on arm64 they are x0-x2, the return
 * address is x30 and the jump goes through x16, which a "bti c" landing
 * pad accepts.
 */
#if defined(__x86_64__)
#define TFX_ROUTE_STUB(name, route, third) \
	TFX_ROUTE_STUB_ASM(name, route, "	mov $" #third ", %edx\n")
#define TFX_ROUTE_STUB_BODY(route, third_insn) \
		"	endbr64\n" \
		"	push %rdi\n" \
		"	.cfi_adjust_cfa_offset 8\n" \
		"	push %rsi\n" \
		"	.cfi_adjust_cfa_offset 8\n" \
		"	push %rdx\n" \
		"	.cfi_adjust_cfa_offset 8\n" \
		third_insn \
		"	mov 24(%rsp), %rcx\n" \
		"	call " #route "\n" \
		"	pop %rdx\n" \
		"	.cfi_adjust_cfa_offset -8\n" \
		"	pop %rsi\n" \
		"	.cfi_adjust_cfa_offset -8\n" \
		"	pop %rdi\n" \
		"	.cfi_adjust_cfa_offset -8\n" \
		"	jmp *%rax\n"
#define TFX_JUMP_TO "endbr64\n\tjmp "
#else
#define TFX_ROUTE_STUB(name, route, third) \
	TFX_ROUTE_STUB_ASM(name, route, "	mov x2, #" #third "\n")
#define TFX_ROUTE_STUB_BODY(route, third_insn) \
		"	bti c\n" \
		"	stp x29, x30, [sp, #-48]!\n" \
		"	.cfi_def_cfa_offset 48\n" \
		"	.cfi_offset 29, -48\n" \
		"	.cfi_offset 30, -40\n" \
		"	mov x29, sp\n" \
		"	stp x0, x1, [sp, #16]\n" \
		"	str x2, [sp, #32]\n" \
		third_insn \
		"	mov x3, x30\n" \
		"	bl " #route "\n" \
		"	mov x16, x0\n" \
		"	ldp x0, x1, [sp, #16]\n" \
		"	ldr x2, [sp, #32]\n" \
		"	ldp x29, x30, [sp], #48\n" \
		"	.cfi_restore 29\n" \
		"	.cfi_restore 30\n" \
		"	.cfi_def_cfa_offset 0\n" \
		"	br x16\n"
#define TFX_JUMP_TO "bti c\n\tb "
#endif
#define TFX_ROUTE_STUB_3(name, route) TFX_ROUTE_STUB_ASM(name, route, "")
#define TFX_ROUTE_STUB_ASM(name, route, third_insn) \
	__asm__(".text\n" \
		".globl " #name "\n" \
		".type " #name ", %function\n" \
		".globl tfx_stub_" #name "\n" \
		".hidden tfx_stub_" #name "\n" \
		".p2align 4\n" \
		#name ":\n" \
		"tfx_stub_" #name ":\n" \
		"	.cfi_startproc\n" \
		TFX_ROUTE_STUB_BODY(route, third_insn) \
		"	.cfi_endproc\n" \
		".size " #name ", .-" #name "\n")

/*
 * The same entry point at glibc's other version @ver of loader function
 * @name (lib/pthread/versions.sh writes TFX_DL_VERSIONS_name): a jump to
 * the stub, which keeps the caller's return address.
 */
#define TFX_DL_VERSION(name, tag, ver) \
	__asm__(".text\n" \
		".globl tfx_v_" #name "_" #tag "\n" \
		".type tfx_v_" #name "_" #tag ", %function\n" \
		"tfx_v_" #name "_" #tag ":\n\t" \
		TFX_JUMP_TO "tfx_stub_" #name "\n" \
		".size tfx_v_" #name "_" #tag ", .-tfx_v_" #name "_" #tag "\n" \
		".symver tfx_v_" #name "_" #tag ", " #name "@" ver)

/* The entry points of the stubs, for dlsym.c's answer on a handle. */
TOFUTEX_HIDDEN extern char tfx_stub_dlsym[];
TOFUTEX_HIDDEN extern char tfx_stub_dlvsym[];
TOFUTEX_HIDDEN extern char tfx_stub_dlopen[];
TOFUTEX_HIDDEN extern char tfx_stub_dlmopen[];
/* deepbind.c: ours for glibc's dlopen() or dlmopen() at @fn, else NULL. */
TOFUTEX_HIDDEN void *tfx_dlopen_fn_ours(const void *fn);
#endif

/* real.c: the table, filled when the library is loaded. */
extern struct tfx_real tfx_real TOFUTEX_HIDDEN;
/* real.c: fill it now (a call that came before our constructor ran). */
TOFUTEX_HIDDEN void tfx_real_resolve(void);

/*
 * stall.c: one poll period of a stalled lock: ETIMEDOUT once @abstime on
 * @clockid (NULL: never) has passed, else sleep until the next poll
 * (TOFUTEX_POLL_NS) or @abstime and return 0, or tofutex_clockwait()'s
 * error.
 */
TOFUTEX_HIDDEN int tfx_stall_step(clockid_t clockid,
				  const struct timespec *abstime);

static inline const struct tfx_real *tfx_glibc(void)
{
	if (__builtin_expect(!tfx_real.cond_broadcast, 0))
		tfx_real_resolve();
	return &tfx_real;
}

/*
 * start.c: does glibc serve every object in this process? It does when a
 * tool that checks glibc's own pthread functions runs the process
 * (valgrind's helgrind or drd, also when started by a script under
 * tofutex-run): the tool wraps glibc's functions, not ours, and would see
 * no lock at all. Decided on first use, from LD_PRELOAD, where valgrind
 * puts the tool's library; 0 undecided, 1 yes, -1 no.
 */
extern TOFUTEX_HIDDEN int tfx_glibc_all;
TOFUTEX_HIDDEN int tfx_glibc_all_decide(void);

static inline bool tfx_glibc_serves_all(void)
{
	int v = __atomic_load_n(&tfx_glibc_all, __ATOMIC_RELAXED);

	if (__builtin_expect(!v, 0))
		v = tfx_glibc_all_decide();
	return v > 0;
}

/*
 * mutex.c: the type (PTHREAD_MUTEX_NORMAL ... PTHREAD_MUTEX_ADAPTIVE_NP)
 * of a mutex that is ours, -1 for one that is glibc's.
 */
TOFUTEX_HIDDEN int tfx_mutex_type(const pthread_mutex_t *m);

/* mutex.c: does the calling thread hold our mutex @m? */
TOFUTEX_HIDDEN bool tfx_mutex_mine(pthread_mutex_t *m);

static inline tofutex_mutex_t *tfx_mutex(pthread_mutex_t *m)
{
	return (tofutex_mutex_t *)(void *)&m->__data.__lock;
}

/*
 * rwlock.c: the kind (PTHREAD_RWLOCK_PREFER_READER_NP ...) of a rwlock
 * that is ours, -1 for one that is glibc's.
 */
TOFUTEX_HIDDEN int tfx_rwlock_kind(const pthread_rwlock_t *rw);

/*
 * The layouts above, checked against the <pthread.h> the library is built
 * with (x86-64's and arm64's glibc agree on every offset used): the
 * libtofutex objects fill glibc's fields that only glibc's own functions
 * would use, and end before those written by glibc's initialisers and
 * read here (__kind, __wrefs, __shared, __flags).
 */
_Static_assert(__builtin_offsetof(pthread_rwlock_t, __data.__readers) == 0 &&
	       sizeof(tofutex_rwlock_t) <=
	       __builtin_offsetof(pthread_rwlock_t, __data.__wrphase_futex),
	       "a tofutex_rwlock_t is glibc's __readers and __writers");
_Static_assert(__builtin_offsetof(pthread_rwlock_t, __data.__shared) == 28 &&
	       __builtin_offsetof(pthread_rwlock_t, __data.__flags) == 48,
	       "glibc's rwlock __shared and __flags where preload.h says");
_Static_assert(__builtin_offsetof(pthread_mutex_t, __data.__owner) == 8 &&
	       __builtin_offsetof(pthread_mutex_t, __data.__nusers) == 12 &&
	       __builtin_offsetof(pthread_mutex_t, __data.__kind) == 16 &&
	       sizeof(tofutex_mutex_t) <=
	       __builtin_offsetof(pthread_mutex_t, __data.__owner),
	       "glibc's mutex fields where preload.h says");
_Static_assert(__builtin_offsetof(pthread_cond_t, __data.__wrefs) == 36,
	       "glibc's cond __wrefs where preload.h says");

static inline tofutex_rwlock_t *tfx_rwlock(pthread_rwlock_t *rw)
{
	return (tofutex_rwlock_t *)(void *)&rw->__data.__readers;
}

#endif /* TOFUTEX_PTHREAD_PRELOAD_H */
