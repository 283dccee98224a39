// SPDX-License-Identifier: GPL-2.0
/*
 * tofutex - per-process tables of lock and wait states.
 *
 * Review of the TO futex RFC asked for process-private storage instead of
 * the global futex hash: unrelated processes must not collide in one hash
 * bucket. So every process that opens /dev/tofutex gets its own table, and
 * lock states are looked up only there.
 *
 * A process is one thread group in one address space: the table is keyed
 * by both. A clone(CLONE_VM) child that is not a thread shares the address
 * space but not the thread group, so it gets a table of its own and
 * cannot use its parent's descriptor; the thread group has one PID
 * namespace (a new one applies only to children), so all TIDs in one
 * table's words mean the same threads; and the same thread group after
 * execve() has a new address space, so a descriptor kept over it fails.
 *
 * Objects, lifetimes and locks:
 *
 * struct tofutex_table
 *   One per process (thread group and mm) that has /dev/tofutex open.
 *   Created by the first open() in that process, freed by the last
 *   release() of a file opened in it. @files counts those files and, like
 *   the registry below, is changed only under tofutex_tables_mutex. The
 *   table pins its mm_struct with mmgrab() and its thread group's struct
 *   pid with get_pid(), so that neither pointer used as its key can be
 *   reused by a new process while the table lives; the address space
 *   itself is not pinned.
 *
 * tofutex_tables (the registry)
 *   Maps a process to its table so that two descriptors opened by one
 *   process share one table. It is touched only by open() and release(), under
 *   tofutex_tables_mutex, never on the lock or wait paths.
 *
 * struct tofutex_bucket
 *   A table hashes user addresses into TOFUTEX_TABLE_BUCKETS buckets. The
 *   bucket spinlock protects the bucket's list and the insertion and
 *   removal of states; it is held for lookups, while a lookup that found
 *   nothing makes the table's spare the word's state, and, in
 *   tofutex_state_get_or(), while the caller acts on a word that has no
 *   state (touching user memory only with page faults disabled); never
 *   while sleeping.
 *
 * struct tofutex_state
 *   Exists while at least one task is inside an ioctl on its word
 *   (@users). tofutex_state_get() takes a use, tofutex_state_put() drops it
 *   and, for the last use, unhashes the state under the bucket lock, so a
 *   lookup can never find a state that is being freed, then frees it or
 *   keeps it as the table's spare. TOFUTEX_IOC_REQUEUE takes a use of a
 *   lock's state on behalf of each WAIT waiter it moves there
 *   (tofutex_state_hold()); the waiter drops it before its WAIT returns.
 *   A table has no states left when its last file is released: every
 *   use is taken and dropped inside one ioctl, and an ioctl holds a file
 *   reference.
 *
 * The spare state
 *   A table keeps the last state it freed, unhashed and unused, in @spare
 *   and hands it to the next tofutex_state_get() that must create one: a
 *   contended word otherwise costs an allocation and a free per LOCK, WAIT
 *   or SWAP call (the pinned SWAP ping-pong allocates twice per round
 *   trip). tofutex_state_get() takes it in the same hold of the bucket
 *   lock as the lookup that found no state, so that creating a state costs
 *   one hold, not two. It is exchanged with xchg() only, so any number
 *   of callers may race for it; it is charged to the process like any
 *   state, is not counted as live, and is freed with the table. The cost:
 *   KASAN cannot see a use after free of the one state that became the
 *   spare. No state pointer outlives its holder's use of @users (each
 *   ioctl gets and puts its own), which the debug kernel checked before
 *   the spare existed.
 *
 * Lock order: tofutex_tables_mutex is never held with any other tofutex
 * lock. bucket->lock is never held with state->lock. Under bucket->lock,
 * tofutex_state_get_or() lets its caller touch the user word (faults
 * disabled) to act on a word that has no state, atomically against a task
 * that creates one.
 */
#include <linux/hash.h>
#include <linux/hashtable.h>
#include <linux/mm_types.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "tofutex.h"

