/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tofutex - declarations shared by the module's files.
 *
 * main.c     the misc device and ioctl dispatch
 * table.c    per-process tables and the lock/wait states they hold
 * stats.c    per-process and global statistics
 * uaccess.c  lock-word access: faults disabled, fault in and retry
 * lock.c     TOFUTEX_IOC_LOCK
 * owner.c    the owner of a lock word, remembered across TID reuse
 * unlock.c   TOFUTEX_IOC_UNLOCK
 * lock.h     the TO lock queue that lock.c and unlock.c share
 * waitwake.c TOFUTEX_IOC_WAIT, TOFUTEX_IOC_WAKE and TOFUTEX_IOC_SWAP
 * requeue.c  WAIT waiters that TOFUTEX_IOC_REQUEUE moved onto a TO lock
 * requeue_call.c  TOFUTEX_IOC_REQUEUE itself
 * requeue.h  what the two requeue files share
 * rwlock.c   TOFUTEX_IOC_RDLOCK and WRLOCK: reader/writer locks
 * rwunlock.c TOFUTEX_IOC_RWUNLOCK
 * rwlock.h   the reader/writer lock queue that rwlock.c and rwunlock.c share
 * deadline.c deadlines on either clock, and the sleeps they bound
 * wake_local.c  SWAP's hand-off of the caller's CPU to its wakee
 * debug.c    test-only windows, built with TOFUTEX_DEBUG_WINDOWS
 * trace.c    the tracepoints of tofutex_trace.h (tofutex(4), TRACEPOINTS)
 *
 * "The process" is one thread group in one address space, everywhere:
 * a table serves the thread group that opened it (table.c), only its
 * threads may use the descriptor, only they can own its locks (lock.c),
 * and TIDs are read and written in its PID namespace.
 */
#ifndef _TOFUTEX_H
#define _TOFUTEX_H

#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/moduleparam.h>
#include <linux/refcount.h>
#include <linux/spinlock.h>
#include <linux/types.h>

#include "../uapi/tofutex.h"
#include "compat.h"

#define TOFUTEX_MODULE_VERSION "0.1.0"

struct pid;
struct task_struct;
struct tofutex_table;

/* table.c */

enum tofutex_state_kind {
	TOFUTEX_STATE_LOCK,
	TOFUTEX_STATE_WAIT,
	TOFUTEX_STATE_RWLOCK,
};

/**
 * struct tofutex_state - kernel state of one contended user word
 * @node:    entry in its bucket, under the bucket lock
 * @uaddr:   the user word; the key within the process table
 * @kind:    TO lock or wait word; one address cannot be both at once
 * @users:   tasks inside an ioctl on this state; the state is unhashed and
 *           freed by the put that drops the last one, under the bucket lock
 * @lock:    protects @waiters and the operation's fields below
 * @waiters: sleeping or spinning tasks, in arrival order (struct
 *           tofutex_waiter of lock.h in a LOCK state, struct
 *           tofutex_word_waiter of waitwake.c in a WAIT state, struct
 *           tofutex_rw_waiter of rwlock.c in an RWLOCK state)
 * @handoff: the top lock waiter starves; the next unlock hands it the lock
 * @requeued: in a LOCK state only: WAIT waiters that TOFUTEX_IOC_REQUEUE
 *           moved here (struct tofutex_word_waiter), in arrival order,
 *           under @lock; see requeue.c
 * @owner:   in a LOCK or RWLOCK state: the struct pid (a reference held) that
 *           @owner_tid named when a waiter first saw it in the word with
 *           WAITERS set, or NULL; under @lock, put when replaced, cleared
 *           or freed with the state; see owner.c
 * @owner_tid: the TID @owner was found by
 * @to_wake: in an RWLOCK state only: waiters given the word and not yet
 *           taken for a wake-up (struct tofutex_rw_waiter's @wake_node), in
 *           the order they were given it, under @lock; see rwunlock.c
 * @releases: in a LOCK state only: kernel releases that found moved
 *           waiters queued, under @lock; read by their poller (requeue.c)
 *
 * A state exists only while at least one task is inside an ioctl on its
 * word, so an idle process holds no state at all.
 */
struct tofutex_state {
	struct hlist_node node;
	u32 __user *uaddr;
	enum tofutex_state_kind kind;
	refcount_t users;
	/* Protects the fields below it; lock.h and requeue.c detail how. */
	spinlock_t lock;
	struct list_head waiters;
	bool handoff;
	struct list_head requeued;
	struct list_head to_wake;
	struct pid *owner;
	u32 owner_tid;
	u32 releases;
};

