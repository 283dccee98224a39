// SPDX-License-Identifier: GPL-2.0
/*
 * sqlite-threads THREADS SECONDS - SQLite in serialized mode, THREADS
 * threads on one shared connection: the lock-bound programs table's
 * SQLite row (bench/programs-native.sh, tests/programs/run.sh).
 *
 * The connection is opened with SQLITE_OPEN_FULLMUTEX, so every call
 * takes the connection's own mutex, a recursive pthread mutex inside
 * Debian's libsqlite3: that mutex is the lock measured, stock or under
 * tofutex-run. Each thread runs, until SECONDS have passed, point reads
 * of a 10,000-row in-memory table and one update in ten (n = n + 1 of a
 * random row), each operation timed.
 *
 * Prints one line:
 *   sqlite-threads threads=T ops=N secs=S ops/s=X p99_us=P
 * and exits 1 when the table's sum of n differs from the updates the
 * threads counted (a lost or doubled update: the mutex failed), or on any
 * SQLite error.
 *
 * Lifetimes: the connection and the statements live for the whole run;
 * each thread prepares its own two statements and finalizes them before
 * it returns. The histogram of each thread is its own; main() merges
 * them after joining.
 */
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROWS 10000
#define MAX_THREADS 256
/* Latency histogram: 8 sub-buckets per power of two of nanoseconds. */
#define SUB 8
#define NBUCKET (64 * SUB)

struct worker {
	pthread_t thread;
	unsigned int seed;
	uint64_t ops;
	uint64_t updates;
	uint64_t hist[NBUCKET];
	int failed;
};

static sqlite3 *db;
static atomic_int stop;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static unsigned int bucket(uint64_t ns)
{
	unsigned int log = 0;

	while (ns >> log >= 2 * SUB)
		log++;
	/* Below 2 * SUB ns one bucket per nanosecond; above, SUB per octave. */
	return log * SUB + (unsigned int)(ns >> log);
}

static uint64_t bucket_ns(unsigned int b)
{
	unsigned int log;

	if (b < 2 * SUB)
		return b;
	log = b / SUB - 1;
	return (uint64_t)(b - log * SUB) << log;
}

/* step: run one statement to its end; 0, or -1 after printing why. */
static int step(sqlite3_stmt *st)
{
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		;
	sqlite3_reset(st);
	if (rc == SQLITE_DONE)
		return 0;
	fprintf(stderr, "sqlite-threads: %s\n", sqlite3_errstr(rc));
	return -1;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	sqlite3_stmt *get = NULL, *put = NULL;

	if (sqlite3_prepare_v2(db, "SELECT n, v FROM t WHERE k = ?", -1, &get, NULL) ||
	    sqlite3_prepare_v2(db, "UPDATE t SET n = n + 1 WHERE k = ?", -1, &put, NULL)) {
		fprintf(stderr, "sqlite-threads: prepare: %s\n", sqlite3_errmsg(db));
		w->failed = 1;
		goto out;
	}
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		int update = rand_r(&w->seed) % 10 == 0;
		sqlite3_stmt *st = update ? put : get;
		uint64_t t0 = now_ns();

		sqlite3_bind_int(st, 1, rand_r(&w->seed) % ROWS);
		if (step(st)) {
			w->failed = 1;
			break;
		}
		w->hist[bucket(now_ns() - t0)]++;
		w->ops++;
		w->updates += update;
	}
out:
	sqlite3_finalize(get);
	sqlite3_finalize(put);
	return NULL;
}

static int setup(void)
{
	char sql[128];
	int i;

	if (sqlite3_open_v2(":memory:", &db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL))
		return -1;
	if (sqlite3_exec(db, "CREATE TABLE t (k INTEGER PRIMARY KEY, n INTEGER, v TEXT);"
			 "BEGIN", NULL, NULL, NULL))
		return -1;
	for (i = 0; i < ROWS; i++) {
		snprintf(sql, sizeof(sql), "INSERT INTO t VALUES (%d, 0, 'value %d')", i, i);
		if (sqlite3_exec(db, sql, NULL, NULL, NULL))
			return -1;
	}
	return sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) ? -1 : 0;
}

/* sum_n: the table's sum of n, or -1. */
static long long sum_n(void)
{
	sqlite3_stmt *st;
	long long sum = -1;

	if (sqlite3_prepare_v2(db, "SELECT sum(n) FROM t", -1, &st, NULL))
		return -1;
	if (sqlite3_step(st) == SQLITE_ROW)
		sum = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return sum;
}

static struct worker workers[MAX_THREADS];

int main(int argc, char **argv)
{
	uint64_t hist[NBUCKET] = { 0 }, ops = 0, updates = 0, seen = 0, t0, t1;
	struct timespec len;
	double secs;
	int n, i, b, failed = 0;

	if (argc != 3 || (n = atoi(argv[1])) < 1 || n > MAX_THREADS || atof(argv[2]) <= 0) {
		fprintf(stderr, "usage: sqlite-threads THREADS(1-%d) SECONDS\n", MAX_THREADS);
		return 2;
	}
	if (!sqlite3_threadsafe() || setup()) {
		fprintf(stderr, "sqlite-threads: setup: %s\n",
			db ? sqlite3_errmsg(db) : "not a thread-safe SQLite");
		return 1;
	}
	secs = atof(argv[2]);
	len.tv_sec = (time_t)secs;
	len.tv_nsec = (long)((secs - (double)len.tv_sec) * 1e9);
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		workers[i].seed = (unsigned int)i * 2654435761u + 1;
		errno = pthread_create(&workers[i].thread, NULL, work, &workers[i]);
		if (errno) {
			perror("sqlite-threads: pthread_create");
			return 1;
		}
	}
	while (nanosleep(&len, &len) && errno == EINTR)
		;
	atomic_store(&stop, 1);
	for (i = 0; i < n; i++) {
		pthread_join(workers[i].thread, NULL);
		ops += workers[i].ops;
		updates += workers[i].updates;
		failed |= workers[i].failed;
		for (b = 0; b < NBUCKET; b++)
			hist[b] += workers[i].hist[b];
	}
	t1 = now_ns();
	for (b = 0; b < NBUCKET - 1 && (seen += hist[b]) < ops - ops / 100; b++)
		;
	secs = (double)(t1 - t0) / 1e9;
	printf("sqlite-threads threads=%d ops=%llu secs=%.3f ops/s=%.0f p99_us=%.1f\n", n,
	       (unsigned long long)ops, secs, (double)ops / secs, (double)bucket_ns(b + 1) / 1e3);
	if (sum_n() != (long long)updates) {
		fprintf(stderr, "sqlite-threads: sum(n) %lld, updates %llu\n", sum_n(),
			(unsigned long long)updates);
		failed = 1;
	}
	sqlite3_close(db);
	return failed;
}
