// SPDX-License-Identifier: GPL-2.0
/*
 * The ioctl fuzzer: every tofutex ioctl number, unknown numbers
 * and wrong sizes, with generated arguments, from several threads at once,
 * while other threads munmap/mprotect/remap the pages holding lock words
 * and argument structs, fork() children that use the inherited descriptor
 * and exit or are killed, and signal the fuzzing threads; the fuzzing
 * threads themselves exit now and then (leaving locks to dead owners) and
 * are replaced.
 *
 * Every return value must be success or an errno the ABI documents for
 * that call; where the arguments decide the outcome (a bad flag, a
 * misaligned or kernel address, an unreadable argument struct, an unknown
 * number, a word only the caller knows) the exact outcome is checked.
 * Afterwards no kernel state may be left (global live_states == 0).
 *
 * Knobs (environment):
 *   TOFUTEX_FUZZ_SEED     the seed (default: time and pid); printed. Each
 *                         thread draws from its own stream derived from the
 *                         seed, its slot and generation, so a thread's
 *                         sequence of calls is reproducible; their
 *                         interleaving is not.
 *   TOFUTEX_FUZZ_SECONDS  time bound (default 20)
 *   TOFUTEX_FUZZ_CALLS    call bound (default 1000000)
 * The run ends at whichever bound comes first; it prints the calls made
 * and calls per second. The churn (remaps, signals, forks) is paced in
 * units of this kernel's system-call cost (PACE_UNIT_NS), so that it takes
 * the same share of the machine in the distro and the debug kernel.
 *
 * Nothing may block for long: every LOCK, RDLOCK, WRLOCK, WAIT and SWAP
 * that can sleep has a deadline in the past or at most FUZZ_MAX_SLEEP_NS
 * ahead. A call without the deadline flag is only ever made with an
 * invalid flag or reserved field, which the ABI rejects before anything
 * else. Argument structs that
 * another thread can change under the call (pages being remapped) are laid
 * out so that whatever the kernel reads keeps this property; see
 * churn_slot().
 */
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "common.h"

#define WAITERS		TOFUTEX_WAITERS
#define OWNER_DIED	TOFUTEX_OWNER_DIED

/*
 * A TID no task can have: pid_max is at most 2^22 (PID_MAX_LIMIT). Below
 * RW_SHARED, bit 29: a word with it is a reader/writer lock held by
 * readers, which LOCK refuses (EINVAL) rather than taking it over.
 */
#define NO_SUCH_TID	TOFUTEX_RW_COUNT_MASK

#define DEVICE_PATH	"/dev/" TOFUTEX_DEVICE_NAME

#define PAGE_SZ		4096UL

/*
 * Addresses user space can never access on x86-64, and on arm64: the
 * kernel's there too; NON_CANONICAL_ADDR is above the user range, which
 * on arm64 reaches 2^52 (52-bit VA): 2^47 is a user address there.
 */
#define KERNEL_TEXT_ADDR	0xffffffff81000000ULL
#define KERNEL_DIRECT_ADDR	0xffff888000000000ULL
#if defined(__aarch64__)
#define NON_CANONICAL_ADDR	0x0010000000000000ULL
#else
#define NON_CANONICAL_ADDR	0x0000800000000000ULL
#endif
#define TOP_OF_USER_ADDR	0x00007ffffffffffcULL	/* last word, unmapped */

#define FUZZ_THREADS		4	/* fuzzing threads alive at once */
#define FUZZ_MAPPERS		2
#define CHURN_PAGES		8	/* pages the mappers churn */
#define STABLE_WORDS		64	/* always-mapped shared lock words */
#define TID_POOL		64	/* recent TIDs of threads and children */
#define FUZZ_MAX_SLEEP_NS	(2 * NSEC_PER_MSEC)

/*
 * The churn threads' pauses below were tuned on the distro kernels, where
 * a trivial system call costs about PACE_UNIT_NS in the emulated guest.
 * They are stretched by (measured cost / PACE_UNIT_NS), at least 1: in the
 * debug kernel a system call costs ~20x more, and unstretched churn took
 * most of the two vCPUs (7,038 fuzz calls/s without churn, ~900 with it).
 * So the churn keeps the same share of the machine on every kernel.
 */
#define PACE_UNIT_NS		1000
#define PACE_BATCHES		16
#define PACE_BATCH_CALLS	128

#define DEFAULT_SECONDS		20
#define DEFAULT_CALLS		1000000UL

/*
 * Layout of a churn page: lock words in the first half, argument slots in
 * the second. Each fuzzing thread slot owns CHURN_SLOT bytes of the second
 * half: one sub-slot per blocking operation and one shared by the others.
 */
#define CHURN_WORDS_BYTES	2048
#define CHURN_SLOT		512
#define SUB_LOCK		0
#define SUB_WAIT		64
#define SUB_SWAP		128
#define SUB_MISC		256	/* VERSION, UNLOCK, WAKE, STATS */

/* Prepared structs in the read-only page. */
#define RO_LOCK		0
#define RO_WAIT		64
#define RO_SWAP		128
#define RO_WAKE		192
#define RO_UNLOCK	256
#define RO_VERSION	320
#define RO_STATS	512
#define RO_WORDS	1024	/* lock words from here on */

enum fuzz_op {
	OP_VERSION,
	OP_LOCK,
	OP_UNLOCK,
	OP_WAIT,
	OP_WAKE,
	OP_SWAP,
	OP_STATS,
	OP_REQUEUE,
	OP_RDLOCK,
	OP_WRLOCK,
	OP_RWUNLOCK,
	OP_BADNR,	/* unknown number, wrong size, direction or magic */
	NR_OPS
};

static const char *const op_names[NR_OPS] = {
	"VERSION", "LOCK", "UNLOCK", "WAIT", "WAKE", "SWAP", "STATS", "REQUEUE",
	"RDLOCK", "WRLOCK", "RWUNLOCK", "bad-nr",
};

static const unsigned int real_cmds[OP_BADNR] = {
	TOFUTEX_IOC_VERSION, TOFUTEX_IOC_LOCK, TOFUTEX_IOC_UNLOCK,
	TOFUTEX_IOC_WAIT, TOFUTEX_IOC_WAKE, TOFUTEX_IOC_SWAP,
	TOFUTEX_IOC_STATS, TOFUTEX_IOC_REQUEUE, TOFUTEX_IOC_RDLOCK,
	TOFUTEX_IOC_WRLOCK, TOFUTEX_IOC_RWUNLOCK,
};

/* Outcome histogram columns. */
enum outcome {
	OUT_OK, OUT_EINVAL, OUT_EFAULT, OUT_EAGAIN, OUT_ETIMEDOUT, OUT_EINTR,
	OUT_EDEADLK, OUT_ENOMEM, OUT_ENOTTY, OUT_EBADFD, OUT_OTHER, NR_OUT
};

static const char *const out_names[NR_OUT] = {
	"ok", "EINVAL", "EFAULT", "EAGAIN", "ETIMEDOUT", "EINTR", "EDEADLK",
	"ENOMEM", "ENOTTY", "EBADFD", "other",
};

static enum outcome outcome_of(int e)
{
	switch (e) {
	case 0: return OUT_OK;
	case EINVAL: return OUT_EINVAL;
	case EFAULT: return OUT_EFAULT;
	case EAGAIN: return OUT_EAGAIN;
	case ETIMEDOUT: return OUT_ETIMEDOUT;
	case EINTR: return OUT_EINTR;
	case EDEADLK: return OUT_EDEADLK;
	case ENOMEM: return OUT_ENOMEM;
	case ENOTTY: return OUT_ENOTTY;
	case EBADFD: return OUT_EBADFD;
	default: return OUT_OTHER;
	}
}

/* What an address is, as far as the ABI's exact outcomes go. */
enum aclass {
	A_VALID,	/* mapped read-write, aligned */
	A_MAYBE,	/* aligned; mapped or not, writable or not */
	A_MISALIGNED,	/* not 4-byte aligned, otherwise anything */
	A_KERNEL,	/* aligned, outside the user range */
	A_NOACCESS,	/* aligned, in the user range, never accessible */
};

/* Where the argument struct is. */
enum argclass {
	ARG_STACK,	/* what we built, readable and writable */
	ARG_STACK_ODD,	/* the same at a misaligned address */
	ARG_CHURN,	/* a churn page slot: maybe gone or read-only */
	ARG_RO,		/* a prepared struct in a read-only page */
	ARG_BAD,	/* NULL, kernel, PROT_NONE, or running into it */
	NR_ARGS
};

