// SPDX-License-Identifier: GPL-2.0
/*
 * tofutex - access to user words (lock and wait words).
 *
 * Rules, as in kernel/futex/:
 *
 * - A word is read or compared-and-exchanged only with page faults
 *   disabled (tofutex_word_read_inatomic(), tofutex_word_cmpxchg_inatomic()),
 *   because callers hold spinlocks or have set their task state to sleep,
 *   where the fault handler must not run. On -EFAULT the caller drops every
 *   lock, calls tofutex_word_fault_in() and retries.
 *
 * - tofutex_word_fault_in() is the only place that sleeps: it takes the
 *   mmap lock and asks the VM to make the page present (and writable, for
 *   a cmpxchg; that also breaks copy-on-write after fork()), waiting for it
 *   if need be (a userfaultfd page is provided by another thread), until
 *   a fatal signal. Only when the VM refuses - no mapping, no permission -
 *   does -EFAULT reach user space.
 *
 * - tofutex_word_read() and tofutex_word_cmpxchg() wrap the two for callers
 *   that hold nothing and may sleep.
 *
 * - A fault-in followed by a failing access again (the page went away
 *   meanwhile, under memory pressure or another thread's munmap()) loops;
 *   each fault-in first looks for a fatal signal, so a task being killed
 *   leaves with -EINTR, and every loop offers the CPU between passes.
 *
 * The address has been checked by tofutex_word_check() at the ioctl
 * boundary: aligned and in the user range.
 */
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/uaccess.h>
#include <asm/futex.h>

#include "tofutex.h"

/**
 * tofutex_word_check() - validate a word address from an ioctl argument
 * @addr:  the address, as the ABI carries it
 * @uaddr: out: the address as a user pointer, set only when valid
 *
 * Return: 0, -EINVAL when not 4-byte aligned, -EFAULT when not in the
 * user address range.
 */
int tofutex_word_check(u64 addr, u32 __user **uaddr)
{
	u32 __user *p = u64_to_user_ptr(addr);

	if (!IS_ALIGNED((unsigned long)p, sizeof(u32)))
		return -EINVAL;
	if (!access_ok(p, sizeof(u32)))
		return -EFAULT;
	*uaddr = p;
	return 0;
}

/**
 * tofutex_word_read_inatomic() - read a word with page faults disabled
 * @uaddr: the word
 * @val:   where the value goes
 *
 * Return: 0, or -EFAULT when the page is not present or not readable.
 */
int tofutex_word_read_inatomic(u32 __user *uaddr, u32 *val)
{
	int ret;

	pagefault_disable();
	ret = __get_user(*val, uaddr);
	pagefault_enable();
	return ret ? -EFAULT : 0;
}

/**
 * tofutex_word_cmpxchg_inatomic() - compare and exchange a word, with page
 * faults disabled
 * @uaddr:  the word
 * @curval: receives the value found, whether or not it matched
 * @oldval: the value expected
 * @newval: the value stored when *@uaddr == @oldval
 *
 * Fully ordered, like every futex cmpxchg.
 *
 * Return: 0 (check *@curval == @oldval for success), or -EFAULT.
 */
int tofutex_word_cmpxchg_inatomic(u32 __user *uaddr, u32 *curval,
				  u32 oldval, u32 newval)
{
	int ret;

	pagefault_disable();
	ret = futex_atomic_cmpxchg_inatomic(curval, uaddr, oldval, newval);
	pagefault_enable();
	return ret ? -EFAULT : 0;
}

/**
 * tofutex_word_fault_in() - make a word's page present
 * @uaddr: the word
 * @write: the page must also be writable
 *
 * Must be called with no locks held and the task running; may sleep.
 *
 * Return: 0 when the access can be retried, -EFAULT when the address is
 * genuinely bad (unmapped, or mapped without the needed permission),
 * -EINTR when the task has a fatal signal.
 */
int tofutex_word_fault_in(u32 __user *uaddr, bool write)
{
	struct mm_struct *mm = current->mm;
	bool unlocked = false;
	int ret;

	if (fatal_signal_pending(current))
		return -EINTR;
	cond_resched();
	/*
	 * With @unlocked, the fault handler may drop the mmap lock and wait,
	 * killably, for a page that is not there yet (userfaultfd, a page
	 * under I/O). Without it, such a fault fails (userfaultfd answers
	 * SIGBUS), which would be -EFAULT for a page merely not present.
	 */
	mmap_read_lock(mm);
	ret = fixup_user_fault(mm, (unsigned long)uaddr,
			       write ? FAULT_FLAG_WRITE : 0, &unlocked);
	mmap_read_unlock(mm);
	if (ret == -EINTR)
		return ret;
	return ret < 0 ? -EFAULT : 0;
}

/**
 * tofutex_word_read() - read a word, faulting its page in if needed
 * @uaddr: the word
 * @val:   where the value goes
 *
 * May sleep.
 *
 * Return: 0, -EFAULT or -EINTR.
 */
int tofutex_word_read(u32 __user *uaddr, u32 *val)
{
	int ret;

	for (;;) {
		if (!tofutex_word_read_inatomic(uaddr, val))
			return 0;
		ret = tofutex_word_fault_in(uaddr, false);
		if (ret)
			return ret;
	}
}

/**
 * tofutex_word_cmpxchg() - compare and exchange a word, faulting its page
 * in (for writing) if needed
 * @uaddr:  the word
 * @curval: receives the value found
 * @oldval: the value expected
 * @newval: the value stored on a match
 *
 * May sleep.
 *
 * Return: 0 (check *@curval == @oldval), -EFAULT or -EINTR.
 */
int tofutex_word_cmpxchg(u32 __user *uaddr, u32 *curval, u32 oldval,
			 u32 newval)
{
	int ret;

	for (;;) {
		if (!tofutex_word_cmpxchg_inatomic(uaddr, curval, oldval, newval))
			return 0;
		ret = tofutex_word_fault_in(uaddr, true);
		if (ret)
			return ret;
	}
}
