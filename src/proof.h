/* proof.h -- a client's proof that it holds its certificate's private key, for a nonce the
 * supervisor chose (docs/security.md "The supervisor names the tenant").
 *
 * The worker terminates TLS, so the certificate it reports is only its word. The supervisor
 * gives each session's worker a fresh nonce; the worker sends it to the client
 * (TENANT_CHALLENGE), and the client signs
 *
 *	GP_PROOF_CONTEXT (with its NUL) || nonce (32 bytes) || exporter (32 bytes)
 *
 * with its certificate's key, where exporter is this TLS connection's keying material for
 * GP_PROOF_EXPORTER_LABEL (RFC 8446 7.5). The worker forwards the signature with the chain
 * TLS verified and its own exporter value; the supervisor checks the chain against the
 * tenant CA and the signature over its own nonce, and takes the tenant's name from the leaf.
 * Every field has a fixed length, so no two inputs sign the same bytes.
 */
#ifndef GP_PROOF_H
#define GP_PROOF_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <protobuf-c/protobuf-c.h>

#include "conn.h"

#define GP_PROOF_CONTEXT "gpupool tenant proof v1"
#define GP_PROOF_EXPORTER_LABEL "EXPORTER-gpupool-tenant"
#define GP_PROOF_NONCE_LEN 32
#define GP_PROOF_EXPORTER_LEN 32
#define GP_PROOF_CHAIN_MAX 10 /* certificates in a forwarded chain */
#define GP_PROOF_SIG_MAX 1024 /* bytes of a signature (RSA 8192 is 1024) */

/* This connection's exporter value for the proof. Returns 0, or -1 (not TLS 1.3, no session). */
int gp_proof_exporter(SSL *ssl, uint8_t out[GP_PROOF_EXPORTER_LEN]);

/* Signs the proof with key: RSA (PSS, SHA-256, salt of the digest's length), EC (ECDSA,
 * SHA-256), Ed25519 or Ed448. *sig is OPENSSL_malloc'd. Returns 0, or -1 with err set. */
int gp_proof_sign(EVP_PKEY *key, const uint8_t nonce[GP_PROOF_NONCE_LEN],
		  const uint8_t exporter[GP_PROOF_EXPORTER_LEN], uint8_t **sig, size_t *siglen,
		  char *err, size_t errlen);

/* The tenant CA as the TLS listener trusts it: ca_file loaded as SSL_CTX_load_verify_locations
 * does, checked at the default TLS security level. NULL with err set when it cannot be read. */
struct gp_proof_ca;
struct gp_proof_ca *gp_proof_ca_new(const char *ca_file, char *err, size_t errlen);
void gp_proof_ca_free(struct gp_proof_ca *ca);

/*
 * The supervisor's check of what a worker forwarded: chain (DER, the leaf first, at most
 * GP_PROOF_CHAIN_MAX) must lead to ca as a TLS server verifies a client's ("ssl_client"
 * purpose, the current time), sig must be the leaf key's signature over nonce and exporter,
 * and the leaf's name (gp_cert_name, from) is the tenant, written to out. Returns 0, or
 * GP_EREFUSED with the reason in why.
 */
int gp_proof_verify(const struct gp_proof_ca *ca, enum gp_name_from from,
		    const uint8_t nonce[GP_PROOF_NONCE_LEN], const ProtobufCBinaryData *chain,
		    size_t nchain, const ProtobufCBinaryData *sig,
		    const ProtobufCBinaryData *exporter, char *out, size_t outlen, char *why,
		    size_t whylen);

#endif