struct tofutex_table *tofutex_table_get(void);
void tofutex_table_put(struct tofutex_table *table);
bool tofutex_table_is_current(const struct tofutex_table *table);
struct tofutex_state *tofutex_state_get(struct tofutex_table *table,
					u32 __user *uaddr,
					enum tofutex_state_kind kind,
					bool create);
struct tofutex_state *tofutex_state_get_or(struct tofutex_table *table,
					   u32 __user *uaddr,
					   enum tofutex_state_kind kind,
					   int (*absent)(void *arg), void *arg);
void tofutex_state_put(struct tofutex_table *table,
		       struct tofutex_state *state);
void tofutex_state_hold(struct tofutex_state *state);

/* stats.c */

enum tofutex_counter {
	TOFUTEX_CNT_LOCK_CALLS,
	TOFUTEX_CNT_UNLOCK_CALLS,
	TOFUTEX_CNT_SPINS,
	TOFUTEX_CNT_SLEEPS,
	TOFUTEX_CNT_STEALS,
	TOFUTEX_CNT_HANDOFFS,
	TOFUTEX_CNT_OWNER_DEATHS,
	TOFUTEX_CNT_TIMEOUTS,
	TOFUTEX_CNT_WAIT_CALLS,
	TOFUTEX_CNT_WAKE_CALLS,
	TOFUTEX_CNT_SWAP_CALLS,
	TOFUTEX_CNT_REQUEUE_CALLS,
	TOFUTEX_NR_COUNTERS
};

/**
 * struct tofutex_counters - one set of event counters and a live count
 * @events: per-CPU event counts, indexed by enum tofutex_counter
 * @live:   states alive now
 */
struct tofutex_counters {
	u64 __percpu *events;
	atomic_long_t live;
};

int tofutex_counters_init(struct tofutex_counters *cnt);
void tofutex_counters_destroy(struct tofutex_counters *cnt);
struct tofutex_counters *tofutex_table_counters(struct tofutex_table *table);
void tofutex_count(struct tofutex_table *table, enum tofutex_counter what);
void tofutex_count_taken(struct tofutex_table *table, u32 how);
void tofutex_live_add(struct tofutex_table *table, long delta);
long tofutex_ioc_stats(struct tofutex_table *table, void __user *argp);
int tofutex_stats_init(void);
void tofutex_stats_exit(void);

/* uaccess.c */

int tofutex_word_check(u64 addr, u32 __user **uaddr);
int tofutex_word_read_inatomic(u32 __user *uaddr, u32 *val);
int tofutex_word_cmpxchg_inatomic(u32 __user *uaddr, u32 *curval,
				  u32 oldval, u32 newval);
struct tofutex_deadline;
int tofutex_word_fault_in_until(u32 __user *uaddr, bool write,
				const struct tofutex_deadline *dl);
int tofutex_word_refault_until(u32 __user *uaddr, bool write,
			       const struct tofutex_deadline *dl);
int tofutex_word_read_until(u32 __user *uaddr, u32 *val,
			    const struct tofutex_deadline *dl);
int tofutex_word_cmpxchg_until(u32 __user *uaddr, u32 *curval, u32 oldval,
			       u32 newval, const struct tofutex_deadline *dl);

/* The same without a deadline: until a signal. */
static inline int tofutex_word_fault_in(u32 __user *uaddr, bool write)
{
	return tofutex_word_fault_in_until(uaddr, write, NULL);
}

static inline int tofutex_word_read(u32 __user *uaddr, u32 *val)
{
	return tofutex_word_read_until(uaddr, val, NULL);
}

static inline int tofutex_word_cmpxchg(u32 __user *uaddr, u32 *curval,
				       u32 oldval, u32 newval)
{
	return tofutex_word_cmpxchg_until(uaddr, curval, oldval, newval, NULL);
}

/**
 * tofutex_word_reader_held() - is a lock word a reader/writer lock's,
 * held by readers?
 * @word: the word as read
 *
 * RW_SHARED, which every reader-owned word carries, sits where a TO lock
 * word holds its owner's TID, in a bit that no TID reaches
 * (uapi/tofutex.h: PID_MAX_LIMIT is 2^22). Such a word names no thread a
 * TO lock could wait for, take over from or queue behind, whether or not
 * it has a kernel state: it is in use as the other kind of word.
 *
 * Return: true when it is.
 */
static inline bool tofutex_word_reader_held(u32 word)
{
	return word & TOFUTEX_RW_SHARED;
}

