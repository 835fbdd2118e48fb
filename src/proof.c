/* proof.c -- the tenant proof: what a client signs, and the supervisor's check (proof.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <openssl/x509_vfy.h>

#include <gpupool/wire.h>

#include "error.h"
#include "proof.h"

#define CONTEXT_LEN (sizeof(GP_PROOF_CONTEXT)) /* with its NUL */
#define SIGNED_LEN (CONTEXT_LEN + GP_PROOF_NONCE_LEN + GP_PROOF_EXPORTER_LEN)

struct gp_proof_ca {
	X509_STORE *store;
	int level; /* the security level a TLS context gets by default */
};

int gp_proof_exporter(SSL *ssl, uint8_t out[GP_PROOF_EXPORTER_LEN])
{
	if (!ssl || SSL_version(ssl) != TLS1_3_VERSION)
		return -1;
	return SSL_export_keying_material(ssl, out, GP_PROOF_EXPORTER_LEN, GP_PROOF_EXPORTER_LABEL,
					  sizeof(GP_PROOF_EXPORTER_LABEL) - 1, NULL, 0, 0) == 1
		       ? 0
		       : -1;
}

static void signed_bytes(uint8_t out[SIGNED_LEN], const uint8_t *nonce, const uint8_t *exporter)
{
	memcpy(out, GP_PROOF_CONTEXT, CONTEXT_LEN);
	memcpy(out + CONTEXT_LEN, nonce, GP_PROOF_NONCE_LEN);
	memcpy(out + CONTEXT_LEN + GP_PROOF_NONCE_LEN, exporter, GP_PROOF_EXPORTER_LEN);
}

/* The digest for key's kind (NULL for the EdDSA keys, which hash themselves) and, for RSA,
 * PSS on pctx. Both sides call it: a verifier never accepts PKCS#1 v1.5 or another salt. */
static int kind_of(EVP_PKEY *key, const EVP_MD **md, bool *pss)
{
	*md = NULL;
	*pss = false;
	if (EVP_PKEY_is_a(key, "RSA") || EVP_PKEY_is_a(key, "RSA-PSS")) {
		*md = EVP_sha256();
		*pss = true;
	} else if (EVP_PKEY_is_a(key, "EC")) {
		*md = EVP_sha256();
	} else if (!EVP_PKEY_is_a(key, "ED25519") && !EVP_PKEY_is_a(key, "ED448")) {
		return -1;
	}
	return 0;
}

static int set_pss(EVP_PKEY_CTX *pctx)
{
	return EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) > 0 &&
			       EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) > 0
		       ? 0
		       : -1;
}

int gp_proof_sign(EVP_PKEY *key, const uint8_t nonce[GP_PROOF_NONCE_LEN],
		  const uint8_t exporter[GP_PROOF_EXPORTER_LEN], uint8_t **sig, size_t *siglen,
		  char *err, size_t errlen)
{
	uint8_t tbs[SIGNED_LEN];
	EVP_MD_CTX *mctx = NULL;
	EVP_PKEY_CTX *pctx = NULL;
	const EVP_MD *md;
	bool pss;
	int ret = -1;

	*sig = NULL;
	*siglen = 0;
	if (!key || kind_of(key, &md, &pss)) {
		snprintf(err, errlen,
			 "the certificate's key is of a kind the proof cannot use "
			 "(RSA, EC, Ed25519 or Ed448)");
		return -1;
	}
	signed_bytes(tbs, nonce, exporter);
	mctx = EVP_MD_CTX_new();
	if (!mctx || EVP_DigestSignInit(mctx, &pctx, md, NULL, key) != 1 ||
	    (pss && set_pss(pctx)) || EVP_DigestSign(mctx, NULL, siglen, tbs, sizeof(tbs)) != 1)
		goto out;
	*sig = OPENSSL_malloc(*siglen);
	if (!*sig || EVP_DigestSign(mctx, *sig, siglen, tbs, sizeof(tbs)) != 1)
		goto out;
	ret = 0;
out:
	if (ret) {
		unsigned long e = ERR_get_error();

		snprintf(err, errlen, "signing the tenant proof: %s",
			 e ? ERR_reason_error_string(e) : "failed");
		OPENSSL_free(*sig);
		*sig = NULL;
		*siglen = 0;
	}
	ERR_clear_error();
	EVP_MD_CTX_free(mctx);
	return ret;
}

struct gp_proof_ca *gp_proof_ca_new(const char *ca_file, char *err, size_t errlen)
{
	struct gp_proof_ca *ca = calloc(1, sizeof(*ca));
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

	if (!ca || !ctx) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	ca->level = SSL_CTX_get_security_level(ctx);
	ca->store = X509_STORE_new();
	if (!ca->store || !ca_file || X509_STORE_load_locations(ca->store, ca_file, NULL) != 1) {
		unsigned long e = ERR_get_error();

		snprintf(err, errlen, "CA file %s: %s", ca_file ? ca_file : "(none)",
			 e ? ERR_reason_error_string(e) : "cannot be read");
		goto fail;
	}
	SSL_CTX_free(ctx);
	ERR_clear_error();
	return ca;
fail:
	ERR_clear_error();
	SSL_CTX_free(ctx);
	gp_proof_ca_free(ca);
	return NULL;
}

