// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex-pthread - dlopen() with RTLD_DEEPBIND. A plugin loaded so
 * binds its references to its own dependencies (glibc) before the
 * preload: its pthread_rwlock_* calls would run glibc's rwlock code on
 * our rwlocks, whose phase bits are the low bits of our writer's TID
 * (preload.h), and its mutex and condition variable calls glibc's code
 * with the limits of lib/glibc.c. So, after glibc's dlopen() has loaded
 * such a plugin, every global offset table slot of the objects it loaded
 * that glibc bound to one of the functions we interpose is made ours, as
 * if the plugin had been loaded without RTLD_DEEPBIND.
 *
 * Rules:
 * - Interposed names: every pthread_mutex_*, pthread_cond_*,
 *   pthread_rwlock_* and __pthread_{mutex,rwlock}_* name this library
 *   defines, and dlsym, dlvsym and dlopen (the plugin's lookups on a
 *   handle and its own RTLD_DEEPBIND dlopen()s come through us). Matched
 *   by name, as the preload interposes them; a name the object defines
 *   itself stays its own, as RTLD_DEEPBIND makes it.
 * - Which objects: from the handle's object on, in load order, those
 *   that are the handle's object or needed (DT_NEEDED, by soname or name)
 *   by one patched before them: all loaded and relocated when glibc's
 *   dlopen() returned. An object another thread's dlopen() adds
 *   meanwhile, maybe not relocated yet, is needed by none of them (the
 *   loader never maps a second object of a name it has) and is never
 *   touched. Never glibc's own objects (libc.so.6, ld-linux, libpthread,
 *   libdl) or this library. The walk runs inside dl_iterate_phdr(), whose
 *   lock keeps the list of objects still and walks one at a time (no
 *   dlsym() or dladdr() there: they take the loader's other lock).
 * - Which slots: those of JUMP_SLOT and GLOB_DAT relocations
 *   (DT_JMPREL, DT_RELA; R_X86_64_* and R_AARCH64_*), and the 64-bit
 *   absolute data pointers (R_X86_64_64, R_AARCH64_ABS64)
 *   that still hold one of glibc's mutex, rwlock or condition variable
 *   functions (tfx_deepbind_data()). A slot that holds ours already is
 *   left alone, so patching twice writes nothing; a lazy slot (still on
 *   the PLT) is simply overwritten; a slot in a page that is not writable
 *   (the RELRO pages, or the text of an object with text relocations) is
 *   written between two mprotect() calls that make that page writable
 *   and give it back the protection glibc left it with. Anything odd (no symbol table, REL
 *   relocations, an mprotect() that fails) leaves the slot or the object
 *   as glibc made it, silently: dlopen() never fails because of us.
 * - The caller: glibc's dlopen() finds the calling object from its
 *   return address (its namespace, its RPATH/RUNPATH, $ORIGIN), and we
 *   must call it ourselves to act after it. So only a load that does not
 *   depend on the caller is ours: a path with a slash and no '$', or a
 *   bare name when the caller's search path (dlinfo() RTLD_DI_SERINFO) is
 *   ours. Every other dlopen() jumps to glibc's with the caller's return
 *   address, untouched: without RTLD_DEEPBIND, with a '$', or a bare name
 *   the caller would look for elsewhere (tofutex-run(1), BUGS).
 * - What remains glibc's (tofutex-run(1), BUGS): the plugin's
 *   constructors run inside glibc's dlopen(), before the patch, and so do
 *   any dlopen() they make; a function pointer the plugin took before the
 *   patch stays glibc's; dlsym(RTLD_NEXT) from the plugin searches its own scope
 *   first (RTLD_DEFAULT of an interposed name is answered from
 *   the global scope, dlsym.c); dlmopen() namespaces other than the base
 *   one (the preload is not loaded there) are left alone (dlmopen() into
 *   LM_ID_BASE is dlopen()'s, here). dlclose() needs nothing: a plugin
 *   loaded again is a new load, patched again.
 * - Only x86-64 and arm64 (the tail-jumping entry of preload.h, and the
 *   relocation types below); elsewhere dlopen() is glibc's.
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../elfsym.h"
#include "preload.h"
#include "str.h"

#ifdef TFX_ELF_HOOKS

#if defined(__x86_64__)
#define TFX_R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define TFX_R_GLOB_DAT R_X86_64_GLOB_DAT
#define TFX_R_ABS64 R_X86_64_64
#else
#define TFX_R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define TFX_R_GLOB_DAT R_AARCH64_GLOB_DAT
#define TFX_R_ABS64 R_AARCH64_ABS64
#endif

typedef void *(*tfx_dlopen_fn)(const char *, int);
typedef void *(*tfx_dlmopen_fn)(Lmid_t, const char *, int);

static tfx_dlopen_fn tfx_next_dlopen;
static tfx_dlmopen_fn tfx_next_dlmopen;
static struct link_map *tfx_self;

/* The new objects one dlopen() patches at most: a bound on the walk. */
#define TFX_DEEPBIND_MAX 128
/* The search path lists compared on the stack, at most. */
#define TFX_SERINFO_MAX 2048

/*
 * The objects patched (their dynamic sections), for dlsym.c's answer to
 * their RTLD_DEFAULT lookups: appended under dl_iterate_phdr()'s lock,
 * read without it; a slot is published by the count. Full, the rest keep
 * glibc's answer; an entry outlives its object's dlclose(), and an object
 * loaded there later gets the global scope's answer, its own anyway
 * unless it has RTLD_DEEPBIND dependencies defining those names.
 */
#define TFX_DEEPBIND_KNOWN 64
static const void *tfx_deepbind_known[TFX_DEEPBIND_KNOWN];
static unsigned int tfx_deepbind_nknown;

/* One walk over a dlopen()'s new objects (tfx_deepbind_object()). */
struct tfx_deepbind {
	const struct link_map *root;	/* the handle's object */
	unsigned int seen;		/* objects from @root on, load order */
	unsigned int n;			/* of them, in @root's closure */
	struct link_map dep[TFX_DEEPBIND_MAX]; /* those: l_addr, l_ld */
};

/* The interposed names (see the rules above). */
static bool tfx_deepbind_name(const char *name)
{
	return tfx_lock_fn_name(name) || tfx_str_eq(name, "dlsym") || tfx_str_eq(name, "dlvsym") ||
	       tfx_str_eq(name, "dlopen") || tfx_str_eq(name, "dlmopen");
}

/* glibc's objects, which bind to themselves and must stay so. */
static bool tfx_deepbind_glibc(const char *path)
{
	static const char *const glibc[] = {
		"libc.so.", "ld-linux", "libpthread.so.", "libdl.so.",
	};
	const char *base = tfx_str_base(path);
	unsigned int i;

	for (i = 0; i < sizeof(glibc) / sizeof(glibc[0]); i++)
		if (tfx_str_prefix(base, glibc[i]))
			return true;
	return false;
}

/* Remember @ld as patched; called under dl_iterate_phdr()'s lock. */
static void tfx_deepbind_remember(const void *ld)
{
	unsigned int i, n = tfx_deepbind_nknown;

	for (i = 0; i < n; i++)
		if (tfx_deepbind_known[i] == ld)
			return;
	if (n == TFX_DEEPBIND_KNOWN)
		return;
	tfx_deepbind_known[n] = ld;
	__atomic_store_n(&tfx_deepbind_nknown, n + 1, __ATOMIC_RELEASE);
}

bool tfx_deepbind_caller(const void *caller, const char *name)
{
	unsigned int i, n = __atomic_load_n(&tfx_deepbind_nknown,
					    __ATOMIC_ACQUIRE);
	struct link_map *l = NULL;
	Dl_info info;

	if (!n || !name || !tfx_deepbind_name(name) ||
	    !dladdr1(caller, &info, (void **)&l, RTLD_DL_LINKMAP) || !l)
		return false;
	for (i = 0; i < n; i++)
		if (tfx_deepbind_known[i] == l->l_ld)
			return true;
	return false;
}

/* Where an object's slots are, and how its pages are mapped. */
struct tfx_deepbind_map {
	const struct dl_phdr_info *info;
	uintptr_t ro, ro_end;		/* its PT_GNU_RELRO pages, read only */
};

/*
 * The protection of the page of @slot as glibc left it: read only in the
 * RELRO pages, else its PT_LOAD segment's (read only and executable in
 * the text of an object with text relocations, DT_TEXTREL); -1 when no
 * segment holds it.
 */
static int tfx_deepbind_prot(const struct tfx_deepbind_map *m, uintptr_t slot)
{
	const ElfW(Phdr) *ph;
	uintptr_t start;
	ElfW(Half) i;

	if (slot >= m->ro && slot < m->ro_end)
		return PROT_READ;
	for (i = 0; i < m->info->dlpi_phnum; i++) {
		ph = &m->info->dlpi_phdr[i];
		start = m->info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type != PT_LOAD || slot < start ||
		    slot >= start + ph->p_memsz)
			continue;
		return (ph->p_flags & PF_R ? PROT_READ : 0) |
		       (ph->p_flags & PF_W ? PROT_WRITE : 0) |
		       (ph->p_flags & PF_X ? PROT_EXEC : 0);
	}
	return -1;
}

/*
 * Write @fn into @slot; a page that is not writable is made so for the
 * write and given its protection back, as glibc does while it relocates.
 */
static void tfx_deepbind_store(const struct tfx_deepbind_map *m, void **slot,
			       void *fn)
{
	uintptr_t page = (uintptr_t)slot & ~((uintptr_t)getpagesize() - 1);
	size_t len = (size_t)getpagesize();
	int prot = tfx_deepbind_prot(m, (uintptr_t)slot);

	if (prot < 0)
		return;
	if (prot & PROT_WRITE) {
		__atomic_store_n(slot, fn, __ATOMIC_RELAXED);
		return;
	}
	if (mprotect((void *)page, len, prot | PROT_WRITE))
		return;
	__atomic_store_n(slot, fn, __ATOMIC_RELAXED);
	mprotect((void *)page, len, prot);
}

/*
 * A pointer in the object's data (TFX_R_ABS64: a table of functions the
 * plugin calls through) that glibc set to one of glibc's lock functions:
 * made ours. Only a pointer that still holds exactly that function is
 * touched (addend 0, not changed by the plugin since).
 */
static void tfx_deepbind_data(const struct link_map *l, const ElfW(Rela) *r,
			      const struct tfx_deepbind_map *m)
{
	void **slot = (void **)(l->l_addr + r->r_offset);
	void *cur, *fn;

	if (!ELF64_R_SYM(r->r_info) || r->r_addend)
		return;
	cur = __atomic_load_n(slot, __ATOMIC_RELAXED);
	fn = tfx_fn_ours(cur);
	if (fn)
		tfx_deepbind_store(m, slot, fn);
}

/*
 * Ours for @l's reference @r (a JUMP_SLOT or GLOB_DAT), or NULL: a name
 * deepbind.c interposes, at the version the reference asks for, as the
 * dynamic linker would bind it. None for glibc's condition variables
 * before 2.3.2 (pthread_cond_wait@GLIBC_2.2.5, another object behind
 * another function), which stay glibc's.
 */
static void *tfx_deepbind_target(const struct link_map *l,
				 const ElfW(Rela) *r, const ElfW(Sym) *sym,
				 const char *str)
{
	const ElfW(Half) *versym = tfx_dyn_ptr(l, DT_VERSYM);
	size_t i = ELF64_R_SYM(r->r_info);
	const char *ver = NULL;

	if (!i || sym[i].st_shndx != SHN_UNDEF ||
	    !tfx_deepbind_name(str + sym[i].st_name))
		return NULL;
	if (versym)
		ver = tofutex__elf_need_name(tfx_dyn_ptr(l, DT_VERNEED), str,
					     versym[i] & 0x7fff);
	return tfx_elf_sym(tfx_self, str + sym[i].st_name, ver);
}

/* The slots of one table of RELA relocations, @size bytes, of @l. */
static void tfx_deepbind_relocs(const struct link_map *l,
				const ElfW(Rela) *r, size_t size,
				const struct tfx_deepbind_map *m)
{
	const ElfW(Sym) *sym = tfx_dyn_ptr(l, DT_SYMTAB);
	const char *str = tfx_dyn_ptr(l, DT_STRTAB);
	const ElfW(Rela) *end = r + size / sizeof(*r);
	void **slot, *fn;

	if (!r || !sym || !str)
		return;
	for (; r < end; r++) {
		if (ELF64_R_TYPE(r->r_info) == TFX_R_ABS64) {
			tfx_deepbind_data(l, r, m);
			continue;
		}
		if (ELF64_R_TYPE(r->r_info) != TFX_R_JUMP_SLOT &&
		    ELF64_R_TYPE(r->r_info) != TFX_R_GLOB_DAT)
			continue;
		fn = tfx_deepbind_target(l, r, sym, str);
		slot = (void **)(l->l_addr + r->r_offset);
		if (fn && __atomic_load_n(slot, __ATOMIC_RELAXED) != fn)
			tfx_deepbind_store(m, slot, fn);
	}
}

/* Every interposed slot of @l, whose program headers @info has. */
static void tfx_deepbind_patch(const struct link_map *l,
			       const struct dl_phdr_info *info)
{
	const ElfW(Dyn) *pltrel = tfx_dyn_entry(l, DT_PLTREL);
	const ElfW(Dyn) *pltsz = tfx_dyn_entry(l, DT_PLTRELSZ);
	const ElfW(Dyn) *relasz = tfx_dyn_entry(l, DT_RELASZ);
	const ElfW(Dyn) *ent = tfx_dyn_entry(l, DT_RELAENT);
	uintptr_t mask = ~((uintptr_t)getpagesize() - 1);
	struct tfx_deepbind_map m = { .info = info };
	ElfW(Half) i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		if (info->dlpi_phdr[i].p_type != PT_GNU_RELRO)
			continue;
		m.ro = (info->dlpi_addr + info->dlpi_phdr[i].p_vaddr) & mask;
		m.ro_end = (info->dlpi_addr + info->dlpi_phdr[i].p_vaddr +
			    info->dlpi_phdr[i].p_memsz) & mask;
	}
	if (ent && ent->d_un.d_val != sizeof(ElfW(Rela)))
		return;
	if (pltrel && pltrel->d_un.d_val == DT_RELA && pltsz)
		tfx_deepbind_relocs(l, tfx_dyn_ptr(l, DT_JMPREL),
				    pltsz->d_un.d_val, &m);
	if (relasz)
		tfx_deepbind_relocs(l, tfx_dyn_ptr(l, DT_RELA),
				    relasz->d_un.d_val, &m);
}

