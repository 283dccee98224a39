// SPDX-License-Identifier: GPL-2.0
/*
 * A plugin for test_pthread_glibc_code with a table of lock functions in
 * a read-only section, filled by absolute relocations (text relocations,
 * DT_TEXTREL, as hand-written assembly and old objects built without
 * -fPIC have): loaded with RTLD_DEEPBIND, the table's pointers are bound
 * to glibc, in pages the loader leaves read-only and executable.
 */
#include <pthread.h>

#if defined(__x86_64__) || defined(__aarch64__)
__asm__(".section .rodata\n"
	".p2align 3\n"
	".type tfx_textrel_table, %object\n"
	"tfx_textrel_table:\n"
	"	.quad pthread_rwlock_wrlock\n"
	"	.quad pthread_rwlock_unlock\n"
	".size tfx_textrel_table, 16\n"
	".text\n");
#endif

extern void *const tfx_textrel_table[2];
void *tfx_textrel_wrlock(void);

#if !defined(__x86_64__) && !defined(__aarch64__)
void *const tfx_textrel_table[2] = {
	(void *)pthread_rwlock_wrlock, (void *)pthread_rwlock_unlock,
};
#endif

/* The table's pthread_rwlock_wrlock, as the loader (and we) left it. */
void *tfx_textrel_wrlock(void)
{
	return tfx_textrel_table[0];
}
