// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex - the module backend (backend.h): every TOFUTEX_IOC_* call
 * the library makes on a lock, wait or condition variable, through the
 * process's descriptor (device.c).
 *
 * - A contended lock is TOFUTEX_IOC_LOCK (the kernel spins on a running
 *   owner, steals, sleeps, or takes over from a dead owner), retried after
 *   a signal; an unlock that finds WAITERS is TOFUTEX_IOC_UNLOCK with the
 *   word still holding our TID (the kernel releases it, or hands it
 *   straight to a starving waiter, and wakes that waiter). The
 *   reader/writer word has TOFUTEX_IOC_RDLOCK, WRLOCK and RWUNLOCK when
 *   the module reports TOFUTEX_FEAT_RWLOCK (the kernel queues readers and
 *   writers, spins, hands the word to a starving writer, and lets queued
 *   readers in together), else futex(2)'s operations on the same word.
 * - Wait, wake and swap are TOFUTEX_IOC_WAIT, _WAKE and _SWAP; a
 *   broadcast is TOFUTEX_IOC_REQUEUE when the module reports
 *   TOFUTEX_FEAT_REQUEUE, else a wake of every waiter. Which of these a
 *   module lacks is settled when the table is chosen
 *   (tofutex__module_ops()), not per call.
 * - Deadlines: a realtime deadline is never converted to the monotonic
 *   clock once and for all, since clock_settime() would then not move
 *   it. The module follows CLOCK_REALTIME itself when it reports
 *   TOFUTEX_FEAT_CLOCK_REALTIME (TOFUTEX_*_CLOCK_REALTIME); a module
 *   without it gets monotonic slices of at most TOFUTEX_POLL_NS, each
 *   converted at the time it starts, so that a clock change is followed
 *   within one slice, and the call is repeated until the deadline passes.
 *
 * glibc's own code on the preload's words (glibc.c): glibc's unlock wakes
 * only futex sleepers, and it may write its 2 over our TID at any moment,
 * which the module's UNLOCK would leave alone. So once glibc's code has
 * run on one of the preload's words, a non-robust contended lock (every
 * preload mutex) waits with futex(2)'s lock, and a contended release is
 * glibc's release, which wakes a sleeper of either kind; a word glibc's
 * code holds is waited for as glibc's lock does (tofutex__glibc_lock()),
 * never with TOFUTEX_IOC_LOCK, which would take its 1 or 2 for a TID of
 * another process.
 */
#include <limits.h>
#include <string.h>

#include "backend.h"
#include "rwlock.h"

/* Does the module offer @feat? */
static inline bool tofutex_has(uint64_t feat)
{
	return (__atomic_load_n(&tofutex__features, __ATOMIC_RELAXED) & feat)
	       == feat;
}

/*
 * The ABI's flags and deadline for one module call (LOCK, WAIT or SWAP;
 * @realtime_flag is its *_CLOCK_REALTIME bit, @deadline_flag its
 * *_DEADLINE bit). Returns true when the module cannot follow the clock
 * itself (no TOFUTEX_FEAT_CLOCK_REALTIME): then the call gets a monotonic
 * slice of at most TOFUTEX_POLL_NS, and the caller repeats it after
 * ETIMEDOUT until tofutex__deadline_passed().
 */
static bool tofutex_module_deadline(const struct tofutex__deadline *dl,
				    uint32_t deadline_flag,
				    uint32_t realtime_flag,
				    uint32_t *flags, uint64_t *ns)
{
	uint64_t now, left;

	*flags = 0;
	*ns = 0;
	if (!dl->set)
		return false;
	*flags = deadline_flag;
	*ns = dl->ns;
	if (dl->clock == CLOCK_MONOTONIC)
		return false;
	if (tofutex_has(TOFUTEX_FEAT_CLOCK_REALTIME)) {
		*flags |= realtime_flag;
		return false;
	}
	now = tofutex__clock_ns(CLOCK_REALTIME);
	left = dl->ns > now ? dl->ns - now : 0;
	if (left > TOFUTEX_POLL_NS)
		left = TOFUTEX_POLL_NS;
	*ns = tofutex__clock_ns(CLOCK_MONOTONIC) + left;
	return true;
}

/*
 * One contended lock, @request (TOFUTEX_IOC_LOCK, _RDLOCK or _WRLOCK) on
 * @word with @flags besides the deadline's: ask the kernel, retrying
 * after a signal, and after the end of a slice of a realtime deadline the
 * module cannot follow itself. Retrying keeps a timed lock's deadline
 * because the deadline is absolute. On success, the kernel's status in
 * *@status and tofutex__self.
 */
