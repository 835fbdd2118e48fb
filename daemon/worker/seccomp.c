/* seccomp.c -- worker_seccomp: a syscall filter the worker sets before its tenant's first call.
 *
 * `on` (the default) is an allow-list: the calls below, and every other one fails with EPERM
 * (never a kill: a call the list lacks is an error the driver reports, not a crash). What
 * it holds is what the worker, softgpu, glibc, OpenSSL, zstd/lz4 and the CUDA driver call
 * once initialised: memory (mmap, mprotect, madvise, NUMA policy), threads and their
 * synchronisation, signals to itself, files (open, read, write, stat, the driver's JIT
 * cache), ioctl on its device nodes, time, polling, eventfd/pipes/memfd, Unix sockets
 * (nvidia-persistenced) and process queries. NVIDIA's driver is known to run in
 * containers under Docker's default seccomp profile, an allow-list of this kind that
 * allows ioctl, mmap, mprotect, futex, clone and the rest listed here; this list was
 * written from those facts and from the calls seen made by workers on softgpu (strace),
 * but NVIDIA's driver has not run under it here. `denylist` keeps the older filter: the
 * calls a worker never needs and a tenant who took it over would use, everything else
 * allowed.
 *
 * Narrower than Docker's: clone only makes threads (CLONE_THREAD, no new namespaces): no
 * child process that could outlive the worker on its uid (worker_uids); clone3 answers
 * ENOSYS, whose flags sit in memory a filter cannot read (glibc then uses clone); socket
 * only for AF_UNIX; no execve, ptrace, mount, namespaces, modules, keys, BPF, perf, setuid
 * or seccomp itself; signals only to the worker's own process (kill, tgkill and the
 * sigqueue calls naming another pid get EPERM, tkill always; nor through F_SETOWN, FIOSETOWN
 * or SIOCSPGRP, the SIGIO routes); no TIOCSTI or TIOCLINUX (typing into a terminal);
 * prlimit64 only on itself. A call through another architecture's entry (x32, i386 on
 * x86-64) ends the process, as its numbers would pass unchecked. The denylist also checks
 * clone's namespace flags (clone3: ENOSYS) and denies io_uring, whose operations no filter
 * sees.
 *
 * Installed on every thread of the process at once (SECCOMP_FILTER_FLAG_TSYNC), with
 * no_new_privs: the threads the driver started before it run tenants' work too.
 *
 * Under AddressSanitizer, LeakSanitizer stops the process's threads at exit from a child
 * task it creates with clone (no CLONE_THREAD) and ptrace: those two are allowed there.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "seccomp.h"

#if defined(__x86_64__)
#define GP_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define GP_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

#ifdef GP_AUDIT_ARCH

#define RET(v) BPF_STMT(BPF_RET | BPF_K, (v))
#define ERRNO(e) RET(SECCOMP_RET_ERRNO | (e))
#define LOAD_NR BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
/* The low 32 bits of argument i (little-endian: x86-64 and arm64). */
#define LOAD_ARG(i) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[i]))
/* Two instructions: allow nr, or go on. */
#define ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), RET(SECCOMP_RET_ALLOW)
#define DENY(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), ERRNO(EPERM)
/* Five instructions: nr only when its argument 0 is this process (a signal to itself), with
 * SELF replaced by the pid when the filter is installed. */
#define SELF 0xfffffff1u
#define SELF_ONLY(nr)                                                                    \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 4), LOAD_ARG(0),                    \
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SELF, 0, 1), RET(SECCOMP_RET_ALLOW), \
		ERRNO(EPERM)

#define CLONE_NS_FLAGS                                                                             \
	(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | \
	 CLONE_NEWCGROUP)

/* The head every mode shares: the native architecture only, then the number loaded; on
 * x86-64 also no x32 call, whose numbers are the native ones with bit 30 set. */
#ifdef __x86_64__
#define HEAD                                                                     \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)), \
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, GP_AUDIT_ARCH, 1, 0),        \
		RET(SECCOMP_RET_KILL_PROCESS), LOAD_NR,                          \
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),           \
		RET(SECCOMP_RET_KILL_PROCESS)
#else
#define HEAD                                                                     \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)), \
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, GP_AUDIT_ARCH, 1, 0),        \
		RET(SECCOMP_RET_KILL_PROCESS), LOAD_NR
#endif

/* clang-format off */
static const struct sock_filter allow_list[] = {
	HEAD,
	/* clone: threads only, and no new namespaces (flags are argument 0 on both). */
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 5),
	LOAD_ARG(0),
	BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_NS_FLAGS, 2, 0),
