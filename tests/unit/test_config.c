/* test_config.c -- gpupoold.conf parsing: errors name file and line; defaults; sizes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "conn.h"
#include "error.h"
#include "log.h"

static char err[512];

static void expect_error(const char *text, const char *want)
{
	struct gp_config *c = gp_config_parse(text, "test.conf", err, sizeof(err));

	assert_null(c);
	if (!strstr(err, want))
		fail_msg("error '%s' does not contain '%s'", err, want);
}

/* ---- invalid input first ---- */

static void test_unknown_key_names_file_and_line(void **state)
{
	expect_error("tls_cert a\ntls_key b\n\n# comment\nlisten_on 1.2.3.4:5\n",
		     "test.conf:5: unknown key 'listen_on'");
}

static void test_bad_values(void **state)
{
	expect_error("tls_cert a\ntls_key b\nlisten nocolon\n", "test.conf:3:");
	expect_error("tls_cert a\ntls_key b\nlisten 1.2.3.4:99999\n", "port out of range");
	expect_error("tls_cert a\ntls_key b\nlisten 1.2.3.4:12ab\n", "test.conf:3:");
	expect_error("tls_cert a b\ntls_key b\n",
		     "test.conf:1: 'tls_cert' takes exactly one value");
	expect_error("tls_cert\n", "test.conf:1:");
	expect_error("tls_cert a\ntls_key b\nlog_level loud\n", "test.conf:3:");
	expect_error("tls_cert a\ntls_key b\nmax_sessions -1\n", "test.conf:3:");
	expect_error("tls_cert \"unterminated\ntls_key b\n", "test.conf:1: unterminated quote");
}

/* The admin endpoint's block: roles, and admin_listen that nobody could use. */
static void test_admin_endpoint_keys(void **state)
{
	struct gp_config *c;

	expect_error(
		"tls_cert a\ntls_key b\nadmin_name ops\n",
		"test.conf:3: 'admin_name' takes a certificate name and read-only or read-write");
	expect_error("tls_cert a\ntls_key b\nadmin_name ops root\n", "test.conf:3:");
	expect_error("tls_cert a\ntls_key b\nadmin_ca_role admin\n", "test.conf:3:");
	expect_error("tls_cert a\ntls_key b\nadmin_listen nocolon\n", "test.conf:3:");
	expect_error("tls_cert a\ntls_key b\nadmin_max_per_address 0\n", "test.conf:3:");
	expect_error("tls_cert a\ntls_key b\nadmin_listen 127.0.0.1:7421\n",
		     "admin_listen needs admin_ca");
	c = gp_config_parse("tls_cert a\ntls_key b\nadmin_listen 127.0.0.1:7421\nadmin_ca /ca\n"
			    "admin_name ops-rw read-write\nadmin_name audit read-only\n",
			    "test.conf", err, sizeof(err));
	assert_non_null(c);
	assert_string_equal(c->admin_listen, "127.0.0.1:7421");
	assert_int_equal(c->admin_ca_role, GP_ROLE_READ_ONLY); /* the default */
	assert_int_equal(gp_config_admin_role(c, "ops-rw"), GP_ROLE_READ_WRITE);
	assert_int_equal(gp_config_admin_role(c, "audit"), GP_ROLE_READ_ONLY);
	assert_int_equal(gp_config_admin_role(c, "ops"), GP_ROLE_NONE);
	assert_int_equal(c->admin_max_per_address, 4);
	gp_config_free(c);
}

