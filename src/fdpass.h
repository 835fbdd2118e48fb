/* fdpass.h -- descriptors passed over a Unix socket (SCM_RIGHTS): the IPC channel between the
 * supervisor and its workers (daemon/supervisor/ipc.c, daemon/worker/ipc.c). */
#ifndef GP_FDPASS_H
#define GP_FDPASS_H

#include <stddef.h>
#include <sys/socket.h>

/* Room for a control message carrying up to n descriptors. */
#define GP_FDPASS_SPACE(n) CMSG_SPACE((n) * sizeof(int))

/* Attaches nfds descriptors (none: nothing) to m as one SCM_RIGHTS message, built in ctl of
 * ctl_size bytes (aligned for struct cmsghdr, at least GP_FDPASS_SPACE(nfds)). Returns 0, or
 * -1 when ctl is too small. */
int gp_fdpass_attach(struct msghdr *m, void *ctl, size_t ctl_size, const int *fds, unsigned nfds);

/* The descriptors that came with a received m (its SCM_RIGHTS messages): the first max into
 * fds, every one past them closed. Returns how many are in fds. */
unsigned gp_fdpass_take(struct msghdr *m, int *fds, unsigned max);

#endif
