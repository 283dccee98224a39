/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libtofutex internals: a symbol's definition in the dynamic symbol table
 * of an ELF object already in memory, through the object's hash tables
 * (elfsym.c).
 */
#ifndef TOFUTEX_ELFSYM_H
#define TOFUTEX_ELFSYM_H

#include <link.h>
#include <stdint.h>

#include "internal.h"

/* An object's symbol versions: DT_VERSYM and DT_VERDEF, either NULL. */
struct tofutex_elf_versions {
	const ElfW(Half) *versym;
	const ElfW(Verdef) *verdef;
};

/*
 * @name's defined symbol in @symtab/@strtab, found through the GNU hash
 * table @gnu_hash (DT_GNU_HASH) or the SysV one @sysv_hash (DT_HASH),
 * whichever is not NULL (the GNU one first); NULL when not defined.
 * @vers, if not NULL, are the object's versions; then with @version NULL
 * the default version is taken (hidden ones are passed over), and with a
 * @version, the definition the dynamic linker binds a reference
 * @name@@version to: that version (hidden or not), or an unversioned one.
 */
TOFUTEX_HIDDEN const ElfW(Sym) *
tofutex__elf_find(const uint32_t *gnu_hash, const uint32_t *sysv_hash,
		  const ElfW(Sym) *symtab,
		  const struct tofutex_elf_versions *vers,
		  const char *strtab, const char *name, const char *version);

/*
 * The name of the version at index @ndx (a DT_VERSYM entry, without its
 * hidden bit) among those an object's references require, @verneed
 * (DT_VERNEED) with names in @strtab; NULL for an unversioned reference
 * or one not listed there.
 */
TOFUTEX_HIDDEN const char *
tofutex__elf_need_name(const ElfW(Verneed) *verneed, const char *strtab,
		       ElfW(Half) ndx);

#endif /* TOFUTEX_ELFSYM_H */
