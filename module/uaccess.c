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
 * - tofutex_word_fault_in_until() is the only place that sleeps: it asks
 *   the VM to make the page present (and writable, for a cmpxchg; that
 *   also breaks copy-on-write after fork()), waiting for it if need be (a
 *   userfaultfd page is provided by another thread), until a signal or the
 *   caller's deadline. Only when the VM refuses - no mapping, no
 *   permission - does -EFAULT reach user space.
 *
 * - tofutex_word_read_until() and tofutex_word_cmpxchg_until() wrap the
 *   two for callers that hold nothing and may sleep; the forms without
 *   _until (tofutex.h) have no deadline.
 *
 * - A fault-in followed by a failing access again (the page went away
 *   meanwhile, under memory pressure or another thread's munmap(); or an
 *   access the VM allows and the CPU refuses all the same, as a write to
 *   a user shadow-stack page) loops; each fault-in first looks for a
 *   fatal signal, so a task being killed leaves with -EINTR, each one
 *   after the first also for any signal and the deadline
 *   (tofutex_word_refault_until()), and every loop offers the CPU
 *   between passes.
 *
 * The address has been checked by tofutex_word_check() at the ioctl
 * boundary: aligned and in the user range.
 */
#include <linux/hrtimer.h>
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
	if (!tofutex_access_ok(p, sizeof(u32)))
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

/*
 * One fault of the page at @address, as fixup_user_fault() takes it, but
 * with @flags as given: fixup_user_fault() retries a fault that had to
 * wait until it succeeds or a fatal signal comes, and so cannot end on an
 * ordinary signal or a deadline.
 *
 * Return: 0 when the page is there now, -EAGAIN when the fault waited and
 * dropped the mmap lock (retry), -EFAULT when the VM refuses (no mapping,
 * no permission, SIGBUS, out of memory), -EINTR on a fatal signal.
 */
static int tofutex_fault_once(struct mm_struct *mm, unsigned long address,
			      unsigned int flags)
{
	vm_flags_t need = (flags & FAULT_FLAG_WRITE) ? VM_WRITE : VM_READ;
	struct vm_area_struct *vma;
	vm_fault_t fault;

	if (mmap_read_lock_killable(mm))
		return -EINTR;
	vma = find_vma(mm, address);
	if (!vma || address < vma->vm_start || !(vma->vm_flags & need)) {
		mmap_read_unlock(mm);
		return -EFAULT;
	}
	fault = handle_mm_fault(vma, address, flags, NULL);
	/* Both mean that the fault handler dropped the mmap lock. */
	if (fault & VM_FAULT_COMPLETED)
		return 0;
	if (fault & VM_FAULT_RETRY)
		return -EAGAIN;
	mmap_read_unlock(mm);
	return (fault & VM_FAULT_ERROR) ? -EFAULT : 0;
}

/* Why a fault that waited is not tried again, or 0 to try again. */
static int tofutex_fault_interrupted(const struct tofutex_deadline *dl)
{
	if (fatal_signal_pending(current))
		return -EINTR;
	if (signal_pending(current))
		return -ERESTARTSYS;
	if (dl && tofutex_deadline_passed(dl))
		return -ETIMEDOUT;
	return 0;
}

/**
 * tofutex_word_fault_in_until() - make a word's page present, until a
 * signal or a deadline
 * @uaddr: the word
 * @write: the page must also be writable
 * @dl:    the caller's deadline, or NULL for none
 *
 * The fault may wait, interruptibly, for a page that is not there yet (a
 * userfaultfd page is provided by another thread; a page under I/O); the
 * fault handler then drops the mmap lock and the fault is taken again.
 * Between those passes a signal ends the fault-in, and so does @dl: a
 * timer on @dl's clock wakes the caller from the fault handler's sleep
 * (which tolerates spurious wake-ups, as every kernel sleep does).
 *
 * Must be called with no locks held and the task running; may sleep.
 *
 * Return: 0 when the access can be retried, -EFAULT when the address is
 * genuinely bad (unmapped, or mapped without the needed permission), -EINTR
 * on a fatal signal, -ERESTARTSYS on another signal, -ETIMEDOUT when @dl
 * passed while the fault waited.
 */
int tofutex_word_fault_in_until(u32 __user *uaddr, bool write,
				const struct tofutex_deadline *dl)
{
	unsigned int flags = FAULT_FLAG_DEFAULT | (write ? FAULT_FLAG_WRITE : 0);
	struct tofutex_deadline_timer timer;
	int ret;

	if (fatal_signal_pending(current))
		return -EINTR;
	cond_resched();
	tofutex_deadline_timer_start(&timer, dl);
	for (;;) {
		/*
		 * The VMA is found by the address without its tag (arm64's
		 * tagged-address ABI), as fixup_user_fault() looks for it.
		 */
		ret = tofutex_fault_once(current->mm,
					 untagged_addr((unsigned long)uaddr),
					 flags);
		if (ret != -EAGAIN)
			break;
		ret = tofutex_fault_interrupted(dl);
		if (ret)
			break;
		flags |= FAULT_FLAG_TRIED;
		cond_resched();
	}
	tofutex_deadline_timer_cancel(&timer);
	return ret;
}

/**
 * tofutex_word_refault_until() - fault a word's page in again
 * @uaddr: the word
 * @write: the page must also be writable
 * @dl:    the caller's deadline, or NULL for none
 *
 * For a retry: a fault-in succeeded and the access failed again. Such a
 * loop must end on any signal and at the deadline, not only when the
 * task is killed: the page may keep going away, or the access keep
 * failing where the VM sees no reason to.
 *
 * Return: as tofutex_word_fault_in_until().
 */
int tofutex_word_refault_until(u32 __user *uaddr, bool write,
			       const struct tofutex_deadline *dl)
{
	int ret = tofutex_fault_interrupted(dl);

	return ret ? ret : tofutex_word_fault_in_until(uaddr, write, dl);
}

/**
 * tofutex_word_read_until() - read a word, faulting its page in if needed
 * @uaddr: the word
 * @val:   where the value goes
 * @dl:    the caller's deadline, or NULL
 *
 * May sleep.
 *
 * Return: 0, or an error of tofutex_word_fault_in_until().
 */
int tofutex_word_read_until(u32 __user *uaddr, u32 *val,
			    const struct tofutex_deadline *dl)
{
	bool again = false;
	int ret;

	for (;;) {
		if (!tofutex_word_read_inatomic(uaddr, val))
			return 0;
		ret = again ? tofutex_word_refault_until(uaddr, false, dl) :
			      tofutex_word_fault_in_until(uaddr, false, dl);
		if (ret)
			return ret;
		again = true;
	}
}

/**
 * tofutex_word_cmpxchg_until() - compare and exchange a word, faulting its
 * page in (for writing) if needed
 * @uaddr:  the word
 * @curval: receives the value found
 * @oldval: the value expected
 * @newval: the value stored on a match
 * @dl:     the caller's deadline, or NULL
 *
 * May sleep.
 *
 * Return: 0 (check *@curval == @oldval), or an error of
 * tofutex_word_fault_in_until().
 */
int tofutex_word_cmpxchg_until(u32 __user *uaddr, u32 *curval, u32 oldval,
			       u32 newval, const struct tofutex_deadline *dl)
{
	bool again = false;
	int ret;

	for (;;) {
		if (!tofutex_word_cmpxchg_inatomic(uaddr, curval, oldval, newval))
			return 0;
		ret = again ? tofutex_word_refault_until(uaddr, true, dl) :
			      tofutex_word_fault_in_until(uaddr, true, dl);
		if (ret)
			return ret;
		again = true;
	}
}
