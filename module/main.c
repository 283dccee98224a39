// SPDX-License-Identifier: GPL-2.0
/*
 * tofutex - the misc device /dev/tofutex and its ioctl dispatch.
 *
 * Lifetime and serialisation of what this file owns:
 *
 * - The misc device is registered at module load and deregistered at
 *   unload. Because it has .owner = THIS_MODULE, every open file holds a
 *   module reference, so the module cannot be unloaded while any descriptor
 *   is open, and no ioctl can run after tofutex_exit() starts.
 *
 * - Each open file holds one reference on the process table of the process
 *   (thread group and address space) that opened it (file->private_data,
 *   see table.c). The reference is taken in tofutex_open() and dropped in
 *   tofutex_release(); the VFS guarantees that no ioctl on the file runs
 *   after release.
 *
 * - Every ioctl first checks that the caller is a thread of that process.
 *   A descriptor that reached another process (fork(), SCM_RIGHTS, a
 *   clone(CLONE_VM) child that is not a thread, the same thread group after
 *   execve()) fails with -EBADFD, so no process can reach another
 *   process's lock states through tofutex. The one exception is
 *   TOFUTEX_IOC_REOPEN, which touches no table: it opens a new file of the
 *   device for the caller, bound to the caller's own process.
 *
 * Nothing in this file sleeps other than copy_{from,to}_user() and what the
 * individual operations document.
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/sched/mm.h>
#include <linux/sysfs.h>
#include <linux/uaccess.h>

#include "tofutex.h"

#define TOFUTEX_FEATURES (TOFUTEX_FEAT_VERSION | TOFUTEX_FEAT_LOCK | \
			  TOFUTEX_FEAT_WAITWAKE | TOFUTEX_FEAT_SWAP | \
			  TOFUTEX_FEAT_STATS | TOFUTEX_FEAT_CLOCK_REALTIME | \
			  TOFUTEX_FEAT_REQUEUE | TOFUTEX_FEAT_RWLOCK | \
			  TOFUTEX_FEAT_NO_OWNER_POLL | TOFUTEX_FEAT_RW_RESERVE | \
			  TOFUTEX_FEAT_REOPEN)

static int tofutex_open(struct inode *inode, struct file *file)
{
	struct tofutex_table *table;

	table = tofutex_table_get();
	if (IS_ERR(table))
		return PTR_ERR(table);
	file->private_data = table;
	return 0;
}

static int tofutex_release(struct inode *inode, struct file *file)
{
	tofutex_table_put(file->private_data);
	return 0;
}

/**
 * tofutex_reserved_zero() - are all reserved fields of an argument zero?
 * @reserved: the reserved array
 * @n:        its length
 *
 * Reserved fields must be zero so that they can be given a meaning later
 * without old binaries passing garbage into it.
 *
 * Return: true when every element is zero.
 */
bool tofutex_reserved_zero(const u64 *reserved, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (reserved[i])
			return false;
	return true;
}

static int tofutex_ns_param_set(const char *val, const struct kernel_param *kp)
{
	struct tofutex_ns_param *p = kp->arg;
	unsigned long v;
	int ret;

	ret = kstrtoul(val, 0, &v);
	if (ret)
		return ret;
	if (v < p->min || v > p->max)
		return -EINVAL;
	WRITE_ONCE(p->val, v);
	return 0;
}

static int tofutex_ns_param_get(char *buf, const struct kernel_param *kp)
{
	const struct tofutex_ns_param *p = kp->arg;

	return sysfs_emit(buf, "%lu\n", READ_ONCE(p->val));
}

/* Module parameters in ns with a range: see struct tofutex_ns_param. */
const struct kernel_param_ops tofutex_ns_param_ops = {
	.set = tofutex_ns_param_set,
	.get = tofutex_ns_param_get,
};

static long tofutex_ioc_version(void __user *argp)
{
	struct tofutex_version ver;

	if (copy_from_user(&ver, argp, sizeof(ver)))
		return -EFAULT;
	if (ver.flags ||
	    !tofutex_reserved_zero(ver.reserved, ARRAY_SIZE(ver.reserved)))
		return -EINVAL;
	ver.abi_version = TOFUTEX_ABI_VERSION;
	ver.features = TOFUTEX_FEATURES;
	if (copy_to_user(argp, &ver, sizeof(ver)))
		return -EFAULT;
	return 0;
}

