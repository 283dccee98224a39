// SPDX-License-Identifier: GPL-2.0
/*
 * test_device - the misc device and the ABI rules every ioctl shares,
 * through raw ioctl() calls on /dev/tofutex (no libtofutex).
 *
 * The module-unload test runs only when TOFUTEX_KO names the module file
 * (the QEMU harness sets it): it unloads and reloads tofutex, which on a
 * real host would pull the module from under other users.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/sysmacros.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tofutex/uapi.h>

#define DEV_PATH	"/dev/" TOFUTEX_DEVICE_NAME
#define SYSFS_MODULE	"/sys/module/tofutex"

#define KNOWN_FEATURES (TOFUTEX_FEAT_VERSION | TOFUTEX_FEAT_LOCK |	\
			TOFUTEX_FEAT_WAITWAKE | TOFUTEX_FEAT_SWAP |	\
			TOFUTEX_FEAT_STATS | TOFUTEX_FEAT_CLOCK_REALTIME | \
			TOFUTEX_FEAT_REQUEUE | TOFUTEX_FEAT_RWLOCK | \
			TOFUTEX_FEAT_NO_OWNER_POLL | TOFUTEX_FEAT_RW_RESERVE | \
			TOFUTEX_FEAT_REOPEN)

static int open_dev(void)
{
	int fd = open(DEV_PATH, O_RDWR | O_CLOEXEC);

	ck_assert_msg(fd >= 0, "open(%s): %s", DEV_PATH, strerror(errno));
	return fd;
}

/* ioctl() that returns the errno it failed with, 0 on success. */
static int ioctl_err(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) == 0 ? 0 : errno;
}

/* ioctl(@fd, @cmd, @arg) must fail with @want (0: must succeed). */
#define EXPECT_ERR(fd, cmd, arg, want)					\
	do {								\
		int e_ = ioctl_err(fd, cmd, arg);			\
		ck_assert_msg(e_ == (want), "ioctl(%s, %s): %s, want %s", \
			      #cmd, #arg, e_ ? strerror(e_) : "success",	\
			      (want) ? strerror(want) : "success");	\
	} while (0)

static struct tofutex_version version_of(int fd)
{
	struct tofutex_version v;

	memset(&v, 0, sizeof(v));
	ck_assert_msg(ioctl(fd, TOFUTEX_IOC_VERSION, &v) == 0,
		      "TOFUTEX_IOC_VERSION: %s", strerror(errno));
	return v;
}

/* Two pages, the second PROT_NONE: an argument can end in a hole. */
static char *map_with_hole(void)
{
	long page = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ck_assert(p != MAP_FAILED);
	ck_assert(mprotect(p + page, (size_t)page, PROT_NONE) == 0);
	return p;
}

START_TEST(test_open_close)
{
	struct stat st;
	int fd1, fd2;

	ck_assert_msg(stat(DEV_PATH, &st) == 0, "stat: %s", strerror(errno));
	ck_assert(S_ISCHR(st.st_mode));
	/* Every operation acts only on the caller's own state. */
	ck_assert_uint_eq(st.st_mode & 07777, 0666);

	fd1 = open_dev();
	fd2 = open_dev();
	ck_assert_uint_eq(version_of(fd1).abi_version, TOFUTEX_ABI_VERSION);
	ck_assert_uint_eq(version_of(fd2).abi_version, TOFUTEX_ABI_VERSION);
	ck_assert_int_eq(close(fd1), 0);
	/* The process's other descriptor is unaffected by the close. */
	ck_assert_uint_eq(version_of(fd2).abi_version, TOFUTEX_ABI_VERSION);
	ck_assert_int_eq(close(fd2), 0);

	/* Read-only and write-only opens work as well: ioctls need neither. */
	fd1 = open(DEV_PATH, O_RDONLY | O_CLOEXEC);
	ck_assert_msg(fd1 >= 0, "open O_RDONLY: %s", strerror(errno));
	ck_assert_uint_eq(version_of(fd1).abi_version, TOFUTEX_ABI_VERSION);
	ck_assert_int_eq(close(fd1), 0);
}
END_TEST

