/* seccomp.h -- worker_seccomp's filter (seccomp.c; tests/unit/test_seccomp.c). */
#ifndef GP_WORKER_SECCOMP_H
#define GP_WORKER_SECCOMP_H

#include "config.h" /* enum gp_seccomp_mode */

/* Installs the filter of that mode on the calling thread and those it creates later
 * (no_new_privs must be set, or the caller be privileged). 0 or -errno; -ENOSYS where
 * the architecture has no filter (x86-64 and arm64 have). */
int gp__worker_seccomp(enum gp_seccomp_mode mode);

#endif
