/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * tofutex: throughput-optimised futex locks, wait/wake and swap for user
 * space, through the misc device /dev/tofutex.
 *
 * This header is the whole ABI. It is included by the kernel module and by
 * user space (libtofutex, tests, benchmarks) and uses only <linux/types.h>
 * and <linux/ioctl.h>.
 *
 * Argument structs follow Documentation/process/botching-up-ioctls.rst:
 * every 64-bit field and every user pointer is an __aligned_u64, padding is
 * explicit, and every reserved field and every undefined flag bit must be
 * zero or the ioctl fails with EINVAL, so that they can be given a meaning
 * later without breaking old binaries.
 *
 * The lock word
 * -------------
 * A TO lock is a naturally aligned __u32 in the caller's private memory:
 *
 *   0                      free
 *   bits 0-29  (TID_MASK)  the owner's thread ID, as gettid() returns it in
 *                          the caller's PID namespace
 *   bit  30    OWNER_DIED  the previous owner exited while holding the lock;
 *                          the kernel keeps it (taking, releasing, handing
 *                          off) until user space clears it
 *   bit  31    WAITERS     a waiter may be asleep in the kernel: the owner
 *                          must call TOFUTEX_IOC_UNLOCK to release it
 *
 * This is the layout of the kernel's PI and robust futexes. User space
 * locks with cmpxchg(word, 0, TID) and unlocks with cmpxchg(word, TID, 0);
 * only when the cmpxchg fails does it call TOFUTEX_IOC_LOCK or
 * TOFUTEX_IOC_UNLOCK. See tofutex(4).
 *
 * Per-process state
 * -----------------
 * Every descriptor is bound to the process (one thread group in one
 * address space) that opened it. An ioctl issued through a descriptor by
 * another process - one inherited over fork() or received over a Unix
 * socket, a clone(CLONE_VM) child that is not a thread, the process after
 * execve() - fails with EBADFD and never reaches the opener's state: open
 * /dev/tofutex again in that process.
 */
#ifndef _UAPI_LINUX_TOFUTEX_H
#define _UAPI_LINUX_TOFUTEX_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define TOFUTEX_DEVICE_NAME	"tofutex"

/* Bumped only on incompatible changes; new operations add feature bits. */
#define TOFUTEX_ABI_VERSION	1

/* Lock word layout. */
#define TOFUTEX_TID_MASK	0x3fffffffU
#define TOFUTEX_OWNER_DIED	0x40000000U
#define TOFUTEX_WAITERS		0x80000000U

/* Feature bits reported by TOFUTEX_IOC_VERSION. */
#define TOFUTEX_FEAT_VERSION	(1ULL << 0)
#define TOFUTEX_FEAT_LOCK	(1ULL << 1)
#define TOFUTEX_FEAT_WAITWAKE	(1ULL << 2)
#define TOFUTEX_FEAT_SWAP	(1ULL << 3)
#define TOFUTEX_FEAT_STATS	(1ULL << 4)
#define TOFUTEX_FEAT_CLOCK_REALTIME	(1ULL << 5)
#define TOFUTEX_FEAT_REQUEUE	(1ULL << 6)
#define TOFUTEX_FEAT_RWLOCK	(1ULL << 7)
#define TOFUTEX_FEAT_NO_OWNER_POLL	(1ULL << 8)
#define TOFUTEX_FEAT_RW_RESERVE	(1ULL << 9)
#define TOFUTEX_FEAT_REOPEN	(1ULL << 10)

/**
 * struct tofutex_version - TOFUTEX_IOC_VERSION argument
 * @abi_version: out: TOFUTEX_ABI_VERSION of the loaded module
 * @flags:       in: must be 0
 * @features:    out: TOFUTEX_FEAT_* bits of the operations the module offers
 * @reserved:    in: must be 0
 */
struct tofutex_version {
	__u32 abi_version;
	__u32 flags;
	__aligned_u64 features;
	__aligned_u64 reserved[2];
};

