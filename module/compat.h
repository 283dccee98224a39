/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tofutex - the one place where differences between the supported kernels
 * (Debian's, 6.1 to 7.x, PREEMPT_RT included) are papered over. Code
 * elsewhere uses only the names defined or re-exported here.
 */
#ifndef _TOFUTEX_COMPAT_H
#define _TOFUTEX_COMPAT_H

/*
 * PREEMPT_RT (Debian's -rt kernels) needs nothing here, for these reasons:
 *
 * - The bucket and state locks are spinlock_t, sleeping locks on RT. They
 *   are taken only in task context, never under a raw_spinlock_t, with
 *   interrupts or preemption disabled, or from a timer or irq_work; the
 *   debug kernel's lockdep (PROVE_RAW_LOCK_NESTING) checks that on every
 *   kernel. User words are touched under them with page faults disabled,
 *   which RT keeps as it is.
 * - SWAP's deferred wake (wake_local.c) runs in a preempt notifier under
 *   the run-queue lock and in an irq_work: it takes only the raw pi_lock,
 *   and the irq_work is a hard one, which RT does not move to a thread.
 * - Waits end on hrtimer sleepers (schedule_hrtimeout_range_clock()),
 *   which RT expires in hard interrupt context for real-time tasks, as for
 *   futex(2). The fault-in deadline's own hrtimer (deadline.c) expires in
 *   softirq context on RT, where wake_up_process() is allowed too.
 * - The top waiter's spin on the owner is preemptible and ends on
 *   need_resched(); under lazy preemption (the default from 6.16) that is
 *   set at the next tick at the latest, inside the spin budget.
 */

/* --- wake_local.c: running SWAP's wakee on the caller's CPU ------------ */

#include <linux/sched.h>

/*
 * Which mechanism wake_local.c builds, best first:
 *
 * TOFUTEX_WAKE_LOCAL_CURRENT_CPU
 *	The kernel's own wake-on-this-CPU (WF_CURRENT_CPU, 6.6 and later),
 *	reachable only through __wake_up_on_current_cpu(). No kernel exports
 *	it to modules today; Kbuild greps the target kernel's Module.symvers
 *	and defines TOFUTEX_EXPORTED_WAKE_UP_ON_CURRENT_CPU if one does (so
 *	no version check is needed: the export implies the declaration).
 *
 * TOFUTEX_WAKE_LOCAL_DEFERRED
 *	The wake is deferred until the caller has switched out, through a
 *	preempt notifier and an irq_work. Needs CONFIG_PREEMPT_NOTIFIERS,
 *	which Debian's kernels have only because KVM selects it.
 *
 * Neither: a plain wake_up_process().
 */
#if defined(TOFUTEX_EXPORTED_WAKE_UP_ON_CURRENT_CPU)
#define TOFUTEX_WAKE_LOCAL_CURRENT_CPU
#elif defined(CONFIG_PREEMPT_NOTIFIERS)
#define TOFUTEX_WAKE_LOCAL_DEFERRED
#endif

/**
 * tofutex_task_blocked() - has @p, which is switching out, left its run queue?
 * @p: the task being switched out; called with its run-queue lock held
 *
 * A task whose state is not TASK_RUNNING when it switches out may only
 * have been preempted on its way to schedule(); then it is still queued
 * and will run again without a wake-up. Only a task that schedule()
 * dequeued has blocked.
 *
 * 6.12 added delayed dequeue for fair tasks: one that blocks while not
 * eligible stays queued, with se.sched_delayed set, until the scheduler
 * picks it and dequeues it then. It is blocked all the same: it needs a
 * wake-up to run again. Mistaking it for a preempted task would make
 * wake_local.c wait for a switch-out that never comes. Kbuild looks for
 * the field in the target kernel's <linux/sched.h>.
 *
 * Return: true when @p needs a wake-up to run again.
 */
static inline bool tofutex_task_blocked(const struct task_struct *p)
{
#ifdef TOFUTEX_HAVE_SCHED_DELAYED
	return !READ_ONCE(p->on_rq) || READ_ONCE(p->se.sched_delayed);
#else
	return !READ_ONCE(p->on_rq);
#endif
}

/* --- deadline.c: on-stack hrtimers ------------------------------------ */

#include <linux/hrtimer.h>

/*
 * 6.13 renamed hrtimer_init_sleeper_on_stack(); same arguments. Kbuild
 * looks for the new name in the target kernel's <linux/hrtimer.h>.
 */
#ifdef TOFUTEX_HAVE_HRTIMER_SETUP_SLEEPER_ON_STACK
#define tofutex_hrtimer_sleeper_on_stack hrtimer_setup_sleeper_on_stack
#else
#define tofutex_hrtimer_sleeper_on_stack hrtimer_init_sleeper_on_stack
#endif

/*
 * An on-stack hrtimer with its callback: hrtimer_setup_on_stack() since
 * 6.13, before that hrtimer_init_on_stack() and the callback assigned
 * before the timer is started. Kbuild looks for the new name.
 */
static inline void
tofutex_hrtimer_setup_on_stack(struct hrtimer *timer,
			       enum hrtimer_restart (*fn)(struct hrtimer *),
			       clockid_t clock, enum hrtimer_mode mode)
{
#ifdef TOFUTEX_HAVE_HRTIMER_SETUP_ON_STACK
	hrtimer_setup_on_stack(timer, fn, clock, mode);
#else
	hrtimer_init_on_stack(timer, clock, mode);
	timer->function = fn;
#endif
}

/* --- deadline.c: CLOCK_MONOTONIC in the caller's time namespace ------- */

#include <linux/nsproxy.h>
#include <linux/time_namespace.h>

/**
 * tofutex_timens_monotonic_to_host() - a monotonic time of the caller's
 * time namespace on the host's monotonic clock
 * @tim: absolute CLOCK_MONOTONIC time as the caller reads the clock
 *
 * What timens_ktime_to_host(CLOCK_MONOTONIC, @tim) does for futex(2);
 * the kernel's version is not reachable from a module on 6.1 or 6.12
 * (do_timens_ktime_to_host() and init_time_ns are not exported), so the
 * namespace's offset is read here, through current->nsproxy, which only
 * the caller itself can change. The offsets are frozen once a task has
 * entered the namespace. A time before the offset has passed already (0);
 * one beyond KTIME_MAX after the conversion is never.
 *
 * Return: @tim on the host's clock.
 */
static inline ktime_t tofutex_timens_monotonic_to_host(ktime_t tim)
{
#ifdef CONFIG_TIME_NS
	ktime_t offset;

	offset = timespec64_to_ktime(current->nsproxy->time_ns->offsets.monotonic);
	if (tim < offset)
		return 0;
	if (offset < 0 && tim > KTIME_MAX + offset)
		return KTIME_MAX;
	return ktime_sub(tim, offset);
#else
	return tim;
#endif
}

/* --- uaccess.c: the user address range ------------------------------- */

#include <linux/uaccess.h>

/**
 * tofutex_access_ok() - is [@p, @p + @size) in the user address range?
 * @p:    user address
 * @size: bytes from there
 *
 * access_ok() as a module sees it. On x86-64 from 6.12 it compares with
 * USER_PTR_MAX through runtime_const_ptr(), a constant the kernel patches
 * into its own text at boot; module text is never patched, so
 * <asm/uaccess_64.h> reads the variable instead when MODULE is defined.
 * Debian's 6.16 headers lack that #ifdef: a module built against them
 * compares with the unpatched placeholder, 0x0123456789abcdef, and takes
 * non-canonical addresses below it for user addresses. The kernel's own
 * accessors (get_user(), copy_from_user()) are out of line and keep
 * refusing them, but a word that passed tofutex_word_check() is accessed
 * with user_access_begin() and __get_user(), where a non-canonical
 * address is a general protection fault, and a warning from the fault's
 * fixup. TASK_SIZE_MAX is the top of user space for four- and five-level
 * paging alike, whatever access_ok() was built with. Other architectures
 * keep access_ok() alone (arm64's takes tagged addresses, as futex(2)).
 *
 * Return: true when the range is user memory's.
 */
static inline bool tofutex_access_ok(const void __user *p, unsigned long size)
{
#ifdef CONFIG_X86_64
	unsigned long addr = (unsigned long)p;

	return access_ok(p, size) && size <= TASK_SIZE_MAX &&
	       addr <= TASK_SIZE_MAX - size;
#else
	return access_ok(p, size);
#endif
}

#endif /* _TOFUTEX_COMPAT_H */
