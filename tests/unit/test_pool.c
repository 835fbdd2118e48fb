/* test_pool.c -- admission policy: placement, tenant limits, the queue, the ledger. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "error.h"
#include "pool.h"

#define G (1ull << 30)

static char why[256];

static struct gp_config *conf(const char *extra)
{
	char text[1024], err[256];
	struct gp_config *cfg;

	snprintf(text, sizeof(text), "tls_cert a\ntls_key b\n%s", extra);
	cfg = gp_config_parse(text, "test.conf", err, sizeof(err));
	if (!cfg)
		fail_msg("config: %s", err);
	return cfg;
}

static struct gp_claim claim(const char *tenant, uint32_t gpus, uint64_t memory)
{
	return (struct gp_claim){.tenant = tenant, .want_gpus = gpus, .want_memory = memory};
}

/* A pool of GPUs 0.. with these sizes. */
static void pool_of(struct gp_pool *p, int n, const uint64_t *sizes)
{
	gp_pool_init(p);
	for (int i = 0; i < n; i++)
		assert_int_equal(gp_pool_add_gpu(p, (uint32_t)i, sizes[i]), 0);
}

/* Queues c at now and admits whoever goes; returns c's state. */
static enum gp_claim_state ask(struct gp_pool *p, const struct gp_config *cfg, struct gp_claim *c,
			       uint64_t now)
{
	assert_int_equal(gp_pool_enqueue(p, cfg, c, now, why, sizeof(why)), 0);
	while (gp_pool_admit_next(p, cfg))
		;
	return c->state;
}

static void assert_refused(struct gp_pool *p, const struct gp_config *cfg, struct gp_claim *c,
			   const char *want)
{
	assert_int_equal(gp_pool_enqueue(p, cfg, c, 0, why, sizeof(why)), GP_EREFUSED);
	if (!strstr(why, want))
		fail_msg("refusal '%s' does not contain '%s'", why, want);
	assert_int_equal(c->state, GP_CLAIM_IDLE);
	assert_null(p->queue);
}

/* Nothing held, nobody waiting. */
static void assert_empty(const struct gp_pool *p)
{
	assert_null(p->queue);
	assert_null(p->admitted);
	for (uint32_t g = 0; g < p->ngpus; g++) {
		assert_int_equal(p->gpu[g].reserved, 0);
		assert_int_equal(p->gpu[g].sessions, 0);
	}
}

/* ---- invalid arguments first ---- */

static void test_invalid_gpus(void **state)
{
	struct gp_pool p;

	gp_pool_init(&p);
	assert_int_equal(gp_pool_add_gpu(NULL, 0, G), -EINVAL);
	assert_int_equal(gp_pool_add_gpu(&p, 0, 0), -EINVAL); /* no memory */
	assert_int_equal(gp_pool_add_gpu(&p, 3, G), 0);
	assert_int_equal(gp_pool_add_gpu(&p, 3, G), -EINVAL); /* its index twice */
	for (uint32_t i = 1; i < GP_POOL_MAX_GPUS; i++)
		assert_int_equal(gp_pool_add_gpu(&p, 100 + i, G), 0);
	assert_int_equal(gp_pool_add_gpu(&p, 99, G), -ENOSPC);
	assert_int_equal(p.ngpus, GP_POOL_MAX_GPUS);
	assert_non_null(gp_pool_gpu(&p, 3));
	assert_null(gp_pool_gpu(&p, 4));
	assert_null(gp_pool_gpu(NULL, 3));
}

static void test_invalid_claims(void **state)
{
	struct gp_config *cfg = conf("");
	struct gp_pool p;
	struct gp_claim c = claim("t", 1, G), none = claim(NULL, 1, G);
	struct gp_pool_usage u = {1, 1, 1};

	pool_of(&p, 1, (uint64_t[]){16 * G});
	assert_int_equal(gp_pool_enqueue(NULL, cfg, &c, 0, why, sizeof(why)), -EINVAL);
	assert_int_equal(gp_pool_enqueue(&p, NULL, &c, 0, why, sizeof(why)), -EINVAL);
	assert_int_equal(gp_pool_enqueue(&p, cfg, NULL, 0, why, sizeof(why)), -EINVAL);
	assert_int_equal(gp_pool_enqueue(&p, cfg, &none, 0, why, sizeof(why)), -EINVAL);
	/* a session still in its handshake has no tenant yet: status asks about it anyway */
	assert_false(gp_pool_preemptible(cfg, &none));
	assert_int_equal(gp_pool_compute_share(cfg, &none), 0);
	assert_int_equal(gp_pool_enqueue(&p, cfg, &c, 0, NULL, 0), 0); /* why is optional */
	assert_int_equal(gp_pool_enqueue(&p, cfg, &c, 0, why, sizeof(why)), -EALREADY);
	assert_null(gp_pool_admit_next(NULL, cfg));
	assert_null(gp_pool_admit_next(&p, NULL));
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &c);
	assert_int_equal(gp_pool_enqueue(&p, cfg, &c, 0, why, sizeof(why)), -EALREADY);
	assert_null(gp_pool_expire_next(NULL, 0, 0));
	gp_pool_release(NULL, &c);
	gp_pool_release(&p, NULL);
	gp_pool_tenant_usage(NULL, "t", &u);
	assert_int_equal(u.sessions + u.gpus + u.memory, 0);
	gp_pool_tenant_usage(&p, NULL, &u);
	assert_int_equal(u.sessions, 0);
	gp_pool_release(&p, &c);
	assert_empty(&p);
	gp_config_free(cfg);
}

