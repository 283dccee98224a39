// SPDX-License-Identifier: GPL-2.0
/*
 * tofutex - the CPU half of TOFUTEX_IOC_SWAP: wake a task so that it runs
 * on the caller's CPU, which the caller is about to leave idle.
 *
 * Why
 * ---
 * A swap hands the CPU from one thread to another. The cheapest place for
 * the wakee to run is the waker's CPU: it is about to go idle, and its
 * caches hold what the two threads share. The scheduler does not choose it
 * by itself: while the waker still runs, its CPU is busy, and when the
 * wakee's previous CPU is idle and shares a cache with it,
 * select_idle_sibling() picks that one whatever hint the waker gives
 * (neither WF_SYNC nor a wake_cpu steered while the waker still runs
 * overrides that choice). Upstream's answer, WF_CURRENT_CPU, is reachable
 * only through __wake_up_on_current_cpu(), which Debian's 6.1 and 6.12 do not
 * export. Restricting the wakee's affinity works but is visible to, and
 * can overwrite, what user space and cpusets set. So, by default:
 *
 * Deferred wake
 * -------------
 * Wake the wakee only once the waker has switched out, from this CPU, with
 * the wakee's wake_cpu set to this CPU. Then this CPU is idle and is the
 * wakee's "previous" CPU, and select_idle_sibling() takes it at its first
 * check. Nothing user space can observe changes: no affinity is touched,
 * and the CPU is one the wakee is allowed to use at the moment of the wake.
 *
 *   waker, on CPU c                        the same CPU c
 *
 *   stage = ARMED
 *   preempt_notifier_register()
 *   schedule()
 *     dequeue the waker (it blocks)
 *     notifier sched_out:  (rq lock held)
 *       waker blocked? ARMED -> QUEUED
 *       irq_work_queue()
 *     switch to the idle task
 *                                          interrupts on: the irq_work runs
 *                                            lock wakee->pi_lock
 *                                            wakee blocked, c allowed?
 *                                              wakee->wake_cpu = c
 *                                            unlock wakee->pi_lock
 *                                            wake_up_process(wakee)
 *                                              select_task_rq(prev = c):
 *                                              c is idle -> c
 *   ... woken, schedule() returns ...
 *   preempt_notifier_unregister()
 *   ARMED -> CLAIMED? then the sleep did not block: wake_up_process(wakee)
 *   else irq_work_sync()
 *   put_task_struct(wakee)
 *
 * Each of these rules is handled here:
 *
 * - sched_out runs on every switch-out of the waker, also when it was
 *   merely preempted between setting its task state and schedule(); then
 *   it is still queued and its CPU does not go idle. Only a waker that
 *   schedule() dequeued counts as blocked, and 6.12's delayed dequeue
 *   changes what "dequeued" looks like: tofutex_task_blocked() (compat.h).
 *   A preempted waker leaves the hand-off ARMED for its real sleep.
 *
 * - schedule() need not block at all (already woken, a signal, an expired
 *   timer), and then sched_out never says "blocked". The waker claims the
 *   hand-off afterwards and wakes the wakee itself. The stage is an atomic
 *   that only the two cmpxchgs leave ARMED, so the wake happens exactly
 *   once: by the irq_work or by the waker, never both, never neither.
 *
 * - The wake cannot happen inside the notifier: the run-queue lock is held
 *   and try_to_wake_up() takes pi_lock, which nests outside it. Hence the
 *   irq_work, raised on this CPU; it runs as soon as the context switch
 *   re-enables interrupts. It is a hard irq_work so that PREEMPT_RT does
 *   not move it to a thread, which would keep the CPU busy.
 *
 * - wake_cpu is written by the irq_work, on the CPU that went idle, under
 *   the wakee's pi_lock and only while the wakee is blocked: its state is a
 *   sleeping one and it is on no run queue. Every try_to_wake_up() holds
 *   pi_lock from reading the state until the task is queued or marked
 *   TASK_WAKING, so no wake-up is in flight; the scheduler itself writes a
 *   blocked task's wake_cpu only under pi_lock (migration_cpu_stop(),
 *   __migrate_swap_task()), and others write it only for queued tasks. So
 *   pi_lock serialises the write, the way the scheduler's own writes are
 *   serialised. The CPU is checked against p->cpus_ptr under the same lock,
 *   which every affinity change also holds; and select_task_rq() checks
 *   wake_cpu against the affinity again at wake-up time, so an affinity
 *   set later by user space or a cpuset is honoured too.
 *
 * - The hand-off lives on the waker's stack, and the irq_work may run on
 *   another CPU than the one the waker returns on: irq_work_sync() before
 *   returning. The wakee is pinned by a reference until then.
 *
 * - preempt_notifier_register() warns unless notifiers are enabled. They
 *   are a static branch in every context switch of the system, so only
 *   the administrator switches them on: at module load when wake_local is
 *   set (the default), or by setting wake_local later; _dec() at unload.
 *   No SWAP, so no unprivileged caller, ever changes the key; a SWAP uses
 *   the mechanism only when it finds the key on.
 *
 * - When the wakee may not run on this CPU, may run on no other, or is
 *   still queued (not yet asleep, or delayed-dequeued on 6.12), deferring
 *   gains nothing and delays it by a trip through the idle task: wake it
 *   at once.
 *
 * - Without CONFIG_PREEMPT_NOTIFIERS, or without an irq_work interrupt on
 *   this architecture, the wakee is woken at once.
 *
 * If the kernel exports __wake_up_on_current_cpu() (compat.h), that is
 * used instead: the wakee is queued on this CPU before the waker sleeps
 * and runs as soon as the waker lets it, as below.
 *
 * Woken at once
 * -------------
 * A wakee woken at once (by every mechanism; when pinned to this CPU it is
 * the only case) is queued here and usually asks to preempt the waker.
 * The waker lets it, at a preemption point before it sleeps, instead of
 * dequeueing itself in schedule() first: tofutex_sleep_after_wake(). The
 * waker stays queued, in its sleeping state, exactly as after being
 * preempted anywhere else in the kernel; a wake-up that finds it so only
 * marks it running. Whoever wakes the waker finds it the same way either
 * way (through its wait entry, by waitwake.c's rules), and the waker
 * rechecks its condition after any return, so only the cost changes.
 *
 * Module parameters: wake_local (bool, 0644) turns the mechanism off for
 * comparison, and back on (switching notifiers on if they are not yet);
 * wake_local_mechanism (read-only) names the one built in.
 */