void gp_proof_ca_free(struct gp_proof_ca *ca)
{
	if (!ca)
		return;
	X509_STORE_free(ca->store);
	free(ca);
}

static X509 *from_der(const ProtobufCBinaryData *b)
{
	const unsigned char *p = b->data;
	X509 *x;

	if (!b->data || b->len == 0 || b->len > GP_FRAME_MSG_MAX)
		return NULL;
	x = d2i_X509(NULL, &p, (long)b->len);
	if (x && p != b->data + b->len) { /* trailing bytes: not one certificate */
		X509_free(x);
		return NULL;
	}
	return x;
}

/* The chain leads to the CA as the TLS listener would check a client's. */
static int chain_ok(const struct gp_proof_ca *ca, X509 *leaf, STACK_OF(X509) * rest, char *why,
		    size_t whylen)
{
	X509_STORE_CTX *vc = X509_STORE_CTX_new();
	int ok = 0;

	if (vc && X509_STORE_CTX_init(vc, ca->store, leaf, rest) == 1 &&
	    X509_STORE_CTX_set_default(vc, "ssl_client") == 1) {
		X509_VERIFY_PARAM_set_auth_level(X509_STORE_CTX_get0_param(vc), ca->level);
		ok = X509_verify_cert(vc) == 1;
		if (!ok)
			snprintf(why, whylen, "the certificate does not verify against tls_ca: %s",
				 X509_verify_cert_error_string(X509_STORE_CTX_get_error(vc)));
	} else {
		snprintf(why, whylen, "the certificate chain cannot be checked (out of memory)");
	}
	X509_STORE_CTX_free(vc);
	ERR_clear_error();
	return ok ? 0 : GP_EREFUSED;
}

static int signature_ok(X509 *leaf, const uint8_t *nonce, const ProtobufCBinaryData *exporter,
			const ProtobufCBinaryData *sig, char *why, size_t whylen)
{
	EVP_PKEY *key = X509_get0_pubkey(leaf);
	uint8_t tbs[SIGNED_LEN];
	EVP_MD_CTX *mctx;
	EVP_PKEY_CTX *pctx = NULL;
	const EVP_MD *md;
	bool pss;
	int ok;

	if (!key || kind_of(key, &md, &pss)) {
		snprintf(why, whylen, "the certificate's key is of a kind the proof cannot use");
		return GP_EREFUSED;
	}
	signed_bytes(tbs, nonce, exporter->data);
	mctx = EVP_MD_CTX_new();
	ok = mctx && EVP_DigestVerifyInit(mctx, &pctx, md, NULL, key) == 1 &&
	     (!pss || set_pss(pctx) == 0) &&
	     EVP_DigestVerify(mctx, sig->data, sig->len, tbs, sizeof(tbs)) == 1;
	EVP_MD_CTX_free(mctx);
	ERR_clear_error();
	if (!ok) {
		snprintf(why, whylen,
			 "the tenant proof's signature does not verify with the "
			 "certificate's key for this session's nonce");
		return GP_EREFUSED;
	}
	return 0;
}

int gp_proof_verify(const struct gp_proof_ca *ca, enum gp_name_from from,
		    const uint8_t nonce[GP_PROOF_NONCE_LEN], const ProtobufCBinaryData *chain,
		    size_t nchain, const ProtobufCBinaryData *sig,
		    const ProtobufCBinaryData *exporter, char *out, size_t outlen, char *why,
		    size_t whylen)
{
	STACK_OF(X509) *rest = NULL;
	X509 *leaf = NULL;
	int ret = GP_EREFUSED;

	if (outlen)
		out[0] = '\0';
	if (!ca || nchain == 0) {
		snprintf(why, whylen, "no client certificate was forwarded");
		return GP_EREFUSED;
	}
	if (nchain > GP_PROOF_CHAIN_MAX) {
		snprintf(why, whylen, "the certificate chain has %zu certificates; at most %d",
			 nchain, GP_PROOF_CHAIN_MAX);
		return GP_EREFUSED;
	}
	if (!sig || !sig->data || sig->len == 0 || sig->len > GP_PROOF_SIG_MAX) {
		snprintf(why, whylen, "the client sent no tenant proof");
		return GP_EREFUSED;
	}
	if (!exporter || !exporter->data || exporter->len != GP_PROOF_EXPORTER_LEN) {
		snprintf(why, whylen, "the tenant proof has no TLS exporter value");
		return GP_EREFUSED;
	}
	leaf = from_der(&chain[0]);
	rest = sk_X509_new_null();
	if (!leaf || !rest) {
		snprintf(why, whylen, "the client certificate does not decode");
		goto out;
	}
	for (size_t i = 1; i < nchain; i++) {
		X509 *x = from_der(&chain[i]);

		if (!x || !sk_X509_push(rest, x)) {
			X509_free(x);
			snprintf(why, whylen, "certificate %zu of the chain does not decode", i);
			goto out;
		}
	}
	ret = chain_ok(ca, leaf, rest, why, whylen);
	if (!ret)
		ret = signature_ok(leaf, nonce, exporter, sig, why, whylen);
	if (!ret)
		ret = gp_cert_name(leaf, from, out, outlen, why, whylen);
out:
	if (ret && outlen)
		out[0] = '\0';
	ERR_clear_error();
	sk_X509_pop_free(rest, X509_free);
	X509_free(leaf);
	return ret;
}
