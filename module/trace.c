// SPDX-License-Identifier: GPL-2.0
/*
 * tofutex - the module's tracepoints: their definitions
 * (CREATE_TRACE_POINTS, once in the module), and the one helper that
 * does work for them outside an event's own assignment.
 *
 * Lifetimes and locking: none; see tofutex_trace.h.
 */
#include <linux/ktime.h>

#include "tofutex.h"

#define CREATE_TRACE_POINTS
#include "tofutex_trace.h"

/**
 * tofutex_trace_contended() - a lock call enters its queue
 * @uaddr: the word
 * @op:    TOFUTEX_OP_LOCK, _RDLOCK or _WRLOCK
 *
 * Fires tofutex_lock_contended, and starts the clock of the wait that
 * tofutex_lock_acquired reports; the clock is read only while that event
 * is enabled, so that a disabled one costs the slow path nothing.
 *
 * Return: the time the wait began (ns, monotonic) for
 * tofutex_lock_result(), or 0 when nobody traces it.
 */
u64 tofutex_trace_contended(u32 __user *uaddr, enum tofutex_op op)
{
	trace_tofutex_lock_contended(uaddr, op);
	return trace_tofutex_lock_acquired_enabled() ? ktime_get_ns() : 0;
}