/*
 * 256 buckets: a process has at most a few hundred locks contended at the
 * same moment in practice, so unrelated locks rarely share a bucket, and a
 * production build spends one page per process on it.
 */
#define TOFUTEX_TABLE_BITS	8
#define TOFUTEX_TABLE_BUCKETS	(1U << TOFUTEX_TABLE_BITS)

/* Processes that have the device open at once; only sizes the registry. */
#define TOFUTEX_REGISTRY_BITS	6

struct tofutex_bucket {
	spinlock_t lock;
	struct hlist_head states;
};

/**
 * struct tofutex_table - the tofutex state of one process
 * @node:     entry in tofutex_tables, under tofutex_tables_mutex
 * @mm:       the address space this table serves, pinned with mmgrab()
 * @tgid:     the thread group it serves, pinned with get_pid()
 * @files:    open files bound to this table, under tofutex_tables_mutex
 * @counters: the process's statistics
 * @spare:    a freed state kept for reuse, or NULL
 * @buckets:  hash of the process's live states by user address
 */
struct tofutex_table {
	struct hlist_node node;
	struct mm_struct *mm;
	struct pid *tgid;
	unsigned int files;
	struct tofutex_counters counters;
	struct tofutex_state *spare;
	struct tofutex_bucket buckets[TOFUTEX_TABLE_BUCKETS];
};

static DEFINE_MUTEX(tofutex_tables_mutex);
static DEFINE_HASHTABLE(tofutex_tables, TOFUTEX_REGISTRY_BITS);

static struct tofutex_table *tofutex_table_alloc(struct mm_struct *mm)
{
	struct tofutex_table *table;
	unsigned int i;

	table = kvzalloc(sizeof(*table), GFP_KERNEL_ACCOUNT);
	if (!table)
		return NULL;
	if (tofutex_counters_init(&table->counters)) {
		kvfree(table);
		return NULL;
	}
	for (i = 0; i < TOFUTEX_TABLE_BUCKETS; i++) {
		spin_lock_init(&table->buckets[i].lock);
		INIT_HLIST_HEAD(&table->buckets[i].states);
	}
	mmgrab(mm);
	table->mm = mm;
	table->tgid = get_pid(task_tgid(current));
	return table;
}

/**
 * tofutex_table_get() - find or create the calling process's table
 *
 * Called from open(); may sleep.
 *
 * Return: the table with one more file reference, ERR_PTR(-EINVAL) for a
 * task without an address space, or ERR_PTR(-ENOMEM).
 */
struct tofutex_table *tofutex_table_get(void)
{
	struct mm_struct *mm = current->mm;
	struct tofutex_table *table;

	if (!mm)
		return ERR_PTR(-EINVAL);

	mutex_lock(&tofutex_tables_mutex);
	hash_for_each_possible(tofutex_tables, table, node, (unsigned long)mm) {
		if (tofutex_table_is_current(table)) {
			table->files++;
			goto out;
		}
	}
	table = tofutex_table_alloc(mm);
	if (!table) {
		table = ERR_PTR(-ENOMEM);
		goto out;
	}
	table->files = 1;
	hash_add(tofutex_tables, &table->node, (unsigned long)mm);
out:
	mutex_unlock(&tofutex_tables_mutex);
	return table;
}

/**
 * tofutex_table_put() - drop a file's reference on its table
 * @table: the table from tofutex_table_get()
 *
 * Frees the table with its last file. Called from release(); may sleep.
 */
void tofutex_table_put(struct tofutex_table *table)
{
	unsigned int i;

	mutex_lock(&tofutex_tables_mutex);
	if (--table->files) {
		mutex_unlock(&tofutex_tables_mutex);
		return;
	}
	hash_del(&table->node);
	mutex_unlock(&tofutex_tables_mutex);

	for (i = 0; i < TOFUTEX_TABLE_BUCKETS; i++)
		WARN_ON_ONCE(!hlist_empty(&table->buckets[i].states));
	kfree(table->spare);
	put_pid(table->tgid);
	mmdrop(table->mm);
	tofutex_counters_destroy(&table->counters);
	kvfree(table);
}