struct fuzz_thread {
	unsigned int slot;
	unsigned int gen;
	unsigned long calls;
	atomic_bool done;
	bool running;
	pthread_t thread;
};

struct fuzz {
	int fd;
	uint64_t seed;
	uint64_t features;
	uint64_t end_ns;
	uint64_t pace;		/* churn pause multiplier, >= 1 */
	unsigned long max_calls;
	atomic_bool stop;
	atomic_ulong calls;
	uint32_t *stable;	/* STABLE_WORDS shared words, always RW */
	unsigned char *ro;	/* read-only page */
	unsigned char *edges;	/* FUZZ_THREADS x (RW page, PROT_NONE page) */
	unsigned char *churn;	/* CHURN_PAGES pages */
	atomic_bool churn_lost[CHURN_PAGES];
	int memfd;		/* one page of 0xff bytes */
	atomic_uint tid_pool[TID_POOL];
	atomic_uint tid_next;
	atomic_uint live_tids[FUZZ_THREADS];
	atomic_ulong hist[NR_OPS][NR_OUT];
	atomic_ulong signals, signals_handled, forks, child_kills;
	atomic_ulong remaps, munmaps, mprotects, threads_started;
};

static struct fuzz F;

/* ---- Random numbers: xorshift64*, one stream per thread ---- */

struct rng {
	uint64_t s;
};

static void rng_init(struct rng *r, uint64_t seed, uint64_t stream)
{
	r->s = seed ^ (stream + 1) * 0x9e3779b97f4a7c15ULL;
	if (!r->s)
		r->s = 0x2545f4914f6cdd1dULL;
}

static uint64_t rnd(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545f4914f6cdd1dULL;
}

static uint32_t below(struct rng *r, uint32_t n)
{
	return (uint32_t)((rnd(r) >> 32) % n);
}

/* True with probability 1/n. */
static bool one_in(struct rng *r, uint32_t n)
{
	return below(r, n) == 0;
}

/* ---- TIDs: own, other live threads, dead threads, other processes ---- */

static void pool_add(uint32_t tid)
{
	unsigned int i = atomic_fetch_add(&F.tid_next, 1) % TID_POOL;

	atomic_store(&F.tid_pool[i], tid);
}

static uint32_t pool_pick(struct rng *r)
{
	uint32_t t = atomic_load(&F.tid_pool[below(r, TID_POOL)]);

	return t ? t : 1;
}

/* A lock word value: a TID of some kind, maybe with flag bits. */
static uint32_t gen_word(struct rng *r, uint32_t own_tid)
{
	uint32_t v;

	switch (below(r, 10)) {
	case 0: v = 0; break;
	case 1: v = own_tid; break;
	case 2: v = 1; break;			/* init: another process */
	case 3: v = NO_SUCH_TID; break;		/* nobody */
	case 4: v = (uint32_t)rnd(r); break;
	case 5: v = (uint32_t)getpid(); break;
	default: v = pool_pick(r); break;	/* threads, children, dead */
	}
	if (one_in(r, 3))
		v |= WAITERS;
	if (one_in(r, 5))
		v |= OWNER_DIED;
	return v;
}

/* ---- Addresses of lock words ---- */

static uint64_t gen_addr(struct rng *r, enum aclass *cls)
{
	unsigned int page;

	switch (below(r, 16)) {
	case 0:
		*cls = A_MISALIGNED;
		return (uintptr_t)&F.stable[below(r, STABLE_WORDS)] +
		       1 + below(r, 3);
	case 1:
		*cls = A_NOACCESS;
		return one_in(r, 2) ? 0 : 4 * (uint64_t)below(r, 1024);
	case 2:
		*cls = A_KERNEL;
		switch (below(r, 5)) {
		case 0: return KERNEL_TEXT_ADDR;
		case 1: return KERNEL_DIRECT_ADDR;
		case 2: return NON_CANONICAL_ADDR;
		case 3: return ~3ULL;
		default: return 0x8000000000000000ULL;
		}
	case 3:
		*cls = A_NOACCESS;	/* a guard page, or the top of user space */
		if (one_in(r, 2))
			return TOP_OF_USER_ADDR;
		return (uintptr_t)(F.edges + PAGE_SZ) +
		       4 * below(r, PAGE_SZ / 4);
	case 4:
		*cls = A_MAYBE;		/* read-only */
		return (uintptr_t)(F.ro + RO_WORDS) +
		       4 * below(r, (PAGE_SZ - RO_WORDS) / 4);
	case 5:
	case 6:
	case 7:
	case 8:
		page = below(r, CHURN_PAGES);
		*cls = A_MAYBE;
		if (atomic_load(&F.churn_lost[page]))
			break;
		if (one_in(r, 16)) {
			/* An argument slot: kinds and contents collide. */
			return (uintptr_t)(F.churn + page * PAGE_SZ +
					   CHURN_WORDS_BYTES) +
			       4 * below(r, CHURN_WORDS_BYTES / 4);
		}
		return (uintptr_t)(F.churn + page * PAGE_SZ) +
		       4 * below(r, CHURN_WORDS_BYTES / 4);
	default:
		break;
	}
	*cls = A_VALID;
	/* A few hot words, so that threads meet on them. */
	if (one_in(r, 2))
		return (uintptr_t)&F.stable[below(r, 4)];
	return (uintptr_t)&F.stable[below(r, STABLE_WORDS)];
}

static uint64_t gen_deadline(struct rng *r)
{
	uint64_t now = now_ns();

	/* Mostly past: sleeping calls are few, so the call rate stays up. */
	switch (below(r, 10)) {
	case 0: return 0;
	case 1: return 1;
	case 2:
	case 3: return now - below(r, (uint32_t)NSEC_PER_SEC);
	case 4:
	case 5:
	case 6: return now;
	default: return now + below(r, (uint32_t)FUZZ_MAX_SLEEP_NS);
	}
}

/*
 * The clock flag (the same bit for LOCK, WAIT and SWAP) and a deadline on
 * that clock: mostly monotonic, sometimes realtime, never far ahead.
 */
static uint32_t gen_clock(struct rng *r, __u64 *deadline_ns)
{
	struct timespec ts;

	*deadline_ns = gen_deadline(r);
	if (!one_in(r, 4))
		return 0;
	if (*deadline_ns > 1) {
		clock_gettime(CLOCK_REALTIME, &ts);
		*deadline_ns += (uint64_t)ts.tv_sec * NSEC_PER_SEC +
				(uint64_t)ts.tv_nsec - now_ns();
	}
	return TOFUTEX_LOCK_CLOCK_REALTIME;
}

/* A count of REQUEUE: none, one, a few, or all. */
static uint32_t gen_count(struct rng *r)
{
	switch (below(r, 5)) {
	case 0: return 0;
	case 1: return 1;
	case 2: return 2;
	case 3: return INT32_MAX;
	default: return UINT32_MAX;
	}
}

/* A flag word: usually the valid ones, sometimes one undefined bit. */
static uint32_t gen_bad_bit(struct rng *r)
{
	return one_in(r, 12) ? 1U << (1 + below(r, 31)) : 0;
}

static uint64_t gen_reserved(struct rng *r)
{
	if (!one_in(r, 16))
		return 0;
	return one_in(r, 2) ? 1ULL << below(r, 64) : rnd(r);
}

/* ---- Result checks ---- */

static bool feature(uint64_t bit)
{
	return (F.features & bit) != 0;
}

/* The operation exists in the loaded module (else: ENOTTY). */
static bool op_offered(enum fuzz_op op)
{
	switch (op) {
	case OP_WAIT:
	case OP_WAKE:
		return feature(TOFUTEX_FEAT_WAITWAKE);
	case OP_SWAP:
		return feature(TOFUTEX_FEAT_SWAP);
	case OP_REQUEUE:
		return feature(TOFUTEX_FEAT_REQUEUE);
	case OP_RDLOCK:
	case OP_WRLOCK:
	case OP_RWUNLOCK:
		return feature(TOFUTEX_FEAT_RWLOCK);
	default:
		return true;
	}
}

