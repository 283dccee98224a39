// SPDX-License-Identifier: GPL-2.0
/*
 * tofutex - deadlines of LOCK, WAIT and SWAP, and the sleeps bounded by
 * them.
 *
 * A deadline is absolute, on CLOCK_MONOTONIC by default or on
 * CLOCK_REALTIME with the call's CLOCK_REALTIME flag. A realtime deadline
 * is never converted to the monotonic clock: every sleep towards it is an
 * hrtimer on CLOCK_REALTIME in absolute mode, which the timekeeping core
 * re-programs when clock_settime() moves the clock, so the wait ends when
 * the realtime clock reaches the deadline, as with FUTEX_CLOCK_REALTIME.
 * Whether a deadline has passed is always read from its own clock.
 *
 * A monotonic deadline is read as the caller reads CLOCK_MONOTONIC: in its
 * time namespace, whose clock may run ahead of (or behind) the host's by a
 * fixed offset (a container that was checkpointed and restored has one).
 * It is converted to the host's clock once, when the ioctl reads it, as
 * futex(2) does (compat.h); the offset cannot change afterwards. A
 * realtime deadline needs nothing: time namespaces do not offset
 * CLOCK_REALTIME.
 *
 * A struct tofutex_deadline lives in its ioctl's call structure, on the
 * caller's stack, and is read-only after tofutex_deadline_init(). The
 * on-stack timer of tofutex_schedule_poll() is cancelled before it
 * returns; a struct tofutex_deadline_timer lives on its user's stack
 * between tofutex_deadline_timer_start() and _cancel(). Nothing here
 * takes a lock.
 */
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/timekeeping.h>

#include "tofutex.h"

/**
 * tofutex_deadline_init() - an ioctl's deadline arguments as a deadline
 * @dl:          out: the deadline
 * @given:       the call's DEADLINE flag is set
 * @realtime:    the call's CLOCK_REALTIME flag is set
 * @deadline_ns: absolute time in ns on the chosen clock
 *
 * Times beyond KTIME_MAX (about 292 years) mean never, not an error: the
 * ABI's field is unsigned and a caller computing "now + a long time" may
 * overflow it. A clock, or a non-zero time, without a deadline is
 * rejected rather than ignored: the caller asked for something the call
 * cannot do, and a field that must be 0 can be given a meaning later.
 *
 * Return: 0, or -EINVAL for CLOCK_REALTIME or a non-zero @deadline_ns
 * without DEADLINE.
 */
int tofutex_deadline_init(struct tofutex_deadline *dl, bool given,
			  bool realtime, u64 deadline_ns)
{
	ktime_t expires;

	if (!given && (realtime || deadline_ns))
		return -EINVAL;
	dl->clock = realtime ? CLOCK_REALTIME : CLOCK_MONOTONIC;
	dl->expires = KTIME_MAX;
	if (!given || deadline_ns >= KTIME_MAX)
		return 0;
	expires = ns_to_ktime(deadline_ns);
	if (!realtime)
		expires = tofutex_timens_monotonic_to_host(expires);
	dl->expires = expires;
	return 0;
}

/**
 * tofutex_deadline_passed() - has the deadline's clock reached it?
 * @dl: the deadline
 *
 * Return: true when it has; never for no deadline.
 */
bool tofutex_deadline_passed(const struct tofutex_deadline *dl)
{
	ktime_t now;

	if (dl->expires == KTIME_MAX)
		return false;
	now = dl->clock == CLOCK_REALTIME ? ktime_get_real() : ktime_get();
	return ktime_compare(now, dl->expires) >= 0;
}

/**
 * tofutex_deadline_interrupted() - must a sleep end now rather than begin?
 * @dl: the caller's deadline
 *
 * Return: -ERESTARTSYS for a pending signal, -ETIMEDOUT when @dl passed,
 * else 0.
 */
int tofutex_deadline_interrupted(const struct tofutex_deadline *dl)
{
	if (signal_pending(current))
		return -ERESTARTSYS;
	if (tofutex_deadline_passed(dl))
		return -ETIMEDOUT;
	return 0;
}

/*
 * After the deadline, the caller of tofutex_deadline_timer_start() is
 * woken again this often until it cancels the timer. A wake-up that comes
 * while the caller runs - after it found the deadline not yet passed,
 * before the sleep it does not control begins - is lost, and that sleep
 * would then last until something else ends it; waking again bounds it to
 * this much past the deadline.
 */
#define TOFUTEX_DEADLINE_REWAKE_NS	NSEC_PER_MSEC

