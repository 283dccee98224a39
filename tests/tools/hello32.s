# SPDX-License-Identifier: GPL-2.0
#
# hello32 - a 32-bit (i386) dynamically linked program for
# tests/tools/run.sh, assembled and linked with binutils alone (as --32,
# ld -m elf_i386 against Debian's libc6-i386): a 64-bit preload cannot be
# preloaded into it.
	.text
	.globl _start
_start:
	pushl $msg
	call puts
	addl $4, %esp
	pushl $0
	call exit
	.section .rodata
msg:	.asciz "hello from a 32-bit program"
	.section .note.GNU-stack,"",@progbits
