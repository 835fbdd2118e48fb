/* test_proof.c -- the supervisor's check of a tenant proof (src/proof.h), fed what a worker
 * forwards in AdmitRequest: a real client's proof is accepted and named from its certificate;
 * every forgery a compromised worker could send instead is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "error.h"
#include "proof.h"

/* ---- a small PKI --------------------------------------------------------------------- */

static EVP_PKEY *key_new(const char *kind)
{
	EVP_PKEY *k;

	if (strcmp(kind, "RSA") == 0)
		k = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
	else if (strcmp(kind, "EC") == 0)
		k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	else
		k = EVP_PKEY_Q_keygen(NULL, NULL, kind);
	assert_non_null(k);
	return k;
}

static void add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX v3;
	X509_EXTENSION *e;

	X509V3_set_ctx(&v3, issuer ? issuer : x, x, NULL, NULL, 0);
	e = X509V3_EXT_conf_nid(NULL, &v3, nid, value);
	assert_non_null(e);
	assert_int_equal(X509_add_ext(x, e, -1), 1);
	X509_EXTENSION_free(e);
}

/* A certificate for key, named by its subject's CNs (one or two), signed by issuer (NULL:
 * itself). A CA when ca is set, else a TLS client's. */
static X509 *cert_new(const char *cn, const char *cn2, EVP_PKEY *key, X509 *issuer,
		      EVP_PKEY *issuer_key, bool ca)
{
	static long serial = 1;
	X509 *x = X509_new();
	X509_NAME *n;

	assert_non_null(x);
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400);
	X509_set_pubkey(x, key);
	n = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0);
	if (cn2)
		X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_UTF8, (const unsigned char *)cn2, -1,
					   -1, 0);
	X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : n);
	if (ca) {
		add_ext(x, issuer, NID_basic_constraints, "critical,CA:TRUE");
		add_ext(x, issuer, NID_key_usage, "critical,keyCertSign,cRLSign");
	} else {
		add_ext(x, issuer, NID_basic_constraints, "CA:FALSE");
		add_ext(x, issuer, NID_ext_key_usage, "clientAuth");
	}
	add_ext(x, issuer, NID_subject_key_identifier, "hash");
	assert_true(X509_sign(x, issuer_key ? issuer_key : key,
			      EVP_PKEY_is_a(issuer_key ? issuer_key : key, "ED25519")
				      ? NULL
				      : EVP_sha256()) > 0);
	return x;
}

struct pki {
	EVP_PKEY *ca_key, *other_ca_key, *inter_key, *alice_key, *bob_key, *eve_key, *rsa_key,
		*ed_key, *deep_key, *twocn_key, *stranger_key;
	X509 *ca, *other_ca, *inter, *alice, *bob, *eve, *rsa, *ed, *deep, *twocn;
	char ca_file[64];
	struct gp_proof_ca *store;
};

static struct pki P;

static int pki_setup(void **state)
{
	char err[256];
	FILE *f;
	int fd;

	P.ca_key = key_new("EC");
	P.other_ca_key = key_new("EC");
	P.inter_key = key_new("EC");
	P.alice_key = key_new("EC");
	P.bob_key = key_new("EC");
	P.eve_key = key_new("EC");
	P.rsa_key = key_new("RSA");
	P.ed_key = key_new("ED25519");
	P.deep_key = key_new("EC");
	P.twocn_key = key_new("EC");
	P.stranger_key = key_new("EC");
	P.ca = cert_new("tenant CA", NULL, P.ca_key, NULL, NULL, true);
	P.other_ca = cert_new("tenant CA", NULL, P.other_ca_key, NULL, NULL, true); /* same name */
	P.inter = cert_new("intermediate", NULL, P.inter_key, P.ca, P.ca_key, true);
	P.alice = cert_new("alice", NULL, P.alice_key, P.ca, P.ca_key, false);
	P.bob = cert_new("bob", NULL, P.bob_key, P.ca, P.ca_key, false);
	P.eve = cert_new("alice", NULL, P.eve_key, P.other_ca, P.other_ca_key, false);
	P.rsa = cert_new("rsa-tenant", NULL, P.rsa_key, P.ca, P.ca_key, false);
	P.ed = cert_new("ed-tenant", NULL, P.ed_key, P.ca, P.ca_key, false);
	P.deep = cert_new("deep", NULL, P.deep_key, P.inter, P.inter_key, false);
	P.twocn = cert_new("alice", "admin", P.twocn_key, P.ca, P.ca_key, false);

	snprintf(P.ca_file, sizeof(P.ca_file), "/tmp/test_proof_ca.XXXXXX");
	fd = mkstemp(P.ca_file);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	assert_int_equal(PEM_write_X509(f, P.ca), 1);
	fclose(f);
	P.store = gp_proof_ca_new(P.ca_file, err, sizeof(err));
	assert_non_null(P.store);
	(void)state;
	return 0;
}

