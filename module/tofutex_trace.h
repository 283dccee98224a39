/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tofutex - the module's tracepoints (TRACE_SYSTEM tofutex), documented
 * for users in tofutex(4), TRACEPOINTS. trace.c defines them
 * (CREATE_TRACE_POINTS); the lock core calls each at one point:
 *
 * tofutex_lock_contended  a lock call queues (lock.c, rwlock.c, through
 *                         tofutex_trace_contended() of trace.c)
 * tofutex_lock_acquired   a lock call took the word (lockarg.c)
 * tofutex_release_woke    an UNLOCK or RWUNLOCK woke a waiter (lockarg.c)
 * tofutex_handoff         an UNLOCK handed a TO lock over (unlock.c)
 * tofutex_rw_grant        an RWUNLOCK or a reader top waiter gave a
 *                         reader/writer lock to queued readers, or a
 *                         RWUNLOCK handed it to a starving writer (rwunlock.c)
 * tofutex_wait, _wake, _swap   the end of WAIT, WAKE, SWAP (waitwake.c)
 * tofutex_requeue         the end of REQUEUE (requeue_call.c)
 *
 * Lifetimes and locking: an event copies what it records; the task
 * pointers passed in are pinned by the caller (a queued waiter, under
 * state->lock). Events may fire under state->lock: they take no lock and
 * never sleep. Disabled, a tracepoint is a static branch: its arguments
 * are plain values the caller has already, and what costs more (the
 * wait time's clock read) is done only while tofutex_lock_acquired is
 * enabled (trace.c).
 *
 * Process IDs are the kernel's global ones, as the trace's own common_pid.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM tofutex

#if !defined(_TOFUTEX_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TOFUTEX_TRACE_H

#include <linux/ktime.h>
#include <linux/sched.h>
#include <linux/tracepoint.h>

#include "tofutex.h"

TRACE_DEFINE_ENUM(TOFUTEX_OP_LOCK);
TRACE_DEFINE_ENUM(TOFUTEX_OP_RDLOCK);
TRACE_DEFINE_ENUM(TOFUTEX_OP_WRLOCK);
TRACE_DEFINE_ENUM(TOFUTEX_OP_UNLOCK);
TRACE_DEFINE_ENUM(TOFUTEX_OP_RWUNLOCK);

#define tofutex_show_op(op)						\
	__print_symbolic(op,						\
			 { TOFUTEX_OP_LOCK, "lock" },			\
			 { TOFUTEX_OP_RDLOCK, "rdlock" },		\
			 { TOFUTEX_OP_WRLOCK, "wrlock" },		\
			 { TOFUTEX_OP_UNLOCK, "unlock" },		\
			 { TOFUTEX_OP_RWUNLOCK, "rwunlock" })

#define tofutex_show_how(how)						\
	__print_symbolic(how,						\
			 { TOFUTEX_STATUS_STOLEN, "stolen" },		\
			 { TOFUTEX_STATUS_SPUN, "spun" },		\
			 { TOFUTEX_STATUS_WOKEN, "woken" },		\
			 { TOFUTEX_STATUS_HANDOFF, "handoff" },		\
			 { TOFUTEX_STATUS_OWNER_DIED, "owner_died" })

/* An event that names only the call: tofutex_lock_contended, _release_woke. */
DECLARE_EVENT_CLASS(tofutex_op_event,
	TP_PROTO(u32 __user *uaddr, enum tofutex_op op),
	TP_ARGS(uaddr, op),
	TP_STRUCT__entry(
		__field(pid_t, tgid)
		__field(unsigned long, uaddr)
		__field(u32, op)
	),
	TP_fast_assign(
		__entry->tgid = current->tgid;
		__entry->uaddr = (unsigned long)uaddr;
		__entry->op = op;
	),
	TP_printk("tgid=%d uaddr=0x%lx op=%s", __entry->tgid, __entry->uaddr,
		  tofutex_show_op(__entry->op))
);

DEFINE_EVENT(tofutex_op_event, tofutex_lock_contended,
	TP_PROTO(u32 __user *uaddr, enum tofutex_op op),
	TP_ARGS(uaddr, op)
);

DEFINE_EVENT(tofutex_op_event, tofutex_release_woke,
	TP_PROTO(u32 __user *uaddr, enum tofutex_op op),
	TP_ARGS(uaddr, op)
);

TRACE_EVENT(tofutex_lock_acquired,
	TP_PROTO(u32 __user *uaddr, enum tofutex_op op, u32 how,
		 unsigned int sleeps, u64 since),
	TP_ARGS(uaddr, op, how, sleeps, since),
	TP_STRUCT__entry(
		__field(pid_t, tgid)
		__field(unsigned long, uaddr)
		__field(u32, op)
		__field(u32, how)
		__field(u32, sleeps)
		__field(u64, wait_ns)
	),
	TP_fast_assign(
		__entry->tgid = current->tgid;
		__entry->uaddr = (unsigned long)uaddr;
		__entry->op = op;
		__entry->how = how;
		__entry->sleeps = sleeps;
		__entry->wait_ns = since ? ktime_get_ns() - since : 0;
	),
	TP_printk("tgid=%d uaddr=0x%lx op=%s how=%s sleeps=%u wait_ns=%llu",
		  __entry->tgid, __entry->uaddr, tofutex_show_op(__entry->op),
		  tofutex_show_how(__entry->how), __entry->sleeps,
		  __entry->wait_ns)
);

TRACE_EVENT(tofutex_handoff,
	TP_PROTO(u32 __user *uaddr, struct task_struct *to),
	TP_ARGS(uaddr, to),
	TP_STRUCT__entry(
		__field(pid_t, tgid)
		__field(unsigned long, uaddr)
		__field(pid_t, to)
	),
	TP_fast_assign(
		__entry->tgid = current->tgid;
		__entry->uaddr = (unsigned long)uaddr;
		__entry->to = to->pid;
	),
	TP_printk("tgid=%d uaddr=0x%lx to=%d", __entry->tgid, __entry->uaddr,
		  __entry->to)
);

TRACE_EVENT(tofutex_rw_grant,
	TP_PROTO(u32 __user *uaddr, u32 readers, u32 held,
		 struct task_struct *writer),
	TP_ARGS(uaddr, readers, held, writer),
	TP_STRUCT__entry(
		__field(pid_t, tgid)
		__field(unsigned long, uaddr)
		__field(u32, readers)
		__field(u32, held)
		__field(pid_t, writer)
	),
	TP_fast_assign(
		__entry->tgid = current->tgid;
		__entry->uaddr = (unsigned long)uaddr;
		__entry->readers = readers;
		__entry->held = held;
		__entry->writer = writer ? writer->pid : 0;
	),
	TP_printk("tgid=%d uaddr=0x%lx readers=%u held=%u writer=%d",
		  __entry->tgid, __entry->uaddr, __entry->readers,
		  __entry->held, __entry->writer)
);

TRACE_EVENT(tofutex_wait,
	TP_PROTO(u32 __user *uaddr, u32 val, int ret),
	TP_ARGS(uaddr, val, ret),
	TP_STRUCT__entry(
		__field(pid_t, tgid)
		__field(unsigned long, uaddr)
		__field(u32, val)
		__field(int, ret)
	),
	TP_fast_assign(
		__entry->tgid = current->tgid;
		__entry->uaddr = (unsigned long)uaddr;
		__entry->val = val;
		__entry->ret = ret;
	),
	TP_printk("tgid=%d uaddr=0x%lx val=%u ret=%d", __entry->tgid,
		  __entry->uaddr, __entry->val, __entry->ret)
);

TRACE_EVENT(tofutex_wake,
	TP_PROTO(u32 __user *uaddr, u32 count, u32 woken),
	TP_ARGS(uaddr, count, woken),
	TP_STRUCT__entry(
		__field(pid_t, tgid)
		__field(unsigned long, uaddr)
		__field(u32, count)
		__field(u32, woken)
	),
	TP_fast_assign(
		__entry->tgid = current->tgid;
		__entry->uaddr = (unsigned long)uaddr;
		__entry->count = count;
		__entry->woken = woken;
	),
	TP_printk("tgid=%d uaddr=0x%lx count=%u woken=%u", __entry->tgid,
		  __entry->uaddr, __entry->count, __entry->woken)
);

TRACE_EVENT(tofutex_swap,
	TP_PROTO(u32 __user *uaddr, u32 __user *wake_uaddr, u32 woken,
		 int ret),
	TP_ARGS(uaddr, wake_uaddr, woken, ret),
	TP_STRUCT__entry(
		__field(pid_t, tgid)
		__field(unsigned long, uaddr)
		__field(unsigned long, wake_uaddr)
		__field(u32, woken)
		__field(int, ret)
	),
	TP_fast_assign(
		__entry->tgid = current->tgid;
		__entry->uaddr = (unsigned long)uaddr;
		__entry->wake_uaddr = (unsigned long)wake_uaddr;
		__entry->woken = woken;
		__entry->ret = ret;
	),
	TP_printk("tgid=%d uaddr=0x%lx wake_uaddr=0x%lx woken=%u ret=%d",
		  __entry->tgid, __entry->uaddr, __entry->wake_uaddr,
		  __entry->woken, __entry->ret)
);

TRACE_EVENT(tofutex_requeue,
	TP_PROTO(u32 __user *uaddr, u32 __user *lock_uaddr, u32 woken,
		 u32 requeued, int ret),
	TP_ARGS(uaddr, lock_uaddr, woken, requeued, ret),
	TP_STRUCT__entry(
		__field(pid_t, tgid)
		__field(unsigned long, uaddr)
		__field(unsigned long, lock_uaddr)
		__field(u32, woken)
		__field(u32, requeued)
		__field(int, ret)
	),
	TP_fast_assign(
		__entry->tgid = current->tgid;
		__entry->uaddr = (unsigned long)uaddr;
		__entry->lock_uaddr = (unsigned long)lock_uaddr;
		__entry->woken = woken;
		__entry->requeued = requeued;
		__entry->ret = ret;
	),
	TP_printk("tgid=%d uaddr=0x%lx lock_uaddr=0x%lx woken=%u requeued=%u ret=%d",
		  __entry->tgid, __entry->uaddr, __entry->lock_uaddr,
		  __entry->woken, __entry->requeued, __entry->ret)
);

#endif /* _TOFUTEX_TRACE_H */

/* An out-of-tree module: Kbuild puts module/ on trace.o's include path. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE tofutex_trace
#include <trace/define_trace.h>