/* TOFUTEX_IOC_LOCK flags. */
#define TOFUTEX_LOCK_DEADLINE	(1U << 0)	/* @deadline_ns is valid */
/*
 * With TOFUTEX_LOCK_DEADLINE: @deadline_ns is an absolute CLOCK_REALTIME
 * time, and the wait follows clock_settime() as FUTEX_CLOCK_REALTIME does.
 * Without TOFUTEX_LOCK_DEADLINE the call fails with EINVAL. Needs
 * TOFUTEX_FEAT_CLOCK_REALTIME.
 */
#define TOFUTEX_LOCK_CLOCK_REALTIME	(1U << 1)
/*
 * A sleeping waiter does not look at the owner every owner_check_ns: it
 * wakes only for an unlock, a signal or its deadline, so that a lock whose
 * owner exits holding it is never taken over (a non-robust mutex). An
 * owner found dead before the sleep is still taken over. Needs
 * TOFUTEX_FEAT_NO_OWNER_POLL.
 */
#define TOFUTEX_LOCK_NO_OWNER_POLL	(1U << 2)
#define TOFUTEX_LOCK_FLAGS	(TOFUTEX_LOCK_DEADLINE | TOFUTEX_LOCK_CLOCK_REALTIME | \
				 TOFUTEX_LOCK_NO_OWNER_POLL)
/*
 * TOFUTEX_IOC_WRLOCK only: the writer reserves the lock as soon as it
 * waits, instead of once it has waited handoff_ns: from then on new
 * readers queue behind it and the word is handed to it when the readers
 * drain (a writer-preferring lock, as glibc's
 * PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP). Needs
 * TOFUTEX_FEAT_RW_RESERVE.
 */
#define TOFUTEX_LOCK_RW_RESERVE	(1U << 3)

/*
 * TOFUTEX_IOC_LOCK status, as in the TP futex series: bits 0-7 say how the
 * lock was taken, bits 16-30 count how often the caller slept.
 */
#define TOFUTEX_STATUS_STOLEN		1U	/* taken on entry */
#define TOFUTEX_STATUS_SPUN		2U	/* taken while spinning */
#define TOFUTEX_STATUS_WOKEN		3U	/* taken after sleeping */
#define TOFUTEX_STATUS_HANDOFF		4U	/* handed over by the unlocker */
#define TOFUTEX_STATUS_OWNER_DIED	5U	/* taken from a dead owner */
#define TOFUTEX_STATUS_HOW_MASK		0xffU
#define TOFUTEX_STATUS_SLEEPS_SHIFT	16
#define TOFUTEX_STATUS_SLEEPS_MAX	0x7fffU

/**
 * struct tofutex_lock - TOFUTEX_IOC_LOCK argument
 * @uaddr:       in: address of the lock word, 4-byte aligned
 * @deadline_ns: in: absolute CLOCK_MONOTONIC (or, with
 *               TOFUTEX_LOCK_CLOCK_REALTIME, CLOCK_REALTIME) deadline, with
 *               TOFUTEX_LOCK_DEADLINE; must be 0 without it (EINVAL).
 *               CLOCK_MONOTONIC as the caller reads it, in its time
 *               namespace, as futex(2) reads it
 * @flags:       in: TOFUTEX_LOCK_* bits
 * @status:      out: TOFUTEX_STATUS_* on success
 * @reserved:    in: must be 0
 *
 * Returns 0 with the lock word holding the caller's TID (plus
 * TOFUTEX_OWNER_DIED when the status says so), or -1 with errno EDEADLK
 * (the caller already owns it), EPERM (the word holds the TID of a live
 * thread that is not of the caller's process: the word is not process
 * private, and it is never taken over), ETIMEDOUT, EINTR, EINVAL (also: a
 * word in use as another kind of word, such as a reader/writer lock that
 * readers hold, whose TOFUTEX_RW_SHARED no TID reaches), EFAULT, ENOMEM or
 * EBADFD. A fault on a page that must be waited for (userfaultfd) ends on
 * a signal and at the deadline.
 */
struct tofutex_lock {
	__aligned_u64 uaddr;
	__aligned_u64 deadline_ns;
	__u32 flags;
	__u32 status;
	__aligned_u64 reserved;
};

