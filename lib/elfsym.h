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

/*
 * @name's defined symbol in @symtab/@strtab, found through the GNU hash
 * table @gnu_hash (DT_GNU_HASH) or the SysV one @sysv_hash (DT_HASH),
 * whichever is not NULL (the GNU one first); NULL when not defined. With
 * @versym (DT_VERSYM), its default version: hidden ones are passed over.
 */
TOFUTEX_HIDDEN const ElfW(Sym) *
tofutex__elf_find(const uint32_t *gnu_hash, const uint32_t *sysv_hash,
		  const ElfW(Sym) *symtab, const ElfW(Half) *versym,
		  const char *strtab, const char *name);

#endif /* TOFUTEX_ELFSYM_H */
