/* proof_client.c -- a client with a certificate that answers the pool's TENANT_CHALLENGE
 * wrongly, on purpose (test-tenant-proof.sh).
 *
 *	proof_client MODE CERT KEY [OTHER_KEY]     (GPUPOOL_SERVER, GPUPOOL_CA as the interposer)
 *
 * MODE: old (Hello without tenant_proof), silent (no answer), wrongtype (GOODBYE instead of
 * TENANT_PROOF), garbage (random bytes as the signature), otherkey (a real proof signed with
 * OTHER_KEY), twice (TENANT_PROOF, then another one), good (a right proof).
 * Prints "status N: MESSAGE" from the HelloReply, or "closed: WHY" when the pool closed the
 * connection without one; exits 0 either way, 1 when it could not run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/pem.h>
#include <openssl/rand.h>

#include <gpupool/gpupool.h>

#include "codec.h"
#include "conn.h"
#include "proof.h"

static struct gp_conn *c;

static int die(const char *what)
{
	fprintf(stderr, "proof_client: %s (%s)\n", what, c && c->err[0] ? c->err : "");
	return 1;
}

static EVP_PKEY *read_key(const char *path)
{
	FILE *f = fopen(path, "r");
	EVP_PKEY *k = f ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : NULL;

	if (f)
		fclose(f);
	return k;
}

/* The answer MODE gives to the challenge in c->msg. */
static int answer(const char *mode, const struct gp_frame_hdr *h, EVP_PKEY *other)
{
	Gp__TenantChallenge *ch = (Gp__TenantChallenge *)gp_msg_unpack(h->type, c->msg, h->msg_len);
	Gp__TenantProof tp = GP__TENANT_PROOF__INIT;
	uint8_t exporter[GP_PROOF_EXPORTER_LEN], junk[64], *sig = NULL;
	EVP_PKEY *key = SSL_get_privatekey(c->ssl);
	size_t siglen = 0;
	char err[256];
	int r;

	if (!ch || ch->nonce.len != GP_PROOF_NONCE_LEN || gp_proof_exporter(c->ssl, exporter)) {
		r = die("the challenge");
		goto out;
	}
	r = 0;
	if (strcmp(mode, "silent") == 0)
		goto out;
	if (strcmp(mode, "wrongtype") == 0) {
		r = gp_conn_send(c, GP_MSG_GOODBYE, 0, 0, NULL, NULL, 0) || gp_conn_flush(c);
		goto out;
	}
	if (strcmp(mode, "garbage") == 0) {
		RAND_bytes(junk, sizeof(junk));
		tp.signature.data = junk;
		tp.signature.len = sizeof(junk);
	} else {
		if (gp_proof_sign(strcmp(mode, "otherkey") == 0 ? other : key, ch->nonce.data,
				  exporter, &sig, &siglen, err, sizeof(err))) {
			r = die(err);
			goto out;
		}
		tp.signature.data = sig;
		tp.signature.len = siglen;
	}
	r = gp_conn_send(c, GP_MSG_TENANT_PROOF, 0, 0, &tp.base, NULL, 0);
	if (!r && strcmp(mode, "twice") == 0)
		r = gp_conn_send(c, GP_MSG_TENANT_PROOF, 0, 0, &tp.base, NULL, 0);
	if (!r)
		r = gp_conn_flush(c);
	if (r)
		r = die("sending TENANT_PROOF");
out:
	OPENSSL_free(sig);
	if (ch)
		protobuf_c_message_free_unpacked(&ch->base, NULL);
	return r ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *server = getenv("GPUPOOL_SERVER"), *mode;
	Gp__Hello hello = GP__HELLO__INIT;
	Gp__HelloReply *rep;
	struct gp_frame_hdr h;
	EVP_PKEY *other = NULL;
	char err[512], host[256], port[16];
	SSL_CTX *ctx;
	int fd, ret = 0;

	if (argc < 4 || !server ||
	    gp_split_hostport(server, host, sizeof(host), port, sizeof(port)))
		return die("usage: proof_client MODE CERT KEY [OTHER_KEY], GPUPOOL_SERVER set");
	mode = argv[1];
	if (argc > 4 && !(other = read_key(argv[4])))
		return die("OTHER_KEY");
	ctx = gp_tls_client_ctx_new(getenv("GPUPOOL_CA"), argv[2], argv[3], err, sizeof(err));
	if (!ctx)
		return die(err);
	fd = gp_tcp_connect(server, 5000, err, sizeof(err));
	if (fd < 0)
		return die(err);
	c = gp_conn_new(fd);
	if (gp_conn_tls_connect(c, ctx, host))
		return die("TLS");
	hello.protocol_version = GP_PROTOCOL_VERSION;
	hello.program = "proof_client";
	hello.client_host = "test";
	hello.tenant_proof = strcmp(mode, "old") != 0;
	if (gp_conn_send(c, GP_MSG_HELLO, 0, 0, &hello.base, NULL, 0) || gp_conn_flush(c))
		return die("Hello");
	if (gp_conn_recv(c, &h) == 0 && h.type == GP_MSG_TENANT_CHALLENGE) {
		ret = answer(mode, &h, other);
		if (ret)
			goto out;
		if (gp_conn_recv(c, &h)) {
			printf("closed: %s\n", c->err[0] ? c->err : "no HelloReply");
			goto out;
		}
	} else if (c->err[0]) {
		printf("closed: %s\n", c->err);
		goto out;
	}
	ret = 1;
	if (h.type != GP_MSG_HELLO_REPLY) {
		die("neither TENANT_CHALLENGE nor HelloReply");
		goto out;
	}
	rep = (Gp__HelloReply *)gp_msg_unpack(h.type, c->msg, h.msg_len);
	if (!rep) {
		die("HelloReply does not decode");
		goto out;
	}
	printf("status %d: %s (tenant %s)\n", rep->status, rep->message, rep->tenant);
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	ret = 0;
out:
	EVP_PKEY_free(other);
	gp_conn_free(c);
	SSL_CTX_free(ctx);
	return ret;
}