START_TEST(test_open_unprivileged)
{
	pid_t pid = fork();
	int status;

	ck_assert(pid >= 0);
	if (pid == 0) {
		struct tofutex_version v;
		int fd;

		/* As root, become nobody; otherwise we already are not root. */
		if (geteuid() == 0 && (setgid(65534) || setuid(65534)))
			_exit(10);
		fd = open(DEV_PATH, O_RDWR);
		if (fd < 0)
			_exit(11);
		memset(&v, 0, sizeof(v));
		if (ioctl(fd, TOFUTEX_IOC_VERSION, &v) ||
		    v.abi_version != TOFUTEX_ABI_VERSION)
			_exit(12);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "unprivileged child: status %#x (10 setuid, 11 open, 12 ioctl)",
		      status);
}
END_TEST

START_TEST(test_version)
{
	struct tofutex_version v;
	int fd = open_dev();

	/* abi_version and features are output only: input values are ignored. */
	memset(&v, 0, sizeof(v));
	v.abi_version = 0xdeadbeef;
	v.features = ~0ULL;
	EXPECT_ERR(fd, TOFUTEX_IOC_VERSION, &v, 0);
	ck_assert_uint_eq(v.abi_version, TOFUTEX_ABI_VERSION);
	ck_assert_msg(v.features & TOFUTEX_FEAT_VERSION,
		      "features %#llx lack TOFUTEX_FEAT_VERSION",
		      (unsigned long long)v.features);
	ck_assert_msg(!(v.features & ~KNOWN_FEATURES),
		      "features %#llx has bits this header does not define",
		      (unsigned long long)v.features);
	ck_assert_uint_eq(v.flags, 0);
	ck_assert_uint_eq(v.reserved[0], 0);
	ck_assert_uint_eq(v.reserved[1], 0);
	/* STATS is reported because it is there. */
	ck_assert(v.features & TOFUTEX_FEAT_STATS);
	close(fd);
}
END_TEST

START_TEST(test_unknown_ioctl)
{
	static const unsigned long cmds[] = {
		0,
		_IO(TOFUTEX_IOC_MAGIC, 0x3f),
		_IOWR(TOFUTEX_IOC_MAGIC, 0xff, struct tofutex_version),
		/* VERSION's number with the wrong direction or size. */
		_IOR(TOFUTEX_IOC_MAGIC, 0x00, struct tofutex_version),
		_IOW(TOFUTEX_IOC_MAGIC, 0x00, struct tofutex_version),
		_IOWR(TOFUTEX_IOC_MAGIC, 0x00, __u64),
		_IOWR(TOFUTEX_IOC_MAGIC, 0x06, struct tofutex_version),
		/* Another driver's number. */
		_IOWR('T', 0x00, struct tofutex_version),
	};
	struct tofutex_stats arg;
	int fd = open_dev();
	size_t i;
	int e;

	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		memset(&arg, 0, sizeof(arg));
		e = ioctl_err(fd, cmds[i], &arg);
		ck_assert_msg(e == ENOTTY, "cmd %#lx: %s, want ENOTTY",
			      cmds[i], e ? strerror(e) : "success");
	}
	close(fd);
}
END_TEST

START_TEST(test_efault)
{
	long page = sysconf(_SC_PAGESIZE);
	char *hole = map_with_hole();
	struct tofutex_version *ro;
	int fd = open_dev();

	EXPECT_ERR(fd, TOFUTEX_IOC_VERSION, NULL, EFAULT);
	EXPECT_ERR(fd, TOFUTEX_IOC_VERSION, (void *)1, EFAULT);
	EXPECT_ERR(fd, TOFUTEX_IOC_VERSION, hole + page, EFAULT);
	/* The struct's last 8 bytes are in the hole. */
	memset(hole, 0, (size_t)page);
	EXPECT_ERR(fd, TOFUTEX_IOC_VERSION,
		   hole + page - sizeof(struct tofutex_version) + 8, EFAULT);
	/* Kernel addresses are not user memory. */
	EXPECT_ERR(fd, TOFUTEX_IOC_VERSION, (void *)0xffffffff81000000UL,
		   EFAULT);

	/* Readable but not writable: the query is read, the answer cannot be. */
	ro = mmap(NULL, (size_t)page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
		  -1, 0);
	ck_assert(ro != MAP_FAILED);
	EXPECT_ERR(fd, TOFUTEX_IOC_VERSION, ro, EFAULT);
	ck_assert_uint_eq(ro->abi_version, 0);

	EXPECT_ERR(fd, TOFUTEX_IOC_STATS, NULL, EFAULT);
	EXPECT_ERR(fd, TOFUTEX_IOC_STATS,
		   hole + page - sizeof(struct tofutex_stats) + 8, EFAULT);
	EXPECT_ERR(fd, TOFUTEX_IOC_STATS, ro, EFAULT);

	/* The descriptor is still fine after all of that. */
	ck_assert_uint_eq(version_of(fd).abi_version, TOFUTEX_ABI_VERSION);
	munmap(ro, (size_t)page);
	munmap(hole, 2 * (size_t)page);
	close(fd);
}
END_TEST