/**
 * tofutex_table_is_current() - may the calling task use this table?
 * @table: the table bound to the file
 *
 * Only threads of the process that opened the file may: the lock words
 * named by the ioctls are looked up in that process's table, and the TIDs
 * in them name its threads.
 *
 * Return: true when the caller is of the table's thread group and mm.
 */
bool tofutex_table_is_current(const struct tofutex_table *table)
{
	return table->mm == current->mm && table->tgid == task_tgid(current);
}

struct tofutex_counters *tofutex_table_counters(struct tofutex_table *table)
{
	return &table->counters;
}

static struct tofutex_bucket *tofutex_bucket_of(struct tofutex_table *table,
						u32 __user *uaddr)
{
	return &table->buckets[hash_ptr((void __force *)uaddr,
					TOFUTEX_TABLE_BITS)];
}

static struct tofutex_state *tofutex_bucket_find(struct tofutex_bucket *bucket,
						 u32 __user *uaddr)
{
	struct tofutex_state *state;

	lockdep_assert_held(&bucket->lock);
	hlist_for_each_entry(state, &bucket->states, node)
		if (state->uaddr == uaddr)
			return state;
	return NULL;
}

/* Keep @state as the table's spare; free the one it replaces, if any. */
static void tofutex_state_recycle(struct tofutex_table *table,
				  struct tofutex_state *state)
{
	kfree(xchg(&table->spare, state));
}

/* Make zeroed memory a state for @uaddr with one use, the caller's. */
static struct tofutex_state *tofutex_state_init(struct tofutex_state *state,
						u32 __user *uaddr,
						enum tofutex_state_kind kind)
{
	state->uaddr = uaddr;
	state->kind = kind;
	refcount_set(&state->users, 1);
	spin_lock_init(&state->lock);
	INIT_LIST_HEAD(&state->waiters);
	INIT_LIST_HEAD(&state->requeued);
	INIT_LIST_HEAD(&state->to_wake);
	return state;
}

/*
 * The table's spare made a state for @uaddr, or NULL when there is none.
 * Does not sleep: callable under the bucket lock.
 */
static struct tofutex_state *tofutex_state_reuse(struct tofutex_table *table,
						 u32 __user *uaddr,
						 enum tofutex_state_kind kind)
{
	struct tofutex_state *state = xchg(&table->spare, NULL);

	if (!state)
		return NULL;
	memset(state, 0, sizeof(*state));
	return tofutex_state_init(state, uaddr, kind);
}

/* A newly allocated state for @uaddr, or NULL. May sleep. */
static struct tofutex_state *tofutex_state_alloc(u32 __user *uaddr,
						 enum tofutex_state_kind kind)
{
	struct tofutex_state *state;

	state = kzalloc(sizeof(*state), GFP_KERNEL_ACCOUNT);
	return state ? tofutex_state_init(state, uaddr, kind) : NULL;
}

/*
 * Look @uaddr up and take a use. Returns the state, NULL when absent, or
 * ERR_PTR(-EINVAL) when the word is in use as the other kind.
 */
static struct tofutex_state *tofutex_state_lookup(struct tofutex_bucket *bucket,
						  u32 __user *uaddr,
						  enum tofutex_state_kind kind)
{
	struct tofutex_state *state = tofutex_bucket_find(bucket, uaddr);

	if (!state)
		return NULL;
	if (state->kind != kind)
		return ERR_PTR(-EINVAL);
	refcount_inc(&state->users);
	return state;
}

/**
 * tofutex_state_get() - find, or create, the state of a user word
 * @table:  the caller's process table
 * @uaddr:  the user word
 * @kind:   what the caller uses the word as
 * @create: create the state when there is none
 *
 * A word without a state gets the table's spare, if there is one, in the
 * same hold of the bucket lock as the lookup. Otherwise the allocation
 * happens outside the bucket lock, so this may sleep; the lookup is
 * repeated after it in case another task created the state meanwhile.
 *
 * Return: the state with a use taken for the caller; NULL when there is
 * none and @create is false; ERR_PTR(-EINVAL) when the word is in use as
 * the other kind; ERR_PTR(-ENOMEM).
 */
