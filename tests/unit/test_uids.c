/* test_uids.c -- worker_uids' picks (daemon/supervisor/uids.c): never a live worker's uid. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon.h"

struct fixture {
	struct gp_daemon d;
	struct gp_config cfg;
	struct gp_session s[8];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	f->d.cfg = &f->cfg;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	free(*state);
	return 0;
}

/* A live session holding uid (as gp__session_spawn leaves it). */
static void hold(struct fixture *f, int i, uint32_t uid)
{
	f->s[i].uid = uid;
	f->s[i].next = f->d.sessions;
	f->d.sessions = &f->s[i];
	f->d.nsessions++;
}

/* ---- limits first: every uid held ---- */

static void test_all_held(void **state)
{
	struct fixture *f = *state;
	uint32_t uid = 0;

	f->cfg.worker_uid_first = f->cfg.worker_uid_last = 500;
	hold(f, 0, 500);
	assert_int_equal(gp__uid_pick(&f->d, &uid), -EAGAIN);
	assert_int_equal(uid, 0);
	/* Reaped: free again. */
	f->s[0].exited = true;
	assert_int_equal(gp__uid_pick(&f->d, &uid), 0);
	assert_int_equal(uid, 500);
}

static void test_range_at_the_top(void **state)
{
	struct fixture *f = *state;
	uint32_t uid = 0;

	f->cfg.worker_uid_first = UINT32_MAX - 2;
	f->cfg.worker_uid_last = UINT32_MAX - 1;
	assert_int_equal(gp__uid_pick(&f->d, &uid), 0);
	assert_int_equal(uid, UINT32_MAX - 2);
	hold(f, 0, uid);
	assert_int_equal(gp__uid_pick(&f->d, &uid), 0);
	assert_int_equal(uid, UINT32_MAX - 1);
	hold(f, 1, uid);
	assert_int_equal(gp__uid_pick(&f->d, &uid), -EAGAIN);
}

/* A range holding the daemon's own ids or admin_group's gid is refused, before the
 * capability check (so also where the test is not root). */
static void test_range_overlaps(void **state)
{
	struct fixture *f = *state;
	uint32_t gids[GP_WORKER_GROUPS_MAX];
	unsigned ngids = 9;
	char why[256] = "";

	f->cfg.worker_uid_first = 4000;
	f->cfg.worker_uid_last = 6000;
	f->cfg.admin_group = "5000";
	assert_int_equal(gp__uids_resolve(&f->cfg, gids, &ngids, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "admin_group"));
	assert_int_equal(ngids, 0);
	f->cfg.admin_group = NULL;
	if (geteuid() != 0) {
		f->cfg.worker_uid_first = f->cfg.worker_uid_last = (unsigned)geteuid();
		assert_int_equal(gp__uids_resolve(&f->cfg, gids, &ngids, why, sizeof(why)),
				 -EINVAL);
		assert_non_null(strstr(why, "the daemon's own uid"));
	}
}

/* ---- normal behaviour ---- */

static void test_distinct_and_next_fit(void **state)
{
	struct fixture *f = *state;
	uint32_t a, b, c, d;

	f->cfg.worker_uid_first = 1000;
	f->cfg.worker_uid_last = 1002;
	assert_int_equal(gp__uid_pick(&f->d, &a), 0);
	hold(f, 0, a);
	assert_int_equal(gp__uid_pick(&f->d, &b), 0);
	hold(f, 1, b);
	assert_int_equal(gp__uid_pick(&f->d, &c), 0);
	hold(f, 2, c);
	assert_int_equal(a, 1000);
	assert_int_equal(b, 1001);
	assert_int_equal(c, 1002);
	assert_int_equal(gp__uid_pick(&f->d, &d), -EAGAIN);
	/* The middle one's worker is reaped: its uid, the only free one, comes back. */
	f->s[1].exited = true;
	assert_int_equal(gp__uid_pick(&f->d, &d), 0);
	assert_int_equal(d, 1001);
	hold(f, 3, d);
	/* Two free: the pick goes on after the last one given, not back to the lowest. */
	f->s[0].exited = true;
	f->s[2].exited = true;
	assert_int_equal(gp__uid_pick(&f->d, &d), 0);
	assert_int_equal(d, 1002);
}

/* A reload to another range: new picks come from it, live workers keep theirs. */
static void test_new_range(void **state)
{
	struct fixture *f = *state;
	uint32_t uid;

	f->cfg.worker_uid_first = 10;
	f->cfg.worker_uid_last = 19;
	assert_int_equal(gp__uid_pick(&f->d, &uid), 0);
	hold(f, 0, uid);
	f->cfg.worker_uid_first = 15;
	f->cfg.worker_uid_last = 16;
	assert_int_equal(gp__uid_pick(&f->d, &uid), 0);
	assert_int_equal(uid, 15);
	hold(f, 1, uid);
	f->cfg.worker_uid_first = 10;
	f->cfg.worker_uid_last = 11;
	assert_int_equal(gp__uid_pick(&f->d, &uid), 0);
	assert_int_equal(uid, 11); /* 10 is still held by the first */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_all_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_range_at_the_top, setup, teardown),
		cmocka_unit_test_setup_teardown(test_range_overlaps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_distinct_and_next_fit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_new_range, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