START_TEST(test_version_einval)
{
	struct tofutex_version v;
	int fd = open_dev();
	int bit, e;

	for (bit = 0; bit < 32; bit++) {
		memset(&v, 0, sizeof(v));
		v.flags = 1U << bit;
		e = ioctl_err(fd, TOFUTEX_IOC_VERSION, &v);
		ck_assert_msg(e == EINVAL, "flags %#x: %s, want EINVAL",
			      v.flags, e ? strerror(e) : "success");
	}
	memset(&v, 0, sizeof(v));
	v.reserved[0] = 1;
	EXPECT_ERR(fd, TOFUTEX_IOC_VERSION, &v, EINVAL);
	memset(&v, 0, sizeof(v));
	v.reserved[1] = 1ULL << 63;
	EXPECT_ERR(fd, TOFUTEX_IOC_VERSION, &v, EINVAL);
	/* A rejected query answers nothing. */
	ck_assert_uint_eq(v.abi_version, 0);
	ck_assert_uint_eq(v.features, 0);
	close(fd);
}
END_TEST

START_TEST(test_stats)
{
	struct tofutex_stats st;
	int fd = open_dev();

	/*
	 * Check runs each test in a fresh child process that has not used
	 * tofutex: its own counters must all be zero.
	 */
	memset(&st, 0xa5, sizeof(st));
	st.flags = TOFUTEX_STATS_PROCESS;
	st.pad = 0;
	memset(st.reserved, 0, sizeof(st.reserved));
	EXPECT_ERR(fd, TOFUTEX_IOC_STATS, &st, 0);
	ck_assert_uint_eq(st.flags, TOFUTEX_STATS_PROCESS);
	ck_assert_uint_eq(st.pad, 0);
	if (strcmp(getenv("CK_FORK") ? getenv("CK_FORK") : "", "no") != 0) {
		ck_assert_uint_eq(st.lock_calls, 0);
		ck_assert_uint_eq(st.unlock_calls, 0);
		ck_assert_uint_eq(st.spins, 0);
		ck_assert_uint_eq(st.sleeps, 0);
		ck_assert_uint_eq(st.steals, 0);
		ck_assert_uint_eq(st.handoffs, 0);
		ck_assert_uint_eq(st.owner_deaths, 0);
		ck_assert_uint_eq(st.timeouts, 0);
		ck_assert_uint_eq(st.wait_calls, 0);
		ck_assert_uint_eq(st.wake_calls, 0);
		ck_assert_uint_eq(st.swap_calls, 0);
	}
	ck_assert_uint_eq(st.live_states, 0);
	ck_assert_uint_eq(st.reserved[0] | st.reserved[1] | st.reserved[2], 0);

	memset(&st, 0, sizeof(st));
	st.flags = TOFUTEX_STATS_GLOBAL;
	EXPECT_ERR(fd, TOFUTEX_IOC_STATS, &st, 0);
	ck_assert_uint_eq(st.flags, TOFUTEX_STATS_GLOBAL);
	ck_assert_uint_eq(st.reserved[0] | st.reserved[1] | st.reserved[2], 0);
	close(fd);
}
END_TEST