/* Does @l (file @path) name one of @d's objects needs (DT_NEEDED)? */
static bool tfx_deepbind_needed(const struct tfx_deepbind *d,
				const struct link_map *l, const char *path)
{
	const ElfW(Dyn) *so = tfx_dyn_entry(l, DT_SONAME);
	const char *str = tfx_dyn_ptr(l, DT_STRTAB), *base, *need, *dstr;
	const char *soname = so && str ? str + so->d_un.d_val : NULL;
	const ElfW(Dyn) *dyn;
	unsigned int i;

	base = tfx_str_base(path);
	for (i = 0; i < d->n; i++) {
		dstr = tfx_dyn_ptr(&d->dep[i], DT_STRTAB);
		for (dyn = d->dep[i].l_ld; dstr && dyn->d_tag != DT_NULL; dyn++) {
			if (dyn->d_tag != DT_NEEDED)
				continue;
			need = dstr + dyn->d_un.d_val;
			if ((soname && tfx_str_eq(need, soname)) ||
			    tfx_str_eq(need, base) || tfx_str_eq(need, path))
				return true;
		}
	}
	return false;
}

/* dl_iterate_phdr(): each object, in load order; patch the new ones. */
static int tfx_deepbind_object(struct dl_phdr_info *info, size_t size,
			       void *arg)
{
	struct tfx_deepbind *d = arg;
	struct link_map l = { .l_addr = info->dlpi_addr };
	ElfW(Half) i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			l.l_ld = (ElfW(Dyn) *)(info->dlpi_addr +
					       info->dlpi_phdr[i].p_vaddr);
	if (!d->seen && l.l_ld != d->root->l_ld)
		return 0;
	/* Past our bound: done. */
	if (d->n == TFX_DEEPBIND_MAX)
		return 1;
	d->seen++;
	if (!l.l_ld || (d->seen > 1 &&
			!tfx_deepbind_needed(d, &l, info->dlpi_name)))
		return 0;
	d->dep[d->n++] = l;
	if (l.l_ld != tfx_self->l_ld &&
	    !tfx_deepbind_glibc(info->dlpi_name ? info->dlpi_name : "")) {
		tfx_deepbind_patch(&l, info);
		tfx_deepbind_remember(l.l_ld);
	}
	return 0;
}

