/* test_seccomp.c -- worker_seccomp's filters (daemon/worker/seccomp.c), installed in a child.
 *
 * Each case forks; the child sets no_new_privs, installs the filter with the worker's own
 * function and makes its calls; it exits with the number of the first check that failed (0:
 * none), and the parent asserts that. Under AddressSanitizer the allow-list lets ptrace and
 * non-thread clone through (LeakSanitizer needs them): those two checks are left out there.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "seccomp.h"

/* Check number n: the child's exit status when it fails. */
#define CHECK(n, cond)                                                                          \
	do {                                                                                    \
		if (!(cond)) {                                                                  \
			fprintf(stderr, "check %d failed: %s (errno %d)\n", (n), #cond, errno); \
			_exit(n);                                                               \
		}                                                                               \
	} while (0)

/* A call that the filter must refuse with e. */
#define REFUSED(n, call, e) CHECK(n, (errno = 0, (call) == -1 && errno == (e)))

static void install(enum gp_seccomp_mode mode)
{
	CHECK(100, prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
	CHECK(101, gp__worker_seccomp(mode) == 0);
}

/* Runs fn in a child; returns its wait status. */
static int in_child(void (*fn)(void))
{
	int status = -1;
	pid_t pid = fork();

	if (pid == 0) {
		fn();
		_exit(0);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static void assert_passed(int status)
{
	if (WIFSIGNALED(status))
		fail_msg("the child was killed by signal %d", WTERMSIG(status));
	if (WEXITSTATUS(status))
		fail_msg("check %d failed in the child", WEXITSTATUS(status));
}

static void *thread_fn(void *arg)
{
	return arg;
}

/* A thread started before the filter: it must be filtered too once it is installed. */
static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;

static void *early_thread(void *arg)
{
	long r;

	pthread_mutex_lock(&gate); /* held by the main thread until the filter is in */
	errno = 0;
	r = socket(AF_INET, SOCK_STREAM, 0);
	*(int *)arg = r == -1 && errno == EPERM && prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1;
	pthread_mutex_unlock(&gate);
	return NULL;
}

/* Seccomp: 2 in /proc/self/status, read under the filter. */
static bool filtered(void)
{
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return strstr(buf, "\nSeccomp:\t2\n") != NULL;
}

/* ---- invalid arguments first ---- */

static void test_bad_mode(void **state)
{
	(void)state;
	/* Refused before anything is installed: this process stays unfiltered. */
	assert_int_equal(gp__worker_seccomp(GP_SECCOMP_OFF), -EINVAL);
	assert_int_equal(gp__worker_seccomp((enum gp_seccomp_mode)99), -EINVAL);
	assert_false(filtered());
}

/* ---- the allow-list ---- */

static void allowed_calls(void)
{
	struct timespec ts = {0, 1000000};
	pthread_t t;
	void *ret = NULL;
	char buf[64];
	int sv[2], fds[2], fd, avail;
	void *p;
	cpu_set_t cpus;

	install(GP_SECCOMP_ALLOW);
	CHECK(1, filtered());
	CHECK(2, getpid() > 0 && gettid() > 0);
	p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(3, p != MAP_FAILED);
	CHECK(4, mprotect(p, 4096, PROT_READ) == 0 && madvise(p, 1 << 20, MADV_DONTNEED) == 0);
	CHECK(5, munmap(p, 1 << 20) == 0);
	free(malloc(1 << 24)); /* glibc's mmap path */
	/* pthread_create: clone3 answers ENOSYS and glibc falls back to clone. */
	CHECK(6, pthread_create(&t, NULL, thread_fn, buf) == 0);
	CHECK(7, pthread_join(t, &ret) == 0 && ret == buf);
	CHECK(8, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	CHECK(9, write(sv[0], "x", 1) == 1 && read(sv[1], buf, 1) == 1 && buf[0] == 'x');
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(10, fd >= 0);
	close(fd);
	CHECK(11, pipe2(fds, O_CLOEXEC) == 0);
	fd = eventfd(0, EFD_CLOEXEC);
	CHECK(12, fd >= 0);
	close(fd);
	fd = memfd_create("test", MFD_CLOEXEC);
	CHECK(13, fd >= 0 && ftruncate(fd, 8192) == 0 && pwrite(fd, "y", 1, 100) == 1);
	close(fd);
	/* ioctl is allowed: the device's own answer, not the filter's. */
	CHECK(14, ioctl(sv[0], FIONREAD, &avail) == 0 && avail == 0);
	CHECK(15, clock_gettime(CLOCK_MONOTONIC, &ts) == 0);
	ts.tv_sec = 0;
	ts.tv_nsec = 1000000;
	CHECK(16, nanosleep(&ts, NULL) == 0);
	CHECK(17, getrandom(buf, 16, 0) == 16);
	CHECK(18, sched_getaffinity(0, sizeof(cpus), &cpus) == 0);
	CHECK(19, kill(getpid(), 0) == 0);
}

static void test_allow_list_allows(void **state)
{
	(void)state;
	assert_passed(in_child(allowed_calls));
}

static void denied_calls(void)
{
	struct iovec local = {0}, remote = {0};
	char buf[8];
	char *argv[] = {"/bin/true", NULL};
	struct f_owner_ex owner = {.type = F_OWNER_PID, .pid = getppid()};
	int parent = getppid(), sv[2];
	struct rlimit rl;
	pthread_t early;
	int early_ok = 0;
	long r;

	pthread_mutex_lock(&gate);
	CHECK(102, pthread_create(&early, NULL, early_thread, &early_ok) == 0);
	local.iov_base = buf;
	local.iov_len = sizeof(buf);
	remote.iov_base = buf;
	remote.iov_len = sizeof(buf);
	install(GP_SECCOMP_ALLOW);
	pthread_mutex_unlock(&gate);
	CHECK(28, pthread_join(early, NULL) == 0 && early_ok);
#ifndef __SANITIZE_ADDRESS__
	REFUSED(1, ptrace(PTRACE_TRACEME, 0, NULL, NULL), EPERM);
	REFUSED(2, fork(), EPERM);
#endif
	REFUSED(3, mount("none", "/mnt", "tmpfs", 0, NULL), EPERM);
	REFUSED(4, unshare(CLONE_NEWUSER), EPERM);
	REFUSED(5, execve("/bin/true", argv, NULL), EPERM);
	REFUSED(6, syscall(SYS_init_module, NULL, 0, ""), EPERM);
	REFUSED(7, syscall(SYS_bpf, 0, NULL, 0), EPERM);
	REFUSED(8, syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0), EPERM);
	REFUSED(9, process_vm_readv(getppid(), &local, 1, &remote, 1, 0), EPERM);
	REFUSED(10, syscall(SYS_keyctl, 0, 0, 0, 0, 0), EPERM);
	REFUSED(11, socket(AF_INET, SOCK_STREAM, 0), EPERM);
	REFUSED(12, socket(AF_INET6, SOCK_DGRAM, 0), EPERM);
	REFUSED(13, socket(AF_NETLINK, SOCK_RAW, 0), EPERM);
	/* A thread in a new namespace: the namespace flags are refused even with CLONE_THREAD. */
	r = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, NULL);
	if (r == 0)
		_exit(0); /* a child was made: the parent reports it */
	CHECK(14, r == -1 && errno == EPERM);
	REFUSED(15, syscall(SYS_clone3, NULL, 0), ENOSYS);
	REFUSED(16, setresuid(0, 0, 0), EPERM);
	REFUSED(17, syscall(SYS_seccomp, 0, 0, NULL), EPERM);
	REFUSED(18, chroot("/"), EPERM);
	REFUSED(19, syscall(SYS_setns, 0, 0), EPERM);
	REFUSED(20, syscall(SYS_userfaultfd, 0), EPERM);
	/* Signals to another process (the parent: the daemon, for a worker), even signal 0. */
	REFUSED(21, kill(getppid(), 0), EPERM);
	REFUSED(22, syscall(SYS_tgkill, getppid(), getppid(), 0), EPERM);
	REFUSED(23, kill(0, 0), EPERM); /* the process group */
	REFUSED(24, kill(-1, 0), EPERM);
	REFUSED(25, syscall(SYS_tkill, gettid(), 0), EPERM);
	/* ... and to itself they work: a signal to a thread, to the process. */
	CHECK(26, syscall(SYS_tgkill, getpid(), gettid(), 0) == 0);
	CHECK(27, pthread_kill(pthread_self(), 0) == 0);
	/* A thread in a new namespace: the kernel itself answers EINVAL, so EPERM is the
	 * filter's namespace check (check 14's clone is refused as a process already). */
	REFUSED(29,
		syscall(SYS_clone, CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM, NULL,
			NULL, NULL, NULL),
		EPERM);
	/* No SIGIO (or F_SETSIG's signal) aimed at another process or group. */
	CHECK(30, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	REFUSED(31, fcntl(sv[0], F_SETOWN, getppid()), EPERM);
	REFUSED(32, fcntl(sv[0], F_SETOWN, -getpgrp()), EPERM);
	REFUSED(33, fcntl(sv[0], F_SETOWN_EX, &owner), EPERM);
	REFUSED(34, ioctl(sv[0], FIOSETOWN, &parent), EPERM);
	REFUSED(35, ioctl(sv[0], SIOCSPGRP, &parent), EPERM);
	CHECK(36, fcntl(sv[0], F_SETOWN, getpid()) == 0 && fcntl(sv[0], F_GETOWN) == getpid());
	/* No typing into a terminal (ENOTTY here without the filter). */
	REFUSED(37, ioctl(sv[0], TIOCSTI, "x"), EPERM);
	/* Limits: its own (pid 0 or its pid), not another process's. */
	REFUSED(38, prlimit(getppid(), RLIMIT_NOFILE, NULL, &rl), EPERM);
	CHECK(39, getrlimit(RLIMIT_NOFILE, &rl) == 0 && setrlimit(RLIMIT_NOFILE, &rl) == 0 &&
			  prlimit(getpid(), RLIMIT_NOFILE, NULL, &rl) == 0);
}

static void test_allow_list_denies(void **state)
{
	(void)state;
	assert_passed(in_child(denied_calls));
}

/* The i386 entry on x86-64: its numbers would pass unchecked, so the process ends. */
static void compat_entry(void)
{
	long r = -1;

	install(GP_SECCOMP_ALLOW);
#ifdef __x86_64__
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory"); /* i386 getpid */
#endif
	_exit(r > 0 ? 30 : 31);
}

static void test_other_arch_killed(void **state)
{
	int status;

	(void)state;
#ifndef __x86_64__
	skip(); /* arm64's compat entry is not reachable from a 64-bit process this way */
#endif
	status = in_child(compat_entry);
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV)
		skip(); /* no i386 emulation in this kernel: the entry does not exist */
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGSYS);
}

/* An x32 call on x86-64 (the native number with bit 30 set): the process ends, whether or
 * not the kernel has x32 (without the check it would get the list's EPERM). */
static void x32_entry(void)
{
	long r = -1;

	install(GP_SECCOMP_ALLOW);
#ifdef __x86_64__
	r = syscall(__NR_getpid | 0x40000000);
#endif
	_exit(r > 0 ? 30 : 31);
}

static void test_x32_killed(void **state)
{
	int status;

	(void)state;
#ifndef __x86_64__
	skip();
#endif
	status = in_child(x32_entry);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGSYS);
}

/* ---- the denylist ---- */

static void denylist_calls(void)
{
	char *argv[] = {"/bin/true", NULL};
	pid_t pid;
	int fd, status;

	install(GP_SECCOMP_DENY);
	CHECK(1, filtered());
	REFUSED(2, execve("/bin/true", argv, NULL), EPERM);
	REFUSED(3, unshare(CLONE_NEWUSER), EPERM);
	REFUSED(4, syscall(SYS_bpf, 0, NULL, 0), EPERM);
	/* What it does not list stays allowed: processes, any socket. */
	pid = fork();
	if (pid == 0)
		_exit(7);
	CHECK(5, pid > 0 && waitpid(pid, &status, 0) == pid && WEXITSTATUS(status) == 7);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(6, fd >= 0);
	close(fd);
	/* Namespaces through clone as through unshare; clone3 falls back. */
	pid = (pid_t)syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, NULL);
	if (pid == 0)
		_exit(0); /* a child was made: the parent reports it */
	CHECK(7, pid == -1 && errno == EPERM);
	REFUSED(8, syscall(SYS_clone3, NULL, 0), ENOSYS);
	REFUSED(9, syscall(SYS_io_uring_setup, 1, NULL), EPERM);
	REFUSED(10, syscall(SYS_fsopen, "tmpfs", 0), EPERM);
}

static void test_denylist(void **state)
{
	(void)state;
	assert_passed(in_child(denylist_calls));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_mode),	  cmocka_unit_test(test_allow_list_allows),
		cmocka_unit_test(test_allow_list_denies), cmocka_unit_test(test_other_arch_killed),
		cmocka_unit_test(test_x32_killed),	  cmocka_unit_test(test_denylist),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