START_TEST(test_stats_einval)
{
	static const __u32 bad_scopes[] = { 2, 3, 0x80000000U, 0xffffffffU };
	struct tofutex_stats st;
	int fd = open_dev();
	size_t i;
	int e;

	for (i = 0; i < sizeof(bad_scopes) / sizeof(bad_scopes[0]); i++) {
		memset(&st, 0, sizeof(st));
		st.flags = bad_scopes[i];
		e = ioctl_err(fd, TOFUTEX_IOC_STATS, &st);
		ck_assert_msg(e == EINVAL, "scope %#x: %s, want EINVAL",
			      bad_scopes[i], e ? strerror(e) : "success");
	}
	memset(&st, 0, sizeof(st));
	st.pad = 1;
	EXPECT_ERR(fd, TOFUTEX_IOC_STATS, &st, EINVAL);
	for (i = 0; i < (int)(sizeof(st.reserved) / sizeof(st.reserved[0])); i++) {
		memset(&st, 0, sizeof(st));
		st.flags = TOFUTEX_STATS_GLOBAL;
		st.reserved[i] = 1;
		EXPECT_ERR(fd, TOFUTEX_IOC_STATS, &st, EINVAL);
	}
	close(fd);
}
END_TEST

START_TEST(test_fork_ebadfd)
{
	struct tofutex_version v;
	int fd = open_dev();
	int status;
	pid_t pid;

	ck_assert_uint_eq(version_of(fd).abi_version, TOFUTEX_ABI_VERSION);
	pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		struct tofutex_stats st;
		int own;

		/* The inherited descriptor belongs to the parent's process. */
		memset(&v, 0, sizeof(v));
		if (ioctl(fd, TOFUTEX_IOC_VERSION, &v) != -1 || errno != EBADFD)
			_exit(10);
		memset(&st, 0, sizeof(st));
		if (ioctl(fd, TOFUTEX_IOC_STATS, &st) != -1 || errno != EBADFD)
			_exit(11);
		/* Even a command the module does not know: EBADFD first. */
		if (ioctl(fd, _IO(TOFUTEX_IOC_MAGIC, 0x3f)) != -1 ||
		    errno != EBADFD)
			_exit(12);
		/* Its own descriptor works. */
		own = open(DEV_PATH, O_RDWR);
		if (own < 0)
			_exit(13);
		memset(&v, 0, sizeof(v));
		if (ioctl(own, TOFUTEX_IOC_VERSION, &v) ||
		    v.abi_version != TOFUTEX_ABI_VERSION)
			_exit(14);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child: status %#x (10/11/12: inherited fd not EBADFD, "
		      "13/14: own fd failed)", status);
	/* The parent's descriptor still works, during and after the child. */
	ck_assert_uint_eq(version_of(fd).abi_version, TOFUTEX_ABI_VERSION);
	close(fd);
}
END_TEST

/* TOFUTEX_IOC_REOPEN through @fd: the new descriptor, or -errno. */
static int reopen(int fd, unsigned long flags)
{
	int ret = ioctl(fd, TOFUTEX_IOC_REOPEN, flags);

	return ret >= 0 ? ret : -errno;
}

static bool works(int fd)
{
	struct tofutex_version v;

	memset(&v, 0, sizeof(v));
	return ioctl(fd, TOFUTEX_IOC_VERSION, &v) == 0 &&
	       v.abi_version == TOFUTEX_ABI_VERSION;
}

START_TEST(test_reopen_own)
{
	int fd = open_dev();
	int fd2, fd3;

	ck_assert(version_of(fd).features & TOFUTEX_FEAT_REOPEN);
	fd2 = reopen(fd, O_CLOEXEC);
	ck_assert_msg(fd2 >= 0, "REOPEN: %s", strerror(-fd2));
	ck_assert_int_ne(fd2, fd);
	ck_assert(works(fd2));
	ck_assert_int_eq(fcntl(fd2, F_GETFD), FD_CLOEXEC);
	fd3 = reopen(fd2, 0);
	ck_assert_msg(fd3 >= 0, "REOPEN: %s", strerror(-fd3));
	ck_assert_int_eq(fcntl(fd3, F_GETFD), 0);
	ck_assert_int_eq(fcntl(fd3, F_GETFL) & O_ACCMODE, O_RDWR);
	/* Each is a file of its own: closing one leaves the others working. */
	ck_assert_int_eq(close(fd), 0);
	ck_assert(works(fd2) && works(fd3));
	ck_assert_int_eq(reopen(fd2, O_NONBLOCK), -EINVAL);
	ck_assert_int_eq(reopen(fd2, O_CLOEXEC | 1), -EINVAL);
	ck_assert_int_eq(reopen(fd2, ~0UL), -EINVAL);
	close(fd2);
	close(fd3);
}
END_TEST

/*
 * A fork() child: the inherited descriptor refuses everything else with
 * EBADFD but gives the child its own, which works where the device cannot
 * be opened by name (a chroot without /dev, when root can make one).
 */