/* Is errno @e one the ABI documents for @op? */
static bool allowed(enum fuzz_op op, int e)
{
	switch (op) {
	case OP_VERSION:
		return e == 0 || e == EFAULT || e == EINVAL;
	case OP_STATS:
		return e == 0 || e == EFAULT || e == EINVAL || e == EPERM;
	case OP_LOCK:
		return e == 0 || e == EDEADLK || e == EPERM || e == ETIMEDOUT ||
		       e == EINTR || e == EINVAL || e == EFAULT || e == ENOMEM;
	case OP_UNLOCK:
	case OP_WAKE:
		return e == 0 || e == EINVAL || e == EFAULT;
	case OP_WAIT:
	case OP_SWAP:
		return e == 0 || e == EAGAIN || e == ETIMEDOUT || e == EINTR ||
		       e == EINVAL || e == EFAULT || e == ENOMEM;
	case OP_REQUEUE:
		return e == 0 || e == EAGAIN || e == EINVAL || e == EFAULT ||
		       e == ENOMEM;
	case OP_RDLOCK:
	case OP_WRLOCK:
		return e == 0 || e == EDEADLK || e == EAGAIN || e == EPERM ||
		       e == ETIMEDOUT || e == EINTR || e == EINVAL ||
		       e == EFAULT || e == ENOMEM;
	case OP_RWUNLOCK:
		return e == 0 || e == EPERM || e == EINVAL || e == EFAULT;
	default:
		return e == ENOTTY;
	}
}

/*
 * One call's facts: what was passed and what the arguments alone decide.
 * @exact: -1, or the errno (0: success) the arguments force.
 */
struct call {
	enum fuzz_op op;
	unsigned int cmd;
	enum argclass arg;
	int exact;
	int exact_alt;
	uint32_t wake_count;
	uint32_t requeue_count;
	const char *what;
};

static void check_result(struct fuzz_thread *t, const struct call *c,
			 long r, int e)
{
	atomic_fetch_add(&F.hist[c->op][outcome_of(e)], 1);
	if (r < -1 || (r > 0 && c->op != OP_WAKE)) {
		TFAIL("thread %u: %s (%s, arg %d) returned %ld", t->slot,
		      op_names[c->op], c->what, c->arg, r);
		return;
	}
	if (c->op == OP_WAKE && r > 0 && c->arg <= ARG_STACK_ODD &&
	    (unsigned long)r > c->wake_count) {
		TFAIL("thread %u: WAKE of at most %u woke %ld", t->slot,
		      c->wake_count, r);
		return;
	}
	if (c->op != OP_BADNR && !op_offered(c->op)) {
		TCHECK(e == ENOTTY, "thread %u: %s not offered, got %d (%s)",
		       t->slot, op_names[c->op], e, strerror(e));
		return;
	}
	if (c->exact >= 0 && e != c->exact && e != c->exact_alt) {
		TFAIL("thread %u: %s (%s, arg class %d): got %d (%s), want %d (%s)",
		      t->slot, op_names[c->op], c->what, c->arg, e,
		      strerror(e), c->exact, strerror(c->exact));
		return;
	}
	TCHECK(allowed(c->op, e),
	       "thread %u: %s (%s, arg class %d, cmd 0x%08x): errno %d (%s) is not documented for it",
	       t->slot, op_names[c->op], c->what, c->arg, c->cmd, e,
	       strerror(e));
}

/* The exact outcome forced by a bad word address, or -1. */
static int addr_exact(enum fuzz_op op, enum aclass cls)
{
	switch (cls) {
	case A_MISALIGNED:
		return EINVAL;
	case A_KERNEL:
		return EFAULT;
	case A_NOACCESS:
		/*
		 * WAKE need not read a word nobody waits on. Every call
		 * creates its state before it reads the word, so a call of
		 * the other kind that another thread makes on the same bad
		 * address meanwhile finds a word in use (EINVAL instead, see
		 * addr_exact_alt()); UNLOCK's no-state path is that race.
		 */
		return op == OP_WAKE || op == OP_UNLOCK || op == OP_RWUNLOCK ?
		       -1 : EFAULT;
	default:
		return -1;
	}
}

/*
 * The other result a call on a bad word of class @cls may get: EINVAL
 * while another thread's call of the other kind (LOCK vs WAIT) holds a
 * state for the same address, which it creates before reading the word.
 */
static int addr_exact_alt(enum aclass cls)
{
	return cls == A_NOACCESS ? EINVAL : -1;
}

/* ---- Argument placement ---- */

/*
 * The slot for @op of thread slot @slot in churn page @page. Only that
 * thread writes there, only structs of that op (LOCK, WAIT, SWAP each have
 * their own sub-slot), and always with a deadline or an invalid field; a
 * remap replaces the page with 0xff bytes (invalid flags and reserved
 * fields). So whatever a call reads there - the struct just written, an
 * older one of the same kind, 0xff bytes, or a prefix of the first
 * followed by the second when a remap races with the read - it cannot
 * sleep without a near deadline.
 */
static unsigned char *churn_slot(unsigned int page, unsigned int slot,
				 enum fuzz_op op)
{
	unsigned int sub;

	switch (op) {
	case OP_LOCK:
	case OP_RDLOCK:
	case OP_WRLOCK: sub = SUB_LOCK; break;
	case OP_WAIT: sub = SUB_WAIT; break;
	case OP_SWAP: sub = SUB_SWAP; break;
	default: sub = SUB_MISC; break;
	}
	return F.churn + page * PAGE_SZ + CHURN_WORDS_BYTES +
	       slot * CHURN_SLOT + sub;
}

/* Write into our own memory, failing instead of faulting. */
static void safe_write(void *dst, const void *src, size_t n)
{
	struct iovec local = { .iov_base = (void *)src, .iov_len = n };
	struct iovec remote = { .iov_base = dst, .iov_len = n };

	(void)process_vm_writev(getpid(), &local, 1, &remote, 1, 0);
}

static size_t ro_offset(enum fuzz_op op)
{
	switch (op) {
	case OP_LOCK:
	case OP_RDLOCK:
	case OP_WRLOCK: return RO_LOCK;
	case OP_WAIT: return RO_WAIT;
	case OP_SWAP: return RO_SWAP;
	case OP_WAKE: return RO_WAKE;
	case OP_UNLOCK:
	case OP_RWUNLOCK: return RO_UNLOCK;
	case OP_VERSION: return RO_VERSION;
	default: return RO_STATS;
	}
}

/*
 * Place @size bytes of the struct at @s according to @c->arg; returns the
 * pointer to pass. For a bad argument pointer, sets @c->exact to EFAULT.
 */
static void *place_arg(struct rng *r, struct fuzz_thread *t, struct call *c,
		       const void *s, size_t size, unsigned char *buf)
{
	unsigned char *p, *edge;
	size_t k;

	switch (c->arg) {
	case ARG_STACK:
		memcpy(buf, s, size);
		return buf;
	case ARG_STACK_ODD:
		p = buf + 1 + below(r, 7);
		memcpy(p, s, size);
		return p;
	case ARG_CHURN:
		p = churn_slot(below(r, CHURN_PAGES), t->slot, c->op);
		safe_write(p, s, size);
		c->exact = -1;
		return p;
	case ARG_RO:
		c->exact = -1;
		return F.ro + ro_offset(c->op);
	default:
		break;
	}
	c->exact = EFAULT;
	switch (below(r, 5)) {
	case 0:
		return NULL;
	case 1:
		return (void *)(uintptr_t)KERNEL_TEXT_ADDR;
	case 2:
		return (void *)(uintptr_t)NON_CANONICAL_ADDR;
	case 3:
		return F.edges + PAGE_SZ;	/* PROT_NONE */
	default:
		/* Short: the struct runs into the PROT_NONE page. */
		edge = F.edges + 2 * PAGE_SZ * t->slot;
		k = 1 + below(r, (uint32_t)size - 1);
		p = edge + PAGE_SZ - k;
		memcpy(p, s, k);
		return p;
	}
}

static enum argclass gen_argclass(struct rng *r)
{
	uint32_t x = below(r, 32);

	if (x < 20)
		return ARG_STACK;
	if (x < 23)
		return ARG_STACK_ODD;
	if (x < 28)
		return ARG_CHURN;
	if (x < 30)
		return ARG_RO;
	return ARG_BAD;
}

/* ---- One call ---- */

static void sig_handler(int sig)
{
	(void)sig;
	atomic_fetch_add(&F.signals_handled, 1);
}

static long do_ioctl(unsigned int cmd, void *arg, int *e)
{
	long r;

	errno = 0;
	r = ioctl(F.fd, cmd, arg);
	*e = r < 0 ? errno : 0;
	return r;
}

