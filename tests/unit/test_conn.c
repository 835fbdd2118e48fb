/* test_conn.c -- gp_cert_name(): the tenant a client certificate names, or why none. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "conn.h"
#include "error.h"

/* A certificate with no names; the tests add what each needs. Never signed: gp_cert_name
 * reads names only, the TLS handshake has checked the signature before. */
static X509 *cert_new(void)
{
	X509 *x = X509_new();

	assert_non_null(x);
	return x;
}

static void add_cn(X509 *x, int type, const void *bytes, int len)
{
	assert_int_equal(X509_NAME_add_entry_by_NID(X509_get_subject_name(x), NID_commonName, type,
						    (const unsigned char *)bytes, len, -1, 0),
			 1);
}

/* Adds a subjectAltName holding the given (type, value) pairs, value of len bytes. */
static void add_san(X509 *x, int n, const int *types, const char *const *values, const int *lens)
{
	GENERAL_NAMES *names = sk_GENERAL_NAME_new_null();
	int i;

	assert_non_null(names);
	for (i = 0; i < n; i++) {
		GENERAL_NAME *g = GENERAL_NAME_new();
		ASN1_IA5STRING *s = ASN1_IA5STRING_new();

		assert_non_null(g);
		assert_non_null(s);
		assert_int_equal(ASN1_STRING_set(s, values[i], lens[i]), 1);
		GENERAL_NAME_set0_value(g, types[i], s);
		assert_true(sk_GENERAL_NAME_push(names, g) > 0);
	}
	assert_int_equal(X509_add1_ext_i2d(x, NID_subject_alt_name, names, 0, X509V3_ADD_APPEND),
			 1);
	GENERAL_NAMES_free(names);
}

static int name_of(X509 *x, enum gp_name_from from, char *out, size_t outlen, char *why)
{
	return gp_cert_name(x, from, out, outlen, why, 256);
}

/* ---- invalid arguments first ---- */

static void test_null_and_no_names(void **state)
{
	char out[128] = "x", why[256];
	X509 *x = cert_new();

	assert_int_equal(gp_cert_name(NULL, GP_NAME_FROM_CN, out, sizeof(out), why, sizeof(why)),
			 0);
	assert_string_equal(out, "");
	assert_int_equal(gp_cert_name(x, GP_NAME_FROM_CN, NULL, 0, why, sizeof(why)), GP_EREFUSED);
	assert_int_equal(gp_cert_name(x, (enum gp_name_from)7, out, sizeof(out), why, sizeof(why)),
			 GP_EREFUSED);
	assert_non_null(strstr(why, "no such"));
	/* no CN, no SAN: no name (the token's tenant or the default applies) */
	assert_int_equal(name_of(x, GP_NAME_FROM_CN, out, sizeof(out), why), 0);
	assert_string_equal(out, "");
	assert_int_equal(name_of(x, GP_NAME_FROM_SAN_URI, out, sizeof(out), why), 0);
	assert_string_equal(out, "");
	X509_free(x);
}

/* ---- normal names ---- */

static void test_cn(void **state)
{
	char out[128], why[256];
	X509 *x = cert_new();

	add_cn(x, MBSTRING_UTF8, "alice", -1);
	assert_int_equal(name_of(x, GP_NAME_FROM_CN, out, sizeof(out), why), 0);
	assert_string_equal(out, "alice");
	X509_free(x);
}

static void test_bmpstring_cn_decoded(void **state)
{
	/* "bob\u00e9" in UCS-2 big-endian: used to come out empty */
	static const unsigned char bmp[] = {0, 'b', 0, 'o', 0, 'b', 0, 0xe9};
	char out[128], why[256];
	X509 *x = cert_new();

	add_cn(x, V_ASN1_BMPSTRING, bmp, sizeof(bmp));
	assert_int_equal(name_of(x, GP_NAME_FROM_CN, out, sizeof(out), why), 0);
	assert_string_equal(out, "bob\xc3\xa9");
	X509_free(x);
}

static void test_san_uri_and_dns(void **state)
{
	static const int types[] = {GEN_DNS, GEN_URI, GEN_EMAIL};
	static const char *const values[] = {"carol.example.org", "spiffe://pool/carol",
					     "c@example.org"};
	static const int lens[] = {17, 19, 13};
	char out[128], why[256];
	X509 *x = cert_new();

	add_cn(x, MBSTRING_UTF8, "ignored-cn", -1);
	add_san(x, 3, types, values, lens);
	assert_int_equal(name_of(x, GP_NAME_FROM_SAN_URI, out, sizeof(out), why), 0);
	assert_string_equal(out, "spiffe://pool/carol");
	assert_int_equal(name_of(x, GP_NAME_FROM_SAN_DNS, out, sizeof(out), why), 0);
	assert_string_equal(out, "carol.example.org");
	assert_int_equal(name_of(x, GP_NAME_FROM_CN, out, sizeof(out), why), 0);
	assert_string_equal(out, "ignored-cn");
	X509_free(x);
}

