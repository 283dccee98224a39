/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Counting the system calls a piece of code makes, deterministically: a
 * seccomp filter on the calling thread turns every system call but
 * rt_sigreturn, exit and exit_group into a SIGSYS, whose handler counts
 * it and makes it fail with ENOSYS. A filter cannot be removed, so this
 * is for a process that is about to exit: fork() a child, set up what is
 * to be measured there, call syscalls_trap(), run the code, and _exit()
 * with the verdict. Only the calling thread is filtered (no
 * SECCOMP_FILTER_FLAG_TSYNC): the child's other threads, made before,
 * run on unhindered.
 *
 * After syscalls_trap() the thread must not call anything that makes a
 * system call it needs (no Check assertion, no printf()): each one fails.
 */
#ifndef TOFUTEX_TESTS_SYSCALLS_H
#define TOFUTEX_TESTS_SYSCALLS_H

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>

static volatile sig_atomic_t syscalls_seen;

static inline void syscalls_on_sigsys(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	syscalls_seen++;
#if defined(__x86_64__)
	((ucontext_t *)uc)->uc_mcontext.gregs[REG_RAX] = -ENOSYS;
#elif defined(__aarch64__)
	((ucontext_t *)uc)->uc_mcontext.regs[0] = (unsigned long long)-ENOSYS;
#else
	(void)uc;
#endif
}

/*
 * Can this kernel filter system calls? Not every one that runs the tests
 * can (the debug kernel is tinyconfig, without CONFIG_SECCOMP_FILTER):
 * the caller skips with a message then, as for the clock-setting tests.
 */
static inline bool syscalls_can_trap(void)
{
	return prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 &&
	       syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0,
		       &(uint32_t){ SECCOMP_RET_TRAP }) == 0;
}

/* Install @prog on the calling thread, SIGSYS counting what it traps. */
static inline bool syscalls_install(const struct sock_fprog *prog)
{
	struct sigaction sa = { .sa_flags = SA_SIGINFO };

	sa.sa_sigaction = syscalls_on_sigsys;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL))
		return false;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return false;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, prog))
		return false;
	syscalls_seen = 0;
	return true;
}

/*
 * From now on, count the calling thread's system calls (syscalls_seen).
 * Returns false when the filter could not be installed.
 */
static inline bool syscalls_trap(void)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_rt_sigreturn, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_exit_group, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_exit, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = sizeof(code) / sizeof(code[0]),
		.filter = code,
	};

	return syscalls_install(&prog);
}

/* The same for one system call, @nr, only; every other one runs. */
static inline bool syscalls_trap_one(unsigned int nr)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = sizeof(code) / sizeof(code[0]),
		.filter = code,
	};

	return syscalls_install(&prog);
}

/*
 * Run @fn(@arg) in a child of fork(), where it installs its filter, and
 * return the child's exit status; -1, having said so, where the kernel
 * cannot filter system calls. An exit status of 1 is @fn's "the filter
 * could not be installed", a failure.
 */
static inline int syscalls_in_child(int (*fn)(int), int arg)
{
	int status;
	pid_t pid;

	if (!syscalls_can_trap()) {
		printf("skipped: needs seccomp filters (CONFIG_SECCOMP_FILTER)\n");
		return -1;
	}
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(fn(arg));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status), "child status %#x", status);
	ck_assert_msg(WEXITSTATUS(status) != 1, "seccomp filter not installed");
	return WEXITSTATUS(status);
}

#endif /* TOFUTEX_TESTS_SYSCALLS_H */