static unsigned int gen_bad_cmd(struct rng *r, const char **what)
{
	unsigned int nr = below(r, OP_BADNR);
	unsigned int real = real_cmds[nr];
	unsigned int size = _IOC_SIZE(real), dir = _IOC_DIR(real);
	unsigned int cmd;

	do {
		switch (below(r, 5)) {
		case 0:
			*what = "unknown nr";
			cmd = _IOC(below(r, 4), TOFUTEX_IOC_MAGIC,
				   OP_BADNR + below(r, 256 - OP_BADNR),
				   below(r, 2) ? size : below(r, 1 << 14));
			break;
		case 1:
			*what = "size - 8";
			cmd = _IOC(dir, TOFUTEX_IOC_MAGIC, nr, size - 8);
			break;
		case 2:
			*what = "other size";
			cmd = _IOC(dir, TOFUTEX_IOC_MAGIC, nr,
				   below(r, 1 << 14));
			break;
		case 3:
			*what = "other direction";
			cmd = _IOC(below(r, 4), TOFUTEX_IOC_MAGIC, nr, size);
			break;
		default:
			*what = "other magic";
			cmd = _IOC(dir, TOFUTEX_IOC_MAGIC + 1 - 2 * below(r, 2),
				   nr, size);
			break;
		}
	} while (cmd == real);
	return cmd;
}

/*
 * After a successful RDLOCK or WRLOCK: check the status, and mostly
 * release (sometimes a read lock stays held for ever, or a write lock is
 * left to a thread that exits).
 */
static void fuzz_rw_release(struct rng *r, struct fuzz_thread *t,
			    struct call *c, const struct tofutex_lock *lk,
			    enum aclass cls)
{
	uint32_t how = lk->status & TOFUTEX_STATUS_HOW_MASK;
	struct tofutex_unlock u = { .uaddr = lk->uaddr };
	long ret;
	int e;

	TCHECK(how >= TOFUTEX_STATUS_STOLEN && how <= TOFUTEX_STATUS_OWNER_DIED,
	       "%s succeeded with status 0x%08x", op_names[c->op], lk->status);
	if (cls != A_VALID || one_in(r, 4))
		return;
	ret = do_ioctl(TOFUTEX_IOC_RWUNLOCK, &u, &e);
	t->calls++;
	c->op = OP_RWUNLOCK;
	c->cmd = TOFUTEX_IOC_RWUNLOCK;
	c->arg = ARG_STACK;
	/* Another thread's call may have made it a word of another kind. */
	c->exact = -1;
	c->what = "release after RDLOCK/WRLOCK";
	check_result(t, c, ret, e);
}

static void fuzz_one(struct rng *r, struct fuzz_thread *t, uint32_t tid)
{
	unsigned char buf[sizeof(union any_arg) + 16]
		__attribute__((aligned(16)));
	union any_arg a;
	struct call c = { .exact = -1, .exact_alt = -1, .what = "" };
	enum aclass cls = A_VALID, cls2 = A_VALID;
	bool invalid = false;
	size_t size;
	void *p;
	long ret;
	int e;

	memset(&a, 0, sizeof(a));
	c.op = (enum fuzz_op)below(r, NR_OPS);
	c.arg = gen_argclass(r);
	switch (c.op) {
	case OP_VERSION:
		size = sizeof(a.ver);
		a.ver.flags = gen_bad_bit(r);
		a.ver.reserved[below(r, 2)] = gen_reserved(r);
		a.ver.abi_version = (uint32_t)rnd(r);	/* out: ignored */
		invalid = a.ver.flags || a.ver.reserved[0] || a.ver.reserved[1];
		c.exact = invalid ? EINVAL : 0;
		c.what = invalid ? "invalid" : "valid";
		break;
	case OP_LOCK:
	case OP_RDLOCK:
	case OP_WRLOCK:
		size = sizeof(a.lock);
		a.lock.uaddr = gen_addr(r, &cls);
		a.lock.flags = TOFUTEX_LOCK_DEADLINE | gen_bad_bit(r) |
			       gen_clock(r, &a.lock.deadline_ns);
		a.lock.status = (uint32_t)rnd(r);
		a.lock.reserved = gen_reserved(r);
		invalid = (a.lock.flags & ~(c.op == OP_LOCK ?
					    TOFUTEX_LOCK_FLAGS :
					    c.op == OP_WRLOCK ?
					    TOFUTEX_WRLOCK_FLAGS :
					    TOFUTEX_RWLOCK_FLAGS)) ||
			  a.lock.reserved;
		/*
		 * Without the deadline flag only when the call is invalid,
		 * and never in a churn slot (see churn_slot()).
		 */
		if (invalid && c.arg != ARG_CHURN && one_in(r, 2))
			a.lock.flags &= ~TOFUTEX_LOCK_DEADLINE;
		break;
	case OP_UNLOCK:
	case OP_RWUNLOCK:
		size = sizeof(a.unlock);
		a.unlock.uaddr = gen_addr(r, &cls);
		a.unlock.flags = gen_bad_bit(r) | (one_in(r, 40) ? 1 : 0);
		a.unlock.woken = (uint32_t)rnd(r);
		a.unlock.reserved = gen_reserved(r);
		invalid = a.unlock.flags || a.unlock.reserved;
		break;
	case OP_WAIT:
		size = sizeof(a.wait);
		a.wait.uaddr = gen_addr(r, &cls);
		a.wait.flags = TOFUTEX_WAIT_DEADLINE | gen_bad_bit(r) |
			       gen_clock(r, &a.wait.deadline_ns);
		a.wait.reserved = gen_reserved(r);
		if (cls == A_VALID && one_in(r, 2))
			a.wait.val = word_load((uint32_t *)(uintptr_t)
					       a.wait.uaddr);
		else
			a.wait.val = gen_word(r, tid);
		invalid = (a.wait.flags & ~TOFUTEX_WAIT_FLAGS) ||
			  a.wait.reserved;
		if (invalid && c.arg != ARG_CHURN && one_in(r, 2))
			a.wait.flags &= ~TOFUTEX_WAIT_DEADLINE;
		break;
	case OP_WAKE:
		size = sizeof(a.wake);
		a.wake.uaddr = gen_addr(r, &cls);
		switch (below(r, 5)) {
		case 0: a.wake.count = 0; break;
		case 1: a.wake.count = 1; break;
		case 2: a.wake.count = 2; break;
		case 3: a.wake.count = INT32_MAX; break;
		default: a.wake.count = UINT32_MAX; break;
		}
		c.wake_count = a.wake.count;
		a.wake.flags = gen_bad_bit(r) | (one_in(r, 40) ? 1 : 0);
		a.wake.reserved = gen_reserved(r);
		invalid = a.wake.flags || a.wake.reserved;
		break;
	case OP_SWAP:
		size = sizeof(a.swap);
		a.swap.wait_uaddr = gen_addr(r, &cls);
		a.swap.wake_uaddr = gen_addr(r, &cls2);
		a.swap.flags = TOFUTEX_WAIT_DEADLINE | gen_bad_bit(r) |
			       gen_clock(r, &a.swap.deadline_ns);
		a.swap.woken = (uint32_t)rnd(r);
		a.swap.pad = one_in(r, 16) ? (uint32_t)rnd(r) | 1 : 0;
		a.swap.reserved = gen_reserved(r);
		if (cls == A_VALID && one_in(r, 2))
			a.swap.val = word_load((uint32_t *)(uintptr_t)
					       a.swap.wait_uaddr);
		else
			a.swap.val = gen_word(r, tid);
		invalid = (a.swap.flags & ~TOFUTEX_WAIT_FLAGS) ||
			  a.swap.pad || a.swap.reserved;
		if (invalid && c.arg != ARG_CHURN && one_in(r, 2))
			a.swap.flags &= ~TOFUTEX_WAIT_DEADLINE;
		break;
	case OP_STATS:
		size = sizeof(a.stats);
		switch (below(r, 10)) {
		case 0: a.stats.flags = 2 + below(r, 100); break;
		case 1: a.stats.flags = 1U << below(r, 32); break;
		default: a.stats.flags = below(r, 2); break;
		}
		a.stats.pad = one_in(r, 16) ? (uint32_t)rnd(r) | 1 : 0;
		a.stats.lock_calls = rnd(r);	/* out: ignored */
		invalid = a.stats.flags > TOFUTEX_STATS_GLOBAL || a.stats.pad;
		c.exact = invalid ? EINVAL : 0;
		c.what = invalid ? "invalid" : "valid";
		break;
	case OP_REQUEUE:
		size = sizeof(a.requeue);
		a.requeue.uaddr = gen_addr(r, &cls);
		a.requeue.lock_uaddr = one_in(r, 16) ? a.requeue.uaddr :
						       gen_addr(r, &cls2);
		if (cls == A_VALID && one_in(r, 2))
			a.requeue.val = word_load((uint32_t *)(uintptr_t)
						  a.requeue.uaddr);
		else
			a.requeue.val = gen_word(r, tid);
		a.requeue.wake_count = gen_count(r);
		a.requeue.requeue_count = gen_count(r);
		a.requeue.flags = gen_bad_bit(r) | (one_in(r, 40) ? 1 : 0);
		a.requeue.woken = (uint32_t)rnd(r);	/* out: ignored */
		a.requeue.requeued = (uint32_t)rnd(r);
		a.requeue.reserved = gen_reserved(r);
		invalid = a.requeue.flags || a.requeue.reserved;
		c.wake_count = a.requeue.wake_count;
		c.requeue_count = a.requeue.requeue_count;
		c.exact = invalid ? EINVAL : -1;
		c.what = invalid ? "invalid flags or reserved" : "requeue";
		break;
	default:
		size = sizeof(a);
		memset(&a, (int)below(r, 256), sizeof(a));
		c.cmd = gen_bad_cmd(r, &c.what);
		break;
	}

	if ((c.op >= OP_LOCK && c.op <= OP_SWAP) ||
	    (c.op >= OP_RDLOCK && c.op <= OP_RWUNLOCK)) {
		if (invalid) {
			c.exact = EINVAL;
			c.what = "invalid flags or reserved";
		} else if (c.op == OP_SWAP) {
			int e1 = addr_exact(c.op, cls), e2 = addr_exact(c.op,
									cls2);

			c.what = "swap";
			/* Which of two bad words is reported is not fixed. */
			if (e1 == e2 && e1 == EINVAL)
				c.exact = EINVAL;
			else if ((cls == A_KERNEL || cls == A_MISALIGNED) &&
				 (cls2 == A_KERNEL || cls2 == A_MISALIGNED) &&
				 e1 == e2)
				c.exact = e1;
			else if ((cls == A_KERNEL || cls == A_MISALIGNED) &&
				 cls2 == A_VALID)
				c.exact = e1;
			else if ((cls2 == A_KERNEL || cls2 == A_MISALIGNED) &&
				 cls == A_VALID)
				c.exact = e2;
		} else {
			c.exact = addr_exact(c.op, cls);
			c.exact_alt = addr_exact_alt(cls);
			c.what = cls == A_VALID ? "valid word" :
				 cls == A_MAYBE ? "churned or read-only word" :
				 cls == A_MISALIGNED ? "misaligned word" :
				 cls == A_KERNEL ? "kernel address" :
						   "inaccessible word";
		}
	}
	if (c.op == OP_BADNR) {
		c.exact = ENOTTY;
		if (c.arg == ARG_CHURN)
			c.arg = ARG_STACK;	/* the misc slot is not ours */
	} else {
		c.cmd = real_cmds[c.op];
	}

	p = place_arg(r, t, &c, &a, size, buf);
	if (c.op == OP_BADNR)
		c.exact = ENOTTY;	/* whatever the pointer */
	ret = do_ioctl(c.cmd, p, &e);
	t->calls++;
	check_result(t, &c, ret, e);

	/* Outputs of calls whose struct is ours. */
	if (e || c.arg > ARG_STACK_ODD)
		return;
	memcpy(&a, p, size);
	if (c.op == OP_VERSION) {
		TCHECK(a.ver.abi_version == TOFUTEX_ABI_VERSION &&
		       (a.ver.features & TOFUTEX_FEAT_LOCK),
		       "VERSION: abi %u, features 0x%llx", a.ver.abi_version,
		       (unsigned long long)a.ver.features);
	} else if (c.op == OP_LOCK) {
		uint32_t how = a.lock.status & TOFUTEX_STATUS_HOW_MASK;

		TCHECK(how >= TOFUTEX_STATUS_STOLEN &&
		       how <= TOFUTEX_STATUS_OWNER_DIED,
		       "LOCK succeeded with status 0x%08x", a.lock.status);
		/* Sometimes keep it: a later exit leaves it to a dead owner. */
		if (cls == A_VALID && !one_in(r, 4)) {
			struct tofutex_unlock u = { .uaddr = a.lock.uaddr };

			ret = do_ioctl(TOFUTEX_IOC_UNLOCK, &u, &e);
			t->calls++;
			c.op = OP_UNLOCK;
			c.cmd = TOFUTEX_IOC_UNLOCK;
			c.arg = ARG_STACK;
			c.exact = -1;	/* a WAIT may have made it a wait word */
			c.what = "release after LOCK";
			check_result(t, &c, ret, e);
		}
	} else if (c.op == OP_RDLOCK || c.op == OP_WRLOCK) {
		fuzz_rw_release(r, t, &c, &a.lock, cls);
	} else if (c.op == OP_UNLOCK || c.op == OP_RWUNLOCK) {
		TCHECK(a.unlock.woken <= 1, "%s: woken %u", op_names[c.op],
		       a.unlock.woken);
	} else if (c.op == OP_SWAP) {
		TCHECK(a.swap.woken <= 1, "SWAP: woken %u", a.swap.woken);
	} else if (c.op == OP_REQUEUE) {
		TCHECK((uint64_t)a.requeue.woken + a.requeue.requeued <=
		       (uint64_t)c.wake_count + c.requeue_count,
		       "REQUEUE of %u + %u: woke %u, moved %u", c.wake_count,
		       c.requeue_count, a.requeue.woken, a.requeue.requeued);
	} else if (c.op == OP_STATS) {
		TCHECK(!a.stats.reserved[0] && !a.stats.reserved[1] &&
		       !a.stats.reserved[2],
		       "STATS: reserved fields not zero");
	}
}

