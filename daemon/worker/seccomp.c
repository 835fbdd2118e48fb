/* seccomp.c -- worker_seccomp: a syscall filter the worker sets before its tenant's first call. */
#include <errno.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "worker.h"

/*
 * A denylist, not an allowlist: the worker runs a vendor driver whose system calls we do not
 * know and which change between its versions. What is denied is what a worker never needs
 * and what a tenant who took it over would use to reach past its session: other processes'
 * memory (ptrace, process_vm_*), running programs (execve: with no_new_privs they gain no
 * privileges, but could still be anything), namespaces and mounts, kernel modules, keys,
 * BPF and perf. Denied calls fail with EPERM; a call made through another architecture's
 * entry (x32, i386 on x86-64) ends the process, as those would pass the numbers unchecked.
 * Untested on NVIDIA's driver: off by default.
 */

#if defined(__x86_64__)
#define GP_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define GP_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

#define DENY(nr)                                         \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)

int gp__worker_seccomp(void)
{
#ifdef GP_AUDIT_ARCH
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, GP_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#ifdef __x86_64__
		/* x32's numbers are the native ones with this bit set. */
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
#endif
		DENY(__NR_ptrace),
		DENY(__NR_process_vm_readv),
		DENY(__NR_process_vm_writev),
		DENY(__NR_execve),
		DENY(__NR_execveat),
		DENY(__NR_mount),
		DENY(__NR_umount2),
		DENY(__NR_pivot_root),
		DENY(__NR_chroot),
		DENY(__NR_unshare),
		DENY(__NR_setns),
		DENY(__NR_init_module),
		DENY(__NR_finit_module),
		DENY(__NR_delete_module),
		DENY(__NR_kexec_load),
		DENY(__NR_kexec_file_load),
		DENY(__NR_bpf),
		DENY(__NR_perf_event_open),
		DENY(__NR_keyctl),
		DENY(__NR_add_key),
		DENY(__NR_request_key),
		DENY(__NR_userfaultfd),
		DENY(__NR_open_by_handle_at),
		DENY(__NR_kcmp),
		DENY(__NR_swapon),
		DENY(__NR_swapoff),
		DENY(__NR_reboot),
		DENY(__NR_acct),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = (unsigned short)(sizeof(filter) / sizeof(filter[0])),
		.filter = filter,
	};

	/* no_new_privs is set already (worker.c); without it an unprivileged filter fails. */
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
		return -errno;
	return 0;
#else
	return -ENOSYS;
#endif
}
