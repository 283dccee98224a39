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

static bool tofutex_elf_name_is(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return *a == *b;
}

/*
 * Symbol @i, @s, is @name's definition: defined, and not a hidden
 * version (in @versym, when the object has versions: an older version
 * kept for binaries linked against it, such as glibc's
 * pthread_cond_wait@GLIBC_2.2.5 beside its default @@GLIBC_2.3.2).
 */
static bool tofutex_elf_match(const ElfW(Sym) *s, uint32_t i,
			      const ElfW(Half) *versym, const char *strtab,
			      const char *name)
{
	return s->st_shndx != SHN_UNDEF &&
	       !(versym && (versym[i] & 0x8000)) &&
	       tofutex_elf_name_is(strtab + s->st_name, name);
}

/*
 * The GNU table: nbuckets, symoffset, bloom words, bloom shift, the bloom
 * filter, the buckets, then one chain word per symbol from symoffset on,
 * whose low bit ends a chain.
 */
static const ElfW(Sym) *tofutex_elf_gnu(const uint32_t *gh,
					const ElfW(Sym) *sym,
					const ElfW(Half) *versym,
					const char *str, const char *name)
{
	const uint32_t *bucket, *chain;
	const unsigned char *c;
	uint32_t h = 5381, i;

	if (!gh[0])
		return NULL;
	for (c = (const unsigned char *)name; *c; c++)
		h = h * 33 + *c;
	bucket = (const uint32_t *)((const ElfW(Addr) *)&gh[4] + gh[2]);
	chain = bucket + gh[0];
	i = bucket[h % gh[0]];
	if (i < gh[1])
		return NULL;
	do {
		if ((chain[i - gh[1]] | 1) == (h | 1) &&
		    tofutex_elf_match(&sym[i], i, versym, str, name))
			return &sym[i];
	} while (!(chain[i++ - gh[1]] & 1));
	return NULL;
}

/* The SysV table: nbucket, nchain (the number of symbols), ... */
static const ElfW(Sym) *tofutex_elf_sysv(const uint32_t *hash,
					 const ElfW(Sym) *sym,
					 const ElfW(Half) *versym,
					 const char *str, const char *name)
{
	uint32_t i;

	for (i = 0; i < hash[1]; i++)
		if (tofutex_elf_match(&sym[i], i, versym, str, name))
			return &sym[i];
	return NULL;
}

const ElfW(Sym) *tofutex__elf_find(const uint32_t *gnu_hash,
				   const uint32_t *sysv_hash,
				   const ElfW(Sym) *symtab,
				   const ElfW(Half) *versym,
				   const char *strtab, const char *name)
{
	if (!symtab || !strtab)
		return NULL;
	if (gnu_hash)
		return tofutex_elf_gnu(gnu_hash, symtab, versym, strtab, name);
	if (sysv_hash)
		return tofutex_elf_sysv(sysv_hash, symtab, versym, strtab,
					name);
	return NULL;
}
