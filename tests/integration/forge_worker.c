/* forge_worker.c -- a test stand-in for a compromised worker: it runs the real gpupool-worker
 * (GPUPOOL_TEST_WORKER) behind a relay of its control channel and rewrites the worker's
 * AdmitRequest as a worker taken over by its client could. Named as `worker` in a test's
 * gpupoold.conf (with warm_workers 0: a warm worker's hand-over is not relayed; --warm and
 * --inventory run the real worker directly). Never installed.
 *
 * GPUPOOL_TEST_FORGE says what it changes:
 *   tenant=NAME    claims tenant NAME, the client's proof forwarded as it came
 *   bare=NAME      claims tenant NAME and forwards no certificate or proof
 *   save=FILE      changes nothing, and writes the proof it forwards to FILE
 *   replay=FILE    forwards the proof saved in FILE (another session's) instead of its own,
 *                  and claims the tenant saved with it
 *   retry          sends its AdmitRequest stripped of the proof (refused), then unchanged:
 *                  a second request a worker is never let make
 * Each rewrite is said on stderr (the daemon's log): "forge_worker: ...".
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gpupool/wire.h>

#include "codec.h"
#include "frame.h"

#define FD_CONTROL 4
#define BUF_MAX (2u << 20)

static pid_t child;

static void pass_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (child <= 0)
		return;
	if (si && si->si_code == SI_QUEUE)
		sigqueue(child, sig, si->si_value);
	else
		kill(child, sig);
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The saved proof: tenant, then each field as a length and its bytes. */
static void save(const char *path, const Gp__AdmitRequest *r)
{
	FILE *f = fopen(path, "w");
	size_t n;

	if (!f)
		return;
	n = strlen(r->tenant);
	fwrite(&n, sizeof(n), 1, f);
	fwrite(r->tenant, 1, n, f);
	fwrite(&r->n_peer_chain, sizeof(r->n_peer_chain), 1, f);
	for (size_t i = 0; i < r->n_peer_chain; i++) {
		fwrite(&r->peer_chain[i].len, sizeof(size_t), 1, f);
		fwrite(r->peer_chain[i].data, 1, r->peer_chain[i].len, f);
	}
	fwrite(&r->proof_signature.len, sizeof(size_t), 1, f);
	fwrite(r->proof_signature.data, 1, r->proof_signature.len, f);
	fwrite(&r->proof_exporter.len, sizeof(size_t), 1, f);
	fwrite(r->proof_exporter.data, 1, r->proof_exporter.len, f);
	fclose(f);
	fprintf(stderr, "forge_worker: saved the proof for tenant %s\n", r->tenant);
}

static int load_field(FILE *f, ProtobufCBinaryData *b)
{
	if (fread(&b->len, sizeof(size_t), 1, f) != 1 || b->len > BUF_MAX)
		return -1;
	b->data = malloc(b->len ? b->len : 1);
	return b->data && fread(b->data, 1, b->len, f) == b->len ? 0 : -1;
}

static int load(const char *path, Gp__AdmitRequest *r, char *tenant, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;
	int ret = -1;

	if (!f)
		return -1;
	if (fread(&n, sizeof(n), 1, f) != 1 || n >= len || fread(tenant, 1, n, f) != n)
		goto out;
	tenant[n] = '\0';
	if (fread(&r->n_peer_chain, sizeof(r->n_peer_chain), 1, f) != 1 || r->n_peer_chain > 10)
		goto out;
	r->peer_chain = calloc(r->n_peer_chain + 1, sizeof(*r->peer_chain));
	for (size_t i = 0; i < r->n_peer_chain; i++)
		if (load_field(f, &r->peer_chain[i]))
			goto out;
	if (load_field(f, &r->proof_signature) || load_field(f, &r->proof_exporter))
		goto out;
	r->tenant = tenant;
	ret = 0;
out:
	fclose(f);
	return ret;
}

