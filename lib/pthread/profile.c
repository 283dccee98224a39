// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex-pthread - TOFUTEX_PROFILE (tofutex-run --profile): which
 * locks a process waited on, printed at exit, most waited-on first:
 *
 *   tofutex-run: profile of prog[123]: 3 contended locks and condition
 *   variables; waiting on locks 0.430 s, ... locks 74.3%
 *     # kind    address  locked contended changes  wait ms  mean us ...
 *     1 mutex  0x5555..  1739452     3156    4562  419.767    133.0 ...
 *
 * (one line each; tofutex-run(1) explains the columns). The hooks
 * (profile.h) feed one table of records, one per lock address, created
 * the first time a lock of ours is waited on: a lock never contended
 * costs a bit test per lock and unlock (tfx_prof_bloom, profile.h) and
 * is not reported. From its creation on a record counts every lock (the
 * one held when it was first contended included), the waits and their
 * time, owner changes, and the holds of the exclusive owners (mutexes,
 * rwlock writers). Whether a lock waited is the failed compare-and-swap
 * of pthread_mutex_lock(); for the timed locks and the rwlocks, whether
 * the word was held as the lock began (mutex.c, rwlock.c), which leaves
 * the locks' own paths as they are without the report. A condition
 * variable's record counts its waits (locked and contended alike) and
 * their time, waiting for an event rather than for a lock: reported,
 * but left out of the lock-wait share.
 *
 * The table: TFX_PROF_SLOTS records in an anonymous mapping made at
 * start when the report is on, open addressing keyed by the lock's
 * address and kind (profile.h), lock-free: a slot is claimed once by a compare-and-swap of
 * its key from 0 and never freed, so a lookup that meets a free slot
 * knows the key is absent; at most TFX_PROF_PROBES slots are probed,
 * past that a lock goes unrecorded and the report says how many did.
 * Counters are relaxed atomics, updated without a locked instruction by
 * an exclusive holder (the lock orders those; a timed-out waiter's or a
 * reader's updates are atomic read-modify-writes, and a timed-out
 * waiter's may so lose one count against a holder's). The report is
 * read at exit, once the program's own threads are expected to be done
 * (a thread still running may be counted or not). A lock destroyed and
 * another of the same kind made at its address share a record. The child of fork()
 * starts with an empty table (the pages are dropped, not copied).
 *
 * Where the report goes (report.h): TOFUTEX_PROFILE=1, the table on
 * standard error; =FILE, appended to FILE, as one JSON object on one
 * line when FILE ends in ".json", else as the table; each process that locked something of ours writes one
 * report with one write(2). TOFUTEX_PROFILE_TOP=N: the N locks with the
 * most wait (default 10, 0: all). Read with secure_getenv().
 *
 * When: as the process ends, however it ends (exit.c), also in _exit()
 * called from a signal handler: the report is sorted in place in pages
 * mapped at start, formatted with vsnprintf() into pages mapped for it
 * (no malloc(), no stdio stream, no lock), and its frames are named by
 * _dl_find_object(), which takes no lock; only after exit() and a return
 * from main(), where nothing can be interrupted, does dladdr() add the
 * function's name.
 */
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "profile.h"
#include "report.h"

#define TFX_PROF_SLOTS	8192u		/* a power of two */
#define TFX_PROF_PROBES	64u
#define TFX_PROF_FRAMES	12		/* raw frames kept; ours are skipped */
#define TFX_PROF_SHOWN	4		/* frames shown per lock */

struct tfx_prof_rec {
	uintptr_t key;		/* the lock's address | kind; 0: free slot */
	uint32_t last_tid;	/* the last exclusive owner */
	uint64_t locked, contended, changes;
	uint64_t wait_ns, wait_max;
	uint64_t holds, hold_ns, hold_max;
	uint64_t since;		/* the exclusive owner's acquire; 0: none */
	int nframes;
	void *frames[TFX_PROF_FRAMES];
};

bool tfx_prof_on;
uint64_t tfx_prof_bloom[TFX_PROF_BLOOM_BITS / 64];
static struct tfx_prof_rec *tfx_prof_tab;
static struct tfx_prof_ent *tfx_prof_ents;	/* the report's sort */
static uint64_t tfx_prof_dropped;	/* contended locks left unrecorded */
static struct tfx_report tfx_prof_out = { .fd = -1 };
static bool tfx_prof_json;
static unsigned int tfx_prof_top = 10;

