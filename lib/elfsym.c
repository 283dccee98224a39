// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex - a symbol's definition in an ELF object already in memory:
 * the vDSO's clock_gettime (vdso.c) and, in the pthread preload, glibc's
 * loader functions and our own (lib/pthread/dlsym.c, deepbind.c).
 *
 * Objects carry a GNU hash table (DT_GNU_HASH), a SysV one (DT_HASH) or
 * both: Debian's libraries the GNU one only, arm64 kernels' vDSO one or
 * the other depending on the release. The lookups call nothing, not even
 * strcmp(): the first of a process may come while a sanitizer's runtime
 * starts, before its string interceptors are set up.
 */
#include <stdbool.h>

#include "elfsym.h"

/* The object and the name looked up in it. */
struct tofutex_elf_query {
	const ElfW(Sym) *sym;
	const struct tofutex_elf_versions *vers;
	const char *str;
	const char *name;
	const char *version;
};

static bool tofutex_elf_name_is(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return *a == *b;
}

/* Is version index @ndx of the object's DT_VERDEF named @version? */
static bool tofutex_elf_version_is(const struct tofutex_elf_query *q,
				   ElfW(Half) ndx)
{
	const ElfW(Verdef) *vd = q->vers->verdef;
	const ElfW(Verdaux) *aux;

	while (vd) {
		if (vd->vd_ndx == ndx) {
			aux = (const void *)((const char *)vd + vd->vd_aux);
			return tofutex_elf_name_is(q->str + aux->vda_name,
						   q->version);
		}
		vd = vd->vd_next ?
		     (const void *)((const char *)vd + vd->vd_next) : NULL;
	}
	return false;
}

/*
 * Symbol @i is the definition looked up: defined, of that name, and of
 * its version as ld.so's check_match() takes one (the rules in
 * elfsym.h). A hidden version is an older one kept for binaries linked
 * against it, such as glibc's pthread_cond_wait@GLIBC_2.2.5 beside its
 * default @@GLIBC_2.3.2; versions 0 and 1 are an unversioned symbol's.
 */
static bool tofutex_elf_match(const struct tofutex_elf_query *q, uint32_t i)
{
	const ElfW(Sym) *s = &q->sym[i];
	ElfW(Half) v;

	if (s->st_shndx == SHN_UNDEF ||
	    !tofutex_elf_name_is(q->str + s->st_name, q->name))
		return false;
	if (!q->vers || !q->vers->versym)
		return true;
	v = q->vers->versym[i];
	if (!q->version || (v & 0x7fff) <= 1)
		return !(v & 0x8000);
	return tofutex_elf_version_is(q, v & 0x7fff);
}

/*
 * The GNU table: nbuckets, symoffset, bloom words, bloom shift, the bloom
 * filter, the buckets, then one chain word per symbol from symoffset on,
 * whose low bit ends a chain.
 */
static const ElfW(Sym) *tofutex_elf_gnu(const uint32_t *gh,
					const struct tofutex_elf_query *q)
{
	const uint32_t *bucket, *chain;
	const unsigned char *c;
	uint32_t h = 5381, i;

	if (!gh[0])
		return NULL;
	for (c = (const unsigned char *)q->name; *c; c++)
		h = h * 33 + *c;
	bucket = (const uint32_t *)((const ElfW(Addr) *)&gh[4] + gh[2]);
	chain = bucket + gh[0];
	i = bucket[h % gh[0]];
	if (i < gh[1])
		return NULL;
	do {
		if ((chain[i - gh[1]] | 1) == (h | 1) && tofutex_elf_match(q, i))
			return &q->sym[i];
	} while (!(chain[i++ - gh[1]] & 1));
	return NULL;
}

/* The SysV table: nbucket, nchain (the number of symbols), ... */
static const ElfW(Sym) *tofutex_elf_sysv(const uint32_t *hash,
					 const struct tofutex_elf_query *q)
{
	uint32_t i;

	for (i = 0; i < hash[1]; i++)
		if (tofutex_elf_match(q, i))
			return &q->sym[i];
	return NULL;
}

const ElfW(Sym) *tofutex__elf_find(const uint32_t *gnu_hash,
				   const uint32_t *sysv_hash,
				   const ElfW(Sym) *symtab,
				   const struct tofutex_elf_versions *vers,
				   const char *strtab, const char *name,
				   const char *version)
{
	const struct tofutex_elf_query q = {
		.sym = symtab, .vers = vers, .str = strtab,
		.name = name, .version = version,
	};

	if (!symtab || !strtab)
		return NULL;
	if (gnu_hash)
		return tofutex_elf_gnu(gnu_hash, &q);
	if (sysv_hash)
		return tofutex_elf_sysv(sysv_hash, &q);
	return NULL;
}

const char *tofutex__elf_need_name(const ElfW(Verneed) *vn,
				   const char *strtab, ElfW(Half) ndx)
{
	const ElfW(Vernaux) *a;
	ElfW(Half) i;

	if (ndx <= 1 || !strtab)
		return NULL;
	while (vn) {
		a = (const void *)((const char *)vn + vn->vn_aux);
		for (i = 0; i < vn->vn_cnt; i++) {
			if (a->vna_other == ndx)
				return strtab + a->vna_name;
			a = (const void *)((const char *)a + a->vna_next);
		}
		vn = vn->vn_next ?
		     (const void *)((const char *)vn + vn->vn_next) : NULL;
	}
	return NULL;
}