static void test_longest_name_fits(void **state)
{
	char name[128], out[128], why[256];
	X509 *x = cert_new();

	memset(name, 'a', 127);
	name[127] = '\0';
	add_cn(x, V_ASN1_UTF8STRING, name, 127);
	assert_int_equal(name_of(x, GP_NAME_FROM_CN, out, sizeof(out), why), 0);
	assert_string_equal(out, name);
	X509_free(x);
}

/* ---- hostile names: refused, with the reason ---- */

static void test_embedded_nul_refused(void **state)
{
	static const int types[] = {GEN_URI};
	static const char *const values[] = {"spiffe://alice\0evil"};
	static const int lens[] = {19};
	char out[128] = "x", why[256];
	X509 *x = cert_new();

	add_cn(x, V_ASN1_UTF8STRING, "alice\0evil", 10);
	assert_int_equal(name_of(x, GP_NAME_FROM_CN, out, sizeof(out), why), GP_EREFUSED);
	assert_string_equal(out, "");
	assert_non_null(strstr(why, "embedded NUL"));
	add_san(x, 1, types, values, lens);
	assert_int_equal(name_of(x, GP_NAME_FROM_SAN_URI, out, sizeof(out), why), GP_EREFUSED);
	assert_non_null(strstr(why, "embedded NUL"));
	X509_free(x);
}

static void test_overlong_refused(void **state)
{
	char name[129], out[128] = "x", why[256];
	X509 *x = cert_new();

	memset(name, 'a', 128);
	name[128] = '\0';
	add_cn(x, V_ASN1_UTF8STRING, name, 128);
	assert_int_equal(name_of(x, GP_NAME_FROM_CN, out, sizeof(out), why), GP_EREFUSED);
	assert_string_equal(out, "");
	assert_non_null(strstr(why, "at most 127"));
	X509_free(x);
}

static void test_two_cns_refused(void **state)
{
	char out[128], why[256];
	X509 *x = cert_new();

	add_cn(x, MBSTRING_UTF8, "alice", -1);
	add_cn(x, MBSTRING_UTF8, "admin", -1);
	assert_int_equal(name_of(x, GP_NAME_FROM_CN, out, sizeof(out), why), GP_EREFUSED);
	assert_string_equal(out, "");
	assert_non_null(strstr(why, "more than one commonName"));
	X509_free(x);
}

static void test_two_san_uris_refused(void **state)
{
	static const int types[] = {GEN_URI, GEN_URI};
	static const char *const values[] = {"spiffe://a", "spiffe://b"};
	static const int lens[] = {10, 10};
	char out[128], why[256];
	X509 *x = cert_new();

	add_san(x, 2, types, values, lens);
	assert_int_equal(name_of(x, GP_NAME_FROM_SAN_URI, out, sizeof(out), why), GP_EREFUSED);
	assert_non_null(strstr(why, "more than one subjectAltName URI"));
	X509_free(x);
}

static void test_control_and_bad_utf8_refused(void **state)
{
	char out[128], why[256];
	X509 *x = cert_new();

	add_cn(x, V_ASN1_UTF8STRING, "al\nice", 6);
	assert_int_equal(name_of(x, GP_NAME_FROM_CN, out, sizeof(out), why), GP_EREFUSED);
	assert_non_null(strstr(why, "control character"));
	X509_free(x);

	x = cert_new();
	add_cn(x, V_ASN1_UTF8STRING, "al\xc0\xafice", 7); /* an overlong '/' */
	assert_int_equal(name_of(x, GP_NAME_FROM_CN, out, sizeof(out), why), GP_EREFUSED);
	assert_non_null(strstr(why, "UTF-8"));
	X509_free(x);

	x = cert_new();
	add_cn(x, V_ASN1_UTF8STRING, "", 0);
	assert_int_equal(name_of(x, GP_NAME_FROM_CN, out, sizeof(out), why), GP_EREFUSED);
	assert_non_null(strstr(why, "empty"));
	X509_free(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_null_and_no_names),
		cmocka_unit_test(test_cn),
		cmocka_unit_test(test_bmpstring_cn_decoded),
		cmocka_unit_test(test_san_uri_and_dns),
		cmocka_unit_test(test_longest_name_fits),
		cmocka_unit_test(test_embedded_nul_refused),
		cmocka_unit_test(test_overlong_refused),
		cmocka_unit_test(test_two_cns_refused),
		cmocka_unit_test(test_two_san_uris_refused),
		cmocka_unit_test(test_control_and_bad_utf8_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
