// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex - the user-space spin budget of a contended tofutex_mutex_t:
 * how long mutex.c polls a held word before it asks the kernel (or, on
 * the futex backend, backend_futex.c) for the lock.
 *
 * The kernel spins too, on an owner it can see running, but the trip
 * there is a system call plus a per-word state to find or create: about
 * 1.5 us in the emulated test guest (bench_ioctl) and a few hundred ns
 * natively, a multiple of a short critical section. Spinning for a few
 * such trips catches the common release of a short critical section
 * without the kernel (bench_lock's lock_calls per 1000 operations shows
 * the share that still enters it); a longer hold goes to the kernel, which
 * spins or sleeps knowing whether the owner runs. The default is a fixed
 * budget, TOFUTEX_USER_SPIN_NS.
 *
 * The other budget, "auto", follows what going to the kernel has recently
 * cost the calling thread: the mean of its last contended locks' time in
 * the kernel (system call, spin, sleep, wake-up and the wait for the
 * owner), a moving average with weight 1/8 per lock as glibc's adaptive
 * mutex keeps for its spin count, starting at the fixed budget. Spinning
 * about as long as the alternative costs is the ski-rental rule: it never
 * costs more than twice the better of the two choices. The estimate is
 * per thread, since the mutex's layout (lib/tofutex.h) has no spare bits
 * to keep one per lock.
 *
 * bench_lock --spin (bench/lock.md) runs budgets side by side with the
 * default and with glibc's mutexes, on the module and natively on the
 * futex backend. With no user-space spin every lock that finds the word
 * held enters the kernel; from about a microsecond on, short critical
 * sections rarely reach it. No other setting -- fixed budgets up to
 * 50 us, the module's spin_ns, auto -- has beaten the default by more
 * than the benchmark's run-to-run spread in one block without losing in
 * another, so the default stays a fixed 5 us (less the back-off below)
 * and auto is there to be measured. How often the spin polls within its
 * budget is mutex.c's tofutex_mutex_spin().
 *
 * Why the spin does not look at the owner: a per-thread on-CPU flag that
 * the module would keep with preempt notifiers and map into the process
 * (rseq's never-merged "sched_state" idea for adaptive mutexes) would let
 * a spinner spin exactly while its owner runs. That pays only where owners
 * leave the CPU holding the lock, and bench_lock's blocks for that leave
 * it nothing to win: with a usleep(1) in the critical section every lock,
 * glibc's too, runs at 0.8-1.0 of the serial bound (the sleeping owner is
 * the bound); with a page fault in it all run at 0.3-0.4 of it, within each
 * other's spread (the fault is the bound); with 2-8 threads per CPU and a
 * 50-unit critical section, where owners are preempted, this lock already
 * leads glibc's adaptive mutex (0.62-0.73 of the bound against 0.57-0.65),
 * and a blind spin of 50 us, which a prototype of the flag only matched,
 * reaches 0.77-0.79. Every context switch in the system would pay for the
 * notifier walk. The commands and tables are in bench/lock.md.
 *
 * A spin that ran out its budget while the owner it began on still held
 * the word says the owner is not about to let go: it sleeps, was
 * preempted, or holds the lock across a sched_yield() (sysbench's threads
 * test does, with more threads than CPUs). The next spin of that owner's
 * waiters will most likely fail too, and a failed spin is CPU taken from
 * the threads that could run, the owner among them. So each such stuck
 * spin halves the calling thread's next budgets, down to
 * 1/2^TOFUTEX_USER_SPIN_STUCK_MAX of it, and a spin that takes the word
 * restores the whole budget (tofutex__spin_ended()). A spin that ran out
 * while the word passed between other threads leaves it alone: the lock
 * moves, this thread only lost the races. The smallest budget still
 * catches the release of a short critical section, which brings the rest
 * back. Per thread, as the auto estimate, for want of bits in the mutex.
 * Only the default budget backs off: a budget set in TOFUTEX_SPIN_NS,
 * fixed or auto, is spent whole, so that "TOFUTEX_SPIN_NS=5000" is the
 * default without the back-off, to measure the two side by side.
 *
 * TOFUTEX_SPIN_NS in the environment replaces the default: a number of ns
 * (0 to TOFUTEX_USER_SPIN_MAX_NS; 0: straight to the kernel), "auto"
 * (capped at TOFUTEX_USER_SPIN_AUTO_NS) or "auto:N" (capped at N ns, 1 to
 * TOFUTEX_USER_SPIN_MAX_NS); anything else is ignored. It is read once per
 * process, at the first spin, and again in a fork() child (which may have
 * changed its environment; fork.c calls tofutex__spin_forget()): for
 * tuning and for measuring budgets against each other.
 *
 * Serialisation: the parsed setting is one word, written whole with
 * relaxed atomics by whichever thread reads the environment first; racing
 * readers compute the same value. The estimate is thread-local and
 * touched only by its thread; tofutex__spin_forget() restarts the calling
 * thread's (in a fork() child, its only thread's) with the setting.
 */
