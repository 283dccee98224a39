// SPDX-License-Identifier: GPL-2.0
/*
 * libtfx-audit.so - an LD_AUDIT module for tests/tools/run.sh: it asks to
 * see every object's symbol bindings and counts the objects loaded; it
 * changes nothing, so a program must run as without it.
 */
#include <link.h>
#include <stdio.h>

static unsigned int objects;

unsigned int la_version(unsigned int version)
{
	return version < LAV_CURRENT ? version : LAV_CURRENT;
}

unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie)
{
	(void)map;
	(void)lmid;
	(void)cookie;
	objects++;
	return LA_FLG_BINDTO | LA_FLG_BINDFROM;
}
