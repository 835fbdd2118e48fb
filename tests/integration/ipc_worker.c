/* ipc_worker.c -- a test stand-in for a compromised worker that speaks only on its IPC socket
 * (fd 6, daemon/supervisor/ipc.c). Named as `worker` in test-ipc-hostile.sh's gpupoold.conf
 * (warm_workers 0); it serves no client. It sends requests a real worker never sends, writes
 * each answer's result to GPUPOOL_TEST_IPC_OUT ("NAME RESULT" a line), then a datagram that
 * does not parse, after which the supervisor must end it; it waits for that. Never installed.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gpupool.pb-c.h"

#define FD_IPC 6

static FILE *out;
static uint32_t seq;

static void ask(const char *name, Gp__IpcRequest *rq, const int *fds, unsigned nfds)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(2 * sizeof(int))];
	} u;
	uint8_t buf[1024];
	struct iovec iov = {.iov_base = buf};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	Gp__IpcReply *rep;
	ssize_t n;

	rq->seq = ++seq;
	iov.iov_len = protobuf_c_message_pack(&rq->base, buf);
	if (nfds) {
		struct cmsghdr *h;

		memset(&u, 0, sizeof(u));
		m.msg_control = u.buf;
		m.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		h = CMSG_FIRSTHDR(&m);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(h), fds, nfds * sizeof(int));
	}
	if (sendmsg(FD_IPC, &m, 0) < 0) {
		fprintf(out, "%s SENDFAIL\n", name);
		return;
	}
	n = recv(FD_IPC, buf, sizeof(buf), 0);
	rep = n > 0 ? gp__ipc_reply__unpack(NULL, (size_t)n, buf) : NULL;
	if (!rep || rep->seq != rq->seq) {
		fprintf(out, "%s NOREPLY\n", name);
	} else {
		fprintf(out, "%s %u\n", name, rep->result);
	}
	if (rep)
		gp__ipc_reply__free_unpacked(rep, NULL);
	fflush(out);
}

static Gp__IpcRequest *req(Gp__IpcRequest *rq, uint32_t op, uint32_t kind, size_t hlen,
			   uint32_t nfds)
{
	static uint8_t handle[64], secret[16];

	*rq = (Gp__IpcRequest)GP__IPC_REQUEST__INIT;
	rq->op = op;
	rq->kind = kind;
	rq->handle.data = handle;
	rq->handle.len = hlen;
	rq->nfds = nfds;
	if (op == 2) {
		rq->secret.data = secret;
		rq->secret.len = sizeof(secret);
	}
	return rq;
}

static int memfd(bool sealed)
{
	int fd = memfd_create("ipc-worker", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0 || ftruncate(fd, 4096))
		exit(2);
	if (sealed && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW))
		exit(2);
	return fd;
}

int main(int argc, char **argv)
{
	const char *path = getenv("GPUPOOL_TEST_IPC_OUT");
	Gp__IpcRequest rq;
	int passwd, plain, sealed;

	/* --inventory and --warm: the real worker's business. */
	if (argc > 1 && getenv("GPUPOOL_TEST_WORKER")) {
		execv(getenv("GPUPOOL_TEST_WORKER"), argv);
		return 127;
	}
	out = path ? fopen(path, "w") : NULL;
	if (!out)
		return 2;
	passwd = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
	plain = memfd(false);
	sealed = memfd(true);

	ask("export-file", req(&rq, 1, 1, 64, 1), &passwd, 1);
	ask("export-unsealed", req(&rq, 1, 1, 64, 1), &plain, 1);
	ask("export-miscounted", req(&rq, 1, 1, 64, 2), &sealed, 1);
	ask("export-short-handle", req(&rq, 1, 1, 10, 0), NULL, 0);
	ask("export-kind", req(&rq, 1, 7, 64, 0), NULL, 0);
	ask("export-unadmitted", req(&rq, 1, 1, 64, 1), &sealed, 1);
	ask("open-with-fds", req(&rq, 2, 1, 0, 0), &sealed, 1);
	ask("open-unadmitted", req(&rq, 2, 1, 0, 0), NULL, 0);
	ask("withdraw-unexported", req(&rq, 3, 1, 64, 0), NULL, 0);
	ask("withdraw-short-handle", req(&rq, 3, 1, 10, 0), NULL, 0);
	ask("withdraw-event", req(&rq, 3, 2, 64, 0), NULL, 0);
	ask("withdraw-with-fds", req(&rq, 3, 1, 64, 1), &sealed, 1);
	ask("op-unknown", req(&rq, 9, 1, 64, 0), NULL, 0);
	close(passwd);
	close(plain);
	close(sealed);
	fprintf(out, "garbage\n");
	fclose(out);
	/* Not a message: the supervisor ends this process. */
	if (send(FD_IPC, "\xff\xff\xff\xff\xff", 5, 0) != 5)
		return 2;
	for (int i = 0; i < 600; i++)
		sleep(1);
	return 3;
}