#include <linux/cpumask.h>
#include <linux/irq_work.h>
#include <linux/ktime.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/smp.h>
#include <linux/wait.h>

#include "tofutex.h"

/* Set through tofutex_wake_local_ops, at the end of this file. */
static bool wake_local = true;

/* Wake @wakee now, wherever the scheduler likes, and drop its reference. */
static void tofutex_wake_now(struct task_struct *wakee)
{
	wake_up_process(wakee);
	put_task_struct(wakee);
}

/**
 * tofutex_sleep_after_wake() - let a wakee queued here run first, then sleep
 * @dl: the end of the sleep
 *
 * The caller has set a sleeping task state and has just woken its wakee
 * at once. When the wakee was queued on this CPU and asked to preempt
 * the caller (need_resched), a fully preemptible kernel switches to it
 * at the wake-up's preempt_enable(), with the caller still on its run
 * queue; cond_resched() is that same preemption point under voluntary
 * and no preemption. Switching there instead of in schedule() keeps the
 * caller queued: when the wakee swaps back, its wake-up finds the caller
 * queued and only marks it running, so a ping-pong on one CPU pays no
 * dequeue and no enqueue, as FUTEX_WAKE's caller does when it is
 * preempted on its way back to user space.
 *
 * A caller woken while preempted is running again and returns without
 * sleeping: its loop rechecks why it slept, as after any wake-up. One that
 * was not woken sleeps as usual once it runs again.
 */