/* What could never fit is refused at once, with the reason. */
static void test_refused_at_once(void **state)
{
	struct gp_config *cfg = conf("tenant zero sessions=0\ntenant small gpus=1 memory=10G\n");
	struct gp_config *big_default = conf("default_memory 32G\n");
	struct gp_pool p;
	struct gp_claim c;

	pool_of(&p, 2, (uint64_t[]){16 * G, 8 * G});
	c = claim("t", 3, G);
	assert_refused(&p, cfg, &c, "asked for 3 GPUs; the pool has 2");
	c = claim("t", 1, 17 * G);
	assert_refused(&p, cfg, &c, "asked for 18253611008 bytes per GPU; the largest GPU has");
	c = claim("t", 2, 9 * G); /* only one GPU is that big */
	assert_refused(&p, cfg, &c, "bytes per GPU");
	/* the pool's default is what does not fit: the refusal says so, not "0 bytes" */
	c = claim("t", 1, 0);
	assert_refused(&p, big_default, &c, "asked for 34359738368 bytes per GPU");
	c = claim("zero", 1, G);
	assert_refused(&p, cfg, &c, "tenant zero may not open sessions");
	c = claim("small", 2, G);
	assert_refused(&p, cfg, &c, "tenant small may hold 1 GPUs; asked for 2");
	c = claim("small", 1, 12 * G);
	assert_refused(&p, cfg, &c, "tenant small may reserve 10737418240 bytes");
	/* a whole GPU: the least it could take is the smaller GPU, 8G, within 10G */
	c = claim("small", 1, 0);
	assert_int_equal(ask(&p, cfg, &c, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(c.dev[0], 1);
	assert_int_equal(c.mem_limit, 8 * G);
	gp_pool_release(&p, &c);
	assert_empty(&p);
	gp_config_free(big_default);
	gp_config_free(cfg);
}

/* ---- placement ---- */

static void test_spread(void **state)
{
	struct gp_config *cfg = conf("placement spread\n");
	struct gp_pool p;
	struct gp_claim c[4] = {claim("t", 1, 4 * G), claim("t", 1, 4 * G), claim("t", 1, 2 * G),
				claim("t", 1, 2 * G)};

	pool_of(&p, 2, (uint64_t[]){16 * G, 16 * G});
	assert_int_equal(ask(&p, cfg, &c[0], 0), GP_CLAIM_ADMITTED);
	assert_int_equal(c[0].dev[0], 0); /* a tie: the lower slot */
	assert_int_equal(ask(&p, cfg, &c[1], 0), GP_CLAIM_ADMITTED);
	assert_int_equal(c[1].dev[0], 1); /* the most room */
	assert_int_equal(ask(&p, cfg, &c[2], 0), GP_CLAIM_ADMITTED);
	assert_int_equal(c[2].dev[0], 0);
	assert_int_equal(ask(&p, cfg, &c[3], 0), GP_CLAIM_ADMITTED);
	assert_int_equal(c[3].dev[0], 1);
	assert_int_equal(p.gpu[0].reserved, 6 * G);
	assert_int_equal(p.gpu[1].reserved, 6 * G);
	assert_int_equal(p.gpu[0].sessions, 2);
	for (int i = 0; i < 4; i++)
		gp_pool_release(&p, &c[i]);
	assert_empty(&p);
	gp_config_free(cfg);
}

static void test_binpack(void **state)
{
	struct gp_config *cfg = conf("placement binpack\n");
	struct gp_pool p;
	struct gp_claim c[4] = {claim("t", 1, 6 * G), claim("t", 1, 6 * G), claim("t", 1, 6 * G),
				claim("t", 1, 4 * G)};

	pool_of(&p, 2, (uint64_t[]){16 * G, 16 * G});
	assert_int_equal(ask(&p, cfg, &c[0], 0), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &c[1], 0), GP_CLAIM_ADMITTED);
	assert_int_equal(c[0].dev[0], 0);
	assert_int_equal(c[1].dev[0], 0); /* the fullest that still fits */
	assert_int_equal(ask(&p, cfg, &c[2], 0), GP_CLAIM_ADMITTED);
	assert_int_equal(c[2].dev[0], 1); /* 4G left on 0 is too little */
	assert_int_equal(ask(&p, cfg, &c[3], 0), GP_CLAIM_ADMITTED);
	assert_int_equal(c[3].dev[0], 0); /* exactly fills GPU 0 */
	assert_int_equal(p.gpu[0].reserved, 16 * G);
	for (int i = 0; i < 4; i++)
		gp_pool_release(&p, &c[i]);
	assert_empty(&p);
	gp_config_free(cfg);
}

/* Equal room: fewer sessions first. */
static void test_tie_fewer_sessions(void **state)
{
	struct gp_config *cfg = conf("placement spread\n");
	struct gp_pool p;
	struct gp_claim a = claim("t", 1, 8 * G), b = claim("t", 1, G);

	pool_of(&p, 2, (uint64_t[]){16 * G, 8 * G});
	assert_int_equal(ask(&p, cfg, &a, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(a.dev[0], 0); /* now 8G free on each, one session vs none */
	assert_int_equal(ask(&p, cfg, &b, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(b.dev[0], 1);
	gp_config_free(cfg);
}

static void test_multi_gpu_and_whole_gpus(void **state)
{
	struct gp_config *cfg = conf("");
	struct gp_config *dflt = conf("default_memory 2G\n");
	struct gp_pool p;
	struct gp_claim two = claim("t", 2, 0), one = claim("t", 1, 0);

	/* whole GPUs of different sizes: one limit, the smallest, reserved on each */
	pool_of(&p, 3, (uint64_t[]){16 * G, 8 * G, 4 * G});
	assert_int_equal(ask(&p, cfg, &two, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(two.ndev, 2);
	assert_int_not_equal(two.dev[0], two.dev[1]);
	assert_int_equal(two.dev[0], 0);
	assert_int_equal(two.dev[1], 1);
	assert_int_equal(two.mem_limit, 8 * G);
	assert_int_equal(p.gpu[0].reserved, 8 * G);
	assert_int_equal(p.gpu[1].reserved, 8 * G);
	/* a whole GPU needs one with nothing reserved */
	assert_int_equal(ask(&p, cfg, &one, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(one.dev[0], 2);
	gp_pool_release(&p, &one);
	gp_pool_release(&p, &two);
	/* memory 0 with a default_memory: the default */
	assert_int_equal(ask(&p, dflt, &one, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(one.mem_limit, 2 * G);
	gp_pool_release(&p, &one);
	assert_empty(&p);
	gp_config_free(dflt);
	gp_config_free(cfg);
}

static void test_draining(void **state)
{
	struct gp_config *cfg = conf("");
	struct gp_pool p;
	struct gp_claim a = claim("t", 1, G), b = claim("t", 2, G);

	pool_of(&p, 2, (uint64_t[]){16 * G, 16 * G});
	gp_pool_gpu(&p, 0)->draining = true;
	assert_int_equal(ask(&p, cfg, &a, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(a.dev[0], 1);
	assert_int_equal(ask(&p, cfg, &b, 0), GP_CLAIM_QUEUED); /* could fit, not now */
	gp_pool_gpu(&p, 0)->draining = false;
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &b);
	gp_pool_release(&p, &a);
	gp_pool_release(&p, &b);
	assert_empty(&p);
	gp_config_free(cfg);
}

/* ---- tenant limits ---- */

/* A waiter held back only by its own tenant's limits does not hold up the others. */
static void test_tenant_sessions(void **state)
{
	struct gp_config *cfg = conf("tenant alice sessions=1\n");
	struct gp_pool p;
	struct gp_claim a1 = claim("alice", 1, G), a2 = claim("alice", 1, G),
			b = claim("bob", 1, G);
	struct gp_pool_usage u;

	pool_of(&p, 1, (uint64_t[]){16 * G});
	assert_int_equal(ask(&p, cfg, &a1, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &a2, 1), GP_CLAIM_QUEUED);
	assert_int_equal(ask(&p, cfg, &b, 2), GP_CLAIM_ADMITTED); /* goes past alice's */
	gp_pool_tenant_usage(&p, "alice", &u);
	assert_int_equal(u.sessions, 1);
	assert_int_equal(u.gpus, 1);
	assert_int_equal(u.memory, G);
	gp_pool_release(&p, &a1);
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &a2);
	assert_null(gp_pool_admit_next(&p, cfg));
	gp_pool_release(&p, &a2);
	gp_pool_release(&p, &b);
	assert_empty(&p);
	gp_config_free(cfg);
}

static void test_tenant_gpus_and_memory(void **state)
{
	struct gp_config *cfg = conf("tenant * gpus=2 memory=10G\n");
	struct gp_pool p;
	struct gp_claim two = claim("x", 2, G), more = claim("x", 1, G), y1 = claim("y", 1, 6 * G),
			y2 = claim("y", 1, 6 * G), z = claim("z", 1, 6 * G);
	struct gp_pool_usage u;

	pool_of(&p, 3, (uint64_t[]){16 * G, 16 * G, 16 * G});
	/* "*" limits every tenant without a line: x may hold 2 GPUs */
	assert_int_equal(ask(&p, cfg, &two, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &more, 0), GP_CLAIM_QUEUED);
	/* y may reserve 10G: the second 6G waits, z's is its own */
	assert_int_equal(ask(&p, cfg, &y1, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &y2, 0), GP_CLAIM_QUEUED);
	assert_int_equal(ask(&p, cfg, &z, 0), GP_CLAIM_ADMITTED);
	gp_pool_tenant_usage(&p, "x", &u);
	assert_int_equal(u.gpus, 2);
	assert_int_equal(u.memory, 2 * G);
	gp_pool_release(&p, &y1);
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &y2);
	assert_null(gp_pool_admit_next(&p, cfg)); /* x still holds 2 GPUs */
	gp_pool_release(&p, &two);
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &more);
	gp_pool_release(&p, &more);
	gp_pool_release(&p, &y2);
	gp_pool_release(&p, &z);
	assert_empty(&p);
	gp_config_free(cfg);
}

/* A whole-GPU claim goes only where the tenant can afford the whole GPU. */
static void test_tenant_memory_whole_gpu(void **state)
{
	struct gp_config *cfg = conf("tenant t memory=8G\n");
	struct gp_pool p;
	struct gp_claim c = claim("t", 1, 0);

	pool_of(&p, 2, (uint64_t[]){16 * G, 8 * G});
	assert_int_equal(ask(&p, cfg, &c, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(c.dev[0], 1);
	assert_int_equal(c.mem_limit, 8 * G);
	gp_pool_release(&p, &c);
	gp_config_free(cfg);
}

/* New limits (a reload) let waiters in. */
static void test_new_limits_admit_waiters(void **state)
{
	struct gp_config *tight = conf("tenant t sessions=1\n"),
			 *loose = conf("tenant t sessions=2\n");
	struct gp_pool p;
	struct gp_claim a = claim("t", 1, G), b = claim("t", 1, G);

	pool_of(&p, 1, (uint64_t[]){16 * G});
	assert_int_equal(ask(&p, tight, &a, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, tight, &b, 0), GP_CLAIM_QUEUED);
	assert_ptr_equal(gp_pool_admit_next(&p, loose), &b);
	gp_pool_release(&p, &a);
	gp_pool_release(&p, &b);
	assert_empty(&p);
	gp_config_free(loose);
	gp_config_free(tight);
}

/* ---- the queue ---- */

/* Nobody overtakes a waiter for capacity, even one that would fit. */
static void test_queue_order(void **state)
{
	struct gp_config *cfg = conf("");
	struct gp_pool p;
	struct gp_claim a = claim("t", 1, 12 * G), b = claim("u", 1, 8 * G),
			c = claim("v", 1, 2 * G);

	pool_of(&p, 1, (uint64_t[]){16 * G});
	assert_int_equal(ask(&p, cfg, &a, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &b, 1), GP_CLAIM_QUEUED);
	assert_int_equal(ask(&p, cfg, &c, 2), GP_CLAIM_QUEUED); /* 4G free, but b is first */
	assert_ptr_equal(p.queue, &b);
	assert_ptr_equal(p.queue->qnext, &c);
	gp_pool_release(&p, &a);
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &b);
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &c);
	assert_null(gp_pool_admit_next(&p, cfg));
	assert_int_equal(p.gpu[0].reserved, 10 * G);
	gp_pool_release(&p, &b);
	gp_pool_release(&p, &c);
	assert_empty(&p);
	gp_config_free(cfg);
}

static void test_queue_timeout(void **state)
{
	struct gp_config *cfg = conf("");
	struct gp_pool p;
	struct gp_claim hold = claim("t", 1, 16 * G),
			w[3] = {claim("a", 1, G), claim("b", 1, G), claim("c", 1, G)};

	pool_of(&p, 1, (uint64_t[]){16 * G});
	assert_int_equal(ask(&p, cfg, &hold, 0), GP_CLAIM_ADMITTED);
	for (int i = 0; i < 3; i++)
		assert_int_equal(ask(&p, cfg, &w[i], 1000 * (uint64_t)i), GP_CLAIM_QUEUED);
	assert_int_equal(w[1].queued_at, 1000);
	/* at 1999 ms with a 1000 ms timeout: only the first has waited long enough */
	assert_null(gp_pool_expire_next(&p, 999, 1000));
	assert_ptr_equal(gp_pool_expire_next(&p, 1999, 1000), &w[0]);
	assert_int_equal(w[0].state, GP_CLAIM_IDLE);
	assert_null(gp_pool_expire_next(&p, 1999, 1000));
	assert_ptr_equal(p.queue, &w[1]);
	/* timeout 0 (queue_timeout 0, or the pool stopping): all, oldest first */
	assert_ptr_equal(gp_pool_expire_next(&p, 1999, 0), &w[1]);
	assert_ptr_equal(gp_pool_expire_next(&p, 1999, 0), &w[2]);
	assert_null(gp_pool_expire_next(&p, 1999, 0));
	assert_null(p.queue);
	assert_int_equal(hold.state, GP_CLAIM_ADMITTED); /* admitted claims do not expire */
	gp_pool_release(&p, &hold);
	assert_empty(&p);
	gp_config_free(cfg);
}

/* ---- the queue per tenant ---- */

/* A tenant at sessions=4 waits with at most its queue limit; past it, refused at once. */
static void test_tenant_queue_limit(void **state)
{
	struct gp_config *cfg = conf("tenant alice sessions=4 queue=2\nmax_queued_per_tenant 3\n");
	struct gp_pool p;
	struct gp_claim a[8], b[4];

	pool_of(&p, 1, (uint64_t[]){64 * G});
	for (int i = 0; i < 8; i++)
		a[i] = claim("alice", 1, G);
	for (int i = 0; i < 4; i++)
		b[i] = claim("bob", 1, 16 * G);
	for (int i = 0; i < 4; i++)
		assert_int_equal(ask(&p, cfg, &a[i], 0), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &a[4], 1), GP_CLAIM_QUEUED);
	assert_int_equal(ask(&p, cfg, &a[5], 2), GP_CLAIM_QUEUED);
	assert_int_equal(gp_pool_tenant_waiting(&p, "alice"), 2);
	assert_int_equal(gp_pool_enqueue(&p, cfg, &a[6], 3, why, sizeof(why)), GP_EREFUSED);
	assert_non_null(strstr(why, "tenant alice has 2 sessions waiting"));
	assert_int_equal(a[6].state, GP_CLAIM_IDLE);
	/* bob has no line: max_queued_per_tenant (3), and alice's waiters do not hold him up */
	assert_int_equal(ask(&p, cfg, &b[0], 4), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &b[1], 5), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &b[2], 6), GP_CLAIM_ADMITTED); /* 60G reserved now */
	assert_int_equal(ask(&p, cfg, &b[3], 7), GP_CLAIM_QUEUED);
	assert_int_equal(gp_pool_tenant_waiting(&p, "bob"), 1);
	/* alice's own admitted one ends: her oldest waiter goes, and she may queue one more */
	gp_pool_release(&p, &a[0]);
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &a[4]);
	assert_null(gp_pool_admit_next(&p, cfg));
	assert_int_equal(ask(&p, cfg, &a[6], 8), GP_CLAIM_QUEUED);
	for (int i = 0; i < 8; i++)
		gp_pool_release(&p, &a[i]);
	for (int i = 0; i < 4; i++)
		gp_pool_release(&p, &b[i]);
	assert_empty(&p);
	assert_int_equal(gp_pool_tenant_waiting(NULL, "alice"), 0);
	assert_int_equal(gp_pool_tenant_waiting(&p, NULL), 0);
	gp_config_free(cfg);
}

/* queue=0 and queue_timeout 0: admitted at once or not at all. */
static void test_may_wait(void **state)
{
	struct gp_config *cfg = conf("tenant now queue=0\n");
	struct gp_config *never = conf("queue_timeout 0\n");
	struct gp_pool p;
	struct gp_claim n = claim("now", 1, G), other = claim("other", 1, G);

	pool_of(&p, 1, (uint64_t[]){16 * G});
	assert_false(gp_pool_may_wait(&p, cfg, &n));
	assert_true(gp_pool_may_wait(&p, cfg, &other));
	assert_false(gp_pool_may_wait(&p, never, &other));
	assert_false(gp_pool_may_wait(&p, NULL, &other));
	assert_false(gp_pool_may_wait(&p, cfg, NULL));
	/* a zero limit is not a full queue: such a claim is queued, and goes if it fits */
	assert_int_equal(ask(&p, cfg, &n, 0), GP_CLAIM_ADMITTED);
	gp_pool_release(&p, &n);
	assert_empty(&p);
	gp_config_free(cfg);
	gp_config_free(never);
}

/* At max_sessions a newcomer takes the newest place of the tenant with the most waiters. */
static void test_displace(void **state)
{
	struct gp_config *cfg = conf("tenant alice sessions=1\n");
	struct gp_pool p;
	struct gp_claim a[4], b[3], c = claim("carol", 1, G);

	pool_of(&p, 1, (uint64_t[]){16 * G});
	for (int i = 0; i < 4; i++)
		a[i] = claim("alice", 1, G);
	for (int i = 0; i < 3; i++)
		b[i] = claim("bob", 1, 16 * G);
	assert_null(gp_pool_displace(NULL, "bob"));
	assert_null(gp_pool_displace(&p, NULL));
	assert_null(gp_pool_displace(&p, "bob")); /* nobody waits */
	assert_int_equal(ask(&p, cfg, &a[0], 0), GP_CLAIM_ADMITTED);
	for (int i = 1; i < 4; i++)
		assert_int_equal(ask(&p, cfg, &a[i], (uint64_t)i), GP_CLAIM_QUEUED);
	assert_null(gp_pool_displace(&p, "alice")); /* never one's own */
	/* carol, admitted at once (0 waiting): alice's newest gives way */
	assert_int_equal(ask(&p, cfg, &c, 4), GP_CLAIM_ADMITTED);
	assert_ptr_equal(gp_pool_displace(&p, "carol"), &a[3]);
	assert_int_equal(a[3].state, GP_CLAIM_IDLE);
	/* bob waits for the whole GPU: alice has 2 waiting, bob 1: her newest gives way */
	assert_int_equal(ask(&p, cfg, &b[0], 5), GP_CLAIM_QUEUED);
	assert_ptr_equal(gp_pool_displace(&p, "bob"), &a[2]);
	/* alice 1, bob 2 with the newcomer: the newcomer goes */
	assert_int_equal(ask(&p, cfg, &b[1], 6), GP_CLAIM_QUEUED);
	assert_null(gp_pool_displace(&p, "bob"));
	gp_pool_release(&p, &b[1]);
	/* the queue is still in order: alice's oldest waiter, then bob's */
	assert_ptr_equal(p.queue, &a[1]);
	assert_ptr_equal(p.queue->qnext, &b[0]);
	assert_null(p.queue->qnext->qnext);
	for (int i = 0; i < 4; i++)
		gp_pool_release(&p, &a[i]);
	for (int i = 0; i < 3; i++)
		gp_pool_release(&p, &b[i]);
	gp_pool_release(&p, &c);
	assert_empty(&p);
	gp_config_free(cfg);
}

/* ---- shares and borrowing ---- */

/* A tenant within its guarantee is served before a borrowing tenant queued earlier. */
static void test_guarantee_first(void **state)
{
	struct gp_config *cfg = conf("tenant alice guarantee_memory=12G\n");
	struct gp_pool p;
	struct gp_claim hold = claim("bob", 1, 16 * G), bob = claim("bob", 1, 8 * G),
			alice = claim("alice", 1, 12 * G);
	unsigned place;

	pool_of(&p, 1, (uint64_t[]){16 * G});
	assert_int_equal(ask(&p, cfg, &hold, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &bob, 1), GP_CLAIM_QUEUED);
	assert_int_equal(ask(&p, cfg, &alice, 2), GP_CLAIM_QUEUED);
	assert_true(gp_pool_tenant_entitled(&p, cfg, "alice")); /* holds 0 of 12G */
	assert_false(gp_pool_tenant_entitled(&p, cfg, "bob"));	/* has no guarantee */
	assert_int_equal(gp_pool_waiting_for(&p, cfg, &alice, &place), GP_POOL_WAIT_CAPACITY);
	assert_int_equal(place, 1); /* queued last, served first */
	assert_int_equal(gp_pool_waiting_for(&p, cfg, &bob, &place), GP_POOL_WAIT_CAPACITY);
	assert_int_equal(place, 2);
	gp_pool_release(&p, &hold);
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &alice);
	assert_null(gp_pool_admit_next(&p, cfg)); /* 4G left: bob's 8G waits */
	assert_int_equal(bob.state, GP_CLAIM_QUEUED);
	assert_true(gp_pool_tenant_entitled(&p, cfg, "alice")); /* 12G of 12G */
	assert_int_equal(gp_pool_waiting_for(&p, cfg, &alice, &place), GP_POOL_WAIT_NONE);
	assert_int_equal(place, 0);
	gp_pool_release(&p, &alice);
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &bob);
	gp_pool_release(&p, &bob);
	assert_empty(&p);
	gp_config_free(cfg);
}

/* Idle room may be borrowed past a guarantee; a borrower then comes after the entitled,
 * and the entitled one's wait for capacity holds up a borrower that would fit. */
static void test_borrowing(void **state)
{
	struct gp_config *cfg = conf("tenant alice guarantee_memory=4G\n"
				     "tenant bob guarantee_memory=8G guarantee_gpus=1\n");
	struct gp_pool p;
	struct gp_claim a1 = claim("alice", 1, 12 * G), a2 = claim("alice", 1, 2 * G),
			b1 = claim("bob", 1, 8 * G), a3 = claim("alice", 1, 2 * G);
	unsigned place;

	pool_of(&p, 1, (uint64_t[]){16 * G});
	assert_int_equal(ask(&p, cfg, &a1, 0), GP_CLAIM_ADMITTED); /* 12G on a 4G guarantee */
	assert_false(gp_pool_tenant_entitled(&p, cfg, "alice"));
	assert_int_equal(ask(&p, cfg, &a2, 1), GP_CLAIM_ADMITTED); /* still idle room: borrows */
	assert_int_equal(ask(&p, cfg, &b1, 2), GP_CLAIM_QUEUED);   /* 2G free */
	assert_int_equal(ask(&p, cfg, &a3, 3), GP_CLAIM_QUEUED);   /* would fit, but bob's first */
	assert_int_equal(gp_pool_waiting_for(&p, cfg, &a3, &place), GP_POOL_WAIT_BEHIND);
	assert_int_equal(place, 2);
	assert_string_equal(gp_pool_wait_name(GP_POOL_WAIT_BEHIND), "behind");
	gp_pool_release(&p, &a2);
	assert_null(gp_pool_admit_next(&p, cfg)); /* 4G free: bob still waits, and so does a3 */
	gp_pool_release(&p, &a1);
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &b1);
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &a3);
	gp_pool_release(&p, &b1);
	gp_pool_release(&p, &a3);
	assert_empty(&p);
	gp_config_free(cfg);
}

/* Between tenants, the one holding the least of its guarantee goes first, whatever the
 * arrival; a tenant without a guarantee comes after those with one; within one tenant,
 * arrival order. */
static void test_weighted_fair(void **state)
{
	struct gp_config *cfg = conf("tenant alice guarantee_memory=16G\n"
				     "tenant bob guarantee_memory=8G\n");
	struct gp_pool p;
	struct gp_claim x1 = claim("x", 1, 14 * G), x2 = claim("x", 1, 2 * G),
			x3 = claim("x", 1, 2 * G), a1 = claim("alice", 1, 12 * G),
			b1 = claim("bob", 1, 2 * G), c1 = claim("carol", 1, 2 * G),
			a2 = claim("alice", 1, 2 * G), b2 = claim("bob", 1, 2 * G),
			b3 = claim("bob", 1, 2 * G);

	pool_of(&p, 1, (uint64_t[]){32 * G});
	assert_int_equal(ask(&p, cfg, &a1, 0), GP_CLAIM_ADMITTED); /* alice at 12/16 */
	assert_int_equal(ask(&p, cfg, &b1, 0), GP_CLAIM_ADMITTED); /* bob at 2/8 */
	assert_int_equal(ask(&p, cfg, &x1, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &x2, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &x3, 0), GP_CLAIM_ADMITTED); /* 32G of 32G */
	assert_int_equal(ask(&p, cfg, &c1, 1), GP_CLAIM_QUEUED);   /* no guarantee: last */
	assert_int_equal(ask(&p, cfg, &a2, 2), GP_CLAIM_QUEUED);
	assert_int_equal(ask(&p, cfg, &b2, 3), GP_CLAIM_QUEUED);
	assert_int_equal(ask(&p, cfg, &b3, 4), GP_CLAIM_QUEUED);
	/* 2G free: bob (2/8) before alice (12/16), who came first */
	gp_pool_release(&p, &x3);
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &b2);
	assert_null(gp_pool_admit_next(&p, cfg));
	/* bob at 4/8 now, alice at 12/16: bob's next, in his own arrival order */
	gp_pool_release(&p, &x2);
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &b3);
	/* bob has no more waiting: alice (within her guarantee) before carol (none) */
	gp_pool_release(&p, &b1);
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &a2);
	/* carol, first to come, last to go */
	assert_null(gp_pool_admit_next(&p, cfg));
	gp_pool_release(&p, &x1);
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &c1);
	gp_pool_release(&p, &a1);
	gp_pool_release(&p, &a2);
	gp_pool_release(&p, &b2);
	gp_pool_release(&p, &b3);
	gp_pool_release(&p, &c1);
	assert_empty(&p);
	gp_config_free(cfg);
}