uint64_t tfx_prof_now(void)
{
	return tofutex__clock_ns(CLOCK_MONOTONIC);
}

static inline void tfx_prof_add(uint64_t *counter, uint64_t v)
{
	__atomic_fetch_add(counter, v, __ATOMIC_RELAXED);
}

/*
 * The same, by the exclusive holder of the record's lock: the lock
 * orders the holders' updates, so no locked instruction is needed (one
 * would be paid on every lock of a contended mutex, by two CPUs at once).
 */
static inline void tfx_prof_add_held(uint64_t *counter, uint64_t v)
{
	__atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + v,
			 __ATOMIC_RELAXED);
}

/* Raise *@max to @v; each failed exchange saw a larger value: bounded. */
static void tfx_prof_max(uint64_t *max, uint64_t v)
{
	uint64_t cur = __atomic_load_n(max, __ATOMIC_RELAXED);

	while (v > cur && !__atomic_compare_exchange_n(max, &cur, v, true,
						       __ATOMIC_RELAXED,
						       __ATOMIC_RELAXED))
		;
}

/* tfx_prof_max() by the exclusive holder. */
static inline void tfx_prof_max_held(uint64_t *max, uint64_t v)
{
	if (v > __atomic_load_n(max, __ATOMIC_RELAXED))
		__atomic_store_n(max, v, __ATOMIC_RELAXED);
}

/* @lock has a record now: its bit for tfx_prof_maybe() (profile.h). */
static void tfx_prof_mark(const void *lock)
{
	uint32_t h = tfx_prof_hash(lock) % TFX_PROF_BLOOM_BITS;

	__atomic_fetch_or(&tfx_prof_bloom[h / 64], 1ull << (h % 64),
			  __ATOMIC_RELAXED);
}

/*
 * The record of @lock as @kind, or NULL; with @create, claimed when
 * absent (*@created then true) unless the probes run out.
 */