/* Rewrites one AdmitRequest frame (hdr + body) into out; returns its length. */
static size_t forge(const struct gp_frame_hdr *h, const uint8_t *body, uint8_t *out)
{
	const char *how = getenv("GPUPOOL_TEST_FORGE");
	Gp__AdmitRequest *r = (Gp__AdmitRequest *)gp_msg_unpack(h->type, body, h->msg_len);
	static char tenant[256];
	struct gp_frame_hdr nh = *h;
	size_t n;

	if (!r || !how)
		goto same;
	if (strcmp(how, "retry") == 0) {
		Gp__AdmitRequest bare = *r;
		size_t whole = GP_FRAME_HDR_SIZE + h->msg_len + h->bulk_len;

		fprintf(stderr, "forge_worker: asking without the proof, then again with it\n");
		bare.n_peer_chain = 0;
		bare.proof_signature.len = 0;
		bare.proof_exporter.len = 0;
		n = protobuf_c_message_get_packed_size(&bare.base);
		nh.msg_len = (uint32_t)n;
		gp_frame_hdr_encode(&nh, out);
		protobuf_c_message_pack(&bare.base, out + GP_FRAME_HDR_SIZE);
		memcpy(out + GP_FRAME_HDR_SIZE + n, body - GP_FRAME_HDR_SIZE, whole);
		return GP_FRAME_HDR_SIZE + n + whole;
	}
	if (strncmp(how, "tenant=", 7) == 0) {
		fprintf(stderr, "forge_worker: claiming tenant %s for the client of %s\n", how + 7,
			r->tenant);
		r->tenant = (char *)how + 7;
	} else if (strncmp(how, "bare=", 5) == 0) {
		fprintf(stderr, "forge_worker: claiming tenant %s without a proof\n", how + 5);
		r->tenant = (char *)how + 5;
		r->n_peer_chain = 0;
		r->proof_signature.len = 0;
		r->proof_exporter.len = 0;
	} else if (strncmp(how, "save=", 5) == 0) {
		save(how + 5, r);
	} else if (strncmp(how, "replay=", 7) == 0) {
		Gp__AdmitRequest saved = GP__ADMIT_REQUEST__INIT;

		if (load(how + 7, &saved, tenant, sizeof(tenant)) == 0) {
			fprintf(stderr, "forge_worker: replaying the saved proof of tenant %s\n",
				tenant);
			r->tenant = tenant;
			r->n_peer_chain = saved.n_peer_chain;
			r->peer_chain = saved.peer_chain;
			r->proof_signature = saved.proof_signature;
			r->proof_exporter = saved.proof_exporter;
		}
	}
	n = protobuf_c_message_get_packed_size(&r->base);
	nh.msg_len = (uint32_t)n;
	gp_frame_hdr_encode(&nh, out);
	protobuf_c_message_pack(&r->base, out + GP_FRAME_HDR_SIZE);
	return GP_FRAME_HDR_SIZE + n; /* the unpacked message and what it points to: the
				       * process is short-lived */
same:
	memcpy(out, body - GP_FRAME_HDR_SIZE, GP_FRAME_HDR_SIZE + h->msg_len + h->bulk_len);
	return GP_FRAME_HDR_SIZE + h->msg_len + h->bulk_len;
}

/* Worker -> supervisor: frames, the AdmitRequest rewritten. */
static int from_worker(int in, uint8_t *buf, size_t *len, uint8_t *out)
{
	ssize_t n = read(in, buf + *len, BUF_MAX - *len);
	struct gp_frame_hdr h;

	if (n <= 0)
		return -1;
	*len += (size_t)n;
	while (*len >= GP_FRAME_HDR_SIZE && gp_frame_hdr_decode(buf, &h) == 0) {
		size_t whole = GP_FRAME_HDR_SIZE + h.msg_len + h.bulk_len, k;

		if (whole > BUF_MAX)
			return -1;
		if (*len < whole)
			break;
		if (h.type == GP_MSG_ADMIT_REQUEST)
			k = forge(&h, buf + GP_FRAME_HDR_SIZE, out);
		else
			memcpy(out, buf, k = whole);
		if (write_all(FD_CONTROL, out, k))
			return -1;
		memmove(buf, buf + whole, *len - whole);
		*len -= whole;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *real = getenv("GPUPOOL_TEST_WORKER");
	struct sigaction sa = {.sa_sigaction = pass_signal, .sa_flags = SA_SIGINFO};
	static uint8_t buf[BUF_MAX], out[BUF_MAX + 4096], raw[65536];
	size_t len = 0;
	int sv[2], status;

	if (!real) {
		fprintf(stderr, "forge_worker: set GPUPOOL_TEST_WORKER to the real worker\n");
		return 2;
	}
	if (argc > 1) { /* --inventory, --warm: nothing to forge */
		execv(real, argv);
		return 127;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 1;
	child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(sv[1], FD_CONTROL);
		close(sv[0]);
		close(sv[1]);
		execl(real, real, (char *)NULL);
		_exit(127);
	}
	close(sv[1]);
	close(3); /* the client and the stats page are the worker's alone */
	close(5);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	for (;;) {
		struct pollfd p[2] = {{FD_CONTROL, POLLIN, 0}, {sv[0], POLLIN, 0}};

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[0].revents) {
			ssize_t n = read(FD_CONTROL, raw, sizeof(raw));

			if (n <= 0 || write_all(sv[0], raw, (size_t)n))
				break;
		}
		if (p[1].revents && from_worker(sv[0], buf, &len, out))
			break;
	}
	close(sv[0]);
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