#ifdef __SANITIZE_ADDRESS__
	BPF_STMT(BPF_JMP | BPF_JA, 0), /* LeakSanitizer's tracer task (see above) */
#else
	BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1),
#endif
	RET(SECCOMP_RET_ALLOW),
	ERRNO(EPERM),
	/* clone3: ENOSYS, so that glibc falls back to clone. */
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
	ERRNO(ENOSYS),
	/* socket: AF_UNIX only (argument 0 reloaded: the accumulator holds nr). */
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 4),
	LOAD_ARG(0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 0, 1),
	RET(SECCOMP_RET_ALLOW),
	ERRNO(EPERM),
#ifdef __SANITIZE_ADDRESS__
	ALLOW(__NR_ptrace),
#endif
	/* ioctl on any descriptor (the device nodes), but not those that reach past the worker:
	 * TIOCSTI and TIOCLINUX type into a terminal (its stderr may be the daemon's, and it
	 * shares the daemon's controlling terminal), FIOSETOWN and SIOCSPGRP aim SIGIO at
	 * another process or group, as F_SETOWN does (the command is an unsigned int). */
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 0, 7),
	LOAD_ARG(1),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCSTI, 4, 0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCLINUX, 3, 0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, FIOSETOWN, 2, 0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SIOCSPGRP, 1, 0),
	RET(SECCOMP_RET_ALLOW),
	ERRNO(EPERM),
	/* fcntl: F_SETOWN only to this process (another pid or group would get its SIGIO, or
	 * any signal F_SETSIG names); F_SETOWN_EX, whose owner sits in memory, not at all. */
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_fcntl, 0, 7),
	LOAD_ARG(1),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, F_SETOWN_EX, 4, 0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, F_SETOWN, 0, 2),
	LOAD_ARG(2),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SELF, 0, 1),
	RET(SECCOMP_RET_ALLOW),
	ERRNO(EPERM),
	/* prlimit64: this process's limits only (pid 0, as glibc's getrlimit and setrlimit
	 * pass, or its own): lowering another's (RLIMIT_CPU, RLIMIT_NOFILE) would end it. */
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_prlimit64, 0, 5),
	LOAD_ARG(0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SELF, 0, 1),
	RET(SECCOMP_RET_ALLOW),
	ERRNO(EPERM),
	/* memory */
	ALLOW(__NR_mmap), ALLOW(__NR_munmap), ALLOW(__NR_mprotect), ALLOW(__NR_mremap),
	ALLOW(__NR_madvise), ALLOW(__NR_brk), ALLOW(__NR_msync), ALLOW(__NR_mincore),
	ALLOW(__NR_mlock), ALLOW(__NR_mlock2), ALLOW(__NR_munlock), ALLOW(__NR_mlockall),
	ALLOW(__NR_munlockall), ALLOW(__NR_get_mempolicy), ALLOW(__NR_set_mempolicy),
	ALLOW(__NR_mbind), ALLOW(__NR_membarrier), ALLOW(__NR_memfd_create),
	ALLOW(__NR_shmget), ALLOW(__NR_shmat), ALLOW(__NR_shmdt), ALLOW(__NR_shmctl),
	/* threads, synchronisation, exit */
	ALLOW(__NR_futex), ALLOW(__NR_set_robust_list), ALLOW(__NR_get_robust_list),
	ALLOW(__NR_set_tid_address), ALLOW(__NR_rseq), ALLOW(__NR_exit), ALLOW(__NR_exit_group),
	ALLOW(__NR_wait4), ALLOW(__NR_waitid), ALLOW(__NR_restart_syscall),
	ALLOW(__NR_sched_yield), ALLOW(__NR_sched_getaffinity), ALLOW(__NR_sched_setaffinity),
	ALLOW(__NR_sched_getparam), ALLOW(__NR_sched_setparam), ALLOW(__NR_sched_getscheduler),
	ALLOW(__NR_sched_setscheduler), ALLOW(__NR_sched_getattr), ALLOW(__NR_sched_setattr),
	ALLOW(__NR_sched_get_priority_max), ALLOW(__NR_sched_get_priority_min),
	ALLOW(__NR_getpriority), ALLOW(__NR_setpriority), ALLOW(__NR_getcpu),
	/* signals: to this process only (without worker_uids the daemon and the other workers
	 * share its uid); tkill, which names no process, not at all */
	ALLOW(__NR_rt_sigaction), ALLOW(__NR_rt_sigprocmask), ALLOW(__NR_rt_sigreturn),
	ALLOW(__NR_rt_sigpending), ALLOW(__NR_rt_sigtimedwait), ALLOW(__NR_rt_sigsuspend),
	ALLOW(__NR_sigaltstack),
	SELF_ONLY(__NR_kill), SELF_ONLY(__NR_tgkill), SELF_ONLY(__NR_rt_sigqueueinfo),
	SELF_ONLY(__NR_rt_tgsigqueueinfo),
	/* files */
	ALLOW(__NR_read), ALLOW(__NR_write), ALLOW(__NR_readv), ALLOW(__NR_writev),
	ALLOW(__NR_pread64), ALLOW(__NR_pwrite64), ALLOW(__NR_preadv), ALLOW(__NR_pwritev),
	ALLOW(__NR_preadv2), ALLOW(__NR_pwritev2), ALLOW(__NR_openat), ALLOW(__NR_close),
	ALLOW(__NR_close_range), ALLOW(__NR_fstat), ALLOW(__NR_newfstatat), ALLOW(__NR_statx),
	ALLOW(__NR_statfs), ALLOW(__NR_fstatfs), ALLOW(__NR_lseek), ALLOW(__NR_faccessat),
	ALLOW(__NR_faccessat2), ALLOW(__NR_readlinkat), ALLOW(__NR_getcwd),
	ALLOW(__NR_getdents64), ALLOW(__NR_flock), ALLOW(__NR_dup),
	ALLOW(__NR_dup3), ALLOW(__NR_ftruncate), ALLOW(__NR_fallocate),
	ALLOW(__NR_fsync), ALLOW(__NR_fdatasync), ALLOW(__NR_fadvise64), ALLOW(__NR_readahead),
	ALLOW(__NR_mkdirat), ALLOW(__NR_unlinkat), ALLOW(__NR_renameat), ALLOW(__NR_renameat2),
	ALLOW(__NR_fchmod), ALLOW(__NR_utimensat), ALLOW(__NR_umask), ALLOW(__NR_chdir),
	ALLOW(__NR_fchdir), ALLOW(__NR_sendfile), ALLOW(__NR_copy_file_range),
	ALLOW(__NR_pipe2), ALLOW(__NR_eventfd2), ALLOW(__NR_timerfd_create),
	ALLOW(__NR_timerfd_settime), ALLOW(__NR_timerfd_gettime),
	/* polling */
	ALLOW(__NR_ppoll), ALLOW(__NR_pselect6), ALLOW(__NR_epoll_create1), ALLOW(__NR_epoll_ctl),
	ALLOW(__NR_epoll_pwait), ALLOW(__NR_epoll_pwait2),
	/* sockets (socket itself above) */
	ALLOW(__NR_socketpair), ALLOW(__NR_connect), ALLOW(__NR_getsockname),
	ALLOW(__NR_getpeername), ALLOW(__NR_getsockopt), ALLOW(__NR_setsockopt),
	ALLOW(__NR_sendto), ALLOW(__NR_recvfrom), ALLOW(__NR_sendmsg), ALLOW(__NR_recvmsg),
	ALLOW(__NR_sendmmsg), ALLOW(__NR_recvmmsg), ALLOW(__NR_shutdown),
	/* time */
	ALLOW(__NR_clock_gettime), ALLOW(__NR_clock_getres), ALLOW(__NR_clock_nanosleep),
	ALLOW(__NR_gettimeofday), ALLOW(__NR_nanosleep), ALLOW(__NR_setitimer),
	ALLOW(__NR_getitimer), ALLOW(__NR_timer_create), ALLOW(__NR_timer_settime),
	ALLOW(__NR_timer_gettime), ALLOW(__NR_timer_getoverrun), ALLOW(__NR_timer_delete),
	/* the process: who and where it is, its limits */
	ALLOW(__NR_getpid), ALLOW(__NR_gettid), ALLOW(__NR_getppid), ALLOW(__NR_getuid),
	ALLOW(__NR_geteuid), ALLOW(__NR_getgid), ALLOW(__NR_getegid), ALLOW(__NR_getresuid),
	ALLOW(__NR_getresgid), ALLOW(__NR_getgroups), ALLOW(__NR_getpgid), ALLOW(__NR_getsid),
	ALLOW(__NR_capget), ALLOW(__NR_prctl), ALLOW(__NR_getrlimit),
	ALLOW(__NR_getrusage), ALLOW(__NR_sysinfo), ALLOW(__NR_uname), ALLOW(__NR_times),
	ALLOW(__NR_getrandom),
	/* x86-64's older entries, which arm64 never had */