/*
 * The walks (tfx_dlopen_deepbind()) hold glibc's dl_iterate_phdr() lock,
 * which glibc 2.36's fork() does not reset in the child (its dlopen()
 * lock, it does): a child forked during a walk would wait for it for
 * ever in its next dlopen() of a new object. So a walk holds this lock
 * too, and fork() takes it first (pthread_atfork()), waiting for the walk
 * in progress; the child makes it anew. It is a glibc mutex of our own,
 * taken with glibc's functions. Lock order: this, then the loader's; no
 * thread that holds a loader lock waits for it, but a fork() from inside
 * a dl_iterate_phdr() callback (which would deadlock in glibc anyway).
 */
static pthread_mutex_t tfx_walk_lock = PTHREAD_MUTEX_INITIALIZER;

static void tfx_walk_fork_prepare(void)
{
	tfx_glibc()->mutex_lock(&tfx_walk_lock);
}

static void tfx_walk_fork_parent(void)
{
	tfx_glibc()->mutex_unlock(&tfx_walk_lock);
}

static void tfx_walk_fork_child(void)
{
	static const pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

	memcpy(&tfx_walk_lock, &fresh, sizeof(fresh));
}

__attribute__((constructor)) static void tfx_walk_start(void)
{
	pthread_atfork(tfx_walk_fork_prepare, tfx_walk_fork_parent,
		       tfx_walk_fork_child);
}