/**
 * struct tofutex_unlock - TOFUTEX_IOC_UNLOCK argument
 * @uaddr:    in: address of the lock word
 * @flags:    in: must be 0
 * @woken:    out: 1 when a waiter was woken (or handed the lock), else 0
 * @reserved: in: must be 0
 *
 * Either the word still holds the caller's TID (the kernel releases it or
 * hands it to the top waiter), or user space has already cleared the TID
 * bits itself; then the kernel only wakes the top waiter, and a lock that
 * was stolen meanwhile is not an error. OWNER_DIED stays in the word.
 * Once the word is released and waiters woken the call returns 0, also
 * when @woken cannot be written any more (it is then lost): never EFAULT
 * after it acted. A signal, also one that interrupts a fault-in, restarts
 * the call after its handler: never EINTR. TOFUTEX_IOC_RWUNLOCK keeps
 * both rules.
 */
struct tofutex_unlock {
	__aligned_u64 uaddr;
	__u32 flags;
	__u32 woken;
	__aligned_u64 reserved;
};

/* TOFUTEX_IOC_WAIT and TOFUTEX_IOC_SWAP flags. */
#define TOFUTEX_WAIT_DEADLINE	(1U << 0)	/* @deadline_ns is valid */
/*
 * As TOFUTEX_LOCK_CLOCK_REALTIME (EINVAL without TOFUTEX_WAIT_DEADLINE);
 * needs TOFUTEX_FEAT_CLOCK_REALTIME.
 */
#define TOFUTEX_WAIT_CLOCK_REALTIME	(1U << 1)
#define TOFUTEX_WAIT_FLAGS	(TOFUTEX_WAIT_DEADLINE | TOFUTEX_WAIT_CLOCK_REALTIME)

/**
 * struct tofutex_wait - TOFUTEX_IOC_WAIT argument
 * @uaddr:       in: address of the word, 4-byte aligned
 * @deadline_ns: in: absolute CLOCK_MONOTONIC (or, with
 *               TOFUTEX_WAIT_CLOCK_REALTIME, CLOCK_REALTIME) deadline, with
 *               TOFUTEX_WAIT_DEADLINE; must be 0 without it (EINVAL);
 *               read as for TOFUTEX_IOC_LOCK
 * @val:         in: sleep only while the word equals @val
 * @flags:       in: TOFUTEX_WAIT_* bits
 * @reserved:    in: must be 0
 */
struct tofutex_wait {
	__aligned_u64 uaddr;
	__aligned_u64 deadline_ns;
	__u32 val;
	__u32 flags;
	__aligned_u64 reserved;
};

/**
 * struct tofutex_wake - TOFUTEX_IOC_WAKE argument
 * @uaddr:    in: address of the word
 * @count:    in: wake at most this many waiters
 * @flags:    in: must be 0
 * @reserved: in: must be 0
 *
 * Returns the number of waiters woken.
 */
struct tofutex_wake {
	__aligned_u64 uaddr;
	__u32 count;
	__u32 flags;
	__aligned_u64 reserved;
};

/**
 * struct tofutex_swap - TOFUTEX_IOC_SWAP argument
 * @wait_uaddr:  in: word to wait on
 * @wake_uaddr:  in: word whose first waiter is woken
 * @deadline_ns: in: absolute CLOCK_MONOTONIC (or, with
 *               TOFUTEX_WAIT_CLOCK_REALTIME, CLOCK_REALTIME) deadline, with
 *               TOFUTEX_WAIT_DEADLINE; must be 0 without it (EINVAL);
 *               read as for TOFUTEX_IOC_LOCK
 * @val:         in: sleep only while *@wait_uaddr equals @val
 * @flags:       in: TOFUTEX_WAIT_* bits
 * @woken:       out: 1 when a waiter on @wake_uaddr was woken
 * @pad:         must be 0
 * @reserved:    in: must be 0
 *
 * Never fails with EFAULT once a waiter was woken: a failed write-back of
 * @woken is ignored, and a wait word unmapped meanwhile ends the wait as
 * a spurious wake-up (0).
 */