static int pki_teardown(void **state)
{
	EVP_PKEY *keys[] = {P.ca_key,	P.other_ca_key, P.inter_key,   P.alice_key,
			    P.bob_key,	P.eve_key,	P.rsa_key,     P.ed_key,
			    P.deep_key, P.twocn_key,	P.stranger_key};
	X509 *certs[] = {P.ca,	P.other_ca, P.inter, P.alice, P.bob,
			 P.eve, P.rsa,	    P.ed,    P.deep,  P.twocn};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		EVP_PKEY_free(keys[i]);
	for (size_t i = 0; i < sizeof(certs) / sizeof(certs[0]); i++)
		X509_free(certs[i]);
	gp_proof_ca_free(P.store);
	unlink(P.ca_file);
	(void)state;
	return 0;
}

/* ---- what a worker forwards ---------------------------------------------------------- */

/* An AdmitRequest's proof fields: the chain as DER, the signature, the exporter value. */
struct forwarded {
	ProtobufCBinaryData chain[4];
	size_t nchain;
	ProtobufCBinaryData sig, exporter;
	uint8_t exp[GP_PROOF_EXPORTER_LEN];
};

static void add_cert(struct forwarded *f, X509 *x)
{
	unsigned char *der = NULL;
	int len = i2d_X509(x, &der);

	assert_true(len > 0);
	f->chain[f->nchain].data = der;
	f->chain[f->nchain++].len = (size_t)len;
}

/* A client's proof: key signs nonce with this connection's exporter value (random here). */
static void forward(struct forwarded *f, X509 *leaf, X509 *extra, EVP_PKEY *key,
		    const uint8_t *nonce)
{
	char err[256];
	size_t len;

	memset(f, 0, sizeof(*f));
	assert_int_equal(RAND_bytes(f->exp, sizeof(f->exp)), 1);
	f->exporter.data = f->exp;
	f->exporter.len = sizeof(f->exp);
	if (leaf)
		add_cert(f, leaf);
	if (extra)
		add_cert(f, extra);
	assert_int_equal(gp_proof_sign(key, nonce, f->exp, &f->sig.data, &len, err, sizeof(err)),
			 0);
	f->sig.len = len;
}

static void forwarded_free(struct forwarded *f)
{
	for (size_t i = 0; i < f->nchain; i++)
		OPENSSL_free(f->chain[i].data);
	OPENSSL_free(f->sig.data);
}

static int check(const struct forwarded *f, const uint8_t *nonce, char *name, char *why)
{
	int r = gp_proof_verify(P.store, GP_NAME_FROM_CN, nonce, f->chain, f->nchain, &f->sig,
				&f->exporter, name, 128, why, 256);

	if (r)
		assert_string_equal(name, ""); /* a refused proof names nobody */
	return r;
}

static void nonce_new(uint8_t *n)
{
	assert_int_equal(RAND_bytes(n, GP_PROOF_NONCE_LEN), 1);
}

/* ---- accepted ---- */

static void test_real_clients_named(void **state)
{
	struct {
		X509 *cert, *extra;
		EVP_PKEY *key;
		const char *name;
	} ok[] = {
		{P.alice, NULL, P.alice_key, "alice"},	{P.bob, NULL, P.bob_key, "bob"},
		{P.rsa, NULL, P.rsa_key, "rsa-tenant"}, /* RSA-PSS */
		{P.ed, NULL, P.ed_key, "ed-tenant"},	/* Ed25519 */
		{P.deep, P.inter, P.deep_key, "deep"},	/* through an intermediate CA */
	};
	uint8_t nonce[GP_PROOF_NONCE_LEN];
	char name[128], why[256];

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct forwarded f;

		nonce_new(nonce);
		forward(&f, ok[i].cert, ok[i].extra, ok[i].key, nonce);
		why[0] = '\0';
		assert_int_equal(check(&f, nonce, name, why), 0);
		assert_string_equal(name, ok[i].name);
		forwarded_free(&f);
	}
}

/* ---- forgeries ---- */