/*
 * glibc's dlopen() from here, then the patch of the objects of the
 * handle. No lock of ours is held across glibc's dlopen(): a plugin's
 * constructor that loads another with RTLD_DEEPBIND, beside another
 * thread doing the same, would take it and the loader's in the other
 * order. Instead every caller patches its handle's objects itself, so
 * that none returns before they are ours: a second thread's dlopen() of
 * a plugin the first is loading returns once glibc has relocated it,
 * maybe before the first thread's patch. The walks run inside
 * dl_iterate_phdr(), under the loader's lock and tfx_walk_lock, one at
 * a time; the second writes nothing.
 */
/*
 * The walk's list of the objects it walked: some kilobytes, kept off the
 * stack, since glibc's dlopen() has just run there as deep as without the
 * library, and a thread with a small stack that can load a plugin stock
 * must be able to load it here too. One walk runs at a time, so one list,
 * under tfx_walk_lock.
 */
static struct tfx_deepbind tfx_walk;

/* The walk of handle @h's objects, patching the new ones. */
static void tfx_deepbind_walk(void *h)
{
	const struct link_map *root = NULL;

	if (dlinfo(h, RTLD_DI_LINKMAP, &root) || !root)
		return;
	tfx_glibc()->mutex_lock(&tfx_walk_lock);
	tfx_walk.root = root;
	tfx_walk.seen = 0;
	tfx_walk.n = 0;
	dl_iterate_phdr(tfx_deepbind_object, &tfx_walk);
	tfx_glibc()->mutex_unlock(&tfx_walk_lock);
}