/* A guarantee of GPUs: whole-GPU claims are entitled up to guarantee_gpus, and the
 * waiter's reasons say what holds each one back. */
static void test_guarantee_gpus(void **state)
{
	struct gp_config *cfg = conf("tenant alice guarantee_gpus=1 gpus=2 sessions=1\n");
	struct gp_pool p;
	struct gp_claim hold = claim("x", 2, 0), a1 = claim("alice", 2, 0),
			a2 = claim("alice", 1, 0), c1 = claim("carol", 1, 0);
	unsigned place;

	pool_of(&p, 2, (uint64_t[]){16 * G, 16 * G});
	assert_int_equal(ask(&p, cfg, &hold, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &c1, 1), GP_CLAIM_QUEUED);
	assert_int_equal(ask(&p, cfg, &a1, 2), GP_CLAIM_QUEUED); /* 2 GPUs: past its guarantee */
	assert_int_equal(gp_pool_waiting_for(&p, cfg, &a1, &place), GP_POOL_WAIT_CAPACITY);
	assert_int_equal(place, 1); /* borrowing, but a guarantee beats none */
	gp_pool_release(&p, &hold);
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &a1);
	assert_null(gp_pool_admit_next(&p, cfg));
	/* alice's second waits for her own sessions=1, carol for a GPU */
	assert_int_equal(ask(&p, cfg, &a2, 3), GP_CLAIM_QUEUED);
	assert_int_equal(gp_pool_waiting_for(&p, cfg, &a2, &place), GP_POOL_WAIT_TENANT);
	assert_int_equal(gp_pool_waiting_for(&p, cfg, &c1, &place), GP_POOL_WAIT_CAPACITY);
	gp_pool_release(&p, &a1);
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &a2); /* entitled now: before carol */
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &c1);
	gp_pool_release(&p, &a2);
	gp_pool_release(&p, &c1);
	assert_empty(&p);
	assert_false(gp_pool_tenant_entitled(NULL, cfg, "alice"));
	assert_int_equal(gp_pool_waiting_for(NULL, cfg, &a2, &place), GP_POOL_WAIT_NONE);
	gp_config_free(cfg);
}