struct tofutex_state *tofutex_state_get(struct tofutex_table *table,
					u32 __user *uaddr,
					enum tofutex_state_kind kind,
					bool create)
{
	struct tofutex_bucket *bucket = tofutex_bucket_of(table, uaddr);
	struct tofutex_state *state, *new;

	spin_lock(&bucket->lock);
	state = tofutex_state_lookup(bucket, uaddr, kind);
	new = state || !create ? NULL : tofutex_state_reuse(table, uaddr, kind);
	if (new)
		hlist_add_head(&new->node, &bucket->states);
	spin_unlock(&bucket->lock);
	if (new) {
		tofutex_live_add(table, 1);
		return new;
	}
	if (state || !create)
		return state;

	new = tofutex_state_alloc(uaddr, kind);
	if (!new)
		return ERR_PTR(-ENOMEM);

	spin_lock(&bucket->lock);
	state = tofutex_state_lookup(bucket, uaddr, kind);
	if (!state)
		hlist_add_head(&new->node, &bucket->states);
	spin_unlock(&bucket->lock);

	if (state) {
		tofutex_state_recycle(table, new);
		return state;
	}
	tofutex_live_add(table, 1);
	return new;
}

/**
 * tofutex_state_get_or() - find the state of a word, or act on its absence
 * @table:  the caller's process table
 * @uaddr:  the user word
 * @kind:   what the caller uses the word as
 * @absent: called when the word has no state, under the bucket lock: it
 *          must not sleep, and touches the word only with page faults
 *          disabled
 * @arg:    passed to @absent
 *
 * The lookup that finds nothing and @absent() are one step against any
 * task that creates the state (tofutex_state_get()): either @absent() runs
 * first, and that task's later look at the word sees what @absent() did,
 * or the state is found.
 *
 * Return: the state with a use taken for the caller; NULL when there was
 * none and @absent() returned 0; ERR_PTR() of what @absent() returned
 * otherwise; ERR_PTR(-EINVAL) when the word is in use as the other kind.
 */
struct tofutex_state *tofutex_state_get_or(struct tofutex_table *table,
					   u32 __user *uaddr,
					   enum tofutex_state_kind kind,
					   int (*absent)(void *arg), void *arg)
{
	struct tofutex_bucket *bucket = tofutex_bucket_of(table, uaddr);
	struct tofutex_state *state;
	int ret = 0;

	spin_lock(&bucket->lock);
	state = tofutex_state_lookup(bucket, uaddr, kind);
	if (!state)
		ret = absent(arg);
	spin_unlock(&bucket->lock);
	return ret ? ERR_PTR(ret) : state;
}

/**
 * tofutex_state_hold() - take one more use of a state already held
 * @state: a state the caller holds a use of
 *
 * For a use taken on another task's behalf: TOFUTEX_IOC_REQUEUE gives each
 * waiter it moves a use of the lock's state, which that waiter drops when
 * its WAIT returns (requeue.c). The caller's own use keeps the count above
 * zero, so no bucket lock is needed.
 */
void tofutex_state_hold(struct tofutex_state *state)
{
	refcount_inc(&state->users);
}

/**
 * tofutex_state_put() - drop a use of a state, retiring it with the last
 * @table: the table the state was found in
 * @state: the state from tofutex_state_get()
 *
 * Must not be called with state->lock held. Does not sleep.
 */
void tofutex_state_put(struct tofutex_table *table,
		       struct tofutex_state *state)
{
	struct tofutex_bucket *bucket = tofutex_bucket_of(table, state->uaddr);

	if (!refcount_dec_and_lock(&state->users, &bucket->lock))
		return;
	hlist_del(&state->node);
	spin_unlock(&bucket->lock);

	WARN_ON_ONCE(!list_empty(&state->waiters));
	WARN_ON_ONCE(!list_empty(&state->requeued));
	WARN_ON_ONCE(!list_empty(&state->to_wake));
	put_pid(state->owner);
	tofutex_state_recycle(table, state);
	tofutex_live_add(table, -1);
}
