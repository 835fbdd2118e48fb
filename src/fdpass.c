/* fdpass.c -- see fdpass.h. */
#include <string.h>
#include <unistd.h>

#include "fdpass.h"

int gp_fdpass_attach(struct msghdr *m, void *ctl, size_t ctl_size, const int *fds, unsigned nfds)
{
	struct cmsghdr *h;

	if (nfds == 0)
		return 0;
	if (ctl_size < GP_FDPASS_SPACE(nfds))
		return -1;
	memset(ctl, 0, GP_FDPASS_SPACE(nfds));
	m->msg_control = ctl;
	m->msg_controllen = GP_FDPASS_SPACE(nfds);
	h = CMSG_FIRSTHDR(m);
	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(nfds * sizeof(int));
	memcpy(CMSG_DATA(h), fds, nfds * sizeof(int));
	return 0;
}

unsigned gp_fdpass_take(struct msghdr *m, int *fds, unsigned max)
{
	unsigned n = 0;

	for (struct cmsghdr *h = CMSG_FIRSTHDR(m); h; h = CMSG_NXTHDR(m, h)) {
		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (h->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
			if (n < max)
				fds[n++] = fd;
			else
				close(fd);
		}
	}
	return n;
}