/*
 * A word only this thread knows, on its stack: the outcome of each call is
 * fixed by the ABI (no other thread can change the word or wait on it).
 */
static void fuzz_private(struct rng *r, struct fuzz_thread *t, uint32_t tid)
{
	uint32_t word, before;
	struct call c = { .arg = ARG_STACK, .exact = -1 };
	struct tofutex_lock lk;
	struct tofutex_unlock ul;
	struct tofutex_wait wt;
	struct tofutex_wake wk;
	long ret;
	int e;

	memset(&lk, 0, sizeof(lk));
	lk.uaddr = (uintptr_t)&word;
	lk.flags = TOFUTEX_LOCK_DEADLINE;
	/* Nothing here can wait: a generous deadline only bounds a bug. */
	lk.deadline_ns = now_ns() + NSEC_PER_SEC;
	memset(&ul, 0, sizeof(ul));
	ul.uaddr = (uintptr_t)&word;
	memset(&wt, 0, sizeof(wt));
	wt.uaddr = (uintptr_t)&word;
	wt.flags = TOFUTEX_WAIT_DEADLINE;
	memset(&wk, 0, sizeof(wk));
	wk.uaddr = (uintptr_t)&word;
	wk.count = UINT32_MAX;

	switch (below(r, 5)) {
	case 0:		/* free: taken at once, released by the kernel */
		word = 0;
		c.op = OP_LOCK;
		c.cmd = TOFUTEX_IOC_LOCK;
		c.exact = 0;
		c.what = "private free word";
		ret = do_ioctl(c.cmd, &lk, &e);
		t->calls++;
		check_result(t, &c, ret, e);
		if (e)
			return;
		TCHECK(word == tid && (lk.status & TOFUTEX_STATUS_HOW_MASK) ==
		       TOFUTEX_STATUS_STOLEN,
		       "private LOCK: word 0x%08x status 0x%08x, tid %u", word,
		       lk.status, tid);
		break;
	case 1:		/* own: EDEADLK, unchanged */
		before = word = tid | (one_in(r, 2) ? WAITERS : 0) |
				(one_in(r, 2) ? OWNER_DIED : 0);
		c.op = OP_LOCK;
		c.cmd = TOFUTEX_IOC_LOCK;
		c.exact = EDEADLK;
		c.what = "private own word";
		ret = do_ioctl(c.cmd, &lk, &e);
		t->calls++;
		check_result(t, &c, ret, e);
		TCHECK(word == before, "EDEADLK changed 0x%08x to 0x%08x",
		       before, word);
		word = tid;
		break;
	case 2:		/* nobody's TID: taken over from a dead owner */
		before = word = NO_SUCH_TID | (one_in(r, 2) ? WAITERS : 0);
		c.op = OP_LOCK;
		c.cmd = TOFUTEX_IOC_LOCK;
		c.what = "private dead owner";
		ret = do_ioctl(c.cmd, &lk, &e);
		t->calls++;
		check_result(t, &c, ret, e);
		if (e == EINTR)
			return;	/* an owner-died check may sleep */
		TCHECK(e == 0 && word == (tid | OWNER_DIED) &&
		       (lk.status & TOFUTEX_STATUS_HOW_MASK) ==
		       TOFUTEX_STATUS_OWNER_DIED,
		       "private dead owner 0x%08x: errno %d, word 0x%08x, status 0x%08x",
		       before, e, word, lk.status);
		if (e)
			return;
		break;
	case 3:		/* WAIT: value differs, or nobody wakes it */
		if (!op_offered(OP_WAIT))
			return;
		word = gen_word(r, tid);
		c.op = OP_WAIT;
		c.cmd = TOFUTEX_IOC_WAIT;
		if (one_in(r, 2)) {
			wt.val = word + 1;
			c.exact = EAGAIN;
			c.what = "private word, other value";
		} else {
			wt.val = word;
			wt.deadline_ns = now_ns() + below(r, 200000);
			c.what = "private word, nobody wakes";
		}
		ret = do_ioctl(c.cmd, &wt, &e);
		t->calls++;
		check_result(t, &c, ret, e);
		TCHECK(c.exact >= 0 || e == ETIMEDOUT || e == EINTR,
		       "WAIT on a word nobody wakes: errno %d", e);
		return;
	default:	/* WAKE: nobody waits */
		if (!op_offered(OP_WAKE))
			return;
		word = gen_word(r, tid);
		c.op = OP_WAKE;
		c.cmd = TOFUTEX_IOC_WAKE;
		c.exact = 0;
		c.wake_count = 0;	/* nobody to wake */
		c.what = "private word, no waiters";
		ret = do_ioctl(c.cmd, &wk, &e);
		t->calls++;
		check_result(t, &c, ret, e);
		return;
	}
	/*
	 * The word is ours (maybe OWNER_DIED): the kernel releases it, and
	 * OWNER_DIED stays until the user clears it.
	 */
	before = word & OWNER_DIED;
	c.op = OP_UNLOCK;
	c.cmd = TOFUTEX_IOC_UNLOCK;
	c.exact = 0;
	c.what = "private release";
	ul.woken = 7;
	ret = do_ioctl(c.cmd, &ul, &e);
	t->calls++;
	check_result(t, &c, ret, e);
	TCHECK(e || (word == before && ul.woken == 0),
	       "private UNLOCK: word 0x%08x (want 0x%08x) woken %u", word,
	       before, ul.woken);
}