static void tofutex_sleep_after_wake(const struct tofutex_deadline *dl)
{
	if (need_resched()) {
		cond_resched();
		if (task_is_running(current))
			return;
	}
	tofutex_schedule_until(dl);
}

#if defined(TOFUTEX_WAKE_LOCAL_CURRENT_CPU)

static const char *const tofutex_wake_local_name = "current-cpu";

static bool tofutex_wake_local_usable(void)
{
	return true;
}

int tofutex_wake_local_init(void)
{
	return 0;
}

void tofutex_wake_local_exit(void)
{
}

static void tofutex_wake_local_update(void)
{
}

/*
 * __wake_up_on_current_cpu() wakes the entries of a wait queue. The queue
 * and its one entry live on the waker's stack and name the wakee, so that
 * no lifetime but the waker's own is involved; default_wake_function()
 * passes WF_CURRENT_CPU on to try_to_wake_up(), which queues the wakee on
 * this CPU if its affinity allows.
 */
static void tofutex_wake_here(struct task_struct *wakee)
{
	DECLARE_WAIT_QUEUE_HEAD_ONSTACK(wq);
	struct wait_queue_entry entry;

	init_waitqueue_entry(&entry, wakee);
	add_wait_queue(&wq, &entry);
	__wake_up_on_current_cpu(&wq, TASK_NORMAL, NULL);
	remove_wait_queue(&wq, &entry);
	put_task_struct(wakee);
}

void tofutex_wake_local(struct task_struct *wakee,
			const struct tofutex_deadline *dl)
{
	if (!wakee) {
		tofutex_schedule_until(dl);
		return;
	}
	if (READ_ONCE(wake_local))
		tofutex_wake_here(wakee);
	else
		tofutex_wake_now(wakee);
	tofutex_sleep_after_wake(dl);
}

#elif defined(TOFUTEX_WAKE_LOCAL_DEFERRED)

static const char *const tofutex_wake_local_name = "deferred";

/* Who does the wake: see the diagram at the top of the file. */
enum tofutex_handoff_stage {
	TOFUTEX_HANDOFF_ARMED,		/* nobody yet */
	TOFUTEX_HANDOFF_QUEUED,		/* the irq_work */
	TOFUTEX_HANDOFF_CLAIMED,	/* the waker, after its sleep */
};

/**
 * struct tofutex_handoff - one deferred wake, on the waker's stack
 * @wakee:    the task to wake, with a reference held until the end
 * @notifier: the waker's preempt notifier, registered for one sleep
 * @work:     raised by sched_out, runs on the CPU the waker left
 * @stage:    enum tofutex_handoff_stage
 */
struct tofutex_handoff {
	struct task_struct *wakee;
	struct preempt_notifier notifier;
	struct irq_work work;
	atomic_t stage;
};

static bool tofutex_wake_local_usable(void)
{
	return arch_irq_work_has_interrupt();
}

/*
 * Preempt notifiers are a static branch in every context switch of the
 * system: a global switch, flipped only by the administrator's acts
 * (loading the module, writing wake_local), never by a SWAP, which any
 * user may call. Once on, they stay on until unload: turning them off
 * while a SWAP has a notifier registered would make the registration
 * warn, and a count kept per SWAP would patch text twice per sleep.
 * @tofutex_notifiers_ready is true from init to exit, so that a
 * wake_local given at load time is acted on by init, and one written
 * after exit started is not.
 */
static DEFINE_MUTEX(tofutex_notifiers_lock);
static bool tofutex_notifiers_ready;
static bool tofutex_notifiers_on;

/*
 * May @p be steered to @cpu? Called with @p->pi_lock held. The state is
 * read before on_rq, as try_to_wake_up() does, so that a task being
 * activated from a wake list is not mistaken for a dequeued one.
 */