struct tofutex_swap {
	__aligned_u64 wait_uaddr;
	__aligned_u64 wake_uaddr;
	__aligned_u64 deadline_ns;
	__u32 val;
	__u32 flags;
	__u32 woken;
	__u32 pad;
	__aligned_u64 reserved;
};

/**
 * struct tofutex_requeue - TOFUTEX_IOC_REQUEUE argument
 * @uaddr:         in: word whose TOFUTEX_IOC_WAIT waiters are woken or moved
 *                 (a condition variable's word), 4-byte aligned
 * @lock_uaddr:    in: TO lock word the moved waiters are queued on
 * @val:           in: act only while *@uaddr equals @val, else EAGAIN
 * @wake_count:    in: wake at most this many waiters first, as
 *                 TOFUTEX_IOC_WAKE does
 * @requeue_count: in: then move at most this many of the remaining waiters
 * @flags:         in: must be 0
 * @woken:         out: waiters woken
 * @requeued:      out: waiters moved
 * @reserved:      in: must be 0
 *
 * Wait morphing for condition variables: a broadcast wakes one waiter and
 * moves the others onto the lock's kernel queue, instead of waking them
 * all to fight for the lock. A moved waiter stays in TOFUTEX_IOC_WAIT;
 * each release of @lock_uaddr that enters the kernel wakes at most one
 * moved waiter, whose WAIT then returns 0, and which then takes the lock
 * as any locker does (it is never handed the lock). While waiters are
 * moved, the lock word has TOFUTEX_WAITERS set, so that its owner's unlock
 * enters the kernel; the kernel sets it again after a release, also on a
 * word with no owner, which then reads TOFUTEX_WAITERS alone and must be
 * taken keeping the bit (TOFUTEX_IOC_LOCK does). A lock word with no
 * owner when REQUEUE runs gets its waiters woken, not moved. A moved
 * waiter's deadline and signals still end its WAIT (ETIMEDOUT, EINTR); if
 * the lock's owner dies, a moved waiter's WAIT returns 0 so that it takes
 * the lock over. Needs TOFUTEX_FEAT_REQUEUE.
 *
 * Returns 0, or -1 with errno EAGAIN, EINVAL (also: both words the same,
 * a word in use as the other kind, or a @lock_uaddr that readers hold as
 * a reader/writer lock), EFAULT, ENOMEM or EBADFD. @woken
 * and @requeued are written back also on failure once the arguments were
 * found valid. The call fails only before it woke or moved anyone; once
 * it did, it returns 0 (also when the write-back fails), and waiters it
 * can no longer move are woken instead. It takes at most the waiters
 * asleep on @uaddr when it starts.
 */
struct tofutex_requeue {
	__aligned_u64 uaddr;
	__aligned_u64 lock_uaddr;
	__u32 val;
	__u32 wake_count;
	__u32 requeue_count;
	__u32 flags;
	__u32 woken;
	__u32 requeued;
	__aligned_u64 reserved;
};