static void *fuzz_main(void *arg)
{
	struct fuzz_thread *t = arg;
	uint32_t tid = test_gettid();
	unsigned long budget, n, reported = 0;
	sigset_t set;
	struct rng r;

	rng_init(&r, F.seed, 1000ULL * t->gen + t->slot);
	pool_add(tid);
	atomic_store(&F.live_tids[t->slot], tid);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	/* Live for a while, then exit (maybe holding locks). */
	budget = 500 + below(&r, 20000);
	for (n = 0; n < budget && !atomic_load(&F.stop); n++) {
		if (one_in(&r, 8))
			__atomic_store_n(&F.stable[below(&r, STABLE_WORDS)],
					 gen_word(&r, tid), __ATOMIC_RELAXED);
		else if (one_in(&r, 16))
			fuzz_private(&r, t, tid);
		else
			fuzz_one(&r, t, tid);
		if (t->calls - reported >= 64) {
			atomic_fetch_add(&F.calls, t->calls - reported);
			reported = t->calls;
			if (atomic_load(&F.calls) >= F.max_calls)
				break;
		}
	}
	atomic_fetch_add(&F.calls, t->calls - reported);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	atomic_store(&F.live_tids[t->slot], 0);
	atomic_store(&t->done, true);
	return NULL;
}

/* A churn thread's pause of @ns, stretched to this kernel's speed. */
static void churn_sleep(uint64_t ns)
{
	sleep_ns(ns * F.pace);
}

/*
 * How much slower than PACE_UNIT_NS a trivial system call is here: the
 * fastest of several short batches, so that a batch the thread was
 * preempted in does not count.
 */
static uint64_t measure_pace(void)
{
	uint64_t t0, per_call, best = UINT64_MAX;
	unsigned int b, i;

	for (b = 0; b < PACE_BATCHES; b++) {
		t0 = now_ns();
		for (i = 0; i < PACE_BATCH_CALLS; i++)
			syscall(SYS_getppid);
		per_call = (now_ns() - t0) / PACE_BATCH_CALLS;
		if (per_call < best)
			best = per_call;
	}
	return best > PACE_UNIT_NS ? best / PACE_UNIT_NS : 1;
}

/* ---- Page churn ---- */

enum page_state { PG_RW, PG_RO, PG_NONE, PG_UNMAPPED };

static void fill_words(struct rng *r, unsigned char *page)
{
	uint32_t *w = (uint32_t *)page;
	unsigned int i;

	for (i = 0; i < CHURN_WORDS_BYTES / 4; i++)
		if (one_in(r, 4))
			__atomic_store_n(&w[i], gen_word(r, 0), __ATOMIC_RELAXED);
}

struct mapper {
	unsigned int first, n;
	pthread_t thread;
};

static void *mapper_main(void *arg)
{
	struct mapper *m = arg;
	enum page_state st[CHURN_PAGES];
	unsigned int i, pg;
	unsigned char *p;
	struct rng r;
	void *q;

	rng_init(&r, F.seed, 900000 + m->first);
	for (i = 0; i < CHURN_PAGES; i++)
		st[i] = PG_RW;
	while (!atomic_load(&F.stop)) {
		pg = m->first + below(&r, m->n);
		if (atomic_load(&F.churn_lost[pg]))
			continue;
		p = F.churn + pg * PAGE_SZ;
		switch (below(&r, 6)) {
		case 0:
			if (st[pg] == PG_UNMAPPED)
				break;
			if (munmap(p, PAGE_SZ) == 0) {
				st[pg] = PG_UNMAPPED;
				atomic_fetch_add(&F.munmaps, 1);
			}
			break;
		case 1:
			/*
			 * Back to 0xff bytes. An unmapped page may only be
			 * taken back if nobody else got it meanwhile.
			 */
			q = mmap(p, PAGE_SZ, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | (st[pg] == PG_UNMAPPED ?
						MAP_FIXED_NOREPLACE :
						MAP_FIXED), F.memfd, 0);
			if (q == p) {
				st[pg] = PG_RW;
				atomic_fetch_add(&F.remaps, 1);
			} else if (st[pg] == PG_UNMAPPED) {
				if (q != MAP_FAILED)
					munmap(q, PAGE_SZ);
				atomic_store(&F.churn_lost[pg], true);
			}
			break;
		case 2:
		case 3:
			if (st[pg] == PG_UNMAPPED)
				break;
			i = below(&r, 3);
			if (mprotect(p, PAGE_SZ, i == 0 ? PROT_READ :
				     i == 1 ? PROT_NONE :
					      PROT_READ | PROT_WRITE) == 0) {
				st[pg] = i == 0 ? PG_RO : i == 1 ? PG_NONE :
							   PG_RW;
				atomic_fetch_add(&F.mprotects, 1);
			}
			break;
		default:
			if (st[pg] == PG_RW)
				fill_words(&r, p);
			break;
		}
		churn_sleep(20 * NSEC_PER_USEC + below(&r, 200000));
	}
	/* Leave every page mapped for the final checks. */
	for (pg = m->first; pg < m->first + m->n; pg++) {
		if (atomic_load(&F.churn_lost[pg]))
			continue;
		p = F.churn + pg * PAGE_SZ;
		if (st[pg] == PG_UNMAPPED)
			continue;
		mprotect(p, PAGE_SZ, PROT_READ | PROT_WRITE);
	}
	return NULL;
}

/* ---- Signals ---- */

static void *signaller_main(void *arg)
{
	struct rng r;
	uint32_t tid;

	(void)arg;
	rng_init(&r, F.seed, 800000);
	while (!atomic_load(&F.stop)) {
		tid = atomic_load(&F.live_tids[below(&r, FUZZ_THREADS)]);
		if (tid && syscall(SYS_tgkill, getpid(), tid, SIGUSR1) == 0)
			atomic_fetch_add(&F.signals, 1);
		churn_sleep(100 * NSEC_PER_USEC + below(&r, 900000));
	}
	return NULL;
}

/* ---- Children ---- */