#include "internal.h"

#define TOFUTEX_USER_SPIN_NS		5000u
/* 10 ms, as the module's spin_ns: beyond any hold worth spinning on. */
#define TOFUTEX_USER_SPIN_MAX_NS	10000000u
/*
 * auto's default cap: the module's default spin_ns (tofutex(4)). A longer
 * user-space spin would only do blind what the kernel does knowing
 * whether the owner runs.
 */
#define TOFUTEX_USER_SPIN_AUTO_NS	50000u
/* The moving average's weight of the newest cost: 1 / 2^this. */
#define TOFUTEX_USER_SPIN_AUTO_SHIFT	3

/*
 * Stuck spins in a row halve the budget this many times at most: the
 * default 5 us then becomes about 300 ns, a few polls of a word still.
 */
#define TOFUTEX_USER_SPIN_STUCK_MAX	4u

/*
 * The parsed setting: the budget (fixed) or the cap (auto) in ns, plus
 * one, with TOFUTEX_SPIN_AUTO set for auto, TOFUTEX_SPIN_DEFAULT for the
 * default (backing off); 0: not read yet.
 */
#define TOFUTEX_SPIN_AUTO	0x80000000u
#define TOFUTEX_SPIN_DEFAULT	0x40000000u
#define TOFUTEX_SPIN_FLAGS	(TOFUTEX_SPIN_AUTO | TOFUTEX_SPIN_DEFAULT)
static uint32_t tofutex_spin_setting;

/* auto: this thread's estimate of a kernel trip's cost, ns; 0: none yet. */
static _Thread_local uint32_t tofutex_spin_est
	__attribute__((tls_model("initial-exec")));

/* This thread's stuck spins in a row, up to TOFUTEX_USER_SPIN_STUCK_MAX. */
static _Thread_local uint8_t tofutex_spin_stuck
	__attribute__((tls_model("initial-exec")));

static __attribute__((noinline)) uint32_t tofutex_spin_read(void)
{
	uint32_t setting = (TOFUTEX_USER_SPIN_NS + 1) | TOFUTEX_SPIN_DEFAULT;
	uint32_t ns;
	bool autospin;

	if (tofutex__env_spin(TOFUTEX_USER_SPIN_MAX_NS, &ns, &autospin)) {
		if (autospin && !ns)
			ns = TOFUTEX_USER_SPIN_AUTO_NS;
		setting = (ns + 1) | (autospin ? TOFUTEX_SPIN_AUTO : 0);
	}
	__atomic_store_n(&tofutex_spin_setting, setting, __ATOMIC_RELAXED);
	return setting;
}

static inline uint32_t tofutex_spin_get(void)
{
	uint32_t s = __atomic_load_n(&tofutex_spin_setting, __ATOMIC_RELAXED);

	return s ? s : tofutex_spin_read();
}

/* The fixed budget, or auto's cap, in ns. */
static inline uint32_t tofutex_spin_ns(uint32_t setting)
{
	return (setting & ~TOFUTEX_SPIN_FLAGS) - 1;
}

void tofutex__spin_forget(void)
{
	__atomic_store_n(&tofutex_spin_setting, 0, __ATOMIC_RELAXED);
	tofutex_spin_est = 0;
	tofutex_spin_stuck = 0;
}

uint32_t tofutex__spin_budget(void)
{
	uint32_t setting = tofutex_spin_get();
	uint32_t cap = tofutex_spin_ns(setting);
	uint32_t est = tofutex_spin_est;

	if (setting & TOFUTEX_SPIN_DEFAULT)
		return cap >> tofutex_spin_stuck;
	if (!(setting & TOFUTEX_SPIN_AUTO))
		return cap;
	if (!est)
		est = TOFUTEX_USER_SPIN_NS;
	return est < cap ? est : cap;
}

void tofutex__spin_ended(bool taken, bool stuck)
{
	if (taken)
		tofutex_spin_stuck = 0;
	else if (stuck && tofutex_spin_stuck < TOFUTEX_USER_SPIN_STUCK_MAX)
		tofutex_spin_stuck++;
}

bool tofutex__spin_auto(void)
{
	return tofutex_spin_get() & TOFUTEX_SPIN_AUTO;
}

/*
 * auto: a contended lock of this thread spent @ns in the kernel. A cost
 * above the cap counts as the cap, so that one long wait moves the
 * estimate by at most an eighth of it.
 */
void tofutex__spin_learn(uint64_t ns)
{
	uint32_t cap = tofutex_spin_ns(tofutex_spin_get());
	int64_t est = tofutex_spin_est;

	if (!est)
		est = TOFUTEX_USER_SPIN_NS;
	if (ns > cap)
		ns = cap;
	est += ((int64_t)ns - est) / (1 << TOFUTEX_USER_SPIN_AUTO_SHIFT);
	tofutex_spin_est = est > 0 ? (uint32_t)est : 1;
}