static bool tofutex_steerable(struct task_struct *p, int cpu)
{
	lockdep_assert_held(&p->pi_lock);

	if (!(READ_ONCE(p->__state) & TASK_NORMAL))
		return false;
	/* As in try_to_wake_up(): state before on_rq. */
	smp_rmb();
	return !READ_ONCE(p->on_rq) && cpumask_test_cpu(cpu, p->cpus_ptr);
}

/* The irq_work: runs in hard interrupt context on the CPU the waker left. */
static void tofutex_handoff_work(struct irq_work *work)
{
	struct tofutex_handoff *h = container_of(work, struct tofutex_handoff,
						 work);
	struct task_struct *p = h->wakee;
	int cpu = smp_processor_id();
	unsigned long flags;

	raw_spin_lock_irqsave(&p->pi_lock, flags);
	if (tofutex_steerable(p, cpu))
		WRITE_ONCE(p->wake_cpu, cpu);
	raw_spin_unlock_irqrestore(&p->pi_lock, flags);

	wake_up_process(p);
}

/* Called by the scheduler with the run-queue lock held, interrupts off. */
static void tofutex_handoff_sched_out(struct preempt_notifier *notifier,
				      struct task_struct *next)
{
	struct tofutex_handoff *h = container_of(notifier,
						 struct tofutex_handoff,
						 notifier);

	if (!tofutex_task_blocked(current))
		return;
	if (atomic_cmpxchg(&h->stage, TOFUTEX_HANDOFF_ARMED,
			   TOFUTEX_HANDOFF_QUEUED) == TOFUTEX_HANDOFF_ARMED)
		irq_work_queue(&h->work);
}

/* Switching back in needs nothing; the scheduler calls it regardless. */
static void tofutex_handoff_sched_in(struct preempt_notifier *notifier,
				     int cpu)
{
}

static struct preempt_ops tofutex_handoff_ops = {
	.sched_in = tofutex_handoff_sched_in,
	.sched_out = tofutex_handoff_sched_out,
};

/*
 * Worth deferring? A racy look, re-checked under pi_lock by the irq_work:
 * the wakee must be allowed on this CPU, and already off its run queue.
 * A wakee allowed on this CPU alone needs no help either: the scheduler
 * puts it here without choosing, and woken at once it is already queued
 * when the caller's schedule() picks the next task, which saves the trip
 * through the idle task.
 */
static bool tofutex_handoff_worth_it(struct task_struct *wakee)
{
	if (!READ_ONCE(wake_local))
		return false;
	/* Pairs with tofutex_wake_local_update(): notifiers are on. */
	if (!smp_load_acquire(&tofutex_notifiers_on))
		return false;
	return !READ_ONCE(wakee->on_rq) &&
	       READ_ONCE(wakee->nr_cpus_allowed) > 1 &&
	       cpumask_test_cpu(raw_smp_processor_id(), wakee->cpus_ptr);
}

/*
 * A task's preempt notifier list is walked by its own context switches:
 * change it only with preemption off, as KVM's vcpu_load()/vcpu_put() do.
 */
static void tofutex_handoff_arm(struct tofutex_handoff *h,
				struct task_struct *wakee)
{
	h->wakee = wakee;
	h->work = IRQ_WORK_INIT_HARD(tofutex_handoff_work);
	atomic_set(&h->stage, TOFUTEX_HANDOFF_ARMED);
	preempt_notifier_init(&h->notifier, &tofutex_handoff_ops);

	preempt_disable();
	preempt_notifier_register(&h->notifier);
	preempt_enable();
}

static void tofutex_handoff_finish(struct tofutex_handoff *h)
{
	preempt_disable();
	preempt_notifier_unregister(&h->notifier);
	preempt_enable();

	if (atomic_cmpxchg(&h->stage, TOFUTEX_HANDOFF_ARMED,
			   TOFUTEX_HANDOFF_CLAIMED) == TOFUTEX_HANDOFF_ARMED)
		wake_up_process(h->wakee);
	else
		irq_work_sync(&h->work);
	put_task_struct(h->wakee);
}

