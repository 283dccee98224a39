// SPDX-License-Identifier: GPL-2.0
/*
 * Threads that open a file and make a system call through syscall() at
 * once, so that shim.c's mutexes are contended from the first call on.
 * Prints "ok" and exits 0.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

static void *worker(void *arg)
{
	int i, fd;

	(void)arg;
	for (i = 0; i < 5; i++) {
		fd = open("/proc/self/stat", O_RDONLY);
		if (fd >= 0)
			close(fd);
		syscall(SYS_getpid);
	}
	return NULL;
}

int main(void)
{
	pthread_t t[4];
	int i;

	for (i = 0; i < 4; i++)
		if (pthread_create(&t[i], NULL, worker, NULL))
			return 1;
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	puts("ok");
	return 0;
}