static struct tfx_prof_rec *tfx_prof_find(const void *lock,
					  enum tfx_prof_kind kind, bool create,
					  bool *created)
{
	uintptr_t key = (uintptr_t)lock | kind, seen;
	size_t i = tfx_prof_hash(lock);
	struct tfx_prof_rec *r;
	unsigned int n;

	for (n = 0; n < TFX_PROF_PROBES; n++, i++) {
		r = &tfx_prof_tab[i & (TFX_PROF_SLOTS - 1)];
		seen = __atomic_load_n(&r->key, __ATOMIC_ACQUIRE);
		if (seen == key)
			return r;
		if (seen)
			continue;
		if (!create)
			return NULL;
		if (__atomic_compare_exchange_n(&r->key, &seen, key, false,
						__ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			*created = true;
			tfx_prof_mark(lock);
			return r;
		}
		if (seen == key)
			return r;
	}
	if (create)
		tfx_prof_add(&tfx_prof_dropped, 1);
	return NULL;
}

/*
 * @r was taken at @now; @exclusive: by one owner, whose hold is timed;
 * @waited: after waiting for it, so from another thread, also when that
 * one is not known (the holder when the record was made).
 */
static void tfx_prof_acquired(struct tfx_prof_rec *r, bool exclusive,
			      uint64_t now, bool waited)
{
	uint32_t tid, last;

	if (!exclusive) {
		tfx_prof_add(&r->locked, 1);
		return;
	}
	tfx_prof_add_held(&r->locked, 1);
	tid = (uint32_t)tofutex__tid();
	last = __atomic_load_n(&r->last_tid, __ATOMIC_RELAXED);
	__atomic_store_n(&r->last_tid, tid, __ATOMIC_RELAXED);
	if (last ? last != tid : waited)
		tfx_prof_add_held(&r->changes, 1);
	__atomic_store_n(&r->since, now, __ATOMIC_RELAXED);
}

/*
 * The stack of this thread's wait that may make a record (profile.h),
 * for that record; @busy while it is taken, so that a lock the unwinder
 * waits for meanwhile takes none (the unwinder would wait for itself).
 */
static __thread struct {
	const void *lock;
	bool busy;
	int nframes;
	void *frames[TFX_PROF_FRAMES];
} tfx_prof_pre;

void tfx_prof_stack(const void *lock)
{
	if (tfx_prof_pre.busy)
		return;
	tfx_prof_pre.busy = true;
	tfx_prof_pre.nframes = backtrace(tfx_prof_pre.frames, TFX_PROF_FRAMES);
	tfx_prof_pre.lock = lock;
	tfx_prof_pre.busy = false;
}

/* @r is new: the stack tfx_prof_stack() took for @lock, if any. */
static void tfx_prof_take_stack(struct tfx_prof_rec *r, const void *lock)
{
	if (tfx_prof_pre.lock != lock)
		return;
	memcpy(r->frames, tfx_prof_pre.frames,
	       (size_t)tfx_prof_pre.nframes * sizeof(r->frames[0]));
	r->nframes = tfx_prof_pre.nframes;
	tfx_prof_pre.lock = NULL;
}

void tfx_prof_locked_rec(const void *lock, enum tfx_prof_kind kind,
			 bool exclusive)
{
	struct tfx_prof_rec *r = tfx_prof_find(lock, kind, false, NULL);

	if (r)
		tfx_prof_acquired(r, exclusive, exclusive ? tfx_prof_now() : 0,
				  false);
}

void tfx_prof_waited(const void *lock, enum tfx_prof_kind kind, bool exclusive,
		     uint64_t t0, int err)
{
	uint64_t now, waited;
	bool created = false;
	struct tfx_prof_rec *r;

	/* Refused before any wait (a bad deadline, a relock, too many readers). */
	if (err == EINVAL || err == EDEADLK || err == EAGAIN)
		return;
	now = tfx_prof_now();
	waited = now - t0;
	r = tfx_prof_find(lock, kind, true, &created);
	if (!r)
		return;
	if (created) {
		tfx_prof_take_stack(r, lock);
		/* The lock its holder took: counted as any later one. */
		if (kind != TFX_PROF_COND)
			tfx_prof_add(&r->locked, 1);
	}
	if (exclusive && !err) {
		tfx_prof_add_held(&r->contended, 1);
		tfx_prof_add_held(&r->wait_ns, waited);
		tfx_prof_max_held(&r->wait_max, waited);
	} else {
		tfx_prof_add(&r->contended, 1);
		tfx_prof_add(&r->wait_ns, waited);
		tfx_prof_max(&r->wait_max, waited);
	}
	if (kind == TFX_PROF_COND)
		tfx_prof_add(&r->locked, 1);
	else if (!err)
		tfx_prof_acquired(r, exclusive, now, true);
}

void tfx_prof_unlock_rec(const void *lock, enum tfx_prof_kind kind)
{
	struct tfx_prof_rec *r = tfx_prof_find(lock, kind, false, NULL);
	uint64_t since, held;

	if (!r)
		return;
	since = __atomic_load_n(&r->since, __ATOMIC_RELAXED);
	if (!since)
		return;
	__atomic_store_n(&r->since, 0, __ATOMIC_RELAXED);
	held = tfx_prof_now() - since;
	tfx_prof_add_held(&r->holds, 1);
	tfx_prof_add_held(&r->hold_ns, held);
	tfx_prof_max_held(&r->hold_max, held);
}

static const char *const tfx_prof_kinds[] = {
	[TFX_PROF_MUTEX] = "mutex",
	[TFX_PROF_RWLOCK] = "rwlock",
	[TFX_PROF_COND] = "cond",
};
_Static_assert(TFX_PROF_COND <= TFX_PROF_KIND_MASK, "kind in the key");

static enum tfx_prof_kind tfx_prof_kind(const struct tfx_prof_rec *r)
{
	return (enum tfx_prof_kind)(r->key & TFX_PROF_KIND_MASK);
}

static uintptr_t tfx_prof_addr(const struct tfx_prof_rec *r)
{
	return r->key & ~(uintptr_t)TFX_PROF_KIND_MASK;
}

/* The process's totals, the report's first line. */
struct tfx_prof_sum {
	uint64_t lock_wait, cond_wait, cpu, thread;
	size_t n;			/* records */
};

/* A record and its total wait as read once (a thread may still run). */
struct tfx_prof_ent {
	uint64_t wait;
	struct tfx_prof_rec *r;
};

/* The report as it is made: a buffer mapped for it, never grown. */
struct tfx_prof_out {
	char *p;
	size_t len, cap;
	bool names;		/* frames named with dladdr() */
};

/* Sift @v[@i] down a heap of @n entries, the least wait on top. */
static void tfx_prof_sift(struct tfx_prof_ent *v, size_t i, size_t n)
{
	struct tfx_prof_ent t;
	size_t c;

	while ((c = 2 * i + 1) < n) {
		if (c + 1 < n && v[c + 1].wait < v[c].wait)
			c++;
		if (v[i].wait <= v[c].wait)
			break;
		t = v[i];
		v[i] = v[c];
		v[c] = t;
		i = c;
	}
}

/* Most wait first: a heap sort, in place (qsort() may call malloc()). */
static void tfx_prof_sort(struct tfx_prof_ent *v, size_t n)
{
	struct tfx_prof_ent t;
	size_t i;

	for (i = n / 2; i-- > 0;)
		tfx_prof_sift(v, i, n);
	for (i = n; i-- > 1;) {
		t = v[0];
		v[0] = v[i];
		v[i] = t;
		tfx_prof_sift(v, 0, i);
	}
}

/* The records, most waited-on first (in tfx_prof_ents), and the totals. */
static struct tfx_prof_ent *tfx_prof_sorted(struct tfx_prof_sum *s)
{
	struct tfx_prof_ent *v = tfx_prof_ents;
	struct rusage ru;
	size_t i;

	memset(s, 0, sizeof(*s));
	for (i = 0; i < TFX_PROF_SLOTS; i++) {
		struct tfx_prof_rec *r = &tfx_prof_tab[i];
		uint64_t wait;

		if (!__atomic_load_n(&r->key, __ATOMIC_ACQUIRE))
			continue;
		wait = __atomic_load_n(&r->wait_ns, __ATOMIC_RELAXED);
		v[s->n++] = (struct tfx_prof_ent){ .wait = wait, .r = r };
		if (tfx_prof_kind(r) == TFX_PROF_COND)
			s->cond_wait += wait;
		else
			s->lock_wait += wait;
	}
	tfx_prof_sort(v, s->n);
	if (!getrusage(RUSAGE_SELF, &ru))
		s->cpu = ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) *
			 TOFUTEX_NSEC_PER_SEC +
			 ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000;
	s->thread = s->cpu + s->lock_wait + s->cond_wait;
	return v;
}