static int tofutex_module_lock_call(unsigned long request, uint32_t *word,
				    uint32_t flags,
				    const struct tofutex__deadline *dl,
				    uint32_t *status)
{
	struct tofutex_lock arg;
	uint32_t dl_flags;
	uint64_t ns;
	bool sliced;
	int err;

	do {
		sliced = tofutex_module_deadline(dl, TOFUTEX_LOCK_DEADLINE,
						 TOFUTEX_LOCK_CLOCK_REALTIME,
						 &dl_flags, &ns);
		arg = (struct tofutex_lock) {
			.uaddr = (uintptr_t)word,
			.deadline_ns = ns,
			.flags = dl_flags | flags,
		};
		err = tofutex__ioctl(request, &arg, NULL);
		if (err == ETIMEDOUT && sliced && !tofutex__deadline_passed(dl))
			err = EINTR;
	} while (err == EINTR);
	if (!err) {
		tofutex__self.last_status = arg.status;
		*status = arg.status;
	}
	return err;
}

/*
 * TOFUTEX_IOC_LOCK on a word no glibc code holds. EAGAIN: glibc's code
 * took the word meanwhile.
 */
static __attribute__((noinline)) int
tofutex_module_lock_kernel(uint32_t *word, const struct tofutex__deadline *dl,
			   bool robust)
{
	uint32_t flags = 0, status;
	int err;

	if (!robust && tofutex_has(TOFUTEX_FEAT_NO_OWNER_POLL))
		flags = TOFUTEX_LOCK_NO_OWNER_POLL;
	err = tofutex_module_lock_call(TOFUTEX_IOC_LOCK, word, flags, dl,
				       &status);
	/* Not another process's: glibc's own code took it (glibc.c). */
	if (err == EPERM &&
	    tofutex__glibc_owner(__atomic_load_n(word, __ATOMIC_RELAXED) &
				 TOFUTEX_TID_MASK))
		return EAGAIN;
	if (err)
		return err;
	status &= TOFUTEX_STATUS_HOW_MASK;
	return status == TOFUTEX_STATUS_OWNER_DIED ? EOWNERDEAD : 0;
}

/* ->lock() */
static int tofutex_module_lock(uint32_t *word, uint32_t tid,
			       const struct tofutex__deadline *dl, bool robust)
{
	int err;

	/*
	 * Once glibc's own code has used the preload's words, its unlock
	 * must be able to wake our waiters: they wait with futex(2) too
	 * (glibc.c).
	 */
	if (!robust && tofutex__glibc_has_run())
		return tofutex__futex_ops.lock(word, tid, dl, robust);
	do {
		/* EAGAIN: glibc's code, then one of ours, holds it. */
		if (tofutex__glibc_owner(__atomic_load_n(word,
							 __ATOMIC_RELAXED) &
					 TOFUTEX_TID_MASK))
			err = tofutex__glibc_lock(word, tid, dl);
		else
			err = tofutex_module_lock_kernel(word, dl, robust);
	} while (err == EAGAIN);
	return err;
}

/* ->unlock_glibc(): futex(2)'s release and wake, then the module's. */
static int tofutex_module_unlock_glibc(uint32_t *word)
{
	struct tofutex_unlock arg = { .uaddr = (uintptr_t)word };

	tofutex__futex_ops.unlock_glibc(word);
	/* The word no longer holds our TID: the module only wakes. */
	return tofutex__ioctl(TOFUTEX_IOC_UNLOCK, &arg, NULL);
}