/*
 * Reader/writer locks
 * -------------------
 * A TO reader/writer lock is a naturally aligned __u32 in the caller's
 * private memory:
 *
 *   0                          free
 *   bits 0-27  (RW_COUNT_MASK) without RW_SHARED: the writer's TID, as for
 *                              a TO lock; with RW_SHARED: the number of
 *                              readers holding it (at least 1)
 *   bit  28    RW_HANDOFF      a writer starves: readers must not join a
 *                              reader-owned word, they call
 *                              TOFUTEX_IOC_RDLOCK and queue behind it
 *   bit  29    RW_SHARED       owned by readers
 *   bit  30                    must be 0 (EINVAL)
 *   bit  31    WAITERS         as for a TO lock: a waiter may be asleep in
 *                              the kernel; the last owner out must call
 *                              TOFUTEX_IOC_RWUNLOCK
 *
 * A writer-owned word is a TO lock word (TID | WAITERS): PID_MAX_LIMIT is
 * 2^22, so a TID never reaches bit 28. User space write-locks with
 * cmpxchg(word, 0, TID) and unlocks with cmpxchg(word, TID, 0); it
 * read-locks with cmpxchg(word, 0, RW_SHARED | 1) or, on a word with
 * RW_SHARED and neither RW_HANDOFF nor a full count, cmpxchg(word, w,
 * w + 1), and read-unlocks with cmpxchg(word, w, w - 1) while the count
 * is above 1, or cmpxchg(word, RW_SHARED | 1, 0) for the last reader.
 * A thread that holds a read lock already may join with cmpxchg(word, w,
 * w + 1) despite RW_HANDOFF: waiting behind a writer that waits for its
 * own read lock would deadlock. So may any reader of a lock that promises
 * reader preference (glibc's default rwlock kind does): the writer then
 * waits until the readers drain, which a stream of such readers may
 * delay for ever.
 * Only when these fail (the lock is held, or the last owner finds
 * WAITERS) does it call TOFUTEX_IOC_RDLOCK, TOFUTEX_IOC_WRLOCK or
 * TOFUTEX_IOC_RWUNLOCK, with the word as it is: the kernel does the
 * decrement or release itself. Only the kernel sets WAITERS and
 * RW_HANDOFF. See tofutex(4).
 *
 * TOFUTEX_IOC_RDLOCK and TOFUTEX_IOC_WRLOCK take struct tofutex_lock, with
 * the deadlines and status of TOFUTEX_IOC_LOCK and its flags but
 * TOFUTEX_LOCK_NO_OWNER_POLL (TOFUTEX_RWLOCK_FLAGS; a sleeping waiter on a
 * writer always polls it), and WRLOCK also TOFUTEX_LOCK_RW_RESERVE
 * (TOFUTEX_WRLOCK_FLAGS); a reader that was
 * given the lock by the kernel together with the other queued readers
 * reports TOFUTEX_STATUS_HANDOFF. They return 0 with the lock held, or -1
 * with errno EDEADLK (the caller holds it for writing), EAGAIN (RDLOCK:
 * the reader count is full), EPERM (the word holds the TID of a thread of
 * another process), ETIMEDOUT, EINTR, EINVAL (also: bit 30 set,
 * RW_HANDOFF beside a writer's TID, or the word in use as another kind
 * of word), EFAULT, ENOMEM or EBADFD. A
 * writer that exited holding the lock is noticed by a waiter, which takes
 * the lock and reports TOFUTEX_STATUS_OWNER_DIED; the word keeps no
 * OWNER_DIED bit. Readers are a count, not a list: a reader that exits
 * holding the lock holds it for ever.
 *
 * TOFUTEX_IOC_RWUNLOCK takes struct tofutex_unlock: the caller's write
 * lock, or one read lock, is released; when that frees the word, the
 * kernel hands it to a starving writer, or to every queued reader at once,
 * or releases it and wakes the first waiter. It returns 0, or -1 with
 * errno EPERM (the word is not held for writing by the caller nor for
 * reading), EINVAL, EFAULT or EBADFD; as TOFUTEX_IOC_UNLOCK, never EFAULT
 * once it released the word, and never EINTR. Needs TOFUTEX_FEAT_RWLOCK.
 */
#define TOFUTEX_RW_COUNT_MASK	0x0fffffffU
#define TOFUTEX_RW_HANDOFF	0x10000000U
#define TOFUTEX_RW_SHARED	0x20000000U
#define TOFUTEX_RW_RESERVED	0x40000000U

/* TOFUTEX_IOC_STATS scopes (flags). */
#define TOFUTEX_STATS_PROCESS	0U	/* the caller's process */
/* Every process since load; needs CAP_SYS_ADMIN, else EPERM. */
#define TOFUTEX_STATS_GLOBAL	1U