/**
 * enum tofutex_op - which call an event of the lock paths belongs to
 * @TOFUTEX_OP_LOCK:     TOFUTEX_IOC_LOCK
 * @TOFUTEX_OP_RDLOCK:   TOFUTEX_IOC_RDLOCK
 * @TOFUTEX_OP_WRLOCK:   TOFUTEX_IOC_WRLOCK
 * @TOFUTEX_OP_UNLOCK:   TOFUTEX_IOC_UNLOCK
 * @TOFUTEX_OP_RWUNLOCK: TOFUTEX_IOC_RWUNLOCK
 *
 * Named in the tracepoints (tofutex_trace.h), where the code shared by
 * both lock kinds (queue.c, lockarg.c) cannot tell them apart otherwise.
 */
enum tofutex_op {
	TOFUTEX_OP_LOCK,
	TOFUTEX_OP_RDLOCK,
	TOFUTEX_OP_WRLOCK,
	TOFUTEX_OP_UNLOCK,
	TOFUTEX_OP_RWUNLOCK,
};

/* trace.c */

u64 tofutex_trace_contended(u32 __user *uaddr, enum tofutex_op op);

/* deadline.c */

/**
 * struct tofutex_deadline - when a LOCK, WAIT or SWAP gives up
 * @expires: absolute time on @clock, KTIME_MAX for none
 * @clock:   CLOCK_MONOTONIC, or CLOCK_REALTIME with the call's
 *           CLOCK_REALTIME flag
 */
struct tofutex_deadline {
	ktime_t expires;
	clockid_t clock;
};

int tofutex_deadline_init(struct tofutex_deadline *dl, bool given,
			  bool realtime, u64 deadline_ns);
/**
 * struct tofutex_deadline_timer - a deadline's timer armed around a sleep
 * that the caller does not control (a page fault)
 * @timer: wakes @task at the deadline, on the deadline's clock, and again
 *         every TOFUTEX_DEADLINE_REWAKE_NS after it (deadline.c)
 * @task:  the caller
 * @armed: the deadline is not "never", and the timer was started
 */
struct tofutex_deadline_timer {
	struct hrtimer timer;
	struct task_struct *task;
	bool armed;
};

bool tofutex_deadline_passed(const struct tofutex_deadline *dl);
int tofutex_deadline_interrupted(const struct tofutex_deadline *dl);
void tofutex_deadline_timer_start(struct tofutex_deadline_timer *t,
				  const struct tofutex_deadline *dl);
void tofutex_deadline_timer_cancel(struct tofutex_deadline_timer *t);
void tofutex_schedule_until(const struct tofutex_deadline *dl);
void tofutex_schedule_poll(const struct tofutex_deadline *dl, u64 max_ns);

/* lock.c */

u64 tofutex_owner_check_ns(void);
u64 tofutex_spin_ns(void);
u64 tofutex_handoff_ns(void);
bool tofutex_owner_running(struct task_struct *owner);

long tofutex_ioc_lock(struct tofutex_table *table,
		      struct tofutex_lock __user *argp);

/* owner.c */

struct task_struct *tofutex_owner_get(struct tofutex_state *state, u32 word);
void tofutex_owner_seen(struct tofutex_state *state, u32 word,
			struct task_struct *owner);
struct pid *tofutex_owner_clear(struct tofutex_state *state);
bool tofutex_owner_reused(struct tofutex_state *state, u32 word);
int tofutex_owner_take(struct tofutex_state *state, u32 *word, u32 newval,
		       bool reused, const struct tofutex_deadline *dl);
int tofutex_owner_take_reused(struct tofutex_table *table, u32 __user *uaddr,
			      enum tofutex_state_kind kind, u32 *word,
			      u32 newval, const struct tofutex_deadline *dl);

/* unlock.c */

long tofutex_ioc_unlock(struct tofutex_table *table,
			struct tofutex_unlock __user *argp);
u32 tofutex_lock_released(struct tofutex_table *table, u32 __user *uaddr);

/* waitwake.c */

/**
 * struct tofutex_word_waiter - a task sleeping in WAIT (or SWAP's wait)
 * @node:  entry in @state->waiters, or in @state->requeued once moved
 * @task:  the sleeping task
 * @state: the state whose list holds @node: the wait word's until
 *         TOFUTEX_IOC_REQUEUE moves the waiter onto a TO lock's state,
 *         written only then, under both states' locks (requeue.c)
 * @woken: a waker took the entry off its list and wakes @task
 * @polled:        as the poller of moved waiters, it looked at the lock
 *                 word before: @poll_word and @poll_releases hold what it
 *                 saw (requeue.c; only the waiter itself touches them)
 * @poll_word:     the lock word then
 * @poll_releases: the lock state's @releases then
 */
