// SPDX-License-Identifier: GPL-2.0
/*
 * tofutex - statistics, per process and global (TOFUTEX_IOC_STATS).
 *
 * Event counters are per-CPU so that counting adds no shared cache line to
 * the lock and wait paths; a reader sums them without locking and may see
 * a count that is a few events old. The live-state counts are atomics
 * because the leak checks need them exact.
 *
 * The global set lives from module load to unload. A process's set lives
 * in its table (table.c) and dies with it.
 *
 * Who may read what: a process reads its own set. The global set shows
 * every process's activity (when and how much others lock, wait and
 * sleep), so it needs CAP_SYS_ADMIN, like other system-wide views of
 * other users' behaviour.
 */
#include <linux/capability.h>
#include <linux/percpu.h>
#include <linux/uaccess.h>

#include "tofutex.h"

static struct tofutex_counters tofutex_global_counters;

/**
 * tofutex_counters_init() - allocate a set of counters
 * @cnt: the set to initialise
 *
 * The per-CPU memory is charged to the caller's memory cgroup.
 *
 * Return: 0 or -ENOMEM.
 */
int tofutex_counters_init(struct tofutex_counters *cnt)
{
	cnt->events = __alloc_percpu_gfp(sizeof(u64) * TOFUTEX_NR_COUNTERS,
					 sizeof(u64), GFP_KERNEL_ACCOUNT);
	atomic_long_set(&cnt->live, 0);
	return cnt->events ? 0 : -ENOMEM;
}

void tofutex_counters_destroy(struct tofutex_counters *cnt)
{
	free_percpu(cnt->events);
}

static void tofutex_counters_inc(struct tofutex_counters *cnt,
				 enum tofutex_counter what)
{
	this_cpu_inc(cnt->events[what]);
}

/**
 * tofutex_count() - count one event for the caller's process and globally
 * @table: the caller's table
 * @what:  the event
 */
void tofutex_count(struct tofutex_table *table, enum tofutex_counter what)
{
	tofutex_counters_inc(tofutex_table_counters(table), what);
	tofutex_counters_inc(&tofutex_global_counters, what);
}

/**
 * tofutex_count_taken() - count how a lock call got its lock
 * @table: the caller's table
 * @how:   the call's TOFUTEX_STATUS_* (LOCK, RDLOCK and WRLOCK alike)
 */
void tofutex_count_taken(struct tofutex_table *table, u32 how)
{
	switch (how) {
	case TOFUTEX_STATUS_STOLEN:
	case TOFUTEX_STATUS_SPUN:
		tofutex_count(table, TOFUTEX_CNT_STEALS);
		break;
	case TOFUTEX_STATUS_HANDOFF:
		tofutex_count(table, TOFUTEX_CNT_HANDOFFS);
		break;
	case TOFUTEX_STATUS_OWNER_DIED:
		tofutex_count(table, TOFUTEX_CNT_OWNER_DEATHS);
		break;
	}
}

/**
 * tofutex_live_add() - account states created (+1) or freed (-1)
 * @table: the table the state belongs to
 * @delta: +1 or -1
 */
void tofutex_live_add(struct tofutex_table *table, long delta)
{
	atomic_long_add(delta, &tofutex_table_counters(table)->live);
	atomic_long_add(delta, &tofutex_global_counters.live);
}

static u64 tofutex_counters_sum(struct tofutex_counters *cnt,
				enum tofutex_counter what)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += per_cpu_ptr(cnt->events, cpu)[what];
	return sum;
}

static void tofutex_stats_fill(struct tofutex_stats *st,
			       struct tofutex_counters *cnt)
{
	st->lock_calls = tofutex_counters_sum(cnt, TOFUTEX_CNT_LOCK_CALLS);
	st->unlock_calls = tofutex_counters_sum(cnt, TOFUTEX_CNT_UNLOCK_CALLS);
	st->spins = tofutex_counters_sum(cnt, TOFUTEX_CNT_SPINS);
	st->sleeps = tofutex_counters_sum(cnt, TOFUTEX_CNT_SLEEPS);
	st->steals = tofutex_counters_sum(cnt, TOFUTEX_CNT_STEALS);
	st->handoffs = tofutex_counters_sum(cnt, TOFUTEX_CNT_HANDOFFS);
	st->owner_deaths = tofutex_counters_sum(cnt, TOFUTEX_CNT_OWNER_DEATHS);
	st->timeouts = tofutex_counters_sum(cnt, TOFUTEX_CNT_TIMEOUTS);
	st->wait_calls = tofutex_counters_sum(cnt, TOFUTEX_CNT_WAIT_CALLS);
	st->wake_calls = tofutex_counters_sum(cnt, TOFUTEX_CNT_WAKE_CALLS);
	st->swap_calls = tofutex_counters_sum(cnt, TOFUTEX_CNT_SWAP_CALLS);
	st->requeue_calls = tofutex_counters_sum(cnt,
						 TOFUTEX_CNT_REQUEUE_CALLS);
	st->live_states = atomic_long_read(&cnt->live);
}

/**
 * tofutex_ioc_stats() - TOFUTEX_IOC_STATS
 * @table: the caller's table
 * @argp:  user pointer to struct tofutex_stats
 *
 * Return: 0, -EFAULT, -EINVAL for an unknown scope or nonzero padding,
 * -EPERM for the global scope without CAP_SYS_ADMIN.
 */
long tofutex_ioc_stats(struct tofutex_table *table, void __user *argp)
{
	struct tofutex_stats st;
	u32 scope;

	if (copy_from_user(&st, argp, sizeof(st)))
		return -EFAULT;
	scope = st.flags;
	if (scope > TOFUTEX_STATS_GLOBAL || st.pad ||
	    !tofutex_reserved_zero(st.reserved, ARRAY_SIZE(st.reserved)))
		return -EINVAL;
	if (scope == TOFUTEX_STATS_GLOBAL && !capable(CAP_SYS_ADMIN))
		return -EPERM;

	memset(&st, 0, sizeof(st));
	st.flags = scope;
	tofutex_stats_fill(&st, scope == TOFUTEX_STATS_GLOBAL ?
			   &tofutex_global_counters :
			   tofutex_table_counters(table));
	if (copy_to_user(argp, &st, sizeof(st)))
		return -EFAULT;
	return 0;
}

int tofutex_stats_init(void)
{
	return tofutex_counters_init(&tofutex_global_counters);
}

void tofutex_stats_exit(void)
{
	tofutex_counters_destroy(&tofutex_global_counters);
}