/**
 * struct tofutex_stats - TOFUTEX_IOC_STATS argument
 * @flags:        in: TOFUTEX_STATS_PROCESS or TOFUTEX_STATS_GLOBAL
 * @pad:          must be 0
 * @lock_calls:   TOFUTEX_IOC_LOCK, RDLOCK and WRLOCK calls
 * @unlock_calls: TOFUTEX_IOC_UNLOCK and RWUNLOCK calls
 * @spins:        times a top waiter spun on a running owner
 * @sleeps:       times a lock waiter went to sleep
 * @steals:       locks taken on entry to TOFUTEX_IOC_LOCK or by spinning
 * @handoffs:     locks handed straight to a starving top waiter
 * @owner_deaths: locks taken over from an owner that exited
 * @timeouts:     LOCK/WAIT/SWAP calls that ended at their deadline
 * @wait_calls:   TOFUTEX_IOC_WAIT calls
 * @wake_calls:   TOFUTEX_IOC_WAKE calls
 * @swap_calls:   TOFUTEX_IOC_SWAP calls
 * @live_states:  kernel lock/wait states alive now
 * @requeue_calls: TOFUTEX_IOC_REQUEUE calls
 * @reserved:     out: zero
 */
struct tofutex_stats {
	__u32 flags;
	__u32 pad;
	__aligned_u64 lock_calls;
	__aligned_u64 unlock_calls;
	__aligned_u64 spins;
	__aligned_u64 sleeps;
	__aligned_u64 steals;
	__aligned_u64 handoffs;
	__aligned_u64 owner_deaths;
	__aligned_u64 timeouts;
	__aligned_u64 wait_calls;
	__aligned_u64 wake_calls;
	__aligned_u64 swap_calls;
	__aligned_u64 live_states;
	__aligned_u64 requeue_calls;
	__aligned_u64 reserved[3];
};

/* 0xF7 is unassigned in Documentation/userspace-api/ioctl/ioctl-number.rst */
#define TOFUTEX_IOC_MAGIC	0xF7

#define TOFUTEX_IOC_VERSION	_IOWR(TOFUTEX_IOC_MAGIC, 0x00, struct tofutex_version)
#define TOFUTEX_IOC_LOCK	_IOWR(TOFUTEX_IOC_MAGIC, 0x01, struct tofutex_lock)
#define TOFUTEX_IOC_UNLOCK	_IOWR(TOFUTEX_IOC_MAGIC, 0x02, struct tofutex_unlock)
#define TOFUTEX_IOC_WAIT	_IOW(TOFUTEX_IOC_MAGIC, 0x03, struct tofutex_wait)
#define TOFUTEX_IOC_WAKE	_IOW(TOFUTEX_IOC_MAGIC, 0x04, struct tofutex_wake)
#define TOFUTEX_IOC_SWAP	_IOWR(TOFUTEX_IOC_MAGIC, 0x05, struct tofutex_swap)
#define TOFUTEX_IOC_STATS	_IOWR(TOFUTEX_IOC_MAGIC, 0x06, struct tofutex_stats)
#define TOFUTEX_IOC_REQUEUE	_IOWR(TOFUTEX_IOC_MAGIC, 0x07, struct tofutex_requeue)
#define TOFUTEX_RWLOCK_FLAGS	(TOFUTEX_LOCK_DEADLINE | TOFUTEX_LOCK_CLOCK_REALTIME)
#define TOFUTEX_WRLOCK_FLAGS	(TOFUTEX_RWLOCK_FLAGS | TOFUTEX_LOCK_RW_RESERVE)
#define TOFUTEX_IOC_RDLOCK	_IOWR(TOFUTEX_IOC_MAGIC, 0x08, struct tofutex_lock)
#define TOFUTEX_IOC_WRLOCK	_IOWR(TOFUTEX_IOC_MAGIC, 0x09, struct tofutex_lock)
#define TOFUTEX_IOC_RWUNLOCK	_IOWR(TOFUTEX_IOC_MAGIC, 0x0a, struct tofutex_unlock)

/*
 * TOFUTEX_IOC_REOPEN: ioctl(fd, TOFUTEX_IOC_REOPEN, flags), flags 0 or
 * O_CLOEXEC, returns a new descriptor of the device bound to the calling
 * process. The one ioctl that works on a descriptor another process opened
 * (inherited over fork(), received over a Unix socket): such a process
 * gets its own without opening the device by name. The caller needs read
 * and write permission on the device node, as for open(2).
 */
#define TOFUTEX_IOC_REOPEN	_IO(TOFUTEX_IOC_MAGIC, 0x0b)

#endif /* _UAPI_LINUX_TOFUTEX_H */