static void test_transport_keys(void **state)
{
	char text[512], longpath[200];
	struct gp_config *c;

	c = gp_config_parse("tls_cert a\ntls_key b\nlisten_unix /run/gpupool/client.sock\n"
			    "listen_unix_group gpu\nlisten_plain 10.0.0.1:7071\n",
			    "test.conf", err, sizeof(err));
	assert_non_null(c);
	assert_string_equal(c->listen_unix, "/run/gpupool/client.sock");
	assert_string_equal(c->listen_unix_group, "gpu");
	assert_string_equal(c->listen_plain, "10.0.0.1:7071");
	gp_config_free(c);
	/* Neither is on unless the file says so. */
	c = gp_config_parse("tls_cert a\ntls_key b\n", "test.conf", err, sizeof(err));
	assert_non_null(c);
	assert_null(c->listen_unix);
	assert_null(c->listen_plain);
	gp_config_free(c);

	expect_error("tls_cert a\ntls_key b\nlisten_unix client.sock\n",
		     "test.conf:3: 'listen_unix client.sock': expected an absolute path");
	memset(longpath, 'x', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = '\0';
	snprintf(text, sizeof(text), "tls_cert a\ntls_key b\nlisten_unix %s\n", longpath);
	expect_error(text, "test.conf:3: 'listen_unix': the path is longer");
	expect_error("tls_cert a\ntls_key b\nlisten_plain 10.0.0.1\n",
		     "test.conf:3: 'listen_plain 10.0.0.1': expected HOST:PORT");
}

static void test_tls_required(void **state)
{
	expect_error("listen 127.0.0.1:1\n", "tls_cert and tls_key are required");
}

static void test_missing_file(void **state)
{
	assert_null(gp_config_load("/nonexistent/gpupoold.conf", err, sizeof(err)));
	assert_non_null(strstr(err, "/nonexistent/gpupoold.conf"));
}

static void test_sizes(void **state)
{
	uint64_t v;

	assert_int_equal(gp_parse_size("", &v), GP_ECONFIG);
	assert_int_equal(gp_parse_size("G", &v), GP_ECONFIG);
	assert_int_equal(gp_parse_size("12X", &v), GP_ECONFIG);
	assert_int_equal(gp_parse_size("-1", &v), GP_ECONFIG);
	assert_int_equal(gp_parse_size("99999999999T", &v), GP_ECONFIG);
	assert_int_equal(gp_parse_size("4096", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(gp_parse_size("512K", &v), 0);
	assert_int_equal(v, 512u << 10);
	assert_int_equal(gp_parse_size("8M", &v), 0);
	assert_int_equal(v, 8u << 20);
	assert_int_equal(gp_parse_size("16GiB", &v), 0);
	assert_int_equal(v, 16ull << 30);
	assert_int_equal(gp_parse_size("2g", &v), 0);
	assert_int_equal(v, 2ull << 30);
}

/* ---- normal behaviour ---- */

static void test_defaults(void **state)
{
	struct gp_config *c = gp_config_parse("tls_cert /c\ntls_key /k\n", "t", err, sizeof(err));

	assert_non_null(c);
	assert_string_equal(c->listen, "0.0.0.0:7420");
	assert_string_equal(c->driver, "libcuda.so.1");
	assert_string_equal(c->admin_socket, "/run/gpupool/admin.sock");
	assert_null(c->tls_ca);
	assert_null(c->worker);
	assert_int_equal(c->log_level, GP_LOG_INFO);
	assert_int_equal(c->max_sessions, 64);
	assert_int_equal(c->worker_seccomp, GP_SECCOMP_ALLOW); /* on unless turned off */
	assert_int_equal(c->compute_enforce, GP_ENFORCE_MPS);  /* shares: MPS, as before */
	assert_int_equal(c->worker_uid_first, 0);	       /* workers keep the daemon's uid */
	assert_int_equal(c->worker_uid_last, 0);
	assert_null(c->worker_groups);
	gp_config_free(c);
}

static void test_all_keys(void **state)
{
	const char *text = "# gpupoold\n"
			   "listen [::1]:9000   # trailing comment\n"
			   "tls_cert \"/etc/with space/cert.pem\"\n"
			   "tls_key /k\n"
			   "\ttls_ca /ca\n"
			   "driver /opt/softgpu/libcuda.so.1\n"
			   "admin_socket /tmp/a.sock\n"
			   "worker /usr/libexec/gpupool/gpupool-worker\n"
			   "log_level debug\n"
			   "max_sessions 3\n";
	struct gp_config *c = gp_config_parse(text, "t", err, sizeof(err));

	assert_non_null(c);
	assert_string_equal(c->listen, "[::1]:9000");
	assert_string_equal(c->tls_cert, "/etc/with space/cert.pem");
	assert_string_equal(c->tls_key, "/k");
	assert_string_equal(c->tls_ca, "/ca");
	assert_string_equal(c->driver, "/opt/softgpu/libcuda.so.1");
	assert_string_equal(c->admin_socket, "/tmp/a.sock");
	assert_string_equal(c->worker, "/usr/libexec/gpupool/gpupool-worker");
	assert_int_equal(c->log_level, GP_LOG_DEBUG);
	assert_int_equal(c->max_sessions, 3);
	gp_config_free(c);
}

static void test_load_from_file(void **state)
{
	char path[] = "/tmp/gp-test-config-XXXXXX";
	int fd = mkstemp(path);
	struct gp_config *c;
	FILE *f;

	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs("tls_cert /c\ntls_key /k\nbogus 1\n", f);
	fclose(f);
	assert_null(gp_config_load(path, err, sizeof(err)));
	assert_non_null(strstr(err, ":3: unknown key 'bogus'"));
	assert_non_null(strstr(err, path));
	f = fopen(path, "w");
	fputs("tls_cert /c\ntls_key /k\nlisten 127.0.0.1:0\n", f);
	fclose(f);
	c = gp_config_load(path, err, sizeof(err));
	assert_non_null(c);
	assert_string_equal(c->listen, "127.0.0.1:0");
	assert_string_equal(c->path, path);
	gp_config_free(c);
	unlink(path);
}

static void test_admission_keys(void **state)
{
	const char *text = "tls_cert /c\ntls_key /k\n"
			   "placement binpack\n"
			   "default_memory 2G\n"
			   "queue_timeout 5\n"
			   "idle_timeout 600\n"
			   "drain_grace 10\n"
			   "admin_group gpupool\n"
			   "tenant alice sessions=2 gpus=1 memory=8G queue=3\n"
			   "tenant * memory=1G\n"
			   "token 0123456789abcdef0123 bob\n"
			   "first_byte_timeout 2\n"
			   "max_pending 50\n"
			   "max_pending_per_address 20\n"
			   "max_queued_per_tenant 7\n"
			   "tenant_from san-uri\n"
			   "max_streams 8\nmax_events 9\nmax_modules 10\nmax_contexts 3\n"
			   "worker_seccomp denylist\n"
			   "compute_enforce time\n"
			   "worker_uids 200000-200099\nworker_groups video,44\n";
	struct gp_config *c = gp_config_parse(text, "t", err, sizeof(err));
	const struct gp_tenant *t;

	assert_non_null(c);
	assert_int_equal(c->placement, GP_PLACE_BINPACK);
	assert_int_equal(c->tenant_from, GP_NAME_FROM_SAN_URI);
	assert_int_equal(c->max_streams, 8);
	assert_int_equal(c->max_events, 9);
	assert_int_equal(c->max_modules, 10);
	assert_int_equal(c->max_contexts, 3);
	assert_int_equal(c->worker_seccomp, GP_SECCOMP_DENY);
	assert_int_equal(c->compute_enforce, GP_ENFORCE_TIME);
	assert_int_equal(c->worker_uid_first, 200000);
	assert_int_equal(c->worker_uid_last, 200099);
	assert_string_equal(c->worker_groups, "video,44");
	assert_int_equal(c->default_memory, 2ull << 30);
	assert_int_equal(c->queue_timeout, 5);
	assert_int_equal(c->idle_timeout, 600);
	assert_int_equal(c->drain_grace, 10);
	assert_string_equal(c->admin_group, "gpupool");
	t = gp_config_tenant(c, "alice");
	assert_non_null(t);
	assert_int_equal(t->sessions, 2);
	assert_int_equal(t->gpus, 1);
	assert_int_equal(t->memory, 8ull << 30);
	assert_int_equal(t->queue, 3);
	assert_int_equal(c->first_byte_timeout, 2);
	assert_int_equal(c->max_pending, 50);
	assert_int_equal(c->max_pending_per_address, 20);
	assert_int_equal(c->max_queued_per_tenant, 7);
	t = gp_config_tenant(c, "carol"); /* falls back to "*" */
	assert_non_null(t);
	assert_string_equal(t->name, "*");
	assert_int_equal(t->sessions, GP_LIMIT_NONE);
	assert_int_equal(t->memory, 1ull << 30);
	assert_int_equal(t->queue, GP_LIMIT_NONE); /* max_queued_per_tenant applies */
	assert_string_equal(gp_config_token_tenant(c, "0123456789abcdef0123"), "bob");
	assert_null(gp_config_token_tenant(c, "0123456789abcdef012"));
	assert_null(gp_config_token_tenant(c, "0123456789abcdef01234"));
	assert_null(gp_config_token_tenant(c, ""));
	gp_config_free(c);
	c = gp_config_parse("tls_cert /c\ntls_key /k\n", "t", err, sizeof(err));
	assert_null(gp_config_tenant(c, "anyone")); /* no limits at all */
	assert_int_equal(c->first_byte_timeout, 5);
	assert_int_equal(c->max_pending, 256);
	assert_int_equal(c->max_pending_per_address, 128);
	assert_int_equal(c->max_queued_per_tenant, 32);
	gp_config_free(c);
}

static void test_admission_key_errors(void **state)
{
	expect_error("tls_cert a\ntls_key b\nplacement random\n",
		     "test.conf:3: 'placement random'");
	expect_error("tls_cert a\ntls_key b\nmax_events 0\n",
		     "test.conf:3: 'max_events 0': must be at least 1");
	expect_error("tls_cert a\ntls_key b\nmax_streams lots\n", "test.conf:3:");
	expect_error("tls_cert a\ntls_key b\ntenant_from email\n",
		     "test.conf:3: 'tenant_from email': expected cn, san-uri or san-dns");
	expect_error("tls_cert a\ntls_key b\nworker_seccomp yes\n",
		     "test.conf:3: 'worker_seccomp yes': expected on, denylist or off");
	expect_error("tls_cert a\ntls_key b\ncompute_enforce mps time\n",
		     "test.conf:3: 'compute_enforce' takes exactly one value");
	expect_error(
		"tls_cert a\ntls_key b\nworker_uids 0-10\n",
		"test.conf:3: 'worker_uids 0-10': the range must be non-empty and leave out uid 0");
	expect_error("tls_cert a\ntls_key b\nworker_uids 20-10\n",
		     "test.conf:3: 'worker_uids 20-10': the range must be non-empty");
	expect_error("tls_cert a\ntls_key b\nworker_uids 10-4294967295\n",
		     "test.conf:3: 'worker_uids 10-4294967295': the range must be non-empty");
	expect_error("tls_cert a\ntls_key b\nworker_uids 10-99999999999\n", "test.conf:3:");
	expect_error("tls_cert a\ntls_key b\nworker_uids 100\n",
		     "test.conf:3: 'worker_uids 100': expected FIRST-LAST, two uids");
	expect_error("tls_cert a\ntls_key b\nworker_uids 100-\n", "expected FIRST-LAST");
	expect_error("tls_cert a\ntls_key b\nworker_uids -5-10\n", "expected FIRST-LAST");
	expect_error("tls_cert a\ntls_key b\nworker_uids 5-10x\n", "expected FIRST-LAST");
	expect_error("tls_cert a\ntls_key b\nworker_uids 5-10 7\n", "takes one range");
	expect_error("tls_cert a\ntls_key b\nworker_uids 5-10\nworker_groups video,,x\n",
		     "test.conf:4: 'worker_groups video,,x': an empty group");
	expect_error("tls_cert a\ntls_key b\nworker_uids 5-10\nworker_groups ,video\n",
		     "an empty group");
	expect_error("tls_cert a\ntls_key b\nworker_uids 5-10\nworker_groups video,\n",
		     "an empty group");
	expect_error("tls_cert a\ntls_key b\nworker_uids 5-10\nworker_groups a/b\n",
		     "a group is a name or a number");
	expect_error("tls_cert a\ntls_key b\nworker_uids 5-10\nworker_groups "
		     "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,"
		     "28,29,30,31,32,33\n",
		     "one to 32 groups");
	expect_error("tls_cert a\ntls_key b\nworker_groups video\n",
		     "worker_groups needs worker_uids");
	expect_error("tls_cert a\ntls_key b\n\ntenant_from\n",
		     "test.conf:4: 'tenant_from' takes exactly one value");
	expect_error("tls_cert a\ntls_key b\ndefault_memory lots\n", "test.conf:3:");
	expect_error("tls_cert a\ntls_key b\ntenant\n", "test.conf:3: 'tenant' needs a name");
	expect_error("tls_cert a\ntls_key b\ntenant a gpus=x\n", "test.conf:3: tenant a: gpus=x");
	expect_error("tls_cert a\ntls_key b\ntenant a color=red\n", "unknown limit 'color'");
	expect_error("tls_cert a\ntls_key b\ntenant a memory=1Q\n", "memory=1Q is not a size");
	expect_error("tls_cert a\ntls_key b\ntenant a\ntenant a\n",
		     "test.conf:4: tenant 'a' is defined twice");
	expect_error("tls_cert a\ntls_key b\ntenant a queue=-1\n",
		     "test.conf:3: tenant a: queue=-1");
	expect_error("tls_cert a\ntls_key b\nfirst_byte_timeout 0\n",
		     "test.conf:3: 'first_byte_timeout 0': must be at least 1");
	expect_error("tls_cert a\ntls_key b\n\nmax_handshakes 0\n", "test.conf:4:");
	expect_error("tls_cert a\ntls_key b\nmax_pending_per_address many\n", "test.conf:3:");
	expect_error("tls_cert a\ntls_key b\ntoken short bob\n", "at least 16 characters");
	expect_error("tls_cert a\ntls_key b\ntoken 0123456789abcdef\n",
		     "'token' takes a secret and a tenant name");
}

/* Tenant shares (docs/scheduling.md): guarantees, and their errors with file and line. */
static void test_share_keys(void **state)
{
	struct gp_config *c = gp_config_parse("tls_cert a\ntls_key b\n"
					      "tenant alice gpus=2 guarantee_gpus=1 "
					      "guarantee_memory=8G\ntenant bob\n",
					      "t", err, sizeof(err));
	const struct gp_tenant *t;

	assert_non_null(c);
	t = gp_config_tenant(c, "alice");
	assert_int_equal(t->guarantee_gpus, 1);
	assert_int_equal(t->guarantee_memory, 8ull << 30);
	t = gp_config_tenant(c, "bob");
	assert_int_equal(t->guarantee_gpus, 0); /* none unless the line says so */
	assert_int_equal(t->guarantee_memory, 0);
	gp_config_free(c);
	expect_error("tls_cert a\ntls_key b\ntenant a guarantee_gpus=x\n",
		     "test.conf:3: tenant a: guarantee_gpus=x is not a number of GPUs");
	expect_error("tls_cert a\ntls_key b\ntenant a guarantee_gpus=17\n",
		     "test.conf:3: tenant a: guarantee_gpus=17");
	expect_error("tls_cert a\ntls_key b\ntenant a guarantee_memory=lots\n",
		     "test.conf:3: tenant a: guarantee_memory=lots is not a size");
	expect_error("tls_cert a\ntls_key b\n\ntenant a gpus=1 guarantee_gpus=2\n",
		     "test.conf:4: tenant a: guarantee_gpus=2 is more than its gpus=1");
	expect_error("tls_cert a\ntls_key b\ntenant a guarantee_memory=2G memory=1G\n",
		     "tenant a: guarantee_memory=2147483648 is more than its memory=1073741824");
	/* compute shares: P% or P, 1 to 100 */
	c = gp_config_parse("tls_cert a\ntls_key b\ntenant alice compute=50% default_compute=20\n",
			    "t", err, sizeof(err));
	assert_non_null(c);
	t = gp_config_tenant(c, "alice");
	assert_int_equal(t->compute, 50);
	assert_int_equal(t->default_compute, 20);
	gp_config_free(c);
	expect_error("tls_cert a\ntls_key b\ntenant a compute=0%\n",
		     "test.conf:3: tenant a: compute=0% is not a share of 1% to 100%");
	expect_error("tls_cert a\ntls_key b\ntenant a compute=101\n", "compute=101 is not a share");
	expect_error("tls_cert a\ntls_key b\ntenant a default_compute=half\n",
		     "default_compute=half is not a share");
	expect_error("tls_cert a\ntls_key b\ntenant a compute=25%% \n", "compute=25%% is not");
	expect_error("tls_cert a\ntls_key b\ntenant a compute=25 default_compute=50\n",
		     "test.conf:3: tenant a: default_compute=50% is more than its compute=25%");
	/* priorities: 0 to 9, 0 without the key; on tenant * for the tenants without a line */
	c = gp_config_parse("tls_cert a\ntls_key b\ntenant hi priority=9\ntenant lo\n"
			    "tenant * priority=2\n",
			    "t", err, sizeof(err));
	assert_non_null(c);
	assert_int_equal(gp_config_tenant(c, "hi")->priority, 9);
	assert_int_equal(gp_config_tenant(c, "lo")->priority, 0);
	assert_int_equal(gp_config_tenant(c, "nobody")->priority, 2);
	gp_config_free(c);
	expect_error("tls_cert a\ntls_key b\n\ntenant a priority=10\n",
		     "test.conf:4: tenant a: priority=10 is not a priority (0-9)");
	expect_error("tls_cert a\ntls_key b\ntenant a priority=-1\n",
		     "test.conf:3: tenant a: priority=-1 is not a priority (0-9)");
	expect_error("tls_cert a\ntls_key b\ntenant a priority=high\n",
		     "test.conf:3: tenant a: priority=high is not a priority");
	expect_error("tls_cert a\ntls_key b\ntenant a priority=5x\n", "priority=5x is not");
	/* MPS: gpu N mps on|off, the later line winning; the control program and directory */
	c = gp_config_parse("tls_cert a\ntls_key b\n", "t", err, sizeof(err));
	assert_non_null(c);
	assert_int_equal(c->mps_gpus, 0);
	assert_string_equal(c->mps_control, "nvidia-cuda-mps-control");
	assert_string_equal(c->mps_dir, "/run/gpupool/mps");
	gp_config_free(c);
	c = gp_config_parse("tls_cert a\ntls_key b\ngpu 0 mps on\ngpu 3 mps on\ngpu 3 mps off\n"
			    "gpu 63 mps on\nmps_control /opt/mps-control\nmps_dir /tmp/m\n",
			    "t", err, sizeof(err));
	assert_non_null(c);
	assert_true(c->mps_gpus == (1ull | 1ull << 63));
	assert_string_equal(c->mps_control, "/opt/mps-control");
	assert_string_equal(c->mps_dir, "/tmp/m");
	gp_config_free(c);
	expect_error("tls_cert a\ntls_key b\ngpu 0 mps yes\n",
		     "test.conf:3: gpu 0: mps yes: expected on or off");
	expect_error("tls_cert a\ntls_key b\ngpu -1 mps on\n", "test.conf:3: gpu -1: not a GPU");
	expect_error("tls_cert a\ntls_key b\ngpu 0 mps on mig on\n",
		     "test.conf:3: gpu 0: unknown setting 'mig' (mps)");
	expect_error("tls_cert a\ntls_key b\nmps_dir mps\n", "expected an absolute path");
	/* preemption */
	c = gp_config_parse("tls_cert a\ntls_key b\ntenant batch preemptible=yes\n"
			    "tenant svc preemptible=no\ntenant other\npreempt_grace 5\n",
			    "t", err, sizeof(err));
	assert_non_null(c);
	assert_int_equal(gp_config_tenant(c, "batch")->preemptible, GP_PREEMPT_YES);
	assert_int_equal(gp_config_tenant(c, "svc")->preemptible, GP_PREEMPT_NO);
	assert_int_equal(gp_config_tenant(c, "other")->preemptible, GP_PREEMPT_CLIENT);
	assert_int_equal(c->preempt_grace, 5);
	gp_config_free(c);
	c = gp_config_parse("tls_cert a\ntls_key b\n", "t", err, sizeof(err));
	assert_int_equal(c->preempt_grace, 30);
	gp_config_free(c);
	expect_error("tls_cert a\ntls_key b\ntenant a preemptible=1\n",
		     "test.conf:3: tenant a: preemptible=1: expected yes or no");
	expect_error("tls_cert a\ntls_key b\npreempt_grace soon\n", "test.conf:3:");
}

/* Metering: the accounting file and its rotation; bad values name file and line. */
static void test_accounting_keys(void **state)
{
	struct gp_config *c = gp_config_parse("tls_cert a\ntls_key b\n", "t", err, sizeof(err));

	assert_non_null(c);
	assert_null(c->accounting_file); /* off unless the file says so */
	assert_int_equal(c->accounting_max_bytes, 64u << 20);
	assert_int_equal(c->accounting_keep, 10);
	gp_config_free(c);
	c = gp_config_parse("tls_cert a\ntls_key b\naccounting_file /var/lib/gpupool/acct.jsonl\n"
			    "accounting_max_bytes 0\naccounting_keep 3\n",
			    "t", err, sizeof(err));
	assert_non_null(c);
	assert_string_equal(c->accounting_file, "/var/lib/gpupool/acct.jsonl");
	assert_int_equal(c->accounting_max_bytes, 0);
	assert_int_equal(c->accounting_keep, 3);
	gp_config_free(c);
	expect_error("tls_cert a\ntls_key b\naccounting_file acct.jsonl\n",
		     "test.conf:3: 'accounting_file acct.jsonl': expected the absolute path");
	expect_error("tls_cert a\ntls_key b\naccounting_file /var/lib/\n", "test.conf:3:");
	expect_error("tls_cert a\ntls_key b\n\naccounting_max_bytes lots\n",
		     "test.conf:4: 'accounting_max_bytes lots': expected 0");
	expect_error("tls_cert a\ntls_key b\naccounting_max_bytes 100\n", "test.conf:3:");
	expect_error("tls_cert a\ntls_key b\naccounting_keep 0\n",
		     "test.conf:3: 'accounting_keep 0': expected a number from 1 to 1000");
	expect_error("tls_cert a\ntls_key b\naccounting_keep 1001\n", "test.conf:3:");
	expect_error("tls_cert a\ntls_key b\naccounting_keep x\n", "test.conf:3:");
}

/* A worker's host limits (daemon/supervisor/cgroup.c): defaults, values, overrides, errors. */
static void test_worker_host_keys(void **state)
{
	struct gp_config *c = gp_config_parse("tls_cert /c\ntls_key /k\n", "t", err, sizeof(err));

	assert_non_null(c);
	assert_int_equal(c->cgroup, GP_CGROUP_AUTO);
	assert_null(c->cgroup_path);
	assert_int_equal(c->worker_host_memory, GP_DEFAULT_WORKER_HOST_MEMORY);
	assert_int_equal(c->worker_tasks, GP_DEFAULT_WORKER_TASKS);
	assert_int_equal(c->worker_cpu, 0);
	assert_int_equal(gp_config_host_memory(c, "anyone"), GP_DEFAULT_WORKER_HOST_MEMORY);
	gp_config_free(c);

	c = gp_config_parse("tls_cert /c\ntls_key /k\ncgroup /gpupool.slice/sessions\n"
			    "worker_host_memory 256M\nworker_tasks 64\nworker_cpu 250%\n"
			    "tenant big host_memory=2G\ntenant small memory=1G\n",
			    "t", err, sizeof(err));
	assert_non_null(c);
	assert_int_equal(c->cgroup, GP_CGROUP_PATH);
	assert_string_equal(c->cgroup_path, "/gpupool.slice/sessions");
	assert_int_equal(c->worker_host_memory, 256u << 20);
	assert_int_equal(c->worker_tasks, 64);
	assert_int_equal(c->worker_cpu, 250);
	assert_int_equal(gp_config_host_memory(c, "big"), 2ull << 30);
	assert_int_equal(gp_config_host_memory(c, "small"), 256u << 20);
	assert_int_equal(gp_config_host_memory(c, NULL), 256u << 20);
	gp_config_free(c);

	/* CPUs as a number, "none" for no limit, and a later line wins. */
	c = gp_config_parse("tls_cert /c\ntls_key /k\ncgroup /x\ncgroup off\nworker_cpu 1.5\n"
			    "worker_host_memory none\nworker_tasks none\n",
			    "t", err, sizeof(err));
	assert_non_null(c);
	assert_int_equal(c->cgroup, GP_CGROUP_OFF);
	assert_null(c->cgroup_path);
	assert_int_equal(c->worker_cpu, 150);
	assert_int_equal(c->worker_host_memory, 0);
	assert_int_equal(c->worker_tasks, 0);
	assert_int_equal(gp_config_host_memory(c, "x"), 0);
	gp_config_free(c);
	c = gp_config_parse("tls_cert /c\ntls_key /k\nworker_cpu 0.05\n", "t", err, sizeof(err));
	assert_non_null(c);
	assert_int_equal(c->worker_cpu, 5);
	gp_config_free(c);

	expect_error("tls_cert a\ntls_key b\ncgroup maybe\n",
		     "test.conf:3: 'cgroup maybe': expected auto, off or a cgroup's path");
	expect_error("tls_cert a\ntls_key b\ncgroup /a/../b\n", "test.conf:3: 'cgroup /a/../b'");
	expect_error("tls_cert a\ntls_key b\ncgroup /a/..\n", "test.conf:3:");
	expect_error("tls_cert a\ntls_key b\ncgroup /\n", "test.conf:3:");
	expect_error("tls_cert a\ntls_key b\ncgroup /.\n", "test.conf:3: 'cgroup /.'");
	expect_error("tls_cert a\ntls_key b\ncgroup /a/.\n", "test.conf:3: 'cgroup /a/.'");
	expect_error("tls_cert a\ntls_key b\ncgroup /a/\n", "test.conf:3:");
	expect_error("tls_cert a\ntls_key b\ncgroup /a//b\n", "test.conf:3:");
	expect_error("tls_cert a\ntls_key b\ncgroup\n", "test.conf:3: 'cgroup' takes exactly");
	expect_error(
		"tls_cert a\ntls_key b\n\nworker_host_memory 1M\n",
		"test.conf:4: 'worker_host_memory 1M': expected none or a size of at least 16M");
	expect_error("tls_cert a\ntls_key b\nworker_host_memory lots\n", "test.conf:3:");
	expect_error("tls_cert a\ntls_key b\nworker_tasks 8\n",
		     "test.conf:3: 'worker_tasks 8': expected none or a number of at least 16");
	expect_error("tls_cert a\ntls_key b\nworker_tasks -5\n", "test.conf:3:");
	expect_error("tls_cert a\ntls_key b\nworker_cpu 0%\n",
		     "test.conf:3: 'worker_cpu 0%': expected none, a share of one CPU");
	expect_error("tls_cert a\ntls_key b\nworker_cpu 0\n", "test.conf:3:");
	expect_error("tls_cert a\ntls_key b\nworker_cpu 1.234\n", "test.conf:3:");
	expect_error("tls_cert a\ntls_key b\nworker_cpu 2.\n", "test.conf:3:");
	expect_error("tls_cert a\ntls_key b\nworker_cpu 50%%\n", "test.conf:3:");
	expect_error("tls_cert a\ntls_key b\nworker_cpu fast\n", "test.conf:3:");
	expect_error("tls_cert a\ntls_key b\nworker_cpu 20000000%\n", "test.conf:3:");
	expect_error("tls_cert a\ntls_key b\ntenant a host_memory=1K\n",
		     "test.conf:3: tenant a: host_memory=1K is not a size of at least 16M");
}

/* The example configuration the project ships parses. */
static void test_shipped_example(void **state)
{
	struct gp_config *c = gp_config_load(GP_EXAMPLE_CONF, err, sizeof(err));

	if (!c)
		fail_msg("%s", err);
	assert_string_equal(c->listen, "0.0.0.0:7420");
	gp_config_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unknown_key_names_file_and_line),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_transport_keys),
		cmocka_unit_test(test_tls_required),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_accounting_keys),
		cmocka_unit_test(test_all_keys),
		cmocka_unit_test(test_load_from_file),
		cmocka_unit_test(test_admission_keys),
		cmocka_unit_test(test_admission_key_errors),
		cmocka_unit_test(test_share_keys),
		cmocka_unit_test(test_worker_host_keys),
		cmocka_unit_test(test_shipped_example),
		cmocka_unit_test(test_admin_endpoint_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
