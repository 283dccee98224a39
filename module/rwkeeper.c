// SPDX-License-Identifier: GPL-2.0
/*
 * tofutex - the reservations of reserving writers that a signal took out
 * of WRLOCK to run a handler (rwwithdraw.c): who they are, on which word,
 * since when.
 *
 * Such a writer is in no call on the word, so the word's state, which
 * lives only while some task is, cannot remember it: the state may retire
 * while the writer runs its handler (every reader left, timed out or was
 * interrupted), and a new one would know nothing of the reservation. A
 * keeper record remembers it in the process's table instead, until the
 * writer's thread calls WRLOCK on the word again (the call restarted or
 * retried) or handoff_ns after it left, when the readers' wait for it is
 * over anyway (rwunlock.c, tofutex_rw_grant_readers()). Every rule that
 * asks "does a writer in its handler keep this word reserved?" asks
 * tofutex_rw_kept_since(), and nothing else.
 *
 * Lifetimes and locking: struct tofutex_rw_keepers lives in the table and
 * is destroyed with it. A record is allocated by its writer, outside any
 * lock, and freed when it is replaced by that thread's next one, dropped
 * by its return, found expired by anyone, or with the table. The list is
 * under keepers->lock, the innermost lock of the module: it may be taken
 * under a bucket lock or a state's lock, and nothing is taken under it.
 * A thread has at most one record, and a record expires handoff_ns (at
 * most a second) after it was made, so the list holds at most one record
 * per thread that kept a reservation in the last handoff_ns.
 */
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "lock.h"
#include "rwlock.h"
#include "tofutex.h"

/**
 * struct tofutex_rw_keeper - one writer's kept reservation
 * @node:  in keepers->list
 * @uaddr: the word
 * @since: when the writer left its call (ns, monotonic)
 * @tid:   the writer's thread (task_pid_vnr())
 */
struct tofutex_rw_keeper {
	struct list_head node;
	u32 __user *uaddr;
	u64 since;
	pid_t tid;
};

void tofutex_rw_keepers_init(struct tofutex_rw_keepers *k)
{
	spin_lock_init(&k->lock);
	INIT_LIST_HEAD(&k->list);
}

void tofutex_rw_keepers_destroy(struct tofutex_rw_keepers *k)
{
	struct tofutex_rw_keeper *r, *tmp;

	list_for_each_entry_safe(r, tmp, &k->list, node)
		kfree(r);
}

/*
 * Unlink the records that have expired, and the one of thread @tid on
 * @uaddr when @tid is not 0, onto @gone for the caller to free after
 * dropping the lock. Bounded by the list, which holds one record per
 * thread at most.
 */
static void tofutex_rw_keepers_prune(struct tofutex_rw_keepers *k,
				     u32 __user *uaddr, pid_t tid,
				     struct list_head *gone)
{
	struct tofutex_rw_keeper *r, *tmp;
	u64 now = ktime_get_ns(), handoff = tofutex_handoff_ns();

	lockdep_assert_held(&k->lock);
	list_for_each_entry_safe(r, tmp, &k->list, node)
		if (now - r->since >= handoff ||
		    (tid && r->tid == tid && (!uaddr || r->uaddr == uaddr)))
			list_move(&r->node, gone);
}

static void tofutex_rw_keepers_free(struct list_head *gone)
{
	struct tofutex_rw_keeper *r, *tmp;

	list_for_each_entry_safe(r, tmp, gone, node)
		kfree(r);
}

/**
 * tofutex_rw_keep() - record the caller's reservation of @uaddr
 * @table: the caller's process table
 * @uaddr: the word
 * @since: when the caller left WRLOCK
 *
 * Replaces any record the caller had. May sleep (allocates).
 *
 * Return: 0, or -ENOMEM: the caller then withdraws instead.
 */
int tofutex_rw_keep(struct tofutex_table *table, u32 __user *uaddr, u64 since)
{
	struct tofutex_rw_keepers *k = tofutex_table_keepers(table);
	struct tofutex_rw_keeper *r = kmalloc(sizeof(*r), GFP_KERNEL_ACCOUNT);
	LIST_HEAD(gone);

	if (!r)
		return -ENOMEM;
	r->uaddr = uaddr;
	r->since = since;
	r->tid = task_pid_vnr(current);
	spin_lock(&k->lock);
	tofutex_rw_keepers_prune(k, NULL, r->tid, &gone);
	list_add(&r->node, &k->list);
	spin_unlock(&k->lock);
	tofutex_rw_keepers_free(&gone);
	return 0;
}

/**
 * tofutex_rw_unkeep() - the caller is back on @uaddr: its record goes
 * @table: the caller's process table
 * @uaddr: the word
 *
 * Called as WRLOCK begins; a reserving call reserves the word again by
 * its own clock, which starts at once (rwlock.c).
 */
void tofutex_rw_unkeep(struct tofutex_table *table, u32 __user *uaddr)
{
	struct tofutex_rw_keepers *k = tofutex_table_keepers(table);
	LIST_HEAD(gone);

	if (list_empty_careful(&k->list))
		return;
	spin_lock(&k->lock);
	tofutex_rw_keepers_prune(k, uaddr, task_pid_vnr(current), &gone);
	spin_unlock(&k->lock);
	tofutex_rw_keepers_free(&gone);
}

/**
 * tofutex_rw_kept_since() - is @uaddr kept for a writer in its handler?
 * @table: the process table
 * @uaddr: the word
 *
 * Takes only keepers->lock: callable under a bucket or state lock. Frees
 * nothing (expired records go with the next tofutex_rw_keep() or
 * tofutex_rw_unkeep(), or with the table).
 *
 * Return: when the latest writer that keeps it left, or 0 when none does
 * (none left one less than handoff_ns ago).
 */
u64 tofutex_rw_kept_since(struct tofutex_table *table, u32 __user *uaddr)
{
	struct tofutex_rw_keepers *k = tofutex_table_keepers(table);
	u64 now, handoff, since = 0;
	struct tofutex_rw_keeper *r;

	if (list_empty_careful(&k->list))
		return 0;
	now = ktime_get_ns();
	handoff = tofutex_handoff_ns();
	spin_lock(&k->lock);
	list_for_each_entry(r, &k->list, node)
		if (r->uaddr == uaddr && now - r->since < handoff &&
		    r->since > since)
			since = r->since;
	spin_unlock(&k->lock);
	return since;
}