/* A child's report on its first surprise. */
struct child_report {
	int line;
	int op;
	long ret;
	int err;
};

static void child_fail(int report, int line, int op, long ret, int err)
{
	struct child_report rep = { line, op, ret, err };
	ssize_t n = write(report, &rep, sizeof(rep));

	(void)n;
	_exit(1);
}

/*
 * In the child (async-signal-safe calls only): every ioctl through the
 * inherited descriptor fails with EBADFD; then, in modes 1 and 2, the
 * child opens the device itself and locks and waits on its copies of the
 * parent's words (which name the parent's threads: dead owners here) until
 * it exits (mode 1) or the parent kills it (mode 2).
 */
static void child_main(int report, unsigned int mode, uint64_t seed)
{
	union any_arg a;
	struct rng r;
	uint64_t end;
	unsigned int i, cmd;
	long ret;
	int fd, e;

	rng_init(&r, seed, 700000);
	for (i = 0; i < OP_BADNR + 4; i++) {
		memset(&a, 0, sizeof(a));
		a.lock.uaddr = (uintptr_t)&F.stable[0];
		a.lock.flags = TOFUTEX_LOCK_DEADLINE;	/* = WAIT's val */
		a.wait.flags = TOFUTEX_WAIT_DEADLINE;
		a.swap.wake_uaddr = (uintptr_t)&F.stable[1];
		cmd = i < OP_BADNR ? real_cmds[i] :
		      _IOC(_IOC_READ | _IOC_WRITE, TOFUTEX_IOC_MAGIC,
			   0x40 + i, 8 * i);
		errno = 0;
		ret = ioctl(F.fd, cmd, &a);
		e = ret < 0 ? errno : 0;
		if (ret != -1 ||
		    (e != EBADFD && !(i >= OP_BADNR && e == ENOTTY)))
			child_fail(report, __LINE__, (int)i, ret, e);
	}
	if (mode == 0)
		_exit(0);

	fd = open(DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		child_fail(report, __LINE__, -1, fd, errno);
	end = now_ns() + (mode == 2 ? 500 : 20) * NSEC_PER_MSEC;
	while (now_ns() < end) {
		uint32_t *w = &F.stable[below(&r, 8)];

		memset(&a, 0, sizeof(a));
		if (one_in(&r, 2)) {
			a.lock.uaddr = (uintptr_t)w;
			a.lock.flags = TOFUTEX_LOCK_DEADLINE;
			a.lock.deadline_ns = now_ns() + FUZZ_MAX_SLEEP_NS;
			errno = 0;
			ret = ioctl(fd, TOFUTEX_IOC_LOCK, &a.lock);
			e = ret < 0 ? errno : 0;
			if (ret < -1 || ret > 0 || !allowed(OP_LOCK, e))
				child_fail(report, __LINE__, OP_LOCK, ret, e);
			/* Often keep it: others then find it held. */
		} else if (op_offered(OP_WAIT)) {
			a.wait.uaddr = (uintptr_t)w;
			a.wait.val = __atomic_load_n(w, __ATOMIC_RELAXED);
			a.wait.flags = TOFUTEX_WAIT_DEADLINE;
			a.wait.deadline_ns = now_ns() + FUZZ_MAX_SLEEP_NS;
			errno = 0;
			ret = ioctl(fd, TOFUTEX_IOC_WAIT, &a.wait);
			e = ret < 0 ? errno : 0;
			if (ret < -1 || ret > 0 || !allowed(OP_WAIT, e))
				child_fail(report, __LINE__, OP_WAIT, ret, e);
		}
	}
	_exit(0);
}

static void *forker_main(void *arg)
{
	struct child_report rep;
	int report[2], status;
	unsigned int mode;
	struct rng r;
	pid_t pid;
	ssize_t n;
	bool ok, killed;

	(void)arg;
	rng_init(&r, F.seed, 600000);
	while (!atomic_load(&F.stop)) {
		mode = below(&r, 3);
		if (pipe2(report, O_CLOEXEC)) {
			TFAIL("pipe2: %s", strerror(errno));
			break;
		}
		pid = fork();
		if (pid < 0) {
			TFAIL("fork: %s", strerror(errno));
			close(report[0]);
			close(report[1]);
			break;
		}
		if (pid == 0) {
			close(report[0]);
			child_main(report[1], mode, rnd(&r));
		}
		close(report[1]);
		pool_add((uint32_t)pid);
		killed = false;
		if (mode == 2) {
			churn_sleep(below(&r, 20 * NSEC_PER_MSEC));
			killed = kill(pid, SIGKILL) == 0;
			if (killed)
				atomic_fetch_add(&F.child_kills, 1);
		}
		WAIT_UNTIL(ok, waitpid(pid, &status, WNOHANG) == pid,
			   TEST_WAIT_NS);
		if (!ok) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			TFAIL("child %d (mode %u) did not finish", pid, mode);
		}
		memset(&rep, 0, sizeof(rep));
		n = read(report[0], &rep, sizeof(rep));
		close(report[0]);
		if (n == (ssize_t)sizeof(rep))
			TFAIL("child %d: line %d, op %d: ret %ld, errno %d (%s)",
			      pid, rep.line, rep.op, rep.ret, rep.err,
			      strerror(rep.err));
		else if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0) &&
			 !(killed && WIFSIGNALED(status) &&
			   WTERMSIG(status) == SIGKILL))
			TFAIL("child %d (mode %u): status 0x%x", pid, mode,
			      status);
		atomic_fetch_add(&F.forks, 1);
		churn_sleep(10 * NSEC_PER_MSEC + below(&r, 40 * NSEC_PER_MSEC));
	}
	return NULL;
}

/* ---- The test ---- */

static uint64_t env_u64(const char *name, uint64_t dflt)
{
	const char *s = getenv(name);
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return dflt;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end)
		return dflt;
	return v;
}

static unsigned int fuzz_seconds(void)
{
	uint64_t s = env_u64("TOFUTEX_FUZZ_SECONDS", DEFAULT_SECONDS);

	return s ? (unsigned int)(s > 3600 ? 3600 : s) : DEFAULT_SECONDS;
}