/* ---- compute shares ---- */

/* Placement fits memory and compute: no GPU is granted more than 100%; a claim without a
 * share is neither counted nor held back; release gives the share back. */
static void test_compute_fit(void **state)
{
	struct gp_config *cfg = conf("");
	struct gp_pool p;
	struct gp_claim a = claim("t", 1, G), b = claim("u", 1, G), c = claim("v", 1, G),
			d = claim("w", 1, G), e = claim("x", 2, G);
	unsigned place;

	pool_of(&p, 2, (uint64_t[]){16 * G, 16 * G});
	a.want_compute = 75;
	b.want_compute = 50;
	c.want_compute = 50;
	d.want_compute = 30;
	assert_int_equal(ask(&p, cfg, &a, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(a.compute, 75);
	assert_int_equal(ask(&p, cfg, &b, 0), GP_CLAIM_ADMITTED);
	assert_int_not_equal(b.dev[0], a.dev[0]); /* 75% + 50% would not fit on a's GPU */
	assert_int_equal(ask(&p, cfg, &c, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(c.dev[0], b.dev[0]); /* 50% + 50% */
	assert_int_equal(gp_pool_gpu(&p, a.dev[0])->compute, 75);
	assert_int_equal(gp_pool_gpu(&p, b.dev[0])->compute, 100);
	/* 30%: 25% left on one GPU, none on the other; memory there is plenty */
	assert_int_equal(ask(&p, cfg, &d, 1), GP_CLAIM_QUEUED);
	assert_int_equal(gp_pool_waiting_for(&p, cfg, &d, &place), GP_POOL_WAIT_CAPACITY);
	/* without a share: not counted, not held back (but behind d in the queue) */
	gp_pool_release(&p, &c);
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &d);
	assert_int_equal(d.dev[0], b.dev[0]);
	assert_int_equal(ask(&p, cfg, &e, 2), GP_CLAIM_ADMITTED);
	assert_int_equal(e.compute, 0);
	assert_int_equal(gp_pool_gpu(&p, b.dev[0])->compute, 80);
	gp_pool_release(&p, &a);
	gp_pool_release(&p, &b);
	gp_pool_release(&p, &d);
	gp_pool_release(&p, &e);
	assert_empty(&p);
	for (uint32_t g = 0; g < p.ngpus; g++)
		assert_int_equal(p.gpu[g].compute, 0);
	gp_config_free(cfg);
}

/* A client's share is cut to its tenant's compute=; a tenant's default_compute is what a
 * session that asks for none gets; a share over 100% is refused (a hostile client). */
static void test_compute_tenant(void **state)
{
	struct gp_config *cfg = conf("tenant small compute=25% default_compute=10%\n"
				     "tenant * default_compute=50\n");
	struct gp_pool p;
	struct gp_claim a = claim("small", 1, G), b = claim("small", 1, G),
			c = claim("other", 1, G), d = claim("other", 1, G),
			e = claim("small", 1, G);

	pool_of(&p, 1, (uint64_t[]){16 * G});
	a.want_compute = 80;
	assert_int_equal(gp_pool_compute_share(cfg, &a), 25);
	assert_int_equal(gp_pool_compute_share(cfg, &b), 10);
	assert_int_equal(gp_pool_compute_share(cfg, &c), 50);
	assert_int_equal(gp_pool_compute_share(NULL, &b), 0);
	assert_int_equal(gp_pool_compute_share(cfg, NULL), 0);
	assert_int_equal(ask(&p, cfg, &a, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(a.compute, 25);
	assert_int_equal(a.want_compute, 80); /* what it asked for stays, for the reports */
	assert_int_equal(ask(&p, cfg, &b, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &c, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(p.gpu[0].compute, 85);
	assert_int_equal(ask(&p, cfg, &d, 0), GP_CLAIM_QUEUED); /* another 50% */
	e.want_compute = 1000000;				/* cut to 25%, not refused */
	assert_int_equal(gp_pool_compute_share(cfg, &e), 25);
	d.want_compute = 101; /* "other" has no cap: refused */
	gp_pool_release(&p, &d);
	assert_int_equal(gp_pool_enqueue(&p, cfg, &d, 0, why, sizeof(why)), GP_EREFUSED);
	assert_non_null(strstr(why, "asked for 101% of a GPU's compute"));
	gp_pool_release(&p, &a);
	gp_pool_release(&p, &b);
	gp_pool_release(&p, &c);
	assert_empty(&p);
	gp_config_free(cfg);
}

/* ---- preemption ---- */

/* Chosen newest first until there is room, a claim whose GPU does not help is spared:
 * here bob's 4G beside svc's 12G, when ending his 16G on the other GPU alone makes room. */
/* ---- MIG: instances are targets, their GPU is not ---- */

/* GPU 0 whole (8 GiB, 80 SMs); GPU 64 in MIG mode (40 GiB) with 128: 1g.10gb (14 SMs) and
 * 129: 3g.20gb (42 SMs). */
static void mig_pool(struct gp_pool *p)
{
	static const struct {
		uint32_t index;
		uint64_t mem;
		bool mig, instance;
		uint32_t sms;
		const char *profile;
	} t[] = {
		{0, 8 * G, false, false, 80, ""},
		{64, 40 * G, true, false, 0, ""},
		{128, 10 * G, false, true, 14, "1g.10gb"},
		{129, 20 * G, false, true, 42, "3g.20gb"},
	};

	gp_pool_init(p);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct gp_pool_gpu *g;

		assert_int_equal(gp_pool_add_gpu(p, t[i].index, t[i].mem), 0);
		g = gp_pool_gpu(p, t[i].index);
		g->mig = t[i].mig;
		g->instance = t[i].instance;
		g->parent = t[i].instance ? 64 : 0;
		g->sms = t[i].sms;
		snprintf(g->profile, sizeof(g->profile), "%s", t[i].profile);
	}
}

static struct gp_claim slice_claim(const char *tenant, const char *slice, uint64_t memory)
{
	struct gp_claim c = claim(tenant, 1, memory);
	char err[256];

	assert_int_equal(gp_slice_parse(slice, &c.slice, err, sizeof(err)), 0);
	return c;
}

static void test_mig_targets(void **state)
{
	struct gp_config *cfg = conf("placement spread\nqueue_timeout 60\n");
	struct gp_claim a = claim("t", 1, 0), b = claim("t", 1, 0), c = claim("t", 1, 0),
			d = claim("t", 1, 0), e = claim("t", 4, 0), two = claim("t", 2, 0);
	struct gp_pool p;

	(void)state;
	mig_pool(&p);
	assert_int_equal(gp_pool_targets(&p), 3);
	/* Whole targets, spread: the 20 GiB instance, the 10 GiB one, GPU 0; never GPU 64. */
	assert_int_equal(ask(&p, cfg, &a, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(a.dev[0], 129);
	assert_int_equal(a.mem_limit, 20 * G);
	assert_int_equal(ask(&p, cfg, &b, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(b.dev[0], 128);
	assert_int_equal(ask(&p, cfg, &c, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(c.dev[0], 0);
	/* Three targets, of which a session may use one instance: four GPUs (or three) is refused
	 * at once. */
	assert_refused(&p, cfg, &e,
		       "asked for 4 GPUs; the pool has 2 (a session uses at most one "
		       "MIG instance)");
	e.want_gpus = 3;
	assert_refused(&p, cfg, &e, "asked for 3 GPUs; the pool has 2");
	/* GPU 64's 40 GiB are unreserved, but it is no target: d waits. */
	assert_int_equal(ask(&p, cfg, &d, 0), GP_CLAIM_QUEUED);
	assert_int_equal(gp_pool_gpu(&p, 64)->reserved, 0);
	assert_int_equal(gp_pool_waiting_for(&p, cfg, &d, NULL), GP_POOL_WAIT_CAPACITY);
	gp_pool_release(&p, &b);
	while (gp_pool_admit_next(&p, cfg))
		;
	assert_int_equal(d.state, GP_CLAIM_ADMITTED);
	assert_int_equal(d.dev[0], 128);
	gp_pool_release(&p, &a);
	gp_pool_release(&p, &c);
	gp_pool_release(&p, &d);
	assert_empty(&p);
	/* Two GPUs: one instance (CUDA would enumerate only one of two) and GPU 0. */
	assert_int_equal(ask(&p, cfg, &two, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(two.ndev, 2);
	assert_int_equal(two.dev[0], 129);
	assert_int_equal(two.dev[1], 0);
	assert_int_equal(gp_pool_gpu(&p, 128)->sessions, 0);
	gp_pool_release(&p, &two);
	assert_empty(&p);
	gp_config_free(cfg);
}

static void test_mig_slices(void **state)
{
	struct gp_config *cfg = conf("placement binpack\nqueue_timeout 60\n");
	struct gp_claim a = slice_claim("t", "1g.10gb", 0), b = slice_claim("t", "mem>=12G", G),
			c = slice_claim("t", "sms>=10", G), d = slice_claim("t", "4g.20gb", G),
			e = slice_claim("t", "sms>=50", G), f = slice_claim("t", "1G.10GB", G);
	struct gp_claim two = slice_claim("t", "mem>=1G", G);
	struct gp_pool p;

	(void)state;
	mig_pool(&p);
	assert_int_equal(ask(&p, cfg, &a, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(a.dev[0], 128);
	assert_int_equal(a.mem_limit, 10 * G); /* the whole instance */
	assert_int_equal(ask(&p, cfg, &b, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(b.dev[0], 129);
	/* sms>=10: both instances match, 128 is full, so 129 (never GPU 0, which has 80). */
	assert_int_equal(ask(&p, cfg, &c, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(c.dev[0], 129);
	assert_refused(&p, cfg, &d,
		       "asked for 1 MIG instance matching the slice; 0 match "
		       "(the pool's instances: 1g.10gb (10240 MiB, 14 SMs), 3g.20gb "
		       "(20480 MiB, 42 SMs))");
	assert_refused(&p, cfg, &e, "0 match");
	/* A profile is matched whatever its case; this one waits for instance 128. */
	assert_int_equal(ask(&p, cfg, &f, 0), GP_CLAIM_QUEUED);
	gp_pool_release(&p, &f);
	/* Two instances match, but a process enumerates one MIG instance. */
	two.want_gpus = 2;
	assert_refused(&p, cfg, &two, "asked for 2 MIG instances; a session uses one");
	gp_pool_release(&p, &a);
	gp_pool_release(&p, &b);
	gp_pool_release(&p, &c);
	assert_empty(&p);
	gp_config_free(cfg);
}

/* An instance counts as one GPU toward gpus=; draining a GPU in MIG mode drains its
 * instances. */
static void test_mig_tenant_and_drain(void **state)
{
	struct gp_config *cfg = conf("queue_timeout 60\ntenant t gpus=1\n");
	struct gp_claim a = slice_claim("t", "1g.10gb", G), b = slice_claim("t", "3g.20gb", G),
			c = slice_claim("u", "mem>=1G", G);
	struct gp_pool p;

	(void)state;
	mig_pool(&p);
	assert_int_equal(ask(&p, cfg, &a, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &b, 0), GP_CLAIM_QUEUED);
	assert_int_equal(gp_pool_waiting_for(&p, cfg, &b, NULL), GP_POOL_WAIT_TENANT);
	gp_pool_release(&p, &b);
	gp_pool_release(&p, &a);
	gp_pool_gpu(&p, 64)->draining = true;
	assert_int_equal(ask(&p, cfg, &c, 0), GP_CLAIM_QUEUED);
	gp_pool_gpu(&p, 64)->draining = false;
	while (gp_pool_admit_next(&p, cfg))
		;
	assert_int_equal(c.state, GP_CLAIM_ADMITTED);
	gp_pool_release(&p, &c);
	assert_empty(&p);
	gp_config_free(cfg);
}

/* The most whole GPUs the inventory keeps (GP_STATS_MAX_DEVICES) and a MIG instance make more
 * targets than a session may hold: a claim for more is refused, not written past its arrays. */
static void test_mig_many_targets(void **state)
{
	struct gp_config *cfg = conf("queue_timeout 60\n");
	struct gp_claim big = claim("t", GP_STATS_MAX_DEVICES + 1, G),
			most = claim("t", GP_STATS_MAX_DEVICES, G);
	struct gp_pool p;

	(void)state;
	gp_pool_init(&p);
	for (uint32_t i = 0; i < GP_STATS_MAX_DEVICES; i++)
		assert_int_equal(gp_pool_add_gpu(&p, i, 2 * G), 0);
	assert_int_equal(gp_pool_add_gpu(&p, GP_SLICE_GPU_INDEX(0), 8 * G), 0);
	gp_pool_gpu(&p, GP_SLICE_GPU_INDEX(0))->mig = true;
	for (uint32_t k = 0; k < 3; k++) {
		struct gp_pool_gpu *g;

		assert_int_equal(gp_pool_add_gpu(&p, GP_SLICE_INSTANCE_INDEX(0, k), 2 * G), 0);
		g = gp_pool_gpu(&p, GP_SLICE_INSTANCE_INDEX(0, k));
		g->instance = true;
		g->parent = GP_SLICE_GPU_INDEX(0);
	}
	assert_int_equal(gp_pool_targets(&p), GP_STATS_MAX_DEVICES + 3);
	assert_refused(&p, cfg, &big, "a session holds at most 16");
	assert_int_equal(ask(&p, cfg, &most, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(most.ndev, GP_STATS_MAX_DEVICES);
	gp_pool_release(&p, &most);
	assert_empty(&p);
	gp_config_free(cfg);
}

/* The last four have leading zeros: NVIDIA never spells a profile so, and the longer two did
 * not fit gp_slice.profile (17 bytes into 16). */
static void test_slice_parse(void **state)
{
	static const char *bad[] = {"1g",
				    "1g.",
				    "g.10gb",
				    "8g.10gb",
				    "0g.1gb",
				    "1g.10gbx",
				    "mem>=",
				    "mem>=0",
				    "mem>=8Q",
				    "sms>=",
				    "sms>=0",
				    "sms>=-1",
				    "sms>=1x",
				    "gpu>=1",
				    "mem>=1G,",
				    "mem>=1G,mem>=2G",
				    "mem>=1G,,sms>=1",
				    "mem",
				    "1g.10gb,mem>=1G",
				    "01g.10gb",
				    "1g.010gb",
				    "000000000001g.1gb",
				    "1g.000000000001gb"};
	struct gp_slice s;
	char err[256];

	(void)state;
	assert_int_equal(gp_slice_parse(NULL, &s, err, sizeof(err)), 0);
	assert_false(s.set);
	assert_int_equal(gp_slice_parse("", &s, err, sizeof(err)), 0);
	assert_false(s.set);
	assert_int_equal(gp_slice_parse("2G.20GB", &s, err, sizeof(err)), 0);
	assert_true(s.set);
	assert_string_equal(s.profile, "2g.20gb");
	assert_true(gp_slice_matches(&s, "2g.20gb", 0, 0));
	assert_false(gp_slice_matches(&s, "2g.10gb", 100 * G, 100));
	assert_int_equal(gp_slice_parse("mem>=8G,sms>=20", &s, err, sizeof(err)), 0);
	assert_int_equal(s.min_mem, 8 * G);
	assert_int_equal(s.min_sms, 20);
	assert_true(gp_slice_matches(&s, "x", 8 * G, 20));
	assert_false(gp_slice_matches(&s, "x", 8 * G - 1, 20));
	assert_false(gp_slice_matches(&s, "x", 8 * G, 19));
	assert_int_equal(gp_slice_parse("sms>=7", &s, err, sizeof(err)), 0);
	assert_int_equal(s.min_mem, 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (gp_slice_parse(bad[i], &s, err, sizeof(err)) != -1 ||
		    !strstr(err, "GPUPOOL_SLICE=") || !strstr(err, "expected a MIG profile"))
			fail_msg("GPUPOOL_SLICE=%s: accepted, or said '%s'", bad[i], err);
	}
}

static void test_preempt_overkill(void **state)
{
	struct gp_config *cfg = conf("tenant alice guarantee_memory=12G\n"
				     "tenant svc preemptible=no\n");
	struct gp_pool p;
	struct gp_claim b2 = claim("bob", 1, 16 * G), s1 = claim("svc", 1, 12 * G),
			b1 = claim("bob", 1, 4 * G), a = claim("alice", 1, 12 * G), *v[8], *w;

	pool_of(&p, 2, (uint64_t[]){16 * G, 16 * G});
	b1.preemptible = b2.preemptible = true;
	assert_int_equal(ask(&p, cfg, &b2, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &s1, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &b1, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(b2.dev[0], 0);
	assert_int_equal(b1.dev[0], 1);
	assert_int_equal(ask(&p, cfg, &a, 1), GP_CLAIM_QUEUED);
	assert_int_equal(gp_pool_preempt(&p, cfg, v, 8, &w), 1);
	assert_ptr_equal(v[0], &b2);
	assert_ptr_equal(w, &a);
	assert_true(b2.preempting);
	assert_false(b1.preempting);
	gp_pool_release(&p, &b2);
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &a);
	gp_pool_release(&p, &a);
	gp_pool_release(&p, &b1);
	gp_pool_release(&p, &s1);
	assert_empty(&p);
	gp_config_free(cfg);
}

/* The waiter the victims were chosen for goes in another way before the grace ends: they are
 * not ended for the next entitled waiter when ending them would not let that one in. */
static void test_preempt_due_other_waiter(void **state)
{
	struct gp_config *cfg = conf("tenant alice guarantee_memory=12G\n"
				     "tenant carol guarantee_memory=16G\n"
				     "tenant svc preemptible=no\n");
	struct gp_pool p;
	struct gp_claim b = claim("bob", 1, 16 * G), s = claim("svc", 1, 12 * G),
			a = claim("alice", 1, 12 * G), c = claim("carol", 2, 8 * G), *v[8], *w;

	pool_of(&p, 2, (uint64_t[]){16 * G, 16 * G});
	b.preemptible = true;
	assert_int_equal(ask(&p, cfg, &b, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &s, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &a, 1), GP_CLAIM_QUEUED);
	assert_int_equal(gp_pool_preempt(&p, cfg, v, 8, &w), 1);
	assert_ptr_equal(v[0], &b);
	assert_ptr_equal(w, &a);
	/* svc ends: alice goes on its GPU; carol, entitled, waits for 8G on two GPUs, which
	 * bob's GPU alone cannot give her */
	gp_pool_release(&p, &s);
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &a);
	assert_int_equal(ask(&p, cfg, &c, 2), GP_CLAIM_QUEUED);
	assert_false(gp_pool_preempt_due(&p, cfg));
	assert_false(b.preempting);
	/* and no new round for her either */
	assert_int_equal(gp_pool_preempt(&p, cfg, v, 8, &w), 0);
	gp_pool_release(&p, &c);
	gp_pool_release(&p, &a);
	gp_pool_release(&p, &b);
	assert_empty(&p);
	gp_config_free(cfg);
}

/* An entitled waiter that waits for room: preemptible claims of borrowing tenants are
 * chosen, newest first, until there would be room; not those that may not go. */
static void test_preempt(void **state)
{
	struct gp_config *cfg = conf("tenant alice guarantee_memory=12G\n"
				     "tenant batch preemptible=yes\ntenant svc preemptible=no\n");
	struct gp_pool p;
	struct gp_claim b1 = claim("bob", 1, 4 * G), b2 = claim("bob", 1, 4 * G),
			b3 = claim("batch", 1, 4 * G), b4 = claim("bob", 1, 4 * G),
			a = claim("alice", 1, 12 * G), *v[8], *w;

	pool_of(&p, 1, (uint64_t[]){16 * G});
	b1.preemptible = true; /* bob's client's word */
	b2.preemptible = true;
	assert_true(gp_pool_preemptible(cfg, &b1));
	assert_true(gp_pool_preemptible(cfg, &b3)); /* its tenant's line */
	assert_false(gp_pool_preemptible(cfg, &b4));
	{
		struct gp_claim s = claim("svc", 1, G);

		s.preemptible = true; /* its tenant's line says no: that wins */
		assert_false(gp_pool_preemptible(cfg, &s));
	}
	assert_int_equal(ask(&p, cfg, &b1, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &b2, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &b3, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &b4, 0), GP_CLAIM_ADMITTED); /* 16G of 16G */
	assert_int_equal(gp_pool_preempt(&p, cfg, v, 8, &w), 0);   /* nobody waits */
	assert_false(gp_pool_preempt_due(&p, cfg));
	assert_int_equal(ask(&p, cfg, &a, 1), GP_CLAIM_QUEUED);
	assert_true(gp_pool_preempt_due(&p, cfg));
	/* newest first: b4 may not go, b3 (batch) and b2 make 8G, b1 the 12G */
	assert_int_equal(gp_pool_preempt(&p, cfg, v, 8, &w), 3);
	assert_ptr_equal(w, &a);
	assert_ptr_equal(v[0], &b3);
	assert_ptr_equal(v[1], &b2);
	assert_ptr_equal(v[2], &b1);
	assert_true(b1.preempting && b2.preempting && b3.preempting);
	assert_false(b4.preempting);
	/* under way: no second round while they end */
	assert_int_equal(gp_pool_preempt(&p, cfg, v, 8, &w), 0);
	gp_pool_release(&p, &b3);
	gp_pool_release(&p, &b2);
	assert_false(b2.preempting); /* released claims carry no mark */
	assert_null(gp_pool_admit_next(&p, cfg));
	assert_true(gp_pool_preempt_due(&p, cfg));
	gp_pool_release(&p, &b1);
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &a);
	assert_false(gp_pool_preempt_due(&p, cfg));
	gp_pool_release(&p, &a);
	gp_pool_release(&p, &b4);
	assert_empty(&p);
	gp_config_free(cfg);
}

/* No preemption when it would not make room, for a borrowing waiter, of a tenant's own, or
 * of a tenant within its guarantee; one no longer due clears its marks. */
static void test_preempt_not(void **state)
{
	struct gp_config *cfg = conf("tenant alice guarantee_memory=16G\n"
				     "tenant carol guarantee_memory=8G preemptible=yes\n");
	struct gp_pool p;
	struct gp_claim c1 = claim("carol", 1, 8 * G), b1 = claim("bob", 1, 4 * G),
			b2 = claim("bob", 1, 4 * G), a = claim("alice", 1, 16 * G),
			a2 = claim("alice", 1, 8 * G), d = claim("dave", 1, 4 * G), *v[8], *w;

	pool_of(&p, 1, (uint64_t[]){16 * G});
	b1.preemptible = true;
	assert_int_equal(ask(&p, cfg, &c1, 0), GP_CLAIM_ADMITTED); /* carol: within 8G */
	assert_int_equal(ask(&p, cfg, &b1, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &b2, 0), GP_CLAIM_ADMITTED); /* not preemptible */
	/* a borrowing waiter (dave, no guarantee) preempts nobody */
	assert_int_equal(ask(&p, cfg, &d, 1), GP_CLAIM_QUEUED);
	assert_int_equal(gp_pool_preempt(&p, cfg, v, 8, &w), 0);
	assert_false(gp_pool_preempt_due(&p, cfg));
	gp_pool_release(&p, &d);
	/* alice's 16G: carol is within her guarantee and b2 may not go: b1 alone is no room */
	assert_int_equal(ask(&p, cfg, &a, 2), GP_CLAIM_QUEUED);
	assert_int_equal(gp_pool_preempt(&p, cfg, v, 8, &w), 0);
	assert_false(b1.preempting);
	gp_pool_release(&p, &a);
	/* alice's 8G: b1 and... b2 may not go, carol may not: still no room (4G from b1) */
	assert_int_equal(ask(&p, cfg, &a2, 3), GP_CLAIM_QUEUED);
	assert_int_equal(gp_pool_preempt(&p, cfg, v, 8, &w), 0);
	/* b2 ends: 4G free, b1's 4G more is room: b1 is chosen */
	gp_pool_release(&p, &b2);
	assert_null(gp_pool_admit_next(&p, cfg));
	assert_int_equal(gp_pool_preempt(&p, cfg, v, 1, &w), 1);
	assert_ptr_equal(v[0], &b1);
	/* the waiter leaves before the grace is over: not due, the mark goes */
	gp_pool_release(&p, &a2);
	assert_false(gp_pool_preempt_due(&p, cfg));
	assert_false(b1.preempting);
	gp_pool_release(&p, &b1);
	gp_pool_release(&p, &c1);
	assert_empty(&p);
	/* a waiter that may not wait (queue_timeout 0) is refused at once: nobody is preempted */
	{
		struct gp_config *now =
			conf("tenant alice guarantee_memory=16G\nqueue_timeout 0\n");

		b1 = claim("bob", 1, 16 * G);
		b1.preemptible = true;
		a2 = claim("alice", 1, 8 * G);
		assert_int_equal(ask(&p, now, &b1, 0), GP_CLAIM_ADMITTED);
		assert_int_equal(ask(&p, now, &a2, 1), GP_CLAIM_QUEUED);
		assert_false(gp_pool_may_wait(&p, now, &a2));
		assert_int_equal(gp_pool_preempt(&p, now, v, 8, &w), 0);
		assert_int_equal(gp_pool_preempt(&p, cfg, v, 8, &w), 1); /* it may, with 60 s */
		gp_pool_release(&p, &a2);
		gp_pool_release(&p, &b1);
		gp_config_free(now);
	}
	assert_empty(&p);
	assert_int_equal(gp_pool_preempt(NULL, cfg, v, 8, &w), 0);
	assert_int_equal(gp_pool_preempt(&p, cfg, v, 0, &w), 0);
	assert_false(gp_pool_preempt_due(NULL, cfg));
	assert_false(gp_pool_preemptible(cfg, NULL));
	gp_config_free(cfg);
}

/* ---- release on every way a session ends ---- */

static void test_release_every_way(void **state)
{
	struct gp_config *cfg = conf("tenant t sessions=2\n");
	struct gp_pool p;
	struct gp_claim admitted = claim("t", 2, 4 * G), waiting = claim("t", 1, 16 * G),
			expired = claim("u", 1, 16 * G), refused = claim("t", 3, G);
	struct gp_pool_usage u;

	pool_of(&p, 2, (uint64_t[]){16 * G, 16 * G});
	assert_int_equal(gp_pool_enqueue(&p, cfg, &refused, 0, why, sizeof(why)), GP_EREFUSED);
	assert_int_equal(ask(&p, cfg, &admitted, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &waiting, 0), GP_CLAIM_QUEUED);
	assert_int_equal(ask(&p, cfg, &expired, 0), GP_CLAIM_QUEUED);

	/* refused: never held anything; releasing it (the worker exits) changes nothing */
	gp_pool_release(&p, &refused);
	/* the queue timeout: out of the queue, and its worker's exit releases nothing more */
	gp_pool_release(&p, &waiting); /* the client went away while waiting */
	assert_ptr_equal(gp_pool_expire_next(&p, 5000, 1000), &expired);
	gp_pool_release(&p, &expired);
	assert_null(p.queue);
	/* admitted: the worker exits (end, crash, evict, idle, drain), then the session is freed */
	gp_pool_release(&p, &admitted);
	assert_int_equal(admitted.state, GP_CLAIM_IDLE);
	gp_pool_release(&p, &admitted);
	assert_empty(&p);
	gp_pool_tenant_usage(&p, "t", &u);
	assert_int_equal(u.sessions + u.gpus + u.memory, 0);
	/* and the pool is whole again: a claim for everything fits */
	admitted = claim("t", 2, 16 * G);
	assert_int_equal(ask(&p, cfg, &admitted, 0), GP_CLAIM_ADMITTED);
	gp_pool_release(&p, &admitted);
	gp_config_free(cfg);
}

/* ---- priorities ---- */

static struct gp_claim prio_claim(const char *tenant, uint64_t memory, int asked)
{
	struct gp_claim c = claim(tenant, 1, memory);

	if (asked >= 0) {
		c.priority_set = true;
		c.want_priority = asked;
	}
	return c;
}

/* A claim's priority is its tenant's, or less when its client asks for less; the queue serves
 * higher priorities first, entitlement and arrival only within one priority. */
static void test_priority_order(void **state)
{
	struct gp_config *cfg = conf("tenant hi priority=5\ntenant ent guarantee_memory=16G\n"
				     "tenant lo\n");
	struct gp_pool p;
	struct gp_claim fill = claim("lo", 1, 16 * G), lo = prio_claim("lo", 16 * G, 9),
			ent = prio_claim("ent", 16 * G, -1), h3 = prio_claim("hi", 16 * G, 3),
			h5 = prio_claim("hi", 16 * G, -1), h9 = prio_claim("hi", 16 * G, 9);
	struct gp_claim *order[] = {&h5, &h9, &h3, &ent, &lo};
	unsigned place;

	(void)state;
	pool_of(&p, 1, (uint64_t[]){16 * G});
	assert_int_equal(gp_pool_priority(cfg, &lo), 0); /* asked 9: lo's is 0 */
	assert_int_equal(gp_pool_priority(cfg, &ent), 0);
	assert_int_equal(gp_pool_priority(cfg, &h3), 3); /* asked less than its tenant's */
	assert_int_equal(gp_pool_priority(cfg, &h5), 5); /* asked none: its tenant's */
	assert_int_equal(gp_pool_priority(cfg, &h9), 5); /* asked more: cut to its tenant's */
	assert_int_equal(ask(&p, cfg, &fill, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &lo, 1), GP_CLAIM_QUEUED);
	assert_int_equal(ask(&p, cfg, &ent, 2), GP_CLAIM_QUEUED); /* entitled, priority 0 */
	assert_int_equal(ask(&p, cfg, &h3, 3), GP_CLAIM_QUEUED);
	assert_int_equal(ask(&p, cfg, &h5, 4), GP_CLAIM_QUEUED);
	assert_int_equal(ask(&p, cfg, &h9, 5), GP_CLAIM_QUEUED);
	for (unsigned k = 0; k < 5; k++) {
		assert_int_equal(gp_pool_waiting_for(&p, cfg, order[k], &place),
				 GP_POOL_WAIT_CAPACITY);
		assert_int_equal(place, k + 1);
	}
	/* one at a time, in that order: hi's two at 5 in arrival order, its 3 before its older
	 * ones of lower priority, then the entitled tenant before the borrowing one */
	gp_pool_release(&p, &fill);
	for (unsigned k = 0; k < 5; k++) {
		assert_ptr_equal(gp_pool_admit_next(&p, cfg), order[k]);
		assert_null(gp_pool_admit_next(&p, cfg));
		gp_pool_release(&p, order[k]);
	}
	assert_empty(&p);
	gp_config_free(cfg);
}

/* What a quote sees (gp_pool_prospect): the waiters its priority puts before it, whether one
 * of them holds it up, and how many preemptible claims ending would let it in; a priority
 * outside 0-9 counts as none asked. */
static void test_priority_prospect(void **state)
{
	struct gp_config *cfg = conf("tenant hi priority=5\ntenant mid priority=3\n");
	struct gp_pool p;
	struct gp_claim lo = prio_claim("lo", 8 * G, -1), lo2 = prio_claim("lo", 8 * G, -1),
			m = prio_claim("mid", 16 * G, -1), q = prio_claim("hi", 16 * G, -1),
			bad = prio_claim("hi", 8 * G, -1), queued = prio_claim("hi", 8 * G, -1);
	struct gp_pool_prospect o;

	(void)state;
	pool_of(&p, 1, (uint64_t[]){16 * G});
	assert_int_equal(gp_pool_prospect(NULL, cfg, &q, &o), -EINVAL);
	assert_int_equal(gp_pool_prospect(&p, NULL, &q, &o), -EINVAL);
	assert_int_equal(gp_pool_prospect(&p, cfg, NULL, &o), -EINVAL);
	assert_int_equal(gp_pool_prospect(&p, cfg, &q, NULL), -EINVAL);
	assert_int_equal(gp_pool_ahead_higher(&p, cfg, &q), 0); /* not queued */
	/* an empty pool: it fits, nobody ahead */
	assert_int_equal(gp_pool_prospect(&p, cfg, &q, &o), 0);
	assert_int_equal(o.priority, 5);
	assert_true(o.fits);
	assert_int_equal(o.ahead + o.ahead_higher + o.preempt, 0);
	assert_false(o.held_up);
	lo.preemptible = lo2.preemptible = true;
	assert_int_equal(ask(&p, cfg, &lo, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &lo2, 0), GP_CLAIM_ADMITTED);
	/* full of preemptible claims of priority 0: hi (5) would preempt both, lo (0) nobody */
	assert_int_equal(gp_pool_prospect(&p, cfg, &q, &o), 0);
	assert_false(o.fits);
	assert_false(o.held_up);
	assert_int_equal(o.preempt, 2);
	assert_false(lo.preempting || lo2.preempting); /* none marked */
	{
		struct gp_claim l = prio_claim("lo", 8 * G, -1);

		assert_int_equal(gp_pool_prospect(&p, cfg, &l, &o), 0);
		assert_int_equal(o.priority, 0);
		assert_false(o.fits);
		assert_int_equal(o.preempt, 0);
	}
	/* mid (3) waits for the whole GPU: hi's quote is first in the order, not held up; a
	 * quote of priority 1 comes after mid, held up by it, and preempts nobody */
	assert_int_equal(ask(&p, cfg, &m, 1), GP_CLAIM_QUEUED);
	assert_int_equal(gp_pool_prospect(&p, cfg, &q, &o), 0);
	assert_int_equal(o.ahead, 0);
	assert_int_equal(o.preempt, 2);
	q.priority_set = true;
	q.want_priority = 1;
	assert_int_equal(gp_pool_prospect(&p, cfg, &q, &o), 0);
	assert_int_equal(o.priority, 1);
	assert_int_equal(o.ahead, 1);
	assert_int_equal(o.ahead_higher, 1);
	assert_true(o.held_up);
	assert_false(o.fits);
	assert_int_equal(o.preempt, 0);
	/* a priority that is not one is no request: its tenant's */
	bad.priority_set = true;
	bad.want_priority = -3;
	assert_int_equal(gp_pool_priority(cfg, &bad), 5);
	/* a queued claim of priority 5 has nobody of higher priority before it; mid (3) has it */
	assert_int_equal(ask(&p, cfg, &queued, 2), GP_CLAIM_QUEUED);
	assert_int_equal(gp_pool_ahead_higher(&p, cfg, &queued), 0);
	assert_int_equal(gp_pool_ahead_higher(&p, cfg, &m), 1);
	gp_pool_release(&p, &queued);
	gp_pool_release(&p, &m);
	gp_pool_release(&p, &lo);
	gp_pool_release(&p, &lo2);
	assert_empty(&p);
	gp_config_free(cfg);
}

/* Within one tenant, a session of higher priority goes before its tenant's older ones; those
 * of one priority keep their arrival order. */
static void test_priority_within_tenant(void **state)
{
	struct gp_config *cfg = conf("tenant t priority=4\n");
	struct gp_pool p;
	struct gp_claim fill = claim("u", 1, 16 * G), a = prio_claim("t", 16 * G, 1),
			b = prio_claim("t", 16 * G, 1), c = prio_claim("t", 16 * G, 2);

	(void)state;
	pool_of(&p, 1, (uint64_t[]){16 * G});
	assert_int_equal(ask(&p, cfg, &fill, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &a, 1), GP_CLAIM_QUEUED);
	assert_int_equal(ask(&p, cfg, &b, 2), GP_CLAIM_QUEUED);
	assert_int_equal(ask(&p, cfg, &c, 3), GP_CLAIM_QUEUED);
	gp_pool_release(&p, &fill);
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &c);
	gp_pool_release(&p, &c);
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &a);
	gp_pool_release(&p, &a);
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &b);
	gp_pool_release(&p, &b);
	assert_empty(&p);
	gp_config_free(cfg);
}

/* A waiter of higher priority preempts preemptible claims of lower priority, of any tenant
 * (its own, one within its guarantee); never one of higher priority, nor one that is not
 * preemptible. */
static void test_priority_preempt(void **state)
{
	struct gp_config *cfg = conf("tenant hi priority=5\ntenant mid priority=3\n"
				     "tenant ent guarantee_memory=16G\n");
	struct gp_pool p;
	struct gp_claim e = prio_claim("ent", 8 * G, -1), m = prio_claim("mid", 8 * G, -1),
			h = prio_claim("hi", 8 * G, -1), own = prio_claim("hi", 8 * G, 1),
			h2 = prio_claim("hi", 16 * G, -1), *v[8], *w;

	(void)state;
	pool_of(&p, 1, (uint64_t[]){16 * G});
	e.preemptible = m.preemptible = own.preemptible = true;
	assert_int_equal(ask(&p, cfg, &e, 0), GP_CLAIM_ADMITTED); /* within its guarantee */
	assert_int_equal(ask(&p, cfg, &m, 0), GP_CLAIM_ADMITTED);
	/* h (5) waits for 8G: the lowest one goes, e (0), within its guarantee or not; m (3),
	 * newer, is spared */
	assert_int_equal(ask(&p, cfg, &h, 1), GP_CLAIM_QUEUED);
	assert_int_equal(gp_pool_preempt(&p, cfg, v, 8, &w), 1);
	assert_ptr_equal(w, &h);
	assert_ptr_equal(v[0], &e);
	assert_false(m.preempting);
	assert_true(gp_pool_preempt_by_priority(cfg, &e, &h));
	assert_ptr_equal(gp_pool_preempt_waiter(&p, cfg), &h);
	assert_true(gp_pool_preempt_due(&p, cfg));
	gp_pool_release(&p, &e);
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &h);
	assert_null(gp_pool_preempt_waiter(&p, cfg));
	/* h2 (5) waits for 16G: m (3) could go, but h (5, not preemptible, and not lower)
	 * holds the other 8G: no room to be had, nobody chosen */
	assert_int_equal(ask(&p, cfg, &h2, 2), GP_CLAIM_QUEUED);
	assert_int_equal(gp_pool_preempt(&p, cfg, v, 8, &w), 0);
	assert_false(m.preempting);
	gp_pool_release(&p, &h2);
	/* its own tenant's session of priority 1 goes for a session of 5, before m (3) */
	gp_pool_release(&p, &h);
	assert_int_equal(ask(&p, cfg, &own, 3), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &h, 4), GP_CLAIM_QUEUED);
	assert_int_equal(gp_pool_preempt(&p, cfg, v, 8, &w), 1);
	assert_ptr_equal(v[0], &own);
	assert_false(m.preempting);
	gp_pool_release(&p, &own);
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &h);
	gp_pool_release(&p, &h);
	gp_pool_release(&p, &m);
	assert_empty(&p);
	gp_config_free(cfg);
}

/* Victims by lowest priority first, then the newest, and no more than make room: of
 * preemptible claims of priorities 5, 2, 7 filling the GPU (the 7 newest), a waiter of 9
 * for one's room ends the 2; for two's room, the 2 and the 5 (the 7 is the last to go);
 * among claims of one priority, the newest; and one whose room does not help is passed
 * over for a higher one whose room does. */
static void test_preempt_lowest_first(void **state)
{
	struct gp_config *cfg = conf("tenant lo priority=9\ntenant hi priority=9\n");
	struct gp_pool p;
	struct gp_claim c5 = prio_claim("lo", 4 * G, 5), c2 = prio_claim("lo", 4 * G, 2),
			c7 = prio_claim("lo", 8 * G, 7), h = prio_claim("hi", 4 * G, 9),
			h2 = prio_claim("hi", 8 * G, 9), big = prio_claim("hi", 8 * G, 9),
			o1 = prio_claim("lo", 4 * G, 2), o2 = prio_claim("lo", 4 * G, 2), *v[8], *w;

	(void)state;
	pool_of(&p, 1, (uint64_t[]){16 * G});
	c5.preemptible = c2.preemptible = c7.preemptible = true;
	assert_int_equal(ask(&p, cfg, &c5, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &c2, 1), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &c7, 2), GP_CLAIM_ADMITTED); /* 16G of 16G */
	assert_int_equal(ask(&p, cfg, &h, 3), GP_CLAIM_QUEUED);
	assert_int_equal(gp_pool_preempt(&p, cfg, v, 8, &w), 1);
	assert_ptr_equal(w, &h);
	assert_ptr_equal(v[0], &c2);
	assert_false(c5.preempting || c7.preempting);
	gp_pool_release(&p, &c2);
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &h);
	gp_pool_release(&p, &h);
	/* 8G: c5's 4G and 4G free would do, but with c2 back: c2 and c5, never c7 */
	c2 = prio_claim("lo", 4 * G, 2);
	c2.preemptible = true;
	assert_int_equal(ask(&p, cfg, &c2, 4), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &h2, 5), GP_CLAIM_QUEUED);
	assert_int_equal(gp_pool_preempt(&p, cfg, v, 8, &w), 2);
	assert_ptr_equal(v[0], &c2);
	assert_ptr_equal(v[1], &c5);
	assert_false(c7.preempting);
	gp_pool_release(&p, &c2);
	gp_pool_release(&p, &c5);
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &h2);
	gp_pool_release(&p, &h2);
	/* two of priority 2 beside c7 (8G): 4G wanted, the newer of the two goes */
	o1.preemptible = o2.preemptible = true;
	assert_int_equal(ask(&p, cfg, &o1, 6), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &o2, 7), GP_CLAIM_ADMITTED);
	h = prio_claim("hi", 4 * G, 9);
	assert_int_equal(ask(&p, cfg, &h, 8), GP_CLAIM_QUEUED);
	assert_int_equal(gp_pool_preempt(&p, cfg, v, 8, &w), 1);
	assert_ptr_equal(v[0], &o2);
	assert_false(o1.preempting);
	gp_pool_release(&p, &o2);
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &h);
	gp_pool_release(&p, &h);
	gp_pool_release(&p, &o1);
	gp_pool_release(&p, &c7);
	assert_empty(&p);
	/* two GPUs: c2 (4G) beside a non-preemptible 12G on one, c5 (16G) on the other; big
	 * wants 16G: c2 is taken first but its room does not help, so only c5 goes */
	pool_of(&p, 2, (uint64_t[]){16 * G, 16 * G});
	{
		struct gp_claim s12 = prio_claim("lo", 12 * G, 9);

		c2 = prio_claim("lo", 4 * G, 2);
		c5 = prio_claim("lo", 16 * G, 5);
		big = prio_claim("hi", 16 * G, 9);
		c2.preemptible = c5.preemptible = true;
		assert_int_equal(ask(&p, cfg, &c5, 9), GP_CLAIM_ADMITTED);
		assert_int_equal(ask(&p, cfg, &s12, 10), GP_CLAIM_ADMITTED);
		assert_int_equal(ask(&p, cfg, &c2, 11), GP_CLAIM_ADMITTED);
		assert_int_equal(c2.dev[0], s12.dev[0]);
		assert_int_equal(ask(&p, cfg, &big, 12), GP_CLAIM_QUEUED);
		assert_int_equal(gp_pool_preempt(&p, cfg, v, 8, &w), 1);
		assert_ptr_equal(v[0], &c5);
		assert_false(c2.preempting);
		gp_pool_release(&p, &c5);
		assert_ptr_equal(gp_pool_admit_next(&p, cfg), &big);
		gp_pool_release(&p, &big);
		gp_pool_release(&p, &c2);
		gp_pool_release(&p, &s12);
	}
	assert_empty(&p);
	gp_config_free(cfg);
}

/* When entitlement and priority disagree, priority wins: a borrowing waiter of higher
 * priority is served before an entitled one queued earlier and preempts a preemptible
 * session of a tenant within its guarantee; an entitled waiter never preempts a session of
 * higher priority; a preemption chosen for a higher priority is not carried out for a
 * lower one that comes first after it left. */
static void test_priority_beats_entitlement(void **state)
{
	struct gp_config *cfg = conf("tenant alice guarantee_memory=16G\n"
				     "tenant bob priority=5\ntenant carol priority=3\n");
	struct gp_pool p;
	struct gp_claim c = prio_claim("carol", 16 * G, -1), a = prio_claim("alice", 16 * G, -1),
			b = prio_claim("bob", 16 * G, -1), a0 = prio_claim("alice", 16 * G, -1),
			*v[8], *w;
	unsigned place;

	(void)state;
	pool_of(&p, 1, (uint64_t[]){16 * G});
	c.preemptible = true;
	a0.preemptible = true;
	/* carol (3, borrowing, preemptible) holds the GPU; alice (0, entitled) waits: carol's
	 * priority is higher, so alice preempts nobody */
	assert_int_equal(ask(&p, cfg, &c, 0), GP_CLAIM_ADMITTED);
	assert_int_equal(ask(&p, cfg, &a, 1), GP_CLAIM_QUEUED);
	assert_int_equal(gp_pool_preempt(&p, cfg, v, 8, &w), 0);
	assert_false(c.preempting);
	/* bob (5, borrowing) comes later and goes first in the order */
	assert_int_equal(ask(&p, cfg, &b, 2), GP_CLAIM_QUEUED);
	gp_pool_waiting_for(&p, cfg, &b, &place);
	assert_int_equal(place, 1);
	gp_pool_waiting_for(&p, cfg, &a, &place);
	assert_int_equal(place, 2);
	/* and preempts carol (3 < 5) */
	assert_int_equal(gp_pool_preempt(&p, cfg, v, 8, &w), 1);
	assert_ptr_equal(w, &b);
	assert_ptr_equal(v[0], &c);
	/* bob leaves before the grace ends: alice is first now, and may not preempt carol */
	gp_pool_release(&p, &b);
	assert_null(gp_pool_preempt_waiter(&p, cfg));
	assert_false(gp_pool_preempt_due(&p, cfg));
	assert_false(c.preempting);
	gp_pool_release(&p, &a);
	gp_pool_release(&p, &c);
	/* alice's preemptible session within her guarantee goes for bob's */
	assert_int_equal(ask(&p, cfg, &a0, 3), GP_CLAIM_ADMITTED);
	assert_true(gp_pool_tenant_entitled(&p, cfg, "alice"));
	assert_int_equal(ask(&p, cfg, &b, 4), GP_CLAIM_QUEUED);
	assert_int_equal(gp_pool_preempt(&p, cfg, v, 8, &w), 1);
	assert_ptr_equal(v[0], &a0);
	assert_true(gp_pool_preempt_due(&p, cfg));
	gp_pool_release(&p, &a0);
	assert_ptr_equal(gp_pool_admit_next(&p, cfg), &b);
	gp_pool_release(&p, &b);
	assert_empty(&p);
	gp_config_free(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_invalid_gpus),
		cmocka_unit_test(test_invalid_claims),
		cmocka_unit_test(test_refused_at_once),
		cmocka_unit_test(test_spread),
		cmocka_unit_test(test_binpack),
		cmocka_unit_test(test_tie_fewer_sessions),
		cmocka_unit_test(test_multi_gpu_and_whole_gpus),
		cmocka_unit_test(test_draining),
		cmocka_unit_test(test_tenant_sessions),
		cmocka_unit_test(test_tenant_gpus_and_memory),
		cmocka_unit_test(test_tenant_memory_whole_gpu),
		cmocka_unit_test(test_new_limits_admit_waiters),
		cmocka_unit_test(test_queue_order),
		cmocka_unit_test(test_queue_timeout),
		cmocka_unit_test(test_tenant_queue_limit),
		cmocka_unit_test(test_may_wait),
		cmocka_unit_test(test_displace),
		cmocka_unit_test(test_guarantee_first),
		cmocka_unit_test(test_borrowing),
		cmocka_unit_test(test_weighted_fair),
		cmocka_unit_test(test_guarantee_gpus),
		cmocka_unit_test(test_compute_fit),
		cmocka_unit_test(test_compute_tenant),
		cmocka_unit_test(test_mig_targets),
		cmocka_unit_test(test_mig_slices),
		cmocka_unit_test(test_mig_tenant_and_drain),
		cmocka_unit_test(test_mig_many_targets),
		cmocka_unit_test(test_slice_parse),
		cmocka_unit_test(test_preempt_overkill),
		cmocka_unit_test(test_preempt_due_other_waiter),
		cmocka_unit_test(test_preempt),
		cmocka_unit_test(test_preempt_not),
		cmocka_unit_test(test_release_every_way),
		cmocka_unit_test(test_priority_order),
		cmocka_unit_test(test_priority_within_tenant),
		cmocka_unit_test(test_priority_prospect),
		cmocka_unit_test(test_priority_preempt),
		cmocka_unit_test(test_priority_beats_entitlement),
		cmocka_unit_test(test_preempt_lowest_first),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