#ifdef __x86_64__
	ALLOW(__NR_open), ALLOW(__NR_stat), ALLOW(__NR_lstat), ALLOW(__NR_access),
	ALLOW(__NR_readlink), ALLOW(__NR_dup2), ALLOW(__NR_pipe), ALLOW(__NR_poll),
	ALLOW(__NR_select), ALLOW(__NR_epoll_create), ALLOW(__NR_epoll_wait),
	ALLOW(__NR_eventfd), ALLOW(__NR_mkdir), ALLOW(__NR_unlink), ALLOW(__NR_rename),
	ALLOW(__NR_rmdir), ALLOW(__NR_creat), ALLOW(__NR_getpgrp), ALLOW(__NR_alarm),
	ALLOW(__NR_time), ALLOW(__NR_arch_prctl), ALLOW(__NR_getdents),
#endif
	ERRNO(EPERM),
};

static const struct sock_filter deny_list[] = {
	HEAD,
	/* clone and clone3 make namespaces as unshare does: clone's flags checked, clone3 ENOSYS
	 * (glibc falls back to clone). */
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 4),
	LOAD_ARG(0),
	BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_NS_FLAGS, 1, 0),
	RET(SECCOMP_RET_ALLOW),
	ERRNO(EPERM),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
	ERRNO(ENOSYS),
	/* io_uring's operations pass no filter; the newer mount calls are mounts; handles and
	 * pidfds reach other processes' files and memory. */
	DENY(__NR_io_uring_setup), DENY(__NR_io_uring_enter), DENY(__NR_io_uring_register),
	DENY(__NR_fsopen), DENY(__NR_fsconfig), DENY(__NR_fsmount), DENY(__NR_fspick),
	DENY(__NR_move_mount), DENY(__NR_open_tree), DENY(__NR_mount_setattr),
	DENY(__NR_name_to_handle_at), DENY(__NR_pidfd_getfd), DENY(__NR_process_madvise),
	DENY(__NR_ptrace), DENY(__NR_process_vm_readv), DENY(__NR_process_vm_writev),
	DENY(__NR_execve), DENY(__NR_execveat), DENY(__NR_mount), DENY(__NR_umount2),
	DENY(__NR_pivot_root), DENY(__NR_chroot), DENY(__NR_unshare), DENY(__NR_setns),
	DENY(__NR_init_module), DENY(__NR_finit_module), DENY(__NR_delete_module),
	DENY(__NR_kexec_load), DENY(__NR_kexec_file_load), DENY(__NR_bpf),
	DENY(__NR_perf_event_open), DENY(__NR_keyctl), DENY(__NR_add_key),
	DENY(__NR_request_key), DENY(__NR_userfaultfd), DENY(__NR_open_by_handle_at),
	DENY(__NR_kcmp), DENY(__NR_swapon), DENY(__NR_swapoff), DENY(__NR_reboot),
	DENY(__NR_acct),
	RET(SECCOMP_RET_ALLOW),
};
/* clang-format on */