static void *map_pages(size_t n, int prot)
{
	void *p = mmap(NULL, n * PAGE_SZ, prot, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	ck_assert_msg(p != MAP_FAILED, "mmap: %s", strerror(errno));
	return p;
}

static void setup_memory(void)
{
	struct tofutex_lock lk = { .flags = TOFUTEX_LOCK_DEADLINE,
				   .deadline_ns = 1 };
	struct tofutex_wait wt = { .flags = TOFUTEX_WAIT_DEADLINE,
				   .deadline_ns = 1 };
	struct tofutex_swap sw = { .flags = TOFUTEX_WAIT_DEADLINE,
				   .deadline_ns = 1 };
	struct tofutex_wake wk = { .count = 1 };
	struct tofutex_unlock ul = { 0 };
	struct tofutex_version ver = { 0 };
	struct tofutex_stats st = { .flags = TOFUTEX_STATS_GLOBAL };
	unsigned char ff[PAGE_SZ];
	struct rng r;
	unsigned int i;

	rng_init(&r, F.seed, 500000);
	F.stable = map_pages(1, PROT_READ | PROT_WRITE);

	F.ro = map_pages(1, PROT_READ | PROT_WRITE);
	lk.uaddr = wt.uaddr = sw.wait_uaddr = wk.uaddr = ul.uaddr =
		(uintptr_t)&F.stable[0];
	sw.wake_uaddr = (uintptr_t)&F.stable[1];
	memcpy(F.ro + RO_LOCK, &lk, sizeof(lk));
	memcpy(F.ro + RO_WAIT, &wt, sizeof(wt));
	memcpy(F.ro + RO_SWAP, &sw, sizeof(sw));
	memcpy(F.ro + RO_WAKE, &wk, sizeof(wk));
	memcpy(F.ro + RO_UNLOCK, &ul, sizeof(ul));
	memcpy(F.ro + RO_VERSION, &ver, sizeof(ver));
	memcpy(F.ro + RO_STATS, &st, sizeof(st));
	for (i = RO_WORDS / 4; i < PAGE_SZ / 4; i++)
		((uint32_t *)F.ro)[i] = gen_word(&r, test_gettid());
	ck_assert_int_eq(mprotect(F.ro, PAGE_SZ, PROT_READ), 0);

	F.edges = map_pages(2 * FUZZ_THREADS, PROT_READ | PROT_WRITE);
	for (i = 0; i < FUZZ_THREADS; i++)
		ck_assert_int_eq(mprotect(F.edges + (2 * i + 1) * PAGE_SZ,
					  PAGE_SZ, PROT_NONE), 0);

	memset(ff, 0xff, sizeof(ff));
	F.memfd = memfd_create("tofutex-fuzz", MFD_CLOEXEC);
	ck_assert_msg(F.memfd >= 0, "memfd_create: %s", strerror(errno));
	ck_assert_int_eq(write(F.memfd, ff, sizeof(ff)), (ssize_t)sizeof(ff));
	F.churn = map_pages(CHURN_PAGES, PROT_READ | PROT_WRITE);
	for (i = 0; i < CHURN_PAGES; i++)
		ck_assert(mmap(F.churn + i * PAGE_SZ, PAGE_SZ,
			       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED,
			       F.memfd, 0) == F.churn + i * PAGE_SZ);
}

static void print_report(double secs, unsigned long calls)
{
	unsigned int op, o;

	printf("fuzz: seed %llu: %lu calls in %.1f s (%.0f calls/s), "
	       "%lu threads, %lu signals sent (%lu handled), %lu children "
	       "(%lu killed), "
	       "%lu munmap, %lu remap, %lu mprotect, churn pauses x%llu\n",
	       (unsigned long long)F.seed, calls, secs,
	       secs > 0 ? (double)calls / secs : 0.0,
	       atomic_load(&F.threads_started), atomic_load(&F.signals),
	       atomic_load(&F.signals_handled), atomic_load(&F.forks),
	       atomic_load(&F.child_kills),
	       atomic_load(&F.munmaps), atomic_load(&F.remaps),
	       atomic_load(&F.mprotects), (unsigned long long)F.pace);
	for (op = 0; op < NR_OPS; op++) {
		printf("fuzz: %-8s", op_names[op]);
		for (o = 0; o < NR_OUT; o++)
			if (atomic_load(&F.hist[op][o]))
				printf(" %s %lu", out_names[o],
				       atomic_load(&F.hist[op][o]));
		printf("\n");
	}
	fflush(stdout);
}

static void fuzz_thread_start(struct fuzz_thread *t, unsigned int slot,
			      unsigned int gen)
{
	t->slot = slot;
	t->gen = gen;
	t->calls = 0;
	atomic_store(&t->done, false);
	ck_assert_int_eq(pthread_create(&t->thread, NULL, fuzz_main, t), 0);
	t->running = true;
	atomic_fetch_add(&F.threads_started, 1);
}

START_TEST(test_fuzz)
{
	static struct fuzz_thread threads[FUZZ_THREADS];
	struct mapper mappers[FUZZ_MAPPERS];
	pthread_t signaller, forker;
	struct sigaction sa;
	struct tofutex_stats st;
	struct tofutex_version ver;
	uint64_t start, secs;
	unsigned int i, gen = 1;
	sigset_t set;
	bool ok;

	memset(&F, 0, sizeof(F));
	F.seed = env_u64("TOFUTEX_FUZZ_SEED",
			 (uint64_t)time(NULL) * 1000003ULL ^ (uint64_t)getpid());
	F.max_calls = env_u64("TOFUTEX_FUZZ_CALLS", DEFAULT_CALLS);
	F.pace = measure_pace();
	secs = fuzz_seconds();
	printf("fuzz: seed %llu (TOFUTEX_FUZZ_SEED), up to %llu s "
	       "(TOFUTEX_FUZZ_SECONDS), up to %lu calls (TOFUTEX_FUZZ_CALLS)\n",
	       (unsigned long long)F.seed, (unsigned long long)secs,
	       F.max_calls);
	fflush(stdout);

	F.fd = open(DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ck_assert_msg(F.fd >= 0, "open: %s", strerror(errno));
	memset(&ver, 0, sizeof(ver));
	ck_assert_int_eq(ioctl(F.fd, TOFUTEX_IOC_VERSION, &ver), 0);
	F.features = ver.features;
	setup_memory();
	pool_add(test_gettid());

	/* SIGUSR1 interrupts calls (no SA_RESTART); only fuzzers take it. */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	ck_assert_int_eq(pthread_sigmask(SIG_BLOCK, &set, NULL), 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sig_handler;
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);

	start = now_ns();
	F.end_ns = start + secs * NSEC_PER_SEC;
	for (i = 0; i < FUZZ_MAPPERS; i++) {
		mappers[i].first = i * (CHURN_PAGES / FUZZ_MAPPERS);
		mappers[i].n = CHURN_PAGES / FUZZ_MAPPERS;
		ck_assert_int_eq(pthread_create(&mappers[i].thread, NULL,
						mapper_main, &mappers[i]), 0);
	}
	ck_assert_int_eq(pthread_create(&signaller, NULL, signaller_main,
					NULL), 0);
	ck_assert_int_eq(pthread_create(&forker, NULL, forker_main, NULL), 0);
	for (i = 0; i < FUZZ_THREADS; i++)
		fuzz_thread_start(&threads[i], i, 0);

	/*
	 * Replace exited fuzzers until a bound is reached; run at least until
	 * one child was reaped and one signal sent, so every part ran.
	 */
	for (;;) {
		bool bound = now_ns() >= F.end_ns ||
			     atomic_load(&F.calls) >= F.max_calls;
		bool covered = atomic_load(&F.forks) > 0 &&
			       atomic_load(&F.signals) > 0;

		if (tfailed() || (bound && covered) ||
		    now_ns() >= F.end_ns + TEST_WAIT_NS)
			break;
		sleep_ns(NSEC_PER_MSEC);
		for (i = 0; i < FUZZ_THREADS; i++) {
			if (!atomic_load(&threads[i].done))
				continue;
			ck_assert_msg(join_within(threads[i].thread, NULL,
						  TEST_WAIT_NS),
				      "fuzzer %u did not exit", i);
			threads[i].running = false;
			if (!bound)
				fuzz_thread_start(&threads[i], i, gen++);
		}
	}
	atomic_store(&F.stop, true);
	for (i = 0; i < FUZZ_THREADS; i++)
		if (threads[i].running)
			ck_assert_msg(join_within(threads[i].thread, NULL,
						  TEST_WAIT_NS),
				      "fuzzer %u hangs in an ioctl", i);
	ck_assert_msg(join_within(forker, NULL, 2 * TEST_WAIT_NS),
		      "forker did not finish");
	ck_assert_msg(join_within(signaller, NULL, TEST_WAIT_NS),
		      "signaller did not finish");
	for (i = 0; i < FUZZ_MAPPERS; i++)
		ck_assert_msg(join_within(mappers[i].thread, NULL,
					  TEST_WAIT_NS),
			      "mapper %u did not finish", i);
	print_report((double)(now_ns() - start) / NSEC_PER_SEC,
		     atomic_load(&F.calls));
	tfail_assert();

	ck_assert_msg(atomic_load(&F.forks) > 0 && atomic_load(&F.signals) > 0,
		      "no child or no signal within the bound");
	for (i = 0; i < NR_OPS; i++) {
		unsigned long n = 0;
		unsigned int o;

		for (o = 0; o < NR_OUT; o++)
			n += atomic_load(&F.hist[i][o]);
		ck_assert_msg(n > 0, "%s was never called", op_names[i]);
	}

	/* Every state goes with the calls that used it. */
	WAIT_UNTIL(ok, (memset(&st, 0, sizeof(st)),
			st.flags = TOFUTEX_STATS_GLOBAL,
			ioctl(F.fd, TOFUTEX_IOC_STATS, &st) == 0 &&
			st.live_states == 0), TEST_WAIT_NS);
	ck_assert_msg(ok, "global live_states = %llu after the fuzzer",
		      (unsigned long long)st.live_states);
	memset(&st, 0, sizeof(st));
	st.flags = TOFUTEX_STATS_PROCESS;
	ck_assert_int_eq(ioctl(F.fd, TOFUTEX_IOC_STATS, &st), 0);
	ck_assert_uint_eq(st.live_states, 0);
	close(F.fd);
	close(F.memfd);
}
END_TEST

static Suite *fuzz_suite(void)
{
	Suite *s = suite_create("fuzz");
	TCase *tc = tcase_create("fuzz");

	tcase_add_checked_fixture(tc, tfail_reset, NULL);
	/* The run's bound, time to wind down, and the waits after it. */
	tcase_set_timeout(tc, (double)fuzz_seconds() + 3 * TEST_WAIT_NS /
			  NSEC_PER_SEC + TEST_TIMEOUT_SHORT);
	tcase_add_test(tc, test_fuzz);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(fuzz_suite());
}
