/* seccomp.h -- worker_seccomp's filter (seccomp.c; tests/unit/test_seccomp.c). */
#ifndef GP_WORKER_SECCOMP_H
#define GP_WORKER_SECCOMP_H

#include "config.h" /* enum gp_seccomp_mode */

/* Installs the filter of that mode on every thread of the process and those created later
 * (no_new_privs must be set on the caller, or it be privileged; the other threads get it). 0 or -errno; -ENOSYS where
 * the architecture has no filter (x86-64 and arm64 have). */
int gp__worker_seccomp(enum gp_seccomp_mode mode);

#endif