void tofutex_wake_local(struct task_struct *wakee,
			const struct tofutex_deadline *dl)
{
	struct tofutex_handoff h;

	if (!wakee) {
		tofutex_schedule_until(dl);
		return;
	}
	if (!tofutex_wake_local_usable() || !tofutex_handoff_worth_it(wakee)) {
		tofutex_wake_now(wakee);
		tofutex_sleep_after_wake(dl);
		return;
	}
	tofutex_handoff_arm(&h, wakee);
	tofutex_schedule_until(dl);
	tofutex_handoff_finish(&h);
}

/* Switch notifiers on if wake_local asks for them and they are off. */
static void tofutex_wake_local_update(void)
{
	mutex_lock(&tofutex_notifiers_lock);
	if (tofutex_notifiers_ready && !tofutex_notifiers_on &&
	    READ_ONCE(wake_local) && tofutex_wake_local_usable()) {
		preempt_notifier_inc();
		/* Pairs with the acquires: the key is on for whoever sees it. */
		smp_store_release(&tofutex_notifiers_on, true);
	}
	mutex_unlock(&tofutex_notifiers_lock);
}

int tofutex_wake_local_init(void)
{
	mutex_lock(&tofutex_notifiers_lock);
	tofutex_notifiers_ready = true;
	mutex_unlock(&tofutex_notifiers_lock);
	tofutex_wake_local_update();
	return 0;
}

/*
 * At unload, or when init fails later: no SWAP is running, each holds a
 * descriptor, which holds the module.
 */
void tofutex_wake_local_exit(void)
{
	mutex_lock(&tofutex_notifiers_lock);
	tofutex_notifiers_ready = false;
	if (tofutex_notifiers_on)
		preempt_notifier_dec();
	tofutex_notifiers_on = false;
	mutex_unlock(&tofutex_notifiers_lock);
}

#else /* neither mechanism */

static const char *const tofutex_wake_local_name = "none";

static bool tofutex_wake_local_usable(void)
{
	return false;
}

int tofutex_wake_local_init(void)
{
	return 0;
}

void tofutex_wake_local_exit(void)
{
}

static void tofutex_wake_local_update(void)
{
}

void tofutex_wake_local(struct task_struct *wakee,
			const struct tofutex_deadline *dl)
{
	if (!wakee) {
		tofutex_schedule_until(dl);
		return;
	}
	tofutex_wake_now(wakee);
	tofutex_sleep_after_wake(dl);
}

#endif

static int tofutex_wake_local_mechanism_get(char *buf,
					    const struct kernel_param *kp)
{
	return scnprintf(buf, PAGE_SIZE, "%s\n",
			 tofutex_wake_local_usable() ? tofutex_wake_local_name :
						       "none");
}

static int tofutex_wake_local_mechanism_set(const char *val,
					    const struct kernel_param *kp)
{
	return -EPERM;
}

static const struct kernel_param_ops tofutex_wake_local_mechanism_ops = {
	.set = tofutex_wake_local_mechanism_set,
	.get = tofutex_wake_local_mechanism_get,
};
module_param_cb(wake_local_mechanism, &tofutex_wake_local_mechanism_ops,
		NULL, 0444);
MODULE_PARM_DESC(wake_local_mechanism, "How SWAP runs its wakee on the caller's CPU: current-cpu, deferred or none (read-only)");

static int tofutex_wake_local_set(const char *val,
				  const struct kernel_param *kp)
{
	int ret = param_set_bool(val, kp);

	if (!ret)
		tofutex_wake_local_update();
	return ret;
}

static const struct kernel_param_ops tofutex_wake_local_ops = {
	.set = tofutex_wake_local_set,
	.get = param_get_bool,
};
module_param_cb(wake_local, &tofutex_wake_local_ops, &wake_local, 0644);
MODULE_PARM_DESC(wake_local, "Run SWAP's wakee on the caller's CPU when its affinity allows; setting it switches the scheduler's preempt notifiers on for good");