START_TEST(test_reopen_fork_child)
{
	char dir[] = "/tmp/tofutex-reopen-XXXXXX";
	int fd = open_dev();
	bool root = geteuid() == 0;
	int status;
	pid_t pid;

	ck_assert(mkdtemp(dir) != NULL);
	pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		int own, own2;

		if (works(fd) || errno != EBADFD)
			_exit(10);
		if (root) {
			if (chroot(dir) || chdir("/"))
				_exit(11);
			if (open(DEV_PATH, O_RDWR) >= 0 || errno != ENOENT)
				_exit(12);
		}
		own = reopen(fd, O_CLOEXEC);
		if (own < 0)
			_exit(13);
		if (!works(own) || works(fd))
			_exit(14);
		/* The parent's may go: the child's is independent of it. */
		close(fd);
		if (!works(own))
			_exit(15);
		/* From one's own, too. */
		own2 = reopen(own, 0);
		if (own2 < 0 || !works(own2))
			_exit(16);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	rmdir(dir);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child: status %#x (10 inherited fd not EBADFD, 11 chroot, "
		      "12 device found in the chroot, 13 REOPEN failed, 14/15 "
		      "its descriptor, 16 REOPEN of its own)", status);
	ck_assert(works(fd));
	close(fd);
	if (!root)
		printf("test_reopen_fork_child: not root: no chroot case\n");
}
END_TEST

/*
 * The caller needs the node's permission, as open(2) would check it: a
 * descriptor of a 0600 root-owned node (a private node of the same
 * device) gives a process that dropped to nobody no new descriptor.
 * Also EMFILE when the caller has no descriptor left.
 */
START_TEST(test_reopen_permission)
{
	char dir[] = "/tmp/tofutex-node-XXXXXX";
	char node[64];
	struct stat st;
	int fd, status;
	pid_t pid;

	if (geteuid() != 0) {
		printf("test_reopen_permission: not root: skipped\n");
		return;
	}
	ck_assert(stat(DEV_PATH, &st) == 0);
	ck_assert(mkdtemp(dir) != NULL);
	snprintf(node, sizeof(node), "%s/node", dir);
	ck_assert_msg(mknod(node, S_IFCHR | 0600, st.st_rdev) == 0, "mknod: %s",
		      strerror(errno));
	ck_assert(chmod(dir, 0755) == 0);
	fd = open(node, O_RDWR | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "open %s: %s", node, strerror(errno));
	ck_assert(works(fd));
	pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = { 0, 0 };
		int err;

		if (setgid(65534) || setuid(65534))
			_exit(10);
		err = reopen(fd, O_CLOEXEC);
		if (err != -EACCES)
			_exit(err >= 0 ? 11 : 12);
		/* The 0666 node is the nobody's to open, and so to reopen. */
		fd = open(DEV_PATH, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			_exit(13);
		if (setrlimit(RLIMIT_NOFILE, &rl))
			_exit(14);
		if (reopen(fd, O_CLOEXEC) != -EMFILE)
			_exit(15);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	unlink(node);
	rmdir(dir);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child: status %#x (10 setuid, 11 REOPEN of a 0600 node "
		      "succeeded, 12 failed other than EACCES, 13 open, 14 "
		      "setrlimit, 15 not EMFILE)", status);
	close(fd);
}
END_TEST

/*
 * A node on a mount that no longer allows devices (remounted nodev after
 * the open) gives no new descriptor, as open(2) of it would fail.
 */