static enum hrtimer_restart tofutex_deadline_timer_fn(struct hrtimer *timer)
{
	struct tofutex_deadline_timer *t =
		container_of(timer, struct tofutex_deadline_timer, timer);

	wake_up_process(t->task);
	hrtimer_forward_now(timer, ns_to_ktime(TOFUTEX_DEADLINE_REWAKE_NS));
	return HRTIMER_RESTART;
}

/**
 * tofutex_deadline_timer_start() - wake the caller at a deadline, from
 * whatever sleep it is in then
 * @t:  the timer, on the caller's stack
 * @dl: the deadline, or NULL for none (then nothing is armed)
 *
 * For sleeps that the caller does not control and that end on a wake-up
 * (a page fault waiting for a userfaultfd page); the caller checks the
 * deadline when the sleep ends. The timer keeps waking the caller after
 * the deadline (see TOFUTEX_DEADLINE_REWAKE_NS), so a sleep begun just as
 * it passed ends too. tofutex_deadline_timer_cancel() must follow before
 * @t goes out of scope; the timer references the caller's task only
 * until then.
 */
void tofutex_deadline_timer_start(struct tofutex_deadline_timer *t,
				  const struct tofutex_deadline *dl)
{
	t->armed = dl && dl->expires != KTIME_MAX;
	if (!t->armed)
		return;
	t->task = current;
	tofutex_hrtimer_setup_on_stack(&t->timer, tofutex_deadline_timer_fn,
				       dl->clock, HRTIMER_MODE_ABS);
	hrtimer_start_range_ns(&t->timer, dl->expires, current->timer_slack_ns,
			       HRTIMER_MODE_ABS);
}

/**
 * tofutex_deadline_timer_cancel() - disarm tofutex_deadline_timer_start()
 * @t: the timer
 */
void tofutex_deadline_timer_cancel(struct tofutex_deadline_timer *t)
{
	if (!t->armed)
		return;
	hrtimer_cancel(&t->timer);
	destroy_hrtimer_on_stack(&t->timer);
}

/**
 * tofutex_schedule_until() - sleep until woken or the deadline
 * @dl: the deadline
 *
 * The caller has set its task state; this returns with it running.
 */
void tofutex_schedule_until(const struct tofutex_deadline *dl)
{
	ktime_t expires = dl->expires;

	if (expires == KTIME_MAX)
		schedule();
	else
		schedule_hrtimeout_range_clock(&expires,
					       current->timer_slack_ns,
					       HRTIMER_MODE_ABS, dl->clock);
	__set_current_state(TASK_RUNNING);
}

/*
 * Sleep until @poll on the monotonic clock with the realtime deadline
 * armed on its own clock beside it, so that clock_settime() ends the
 * sleep at once when it moves the realtime clock past the deadline.
 */
static void tofutex_schedule_two_clocks(const struct tofutex_deadline *dl,
					ktime_t poll)
{
	struct hrtimer_sleeper rt;

	tofutex_hrtimer_sleeper_on_stack(&rt, CLOCK_REALTIME,
					 HRTIMER_MODE_ABS);
	hrtimer_set_expires_range_ns(&rt.timer, dl->expires,
				     current->timer_slack_ns);
	hrtimer_sleeper_start_expires(&rt, HRTIMER_MODE_ABS);
	schedule_hrtimeout_range(&poll, current->timer_slack_ns,
				 HRTIMER_MODE_ABS);
	hrtimer_cancel(&rt.timer);
	destroy_hrtimer_on_stack(&rt.timer);
	__set_current_state(TASK_RUNNING);
}

/**
 * tofutex_schedule_poll() - sleep until woken, the deadline, or @max_ns
 * @dl:     the deadline
 * @max_ns: longest sleep in ns, on the monotonic clock: a poll interval,
 *          which must not stretch or shrink when the realtime clock is set
 *
 * The caller has set its task state; this returns with it running.
 */
void tofutex_schedule_poll(const struct tofutex_deadline *dl, u64 max_ns)
{
	ktime_t poll = ktime_add_ns(ktime_get(), max_ns);
	struct tofutex_deadline until = { .expires = poll,
					  .clock = CLOCK_MONOTONIC };

	if (dl->clock == CLOCK_REALTIME && dl->expires != KTIME_MAX) {
		tofutex_schedule_two_clocks(dl, poll);
		return;
	}
	if (ktime_before(dl->expires, poll))
		until.expires = dl->expires;
	tofutex_schedule_until(&until);
}