int gp__worker_seccomp(enum gp_seccomp_mode mode)
{
	struct sock_filter allow[sizeof(allow_list) / sizeof(allow_list[0])];
	struct sock_fprog prog;
	long r;

	if (mode == GP_SECCOMP_ALLOW) {
		memcpy(allow, allow_list, sizeof(allow));
		for (size_t i = 0; i < sizeof(allow) / sizeof(allow[0]); i++)
			if (allow[i].code == (BPF_JMP | BPF_JEQ | BPF_K) && allow[i].k == SELF)
				allow[i].k = (uint32_t)getpid();
		prog.len = (unsigned short)(sizeof(allow) / sizeof(allow[0]));
		prog.filter = allow;
	} else if (mode == GP_SECCOMP_DENY) {
		prog.len = (unsigned short)(sizeof(deny_list) / sizeof(deny_list[0]));
		prog.filter = (struct sock_filter *)deny_list;
	} else {
		return -EINVAL;
	}
	/* no_new_privs is set already (worker.c); without it an unprivileged filter fails.
	 * TSYNC: on every thread of the process, not only this one (softgpu's block pool runs
	 * the tenant's kernels on threads cuInit started), and no_new_privs with it. */
	r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);
	if (r < 0)
		return -errno;
	return r > 0 ? -EBUSY : 0; /* thread r could not take it */
}

#else /* no filter for this architecture: the session is refused (worker.c) */

int gp__worker_seccomp(enum gp_seccomp_mode mode)
{
	(void)mode;
	return -ENOSYS;
}

#endif