static void *tfx_dlopen_deepbind(const char *file, int mode)
{
	void *h;

	/* glibc's functions known before the walk, where dlsym() may not run. */
	tfx_glibc();
	h = tfx_next_dlopen(file, mode);
	if (h)
		tfx_deepbind_walk(h);
	return h;
}

/* The search path glibc gives @l's dlopen()s into @buf, or NULL. */
static const Dl_serinfo *tfx_serinfo(struct link_map *l, Dl_serinfo *buf)
{
	Dl_serinfo size;

	if (dlinfo(l, RTLD_DI_SERINFOSIZE, &size) ||
	    size.dls_size > TFX_SERINFO_MAX)
		return NULL;
	buf->dls_size = size.dls_size;
	buf->dls_cnt = size.dls_cnt;
	return dlinfo(l, RTLD_DI_SERINFO, buf) ? NULL : buf;
}

/*
 * Would glibc search for a bare name from @caller as from here? The two
 * search paths (some kilobytes) are allocated, not on the stack: the
 * caller's thread may have a stack just deep enough for glibc's own
 * dlopen(). Without memory, the answer is no: the load is glibc's alone.
 */
static bool tfx_dlopen_same_search(const void *caller)
{
	union tfx_serinfo_buf {
		Dl_serinfo si;
		char bytes[TFX_SERINFO_MAX];
	} *buf;
	const Dl_serinfo *a, *b;
	struct link_map *l = NULL;
	bool same = false;
	Dl_info info;
	unsigned int i;

	if (!dladdr1(caller, &info, (void **)&l, RTLD_DL_LINKMAP) || !l)
		return false;
	if (l == tfx_self)
		return true;
	buf = malloc(2 * sizeof(*buf));
	if (!buf)
		return false;
	a = tfx_serinfo(tfx_self, &buf[0].si);
	b = tfx_serinfo(l, &buf[1].si);
	if (a && b && a->dls_cnt == b->dls_cnt) {
		for (i = 0; i < a->dls_cnt; i++)
			if (!tfx_str_eq(a->dls_serpath[i].dls_name,
					b->dls_serpath[i].dls_name))
				break;
		same = i == a->dls_cnt;
	}
	free(buf);
	return same;
}