static void test_wrong_nonce_refused(void **state)
{
	uint8_t nonce[GP_PROOF_NONCE_LEN], other[GP_PROOF_NONCE_LEN];
	char name[128], why[256];
	struct forwarded f;

	nonce_new(nonce);
	nonce_new(other);
	forward(&f, P.alice, NULL, P.alice_key, other);
	assert_int_equal(check(&f, nonce, name, why), GP_EREFUSED);
	assert_non_null(strstr(why, "signature does not verify"));
	forwarded_free(&f);
}

/* A proof a real client made for worker 1's session, offered by worker 2 for its own. */
static void test_replay_from_another_session_refused(void **state)
{
	uint8_t n1[GP_PROOF_NONCE_LEN], n2[GP_PROOF_NONCE_LEN];
	char name[128], why[256];
	struct forwarded f;

	nonce_new(n1);
	nonce_new(n2);
	forward(&f, P.bob, NULL, P.bob_key, n1);
	assert_int_equal(check(&f, n1, name, why), 0); /* good for its own session */
	assert_string_equal(name, "bob");
	assert_int_equal(check(&f, n2, name, why), GP_EREFUSED);
	forwarded_free(&f);
}

static void test_signature_by_another_key_refused(void **state)
{
	uint8_t nonce[GP_PROOF_NONCE_LEN];
	char name[128], why[256];
	struct forwarded f;

	nonce_new(nonce);
	forward(&f, P.alice, NULL, P.stranger_key, nonce); /* a key the worker made up */
	assert_int_equal(check(&f, nonce, name, why), GP_EREFUSED);
	forwarded_free(&f);
	/* Tenant A's valid chain with tenant B's real signature: a worker serving bob who wants
	 * to be alice. */
	forward(&f, P.alice, NULL, P.bob_key, nonce);
	assert_int_equal(check(&f, nonce, name, why), GP_EREFUSED);
	assert_non_null(strstr(why, "signature does not verify"));
	forwarded_free(&f);
}

static void test_chain_from_another_ca_refused(void **state)
{
	uint8_t nonce[GP_PROOF_NONCE_LEN];
	char name[128], why[256];
	struct forwarded f;

	nonce_new(nonce);
	/* Named alice, by a CA of the same name the pool does not trust, signed right. */
	forward(&f, P.eve, NULL, P.eve_key, nonce);
	assert_int_equal(check(&f, nonce, name, why), GP_EREFUSED);
	assert_non_null(strstr(why, "does not verify against tls_ca"));
	forwarded_free(&f);
	/* A leaf under an intermediate the worker leaves out. */
	forward(&f, P.deep, NULL, P.deep_key, nonce);
	assert_int_equal(check(&f, nonce, name, why), GP_EREFUSED);
	forwarded_free(&f);
	/* The CA's own certificate as a leaf, signed with the CA's key: not a client's. */
	forward(&f, P.inter, NULL, P.inter_key, nonce);
	assert_int_equal(check(&f, nonce, name, why), GP_EREFUSED);
	forwarded_free(&f);
}

/* The exporter value signed must be the one forwarded. */
static void test_other_exporter_refused(void **state)
{
	uint8_t nonce[GP_PROOF_NONCE_LEN];
	char name[128], why[256];
	struct forwarded f;

	nonce_new(nonce);
	forward(&f, P.alice, NULL, P.alice_key, nonce);
	f.exp[0] ^= 1;
	assert_int_equal(check(&f, nonce, name, why), GP_EREFUSED);
	f.exp[0] ^= 1;
	f.exporter.len = 16;
	assert_int_equal(check(&f, nonce, name, why), GP_EREFUSED);
	assert_non_null(strstr(why, "exporter"));
	forwarded_free(&f);
}

/* An RSA key's PKCS#1 v1.5 signature over the same bytes: the check takes PSS only. */
static void test_rsa_without_pss_refused(void **state)
{
	uint8_t nonce[GP_PROOF_NONCE_LEN], tbs[sizeof(GP_PROOF_CONTEXT) + 64];
	char name[128], why[256];
	struct forwarded f;
	EVP_MD_CTX *m = EVP_MD_CTX_new();
	size_t len = 0;

	nonce_new(nonce);
	forward(&f, P.rsa, NULL, P.rsa_key, nonce);
	memcpy(tbs, GP_PROOF_CONTEXT, sizeof(GP_PROOF_CONTEXT));
	memcpy(tbs + sizeof(GP_PROOF_CONTEXT), nonce, 32);
	memcpy(tbs + sizeof(GP_PROOF_CONTEXT) + 32, f.exp, 32);
	OPENSSL_free(f.sig.data);
	assert_int_equal(EVP_DigestSignInit(m, NULL, EVP_sha256(), NULL, P.rsa_key), 1);
	assert_int_equal(EVP_DigestSign(m, NULL, &len, tbs, sizeof(tbs)), 1);
	f.sig.data = OPENSSL_malloc(len);
	assert_int_equal(EVP_DigestSign(m, f.sig.data, &len, tbs, sizeof(tbs)), 1);
	f.sig.len = len;
	EVP_MD_CTX_free(m);
	assert_int_equal(check(&f, nonce, name, why), GP_EREFUSED);
	forwarded_free(&f);
}

