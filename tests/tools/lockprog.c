// SPDX-License-Identifier: GPL-2.0
/*
 * lockprog [race] - a threaded program for tests/tools/run.sh: four
 * threads take a mutex, a reader/writer lock and a condition variable a
 * fixed number of times and print what they counted, the same every
 * run. The main thread holds the mutex while it starts them, so their
 * first lock waits until it sleeps on the condition variable: every run
 * makes at least one wait. With "race", they also add to one counter
 * without a lock: a data race ThreadSanitizer reports (its exit status 66).
 * With "unsetenv", it first removes LD_PRELOAD from its environment, as a
 * program that cleans its environment does. With "dlsym", it also says
 * whether dlsym(RTLD_DEFAULT, "printf") finds printf.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 4
#define ROUNDS 20000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static unsigned long counted, read_sum, racy, done;
static int race;

static void *worker(void *arg)
{
	unsigned long i, seen;

	(void)arg;
	for (i = 0; i < ROUNDS; i++) {
		pthread_mutex_lock(&lock);
		counted++;
		pthread_mutex_unlock(&lock);
		if (i % 8 == 0) {
			pthread_rwlock_wrlock(&rw);
			read_sum++;
			pthread_rwlock_unlock(&rw);
		} else {
			pthread_rwlock_rdlock(&rw);
			seen = read_sum;
			pthread_rwlock_unlock(&rw);
			(void)seen;
		}
		if (race)
			racy++;
	}
	pthread_mutex_lock(&lock);
	done++;
	pthread_cond_broadcast(&turn);
	pthread_mutex_unlock(&lock);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[THREADS];
	int i;

	race = argc > 1 && !strcmp(argv[1], "race");
	/* As a program that cleans its environment before it locks. */
	if (argc > 1 && !strcmp(argv[1], "unsetenv"))
		unsetenv("LD_PRELOAD");
	pthread_mutex_lock(&lock);
	for (i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, worker, NULL))
			return 1;
	while (done < THREADS)
		pthread_cond_wait(&turn, &lock);
	pthread_mutex_unlock(&lock);
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	printf("counted %lu, written %lu\n", counted, read_sum);
	if (argc > 1 && !strcmp(argv[1], "dlsym"))
		printf("dlsym: printf %s\n",
		       dlsym(RTLD_DEFAULT, "printf") == (void *)printf ?
		       "found" : "not found");
	return counted == THREADS * ROUNDS ? 0 : 3;
}