/**
 * tofutex_ioc_reopen() - a new descriptor of the device for the caller
 * @file:  a descriptor of the device, the caller's or another process's
 * @flags: 0 or O_CLOEXEC, for the new descriptor
 *
 * What open("/proc/self/fd/N", O_RDWR) would give, without a path lookup:
 * a process holding another process's descriptor (the child of fork(), the
 * receiver of SCM_RIGHTS) gets one of its own even where it may no longer
 * open files by name (a seccomp filter that forbids openat(), a chroot or
 * mount namespace without /dev). That is why the libraries' fork handlers
 * use it. It grants nothing that opening the device node would not: the
 * node's mount must allow devices and the caller needs the node's read and
 * write permission (may_open_dev(), not exported, and path_permission(),
 * as a path open checks them; LSMs see the open through dentry_open()),
 * and the new file is bound to the caller's process by tofutex_open(),
 * exactly as an open(2) binds it. The old file is not touched.
 *
 * Return: the new descriptor, -EINVAL for other flags, -EACCES or -EPERM
 * when the caller may not open the node, or -EMFILE, -ENFILE, -ENOMEM.
 */
static long tofutex_ioc_reopen(struct file *file, unsigned long flags)
{
	struct file *new;
	int fd, ret;

	if (flags & ~(unsigned long)O_CLOEXEC)
		return -EINVAL;
	if ((file->f_path.mnt->mnt_flags & MNT_NODEV) ||
	    (file->f_path.mnt->mnt_sb->s_iflags & SB_I_NODEV))
		return -EACCES;
	ret = path_permission(&file->f_path, MAY_READ | MAY_WRITE);
	if (ret)
		return ret;
	fd = get_unused_fd_flags(flags);
	if (fd < 0)
		return fd;
	new = dentry_open(&file->f_path, O_RDWR, current_cred());
	if (IS_ERR(new)) {
		put_unused_fd(fd);
		return PTR_ERR(new);
	}
	/* Nothing can fail after this: the descriptor is the caller's. */
	fd_install(fd, new);
	return fd;
}

static long tofutex_ioctl(struct file *file, unsigned int cmd,
			  unsigned long arg)
{
	struct tofutex_table *table = file->private_data;
	void __user *argp = (void __user *)arg;

	/* The one operation on a descriptor of another process: see above. */
	if (cmd == TOFUTEX_IOC_REOPEN)
		return tofutex_ioc_reopen(file, arg);
	if (!tofutex_table_is_current(table))
		return -EBADFD;

	switch (cmd) {
	case TOFUTEX_IOC_VERSION:
		return tofutex_ioc_version(argp);
	case TOFUTEX_IOC_LOCK:
		return tofutex_ioc_lock(table, argp);
	case TOFUTEX_IOC_UNLOCK:
		return tofutex_ioc_unlock(table, argp);
	case TOFUTEX_IOC_WAIT:
		return tofutex_ioc_wait(table, argp);
	case TOFUTEX_IOC_WAKE:
		return tofutex_ioc_wake(table, argp);
	case TOFUTEX_IOC_SWAP:
		return tofutex_ioc_swap(table, argp);
	case TOFUTEX_IOC_STATS:
		return tofutex_ioc_stats(table, argp);
	case TOFUTEX_IOC_REQUEUE:
		return tofutex_ioc_requeue(table, argp);
	case TOFUTEX_IOC_RDLOCK:
		return tofutex_ioc_rwlock(table, argp, false);
	case TOFUTEX_IOC_WRLOCK:
		return tofutex_ioc_rwlock(table, argp, true);
	case TOFUTEX_IOC_RWUNLOCK:
		return tofutex_ioc_rwunlock(table, argp);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations tofutex_fops = {
	.owner		= THIS_MODULE,
	.open		= tofutex_open,
	.release	= tofutex_release,
	.unlocked_ioctl	= tofutex_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

static struct miscdevice tofutex_miscdev = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= TOFUTEX_DEVICE_NAME,
	.fops	= &tofutex_fops,
	/* Every operation acts only on the caller's own memory and state. */
	.mode	= 0666,
};

static int __init tofutex_init(void)
{
	int ret;

	ret = tofutex_stats_init();
	if (ret)
		return ret;
	ret = tofutex_wake_local_init();
	if (ret)
		goto out_stats;
	ret = misc_register(&tofutex_miscdev);
	if (ret)
		goto out_wake_local;
	return 0;

out_wake_local:
	tofutex_wake_local_exit();
out_stats:
	tofutex_stats_exit();
	return ret;
}

static void __exit tofutex_exit(void)
{
	misc_deregister(&tofutex_miscdev);
	tofutex_wake_local_exit();
	tofutex_stats_exit();
}

module_init(tofutex_init);
module_exit(tofutex_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("tofutex: throughput-optimised futex locks, wait/wake and swap");
MODULE_VERSION(TOFUTEX_MODULE_VERSION);
MODULE_AUTHOR("The tofutex developers");