struct tofutex_word_waiter {
	struct list_head node;
	struct task_struct *task;
	struct tofutex_state *state;
	bool woken;
	bool polled;
	u32 poll_word;
	u32 poll_releases;
};

struct task_struct *tofutex_waiter_take(struct tofutex_word_waiter *w);

long tofutex_ioc_wait(struct tofutex_table *table,
		      struct tofutex_wait __user *argp);
long tofutex_ioc_wake(struct tofutex_table *table,
		      struct tofutex_wake __user *argp);
long tofutex_ioc_swap(struct tofutex_table *table,
		      struct tofutex_swap __user *argp);

/* wake_local.c */

int tofutex_wake_local_init(void);
void tofutex_wake_local_exit(void);

/**
 * tofutex_wake_local() - wake a task onto this CPU, and sleep
 * @wakee:   the task to wake, with a reference that this call consumes;
 *           NULL to only sleep
 * @dl:      the end of the sleep
 *
 * The caller has queued itself where its own wake-up will find it, set a
 * sleeping task state, and holds no locks. The wakee runs on the caller's
 * CPU when the mechanism built in (compat.h) allows it and the wakee's
 * affinity includes that CPU; otherwise wherever the scheduler puts it.
 * Either way it is woken exactly once, also when the caller's sleep ends
 * at once (already woken, a signal pending, @dl past). Returns with
 * the caller running.
 */
void tofutex_wake_local(struct task_struct *wakee,
			const struct tofutex_deadline *dl);

/* requeue_call.c */

long tofutex_ioc_requeue(struct tofutex_table *table,
			 struct tofutex_requeue __user *argp);

/* requeue.c */

void tofutex_requeue_sleep(struct tofutex_word_waiter *w,
			   const struct tofutex_deadline *dl);
int tofutex_requeue_leave(struct tofutex_table *table,
			  struct tofutex_word_waiter *w,
			  struct tofutex_state *home, int ret);
u32 tofutex_requeue_release(struct tofutex_table *table, u32 __user *uaddr);
void tofutex_requeue_rearm(struct tofutex_state *state, u32 __user *uaddr);

/* rwlock.c */

long tofutex_ioc_rwlock(struct tofutex_table *table,
			struct tofutex_lock __user *argp, bool write);

/* rwunlock.c */

long tofutex_ioc_rwunlock(struct tofutex_table *table,
			  struct tofutex_unlock __user *argp);

/* main.c */

bool tofutex_reserved_zero(const u64 *reserved, size_t n);

/**
 * struct tofutex_ns_param - a module parameter in ns with a valid range
 * @val: the value; read it with READ_ONCE(), it may change at any time
 * @min: smallest value accepted
 * @max: largest value accepted
 *
 * Set through tofutex_ns_param_ops, which refuses values outside
 * [@min, @max] with -EINVAL and leaves @val unchanged.
 */
struct tofutex_ns_param {
	unsigned long val;
	unsigned long min;
	unsigned long max;
};

extern const struct kernel_param_ops tofutex_ns_param_ops;

/* debug.c */

/* Race windows that tests can widen; see debug.c. */
enum tofutex_window {
	TOFUTEX_WINDOW_UNLOCK_UNQUEUED = 1,
	TOFUTEX_WINDOW_COMPETE = 2,
	TOFUTEX_WINDOW_WAKE_BATCH = 3,
	TOFUTEX_WINDOW_REQUEUE_STEP = 4,
	TOFUTEX_WINDOW_REQUEUE_ARM = 5,
	TOFUTEX_WINDOW_REQUEUE_RELEASE = 6,
	TOFUTEX_WINDOW_REQUEUE_RESULT = 7,
	TOFUTEX_WINDOW_SWAP_QUEUED = 8,
	TOFUTEX_WINDOW_GIVEN = 9,
	TOFUTEX_WINDOW_RW_WITHDRAW = 10,
	TOFUTEX_WINDOW_OWNER_DEAD = 11,
};

#ifdef TOFUTEX_DEBUG_WINDOWS
void tofutex_debug_window(enum tofutex_window id, u32 __user *uaddr,
			  u32 word);
void tofutex_debug_window_now(enum tofutex_window id, u32 __user *uaddr);
#else
static inline void tofutex_debug_window(enum tofutex_window id,
					u32 __user *uaddr, u32 word)
{
}

static inline void tofutex_debug_window_now(enum tofutex_window id,
					    u32 __user *uaddr)
{
}
#endif

#endif /* _TOFUTEX_H */