static void test_missing_or_malformed_refused(void **state)
{
	uint8_t nonce[GP_PROOF_NONCE_LEN];
	char name[128], why[256];
	struct forwarded f;
	ProtobufCBinaryData keep;

	nonce_new(nonce);
	forward(&f, P.alice, NULL, P.alice_key, nonce);
	keep = f.sig;
	f.sig.len = 0; /* no proof */
	assert_int_equal(check(&f, nonce, name, why), GP_EREFUSED);
	assert_non_null(strstr(why, "no tenant proof"));
	f.sig = keep;
	f.nchain = 0; /* no chain */
	assert_int_equal(check(&f, nonce, name, why), GP_EREFUSED);
	f.nchain = 1;
	f.chain[0].len--; /* a cut certificate */
	assert_int_equal(check(&f, nonce, name, why), GP_EREFUSED);
	assert_non_null(strstr(why, "does not decode"));
	f.chain[0].len++;
	assert_int_equal(check(&f, nonce, name, why), 0); /* whole again: fine */
	assert_int_equal(gp_proof_verify(NULL, GP_NAME_FROM_CN, nonce, f.chain, 1, &f.sig,
					 &f.exporter, name, sizeof(name), why, sizeof(why)),
			 GP_EREFUSED);
	forwarded_free(&f);
}

/* The name rules are gp_cert_name's: a proven certificate with two CNs names nobody. */
static void test_name_rules_apply(void **state)
{
	uint8_t nonce[GP_PROOF_NONCE_LEN];
	char name[128], why[256];
	struct forwarded f;

	nonce_new(nonce);
	forward(&f, P.twocn, NULL, P.twocn_key, nonce);
	assert_int_equal(check(&f, nonce, name, why), GP_EREFUSED);
	assert_non_null(strstr(why, "more than one commonName"));
	forwarded_free(&f);
}

/* The chain is checked as TLS checks a client's: a leaf only for servers (serverAuth), or
 * one that has expired, is refused. */
static void test_purpose_and_time_checked(void **state)
{
	X509 *server = cert_new("alice", NULL, P.alice_key, P.ca, P.ca_key, false);
	X509 *old = cert_new("alice", NULL, P.alice_key, P.ca, P.ca_key, false);
	uint8_t nonce[GP_PROOF_NONCE_LEN];
	char name[128], why[256];
	struct forwarded f;

	(void)state;
	nonce_new(nonce);
	X509_EXTENSION_free(
		X509_delete_ext(server, X509_get_ext_by_NID(server, NID_ext_key_usage, -1)));
	add_ext(server, P.ca, NID_ext_key_usage, "serverAuth");
	assert_true(X509_sign(server, P.ca_key, EVP_sha256()) > 0);
	forward(&f, server, NULL, P.alice_key, nonce);
	assert_int_equal(check(&f, nonce, name, why), GP_EREFUSED);
	assert_non_null(strstr(why, "unsuitable certificate purpose"));
	forwarded_free(&f);

	X509_gmtime_adj(X509_getm_notBefore(old), -7200);
	X509_gmtime_adj(X509_getm_notAfter(old), -60);
	assert_true(X509_sign(old, P.ca_key, EVP_sha256()) > 0);
	forward(&f, old, NULL, P.alice_key, nonce);
	assert_int_equal(check(&f, nonce, name, why), GP_EREFUSED);
	assert_non_null(strstr(why, "expired"));
	forwarded_free(&f);
	X509_free(server);
	X509_free(old);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_clients_named),
		cmocka_unit_test(test_wrong_nonce_refused),
		cmocka_unit_test(test_replay_from_another_session_refused),
		cmocka_unit_test(test_signature_by_another_key_refused),
		cmocka_unit_test(test_chain_from_another_ca_refused),
		cmocka_unit_test(test_other_exporter_refused),
		cmocka_unit_test(test_rsa_without_pss_refused),
		cmocka_unit_test(test_missing_or_malformed_refused),
		cmocka_unit_test(test_name_rules_apply),
		cmocka_unit_test(test_purpose_and_time_checked),
	};

	return cmocka_run_group_tests(tests, pki_setup, pki_teardown);
}