START_TEST(test_reopen_nodev)
{
	char dir[] = "/tmp/tofutex-nodev-XXXXXX";
	char node[64];
	struct stat st;
	int fd, fd2;

	if (geteuid() != 0) {
		printf("test_reopen_nodev: not root: skipped\n");
		return;
	}
	ck_assert(stat(DEV_PATH, &st) == 0);
	ck_assert(mkdtemp(dir) != NULL);
	ck_assert_msg(mount("tofutex-nodev", dir, "tmpfs", 0, NULL) == 0,
		      "mount tmpfs: %s", strerror(errno));
	snprintf(node, sizeof(node), "%s/node", dir);
	ck_assert(mknod(node, S_IFCHR | 0666, st.st_rdev) == 0);
	fd = open(node, O_RDWR | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "open %s: %s", node, strerror(errno));
	fd2 = reopen(fd, O_CLOEXEC);
	ck_assert_msg(fd2 >= 0 && works(fd2), "REOPEN: %s", strerror(-fd2));
	close(fd2);
	ck_assert_msg(mount(NULL, dir, NULL, MS_REMOUNT | MS_NODEV, NULL) == 0,
		      "remount nodev: %s", strerror(errno));
	ck_assert_int_eq(open(node, O_RDWR), -1);
	ck_assert_int_eq(errno, EACCES);
	fd2 = reopen(fd, O_CLOEXEC);
	close(fd);
	umount2(dir, MNT_DETACH);
	rmdir(dir);
	ck_assert_msg(fd2 == -EACCES, "REOPEN on a nodev mount: %s",
		      fd2 >= 0 ? "a descriptor" : strerror(-fd2));
}
END_TEST

static int delete_module(const char *name)
{
	return syscall(SYS_delete_module, name, O_NONBLOCK) == 0 ? 0 : errno;
}

static int load_module(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int err;

	if (fd < 0)
		return errno;
	err = syscall(SYS_finit_module, fd, "", 0) == 0 ? 0 : errno;
	close(fd);
	return err;
}

static long module_refcnt(void)
{
	FILE *f = fopen(SYSFS_MODULE "/refcnt", "r");
	long n = -1;

	if (f) {
		if (fscanf(f, "%ld", &n) != 1)
			n = -1;
		fclose(f);
	}
	return n;
}

/*
 * Whatever happened in the test, leave the module loaded for what runs
 * next. An unchecked fixture runs in Check's runner process, so it runs
 * even when a failed assertion ended the test's child early.
 */
static void reload_teardown(void)
{
	const char *ko = getenv("TOFUTEX_KO");

	if (ko && access(SYSFS_MODULE, F_OK) != 0)
		load_module(ko);
}

START_TEST(test_rmmod_while_open)
{
	const char *ko = getenv("TOFUTEX_KO");
	struct stat st;
	int fd;

	fd = open_dev();
	ck_assert_msg(module_refcnt() >= 1, "refcnt %ld with a descriptor open",
		      module_refcnt());
	ck_assert_int_eq(delete_module("tofutex"), EWOULDBLOCK);
	ck_assert_int_eq(access(SYSFS_MODULE, F_OK), 0);
	ck_assert_uint_eq(version_of(fd).abi_version, TOFUTEX_ABI_VERSION);

	ck_assert_int_eq(close(fd), 0);
	ck_assert_int_eq(delete_module("tofutex"), 0);
	ck_assert_int_ne(access(SYSFS_MODULE, F_OK), 0);
	ck_assert_msg(stat(DEV_PATH, &st) != 0 && errno == ENOENT,
		      "%s still exists after unload", DEV_PATH);

	ck_assert_int_eq(load_module(ko), 0);
	fd = open_dev();
	ck_assert_uint_eq(version_of(fd).abi_version, TOFUTEX_ABI_VERSION);
	close(fd);
}
END_TEST

static Suite *device_suite(void)
{
	Suite *s = suite_create("device");
	TCase *tc = tcase_create("abi");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_open_close);
	tcase_add_test(tc, test_open_unprivileged);
	tcase_add_test(tc, test_version);
	tcase_add_test(tc, test_unknown_ioctl);
	tcase_add_test(tc, test_efault);
	tcase_add_test(tc, test_version_einval);
	tcase_add_test(tc, test_stats);
	tcase_add_test(tc, test_stats_einval);
	tcase_add_test(tc, test_fork_ebadfd);
	tcase_add_test(tc, test_reopen_own);
	tcase_add_test(tc, test_reopen_fork_child);
	tcase_add_test(tc, test_reopen_permission);
	tcase_add_test(tc, test_reopen_nodev);
	suite_add_tcase(s, tc);

	if (getenv("TOFUTEX_KO")) {
		tc = tcase_create("unload");
		tcase_set_timeout(tc, 30);
		tcase_add_unchecked_fixture(tc, NULL, reload_teardown);
		tcase_add_test(tc, test_rmmod_while_open);
		suite_add_tcase(s, tc);
	} else {
		printf("test_device: TOFUTEX_KO is not set: the unload test "
		       "(rmmod refused while open) is not run\n");
	}
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(device_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