/*
 * glibc's dlopen() and dlmopen(), and this library's link map, found at
 * the first call, by any thread; the stores are idempotent, and dlopen's,
 * tested by every call, comes last.
 */
static void tfx_dlopen_resolve(void)
{
	if (__atomic_load_n(&tfx_next_dlopen, __ATOMIC_ACQUIRE))
		return;
	__atomic_store_n(&tfx_self, tfx_self_map(), __ATOMIC_RELAXED);
	__atomic_store_n(&tfx_next_dlmopen,
			 (tfx_dlmopen_fn)tfx_elf_next("dlmopen",
						      TFX_LIBC_VERSION_dlmopen),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&tfx_next_dlopen,
			 (tfx_dlopen_fn)tfx_elf_next("dlopen",
						     TFX_LIBC_VERSION_dlopen),
			 __ATOMIC_RELEASE);
}

/* Is the load of @file with @mode from @caller one made here (the rules)? */
static bool tfx_dlopen_ours(const char *file, int mode, const void *caller)
{
	if (!(mode & RTLD_DEEPBIND) || !file || !tfx_self ||
	    tfx_str_has(file, '$'))
		return false;
	return tfx_str_has(file, '/') || tfx_dlopen_same_search(caller);
}

/*
 * The stub's choice: where dlopen() of @file with @mode, called from
 * @caller, jumps (with the caller's arguments and return address).
 */
TOFUTEX_HIDDEN __attribute__((used)) void *
tfx_dlopen_route(const char *file, int mode, int unused, const void *caller)
{
	(void)unused;
	tfx_dlopen_resolve();
	return tfx_dlopen_ours(file, mode, caller) ?
	       (void *)tfx_dlopen_deepbind : (void *)tfx_next_dlopen;
}

/* dlmopen() into the base namespace: a dlopen() from this library. */
static void *tfx_dlmopen_deepbind(Lmid_t lmid, const char *file, int mode)
{
	(void)lmid;
	return tfx_dlopen_deepbind(file, mode);
}

/*
 * The stub's choice for dlmopen(): the base namespace (LM_ID_BASE), where
 * the preload is, is dlopen()'s; another namespace stays glibc's.
 */
TOFUTEX_HIDDEN __attribute__((used)) void *
tfx_dlmopen_route(Lmid_t lmid, const char *file, int mode, const void *caller)
{
	tfx_dlopen_resolve();
	return lmid == LM_ID_BASE && tfx_dlopen_ours(file, mode, caller) ?
	       (void *)tfx_dlmopen_deepbind : (void *)tfx_next_dlmopen;
}

void *tfx_dlopen_fn_ours(const void *fn)
{
	tfx_dlopen_resolve();
	if (fn == (const void *)tfx_next_dlopen)
		return tfx_stub_dlopen;
	if (fn == (const void *)tfx_next_dlmopen)
		return tfx_stub_dlmopen;
	return NULL;
}

/*
 * dlopen() and dlmopen(): jump where the routes say (preload.h), at each
 * of glibc's versions of them too (dlsym.c says why).
 */
TFX_ROUTE_STUB(dlopen, tfx_dlopen_route, 0);
TFX_ROUTE_STUB_3(dlmopen, tfx_dlmopen_route);
TFX_DL_VERSIONS_dlopen;
TFX_DL_VERSIONS_dlmopen;

#endif /* TFX_ELF_HOOKS */