/* ->unlock() */
static int tofutex_module_unlock(uint32_t *word, uint32_t seen, bool own)
{
	struct tofutex_unlock arg = { .uaddr = (uintptr_t)word };

	/*
	 * Once glibc's code has used the preload's words, it may write 2
	 * over ours at any moment, and the module would leave such a word
	 * alone: release it in user space and wake either kind of sleeper.
	 */
	if (tofutex__glibc_has_run())
		return tofutex_module_unlock_glibc(word);
	while (!(seen & TOFUTEX_WAITERS)) {
		if (__atomic_compare_exchange_n(word, &seen, 0, false,
						__ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			return 0;
	}
	/*
	 * The kernel set WAITERS (only it adds bits to a word we own): it
	 * must release the word and wake. A word that does not hold our TID
	 * is released here; the kernel then only wakes (uapi/tofutex.h).
	 */
	if (!own)
		__atomic_fetch_and(word, TOFUTEX_WAITERS, __ATOMIC_RELEASE);
	return tofutex__ioctl(TOFUTEX_IOC_UNLOCK, &arg, NULL);
}

/*
 * TOFUTEX_IOC_WAIT or _SWAP (@wake_addr not NULL), each slice of a
 * realtime deadline a module without TOFUTEX_FEAT_CLOCK_REALTIME cannot
 * follow repeated until the deadline passes.
 */
static int tofutex_module_wait_call(uint32_t *addr, uint32_t expected,
				    uint32_t *wake_addr,
				    const struct tofutex__deadline *dl)
{
	uint32_t flags;
	uint64_t ns;
	bool sliced;
	int err;

	for (;;) {
		sliced = tofutex_module_deadline(dl, TOFUTEX_WAIT_DEADLINE,
						 TOFUTEX_WAIT_CLOCK_REALTIME,
						 &flags, &ns);
		if (wake_addr) {
			struct tofutex_swap arg = {
				.wait_uaddr = (uintptr_t)addr,
				.wake_uaddr = (uintptr_t)wake_addr,
				.deadline_ns = ns,
				.val = expected,
				.flags = flags,
			};

			err = tofutex__ioctl(TOFUTEX_IOC_SWAP, &arg, NULL);
			/* The wake is done; another slice only waits. */
			wake_addr = NULL;
		} else {
			struct tofutex_wait arg = {
				.uaddr = (uintptr_t)addr,
				.deadline_ns = ns,
				.val = expected,
				.flags = flags,
			};

			err = tofutex__ioctl(TOFUTEX_IOC_WAIT, &arg, NULL);
		}
		if (err != ETIMEDOUT || !sliced || tofutex__deadline_passed(dl))
			return err;
	}
}

/* ->wait() */
static int tofutex_module_wait(uint32_t *addr, uint32_t expected,
			       const struct tofutex__deadline *dl)
{
	return tofutex_module_wait_call(addr, expected, NULL, dl);
}

/* ->swap() */
static int tofutex_module_swap(uint32_t *wait_addr, uint32_t expected,
			       uint32_t *wake_addr,
			       const struct tofutex__deadline *dl)
{
	return tofutex_module_wait_call(wait_addr, expected, wake_addr, dl);
}

/* ->wake() */
static int tofutex_module_wake(uint32_t *addr, unsigned int count,
			       unsigned int *woken)
{
	struct tofutex_wake arg = {
		.uaddr = (uintptr_t)addr,
		.count = count,
	};
	int err, n = 0;

	err = tofutex__ioctl(TOFUTEX_IOC_WAKE, &arg, &n);
	if (!err && woken)
		*woken = (unsigned int)n;
	return err;
}

/* ->requeue() on a module with TOFUTEX_FEAT_REQUEUE. */
static int tofutex_module_requeue(uint32_t *addr, uint32_t val,
				  uint32_t *lock_addr)
{
	struct tofutex_requeue arg = {
		.uaddr = (uintptr_t)addr,
		.lock_uaddr = (uintptr_t)lock_addr,
		.val = val,
		.wake_count = 1,
		.requeue_count = INT_MAX,
	};

	return tofutex__ioctl(TOFUTEX_IOC_REQUEUE, &arg, NULL);
}

/* ->requeue() on a module without it: wake them all. */
static int tofutex_module_wake_all(uint32_t *addr, uint32_t val,
				   uint32_t *lock_addr)
{
	(void)val;
	(void)lock_addr;
	return tofutex_module_wake(addr, UINT_MAX, NULL);
}

/* ->prepare_wait(): open the descriptor (device.c) now. */
static void tofutex_module_prepare_wait(void)
{
	(void)tofutex_fd();
}

/*
 * ->rdlock(). With @join, each kernel wait lasts at most TOFUTEX_POLL_NS
 * (on the deadline's clock, so that the deadline is never overshot), and
 * between two the caller joins the word if readers hold it by then: the
 * kernel queues a reader behind a writer top waiter, and readers that
 * take the word in user space meanwhile wake nobody.
 */
static int tofutex_module_rdlock(tofutex_rwlock_t *rw,
				 const struct tofutex__deadline *dl, bool join,
				 bool robust)
{
	struct tofutex__deadline slice = { .set = true, .clock = dl->clock };
	const struct tofutex__deadline *until = dl;
	uint32_t status;
	int err;

	/* The kernel looks at the writer; nothing wakes user space for it. */
	(void)robust;
	for (;;) {
		if (join) {
			slice.ns = tofutex__clock_ns(dl->clock) +
				   TOFUTEX_POLL_NS;
			until = dl->set && dl->ns <= slice.ns ? dl : &slice;
		}
		err = tofutex_module_lock_call(TOFUTEX_IOC_RDLOCK, &rw->word,
					       0, until, &status);
		if (err != ETIMEDOUT || until == dl)
			return err;
		err = tofutex_rw_try_read_all(rw, __atomic_load_n(&rw->word,
							__ATOMIC_RELAXED),
					      true);
		if (err != EBUSY)
			return err;
	}
}

/*
 * ->wrlock(): the kernel takes the caller's TID itself; @reserve where the
 * module offers it (else the writer reserves after handoff_ns).
 */
static int tofutex_module_wrlock(tofutex_rwlock_t *rw, uint32_t tid,
				 const struct tofutex__deadline *dl, bool robust,
				 bool reserve)
{
	uint32_t status, flags = 0;

	(void)tid;
	(void)robust;
	if (reserve && tofutex_has(TOFUTEX_FEAT_RW_RESERVE))
		flags = TOFUTEX_LOCK_RW_RESERVE;
	return tofutex_module_lock_call(TOFUTEX_IOC_WRLOCK, &rw->word, flags,
					dl, &status);
}

/* ->rwunlock(): the kernel releases the word as it is. */
static int tofutex_module_rwunlock(tofutex_rwlock_t *rw, uint32_t seen)
{
	struct tofutex_unlock arg = { .uaddr = (uintptr_t)&rw->word };

	(void)seen;
	return tofutex__ioctl(TOFUTEX_IOC_RWUNLOCK, &arg, NULL);
}

/* ->version() */
static int tofutex_module_version(uint32_t *abi_version, uint64_t *features)
{
	struct tofutex_version arg;
	int err;

	memset(&arg, 0, sizeof(arg));
	err = tofutex__ioctl(TOFUTEX_IOC_VERSION, &arg, NULL);
	if (err)
		return err;
	if (abi_version)
		*abi_version = arg.abi_version;
	if (features)
		*features = arg.features;
	return 0;
}

/* ->stats() */
static int tofutex_module_stats(uint32_t scope, struct tofutex_stats *out)
{
	struct tofutex_stats arg;
	int err;

	/* Reserved and padding fields must reach the kernel as zero. */
	memset(&arg, 0, sizeof(arg));
	arg.flags = scope;
	err = tofutex__ioctl(TOFUTEX_IOC_STATS, &arg, NULL);
	if (!err)
		*out = arg;
	return err;
}

/*
 * The module's table: @requeue_op, and the reader/writer operations
 * @rw_prefix_rdlock, _wrlock and _rwunlock (tofutex_module or
 * tofutex__futex), by what the module offers.
 */
#define TOFUTEX_MODULE_OPS(requeue_op, rw_prefix) {			\
	.backend = TOFUTEX_BACKEND_MODULE,				\
	.lock = tofutex_module_lock,					\
	.unlock = tofutex_module_unlock,				\
	.unlock_glibc = tofutex_module_unlock_glibc,			\
	.relock_moved = false,						\
	.wait = tofutex_module_wait,					\
	.wake = tofutex_module_wake,					\
	.swap = tofutex_module_swap,					\
	.requeue = requeue_op,						\
	.prepare_wait = tofutex_module_prepare_wait,			\
	.rdlock = rw_prefix##_rdlock,					\
	.wrlock = rw_prefix##_wrlock,					\
	.rwunlock = rw_prefix##_rwunlock,				\
	.version = tofutex_module_version,				\
	.stats = tofutex_module_stats,					\
}

/* [TOFUTEX_FEAT_REQUEUE offered][TOFUTEX_FEAT_RWLOCK offered] */
static const struct tofutex__backend_ops tofutex_module_ops[2][2] = {
	[0][0] = TOFUTEX_MODULE_OPS(tofutex_module_wake_all, tofutex__futex),
	[0][1] = TOFUTEX_MODULE_OPS(tofutex_module_wake_all, tofutex_module),
	[1][0] = TOFUTEX_MODULE_OPS(tofutex_module_requeue, tofutex__futex),
	[1][1] = TOFUTEX_MODULE_OPS(tofutex_module_requeue, tofutex_module),
};

const struct tofutex__backend_ops *tofutex__module_ops(uint64_t features)
{
	return &tofutex_module_ops[!!(features & TOFUTEX_FEAT_REQUEUE)]
				  [!!(features & TOFUTEX_FEAT_RWLOCK)];
}