__attribute__((format(printf, 2, 3)))
static void tfx_prof_put(struct tfx_prof_out *o, const char *fmt, ...)
{
	size_t room = o->cap - o->len;
	va_list ap;
	int n;

	if (room <= 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->p + o->len, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len += (size_t)n < room ? (size_t)n : room - 1;
}

/*
 * Frame @pc as BINARY:FUNCTION+0xOFF when @o->names and dladdr() finds a
 * dynamic symbol, else BINARY+0xOFF (the address in the file, for
 * addr2line), into @buf; false for a frame of this library.
 * _dl_find_object() takes no lock; dladdr() takes the dynamic linker's.
 */
static bool tfx_prof_frame(const struct tfx_prof_out *o, void *pc, char *buf,
			   size_t len)
{
	struct dl_find_object fo, self;
	/* A return address: its call is the byte before. */
	char *at = (char *)pc - 1;
	const char *bin;
	Dl_info di;

	if (_dl_find_object(at, &fo) || !fo.dlfo_link_map) {
		snprintf(buf, len, "%p", pc);
		return true;
	}
	if (!_dl_find_object((void *)tfx_prof_frame, &self) &&
	    fo.dlfo_link_map == self.dlfo_link_map)
		return false;
	bin = strrchr(fo.dlfo_link_map->l_name, '/');
	bin = bin ? bin + 1 : fo.dlfo_link_map->l_name;
	if (!*bin)
		bin = program_invocation_short_name;
	if (o->names && dladdr(at, &di) && di.dli_sname)
		snprintf(buf, len, "%s:%s+0x%tx", bin, di.dli_sname,
			 (char *)pc - (char *)di.dli_saddr);
	else
		snprintf(buf, len, "%s+0x%" PRIxPTR, bin,
			 (uintptr_t)pc - (uintptr_t)fo.dlfo_link_map->l_addr);
	return true;
}

/*
 * The length of the UTF-8 sequence at @s (lead byte >= 0x80), or 0 when
 * it is not one (RFC 3629: no overlong forms, surrogates or values past
 * U+10FFFF).
 */
static size_t tfx_prof_utf8(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (*s >= 0xc2 && *s <= 0xdf)
		n = 2;
	else if (*s >= 0xe0 && *s <= 0xef)
		n = 3;
	else if (*s >= 0xf0 && *s <= 0xf4)
		n = 4;
	else
		return 0;
	if (*s == 0xe0)
		lo = 0xa0;
	else if (*s == 0xed)
		hi = 0x9f;
	else if (*s == 0xf0)
		lo = 0x90;
	else if (*s == 0xf4)
		hi = 0x8f;
	for (i = 1; i < n; i++, lo = 0x80, hi = 0xbf)
		if (s[i] < lo || s[i] > hi)
			return 0;
	return n;
}

/*
 * @s as a JSON string (names of files and symbols, which are bytes): a
 * byte that does not start valid UTF-8 is written as \u00XX (its
 * Latin-1 reading), so that the object is always valid JSON.
 */
static void tfx_prof_json_str(struct tfx_prof_out *o, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n;

	tfx_prof_put(o, "\"");
	while (*p) {
		if (*p == '"' || *p == '\\') {
			tfx_prof_put(o, "\\%c", *p++);
		} else if (*p < 0x20 || (*p >= 0x80 && !(n = tfx_prof_utf8(p)))) {
			tfx_prof_put(o, "\\u%04x", (unsigned int)*p++);
		} else if (*p < 0x80) {
			tfx_prof_put(o, "%c", *p++);
		} else {
			tfx_prof_put(o, "%.*s", (int)n, (const char *)p);
			p += n;
		}
	}
	tfx_prof_put(o, "\"");
}

/* Where @r was first contended: up to TFX_PROF_SHOWN frames. */
static void tfx_prof_frames(struct tfx_prof_out *o, const struct tfx_prof_rec *r)
{
	char buf[512];
	int i, shown = 0;

	for (i = 0; i < r->nframes && shown < TFX_PROF_SHOWN; i++) {
		if (!tfx_prof_frame(o, r->frames[i], buf, sizeof(buf)))
			continue;
		if (tfx_prof_json) {
			tfx_prof_put(o, "%s", shown ? ", " : "");
			tfx_prof_json_str(o, buf);
		} else {
			tfx_prof_put(o, "%s%s", shown ? " < " : "", buf);
		}
		shown++;
	}
}

static uint64_t tfx_prof_div(uint64_t a, uint64_t b)
{
	return b ? a / b : 0;
}

/* A number of the report as text (tfx_prof_fixed()). */
struct tfx_prof_num {
	char s[32];
};

/*
 * @num * @mul / @den (0 when @den is 0) with @decimals digits after a
 * '.', rounded: the report is read by programs, so its numbers do not
 * follow the program's locale (printf()'s %f writes a decimal comma
 * after setlocale(LC_ALL, "") in many).
 */
static const char *tfx_prof_fixed(struct tfx_prof_num *n, uint64_t num,
				  uint64_t mul, uint64_t den,
				  unsigned int decimals)
{
	unsigned __int128 v = 0, scale = 1;
	unsigned int i;

	for (i = 0; i < decimals; i++)
		scale *= 10;
	if (den)
		v = ((unsigned __int128)num * mul * scale + den / 2) / den;
	if (!decimals)
		snprintf(n->s, sizeof(n->s), "%" PRIu64, (uint64_t)v);
	else
		snprintf(n->s, sizeof(n->s), "%" PRIu64 ".%0*" PRIu64,
			 (uint64_t)(v / scale), (int)decimals,
			 (uint64_t)(v % scale));
	return n->s;
}

static void tfx_prof_json_rec(struct tfx_prof_out *o,
			      const struct tfx_prof_rec *r, size_t rank)
{
	tfx_prof_put(o, "%s{\"rank\": %zu, \"kind\": \"%s\", \"address\": \"%#" PRIxPTR "\", "
		     "\"locked\": %" PRIu64 ", \"contended\": %" PRIu64 ", "
		     "\"owner_changes\": %" PRIu64 ", \"wait_ns\": %" PRIu64 ", "
		     "\"wait_mean_ns\": %" PRIu64 ", \"wait_max_ns\": %" PRIu64 ", "
		     "\"holds\": %" PRIu64 ", \"hold_mean_ns\": %" PRIu64 ", "
		     "\"hold_max_ns\": %" PRIu64 ", \"first_contended\": [",
		     rank > 1 ? ", " : "", rank, tfx_prof_kinds[tfx_prof_kind(r)],
		     tfx_prof_addr(r),
		     r->locked, r->contended, r->changes, r->wait_ns,
		     tfx_prof_div(r->wait_ns, r->contended), r->wait_max, r->holds,
		     tfx_prof_div(r->hold_ns, r->holds), r->hold_max);
	tfx_prof_frames(o, r);
	tfx_prof_put(o, "]}");
}

static void tfx_prof_table_rec(struct tfx_prof_out *o,
			       const struct tfx_prof_rec *r, size_t rank)
{
	struct tfx_prof_num n[5];

	tfx_prof_put(o, "%3zu %-6s %#14" PRIxPTR " %9" PRIu64 " %9" PRIu64 " %8" PRIu64
		     " %10s %9s %9s %8s %9s  ",
		     rank, tfx_prof_kinds[tfx_prof_kind(r)], tfx_prof_addr(r),
		     r->locked, r->contended, r->changes,
		     tfx_prof_fixed(&n[0], r->wait_ns, 1, 1000000, 3),
		     tfx_prof_fixed(&n[1], tfx_prof_div(r->wait_ns, r->contended),
				    1, 1000, 1),
		     tfx_prof_fixed(&n[2], r->wait_max, 1, 1000, 1),
		     tfx_prof_fixed(&n[3], tfx_prof_div(r->hold_ns, r->holds),
				    1, 1000, 1),
		     tfx_prof_fixed(&n[4], r->hold_max, 1, 1000, 1));
	tfx_prof_frames(o, r);
	tfx_prof_put(o, "\n");
}

static void tfx_prof_head(struct tfx_prof_out *o, const struct tfx_prof_sum *s,
			  size_t shown)
{
	uint64_t dropped = __atomic_load_n(&tfx_prof_dropped, __ATOMIC_RELAXED);
	struct tfx_prof_num n[4];

	if (tfx_prof_json) {
		tfx_prof_put(o, "{\"program\": ");
		tfx_prof_json_str(o, program_invocation_short_name);
		tfx_prof_put(o, ", \"pid\": %d, \"contended_locks\": %zu, "
			     "\"unrecorded\": %" PRIu64 ", \"cpu_ns\": %" PRIu64 ", "
			     "\"lock_wait_ns\": %" PRIu64 ", \"cond_wait_ns\": %" PRIu64
			     ", \"thread_ns\": %" PRIu64 ", \"lock_wait_share\": %s, "
			     "\"locks\": [",
			     (int)getpid(), s->n, dropped, s->cpu, s->lock_wait,
			     s->cond_wait, s->thread,
			     tfx_prof_fixed(&n[0], s->lock_wait, 1, s->thread, 4));
		return;
	}
	tfx_prof_put(o, "tofutex-run: profile of %s[%d]: %zu contended locks and condition variables",
		     program_invocation_short_name, (int)getpid(), s->n);
	if (dropped)
		tfx_prof_put(o, " (%" PRIu64 " waits on locks not recorded: table full)",
			     dropped);
	tfx_prof_put(o, "; waiting on locks %s s, on condition variables %s s, of %s s thread time (CPU + waits): locks %s%%\n",
		     tfx_prof_fixed(&n[0], s->lock_wait, 1, TOFUTEX_NSEC_PER_SEC, 3),
		     tfx_prof_fixed(&n[1], s->cond_wait, 1, TOFUTEX_NSEC_PER_SEC, 3),
		     tfx_prof_fixed(&n[2], s->thread, 1, TOFUTEX_NSEC_PER_SEC, 3),
		     tfx_prof_fixed(&n[3], s->lock_wait, 100, s->thread, 1));
	if (shown)
		tfx_prof_put(o, "  # kind          address    locked contended  changes    wait ms   mean us    max us  hold us    max us  first contended at (%zu of %zu, most wait first)\n",
			     shown, s->n);
}

/* Room for the head and for each lock shown (frames escaped in JSON). */
#define TFX_PROF_HEAD_MAX	4096u
#define TFX_PROF_LINE_MAX	(256u + TFX_PROF_SHOWN * 2 * 512u)

void tfx_prof_print(bool names)
{
	struct tfx_prof_out o = { .names = names };
	struct tfx_prof_sum s;
	struct tfx_prof_ent *v;
	size_t i, shown;
	void *p;

	if (!__atomic_load_n(&tfx_prof_on, __ATOMIC_ACQUIRE) ||
	    !__atomic_load_n(&tofutex__tid_used, __ATOMIC_RELAXED))
		return;
	v = tfx_prof_sorted(&s);
	shown = tfx_prof_top && tfx_prof_top < s.n ? tfx_prof_top : s.n;
	o.cap = TFX_PROF_HEAD_MAX + shown * TFX_PROF_LINE_MAX;
	p = mmap(NULL, o.cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED)
		return;
	o.p = p;
	tfx_prof_head(&o, &s, shown);
	for (i = 0; i < shown; i++) {
		if (tfx_prof_json)
			tfx_prof_json_rec(&o, v[i].r, i + 1);
		else
			tfx_prof_table_rec(&o, v[i].r, i + 1);
	}
	if (tfx_prof_json)
		tfx_prof_put(&o, "]}\n");
	tfx_report_write(&tfx_prof_out, o.p, o.len);
	munmap(p, o.cap);
}

/* fork(): the child's locks are its own, counted from nothing. */
static void tfx_prof_child(void)
{
	(void)madvise(tfx_prof_tab, TFX_PROF_SLOTS * sizeof(*tfx_prof_tab),
		      MADV_DONTNEED);
	memset(tfx_prof_bloom, 0, sizeof(tfx_prof_bloom));
	tfx_prof_dropped = 0;
}

/*
 * TOFUTEX_PROFILE_TOP=@top: a number of locks, else the default kept and
 * the process says so.
 */
static void tfx_prof_set_top(const char *top)
{
	unsigned long v;
	char *end;

	if (!top || !*top)
		return;
	errno = 0;
	v = strtoul(top, &end, 10);
	if (errno || *end || top[0] < '0' || top[0] > '9' || v > UINT_MAX) {
		if (tfx_preloaded())
			fprintf(stderr, "tofutex-run: TOFUTEX_PROFILE_TOP=%s is not a number of locks; the report lists %u\n",
				top, tfx_prof_top);
		return;
	}
	tfx_prof_top = (unsigned int)v;
}

__attribute__((constructor)) static void tfx_prof_start(void)
{
	const char *env = secure_getenv("TOFUTEX_PROFILE");
	const char *top = secure_getenv("TOFUTEX_PROFILE_TOP");
	void *warm[2];
	size_t n;
	int err;

	if (!env || !*env || !strcmp(env, "0"))
		return;
	tfx_prof_set_top(top);
	n = strlen(env);
	tfx_prof_json = n > 5 && !strcmp(env + n - 5, ".json");
	err = tfx_report_open(&tfx_prof_out, "TOFUTEX_PROFILE", env,
			      false);
	if (err) {
		fprintf(stderr, "tofutex-run: TOFUTEX_PROFILE=%s: %s; no profile\n",
			env, strerror(err));
		return;
	}
	tfx_prof_tab = mmap(NULL, TFX_PROF_SLOTS * (sizeof(*tfx_prof_tab) +
						    sizeof(*tfx_prof_ents)),
			    PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);
	if (tfx_prof_tab == MAP_FAILED) {
		fprintf(stderr, "tofutex-run: TOFUTEX_PROFILE: %s; no profile\n",
			strerror(errno));
		return;
	}
	/*
	 * backtrace() loads libgcc's unwinder on its first call: do that
	 * here, not inside a contended lock.
	 */
	(void)backtrace(warm, 2);
	tfx_prof_ents = (struct tfx_prof_ent *)(tfx_prof_tab + TFX_PROF_SLOTS);
	pthread_atfork(NULL, NULL, tfx_prof_child);
	__atomic_store_n(&tfx_prof_on, true, __ATOMIC_RELEASE);
}
