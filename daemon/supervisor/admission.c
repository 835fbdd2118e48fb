/* admission.c -- admission's I/O: who the tenant is, and the replies and logs that carry
 * pool.c's decisions (placement, the reservation ledger, tenant limits, the wait queue).
 * Every way a session ends reaches gp__admit_release, from the worker's exit. */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon.h"
#include "conn.h"
#include "error.h"
#include "log.h"
#include "proof.h"

static struct gp_session *session_of(struct gp_claim *c)
{
	return (struct gp_session *)((char *)c - offsetof(struct gp_session, claim));
}

static void reply(struct gp_session *s, int status, const char *msg)
{
	Gp__AdmitReply rep = GP__ADMIT_REPLY__INIT;
	char vis[GP_STATS_MAX_DEVICES][48], *visp[GP_STATS_MAX_DEVICES];

	rep.status = status;
	rep.message = (char *)(msg ? msg : "");
	rep.tenant = s->tenant;
	if (status == 0) {
		rep.n_device = s->claim.ndev;
		rep.device = s->claim.dev;
		rep.memory_limit = s->claim.mem_limit;
		rep.compute = s->claim.compute;
		rep.compute_enforce = (char *)gp_compute_enforce_name(s->d->cfg->compute_enforce);
		s->compute_enforce = s->d->cfg->compute_enforce;
		/* MIG instances are named by UUID (inventory.c). */
		for (uint32_t i = 0; i < s->claim.ndev && i < GP_STATS_MAX_DEVICES; i++) {
			gp__visible_name(s->d, s->claim.dev[i], vis[i], sizeof(vis[i]));
			visp[i] = vis[i];
		}
		rep.n_visible = s->claim.ndev;
		rep.visible = visp;
		/* One MPS server a process: a session on one GPU with mps on is its client. */
		if (s->claim.ndev == 1 && gp__mps_pipe_dir(s->d, s->claim.dev[0]))
			rep.mps_pipe_directory = (char *)gp__mps_pipe_dir(s->d, s->claim.dev[0]);
	}
	gp__uv_send((uv_stream_t *)&s->ctl, GP_MSG_ADMIT_REPLY, &rep.base);
}

static void refuse(struct gp_session *s, const char *why)
{
	s->refused = true;
	gp_log_info("session %llu (tenant %s) refused: %s", (unsigned long long)s->id, s->tenant,
		    why);
	reply(s, GP_EREFUSED, why);
}

static void admitted(struct gp_session *s)
{
	char devs[GP_STATS_MAX_DEVICES * 4 + 1] = "", share[48] = "";

	for (uint32_t i = 0; i < s->claim.ndev; i++) {
		size_t l = strlen(devs);

		snprintf(devs + l, sizeof(devs) - l, "%s%u", i ? "," : "", s->claim.dev[i]);
	}
	if (s->claim.compute)
		snprintf(share, sizeof(share), ", %u%% of the compute", s->claim.compute);
	gp_log_info("session %llu (tenant %s, %s pid %u) admitted on GPU %s, %llu bytes each%s",
		    (unsigned long long)s->id, s->tenant, s->program, s->client_pid, devs,
		    (unsigned long long)s->claim.mem_limit, share);
	s->state = GP_SESSION_ACTIVE;
	s->admitted_ms = gp__wall_ms();
	s->admitted_at = uv_now(s->d->loop);
	reply(s, 0, NULL);
}

/* The tenant CA as proofs are checked against it, kept between admissions (loading it costs
 * milliseconds of the loop's time) and loaded again when the file a session's worker was set
 * up with is another, or has changed since (a reload, a renewed CA). */
static struct {
	struct gp_proof_ca *ca;
	char path[4096];
	struct stat st;
} tenant_ca;

static const struct gp_proof_ca *tenant_ca_for(const char *path, char *why, size_t whylen)
{
	struct stat st;

	if (stat(path, &st) != 0) {
		snprintf(why, whylen, "CA file %s: %s", path, strerror(errno));
		return NULL;
	}
	if (tenant_ca.ca && strcmp(tenant_ca.path, path) == 0 && st.st_dev == tenant_ca.st.st_dev &&
	    st.st_ino == tenant_ca.st.st_ino && st.st_size == tenant_ca.st.st_size &&
	    st.st_mtim.tv_sec == tenant_ca.st.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == tenant_ca.st.st_mtim.tv_nsec)
		return tenant_ca.ca;
	gp_proof_ca_free(tenant_ca.ca);
	tenant_ca.ca = NULL;
	if (strlen(path) >= sizeof(tenant_ca.path)) {
		snprintf(why, whylen, "the CA file's path is too long");
		return NULL;
	}
	tenant_ca.ca = gp_proof_ca_new(path, why, whylen);
	snprintf(tenant_ca.path, sizeof(tenant_ca.path), "%s", path);
	tenant_ca.st = st;
	return tenant_ca.ca;
}

/*
 * The name the session's own credentials give it, found by the supervisor (docs/security.md
 * "The supervisor names the tenant"): on the Unix socket the user the kernel named at
 * hand-over; over mutual TLS the leaf of the chain the worker forwarded, once it verifies
 * against the tenant CA and the client's signature over this session's nonce verifies with
 * its key (src/proof.h). "" where there is none (TLS without tls_ca, plain TCP): then only a
 * token names a tenant. Returns 0, or GP_EREFUSED with why.
 */
static int credential_name(struct gp_session *s, const Gp__AdmitRequest *req, char *out,
			   size_t outlen, char *why, size_t whylen)
{
	const struct gp_proof_ca *ca;

	out[0] = '\0';
	if (s->transport == GP_TRANSPORT_UNIX) {
		if (!s->peer_known) {
			snprintf(why, whylen, "the pool cannot tell which user connected");
			return GP_EREFUSED;
		}
		gp_user_name(s->peer_uid, out, outlen);
		return 0;
	}
	if (s->transport != GP_TRANSPORT_TLS || !s->mtls)
		return 0;
	if (!s->tls_ca) {
		snprintf(why, whylen, "the pool could not record its tenant CA (out of memory)");
		return GP_EREFUSED;
	}
	if (!s->nonce_set) {
		snprintf(why, whylen, "the pool has no nonce for this session's tenant proof");
		return GP_EREFUSED;
	}
	ca = tenant_ca_for(s->tls_ca, why, whylen);
	if (!ca)
		return GP_EREFUSED;
	return gp_proof_verify(ca, (enum gp_name_from)s->tenant_from, s->nonce, req->peer_chain,
			       req->n_peer_chain, &req->proof_signature, &req->proof_exporter, out,
			       outlen, why, whylen);
}

/* A worker that claims what the session's credentials do not say has been taken over (by
 * its client, during TLS or Hello): it is told nothing and ended at once. */
static void compromised(struct gp_session *s, const char *claim, const char *why)
{
	snprintf(s->tenant, sizeof(s->tenant), "unknown");
	s->refused = true;
	gp_log_warnx("session %llu from %s: its worker claims tenant \"%s\", but %s: the worker is "
		     "taken to be compromised; ending it",
		     (unsigned long long)s->id, s->client_addr, claim, why);
	reply(s, GP_EREFUSED, "the pool ended this session: its worker misreported the tenant");
	gp__session_kill(s, SIGKILL);
}

void gp__admit_request(struct gp_session *s, const Gp__AdmitRequest *req)
{
	struct gp_daemon *d = s->d;
	char why[256], named[sizeof(s->tenant)];
	int r;

	if (s->claim.state != GP_CLAIM_IDLE) {
		refuse(s, "session already asked for admission");
		return;
	}
	snprintf(s->client_host, sizeof(s->client_host), "%s", req->client_host);
	snprintf(s->program, sizeof(s->program), "%s", req->program);
	s->client_pid = req->client_pid;
	s->claim.want_gpus = req->gpus;
	s->claim.want_memory = req->memory;
	s->claim.want_compute = req->compute;
	s->claim.preemptible = req->preemptible;
	/* GPUPOOL_PRIORITY: cut to the tenant's later; one that is not a priority is refused
	 * below, once the tenant is known (the interposer sends none but 0-9). */
	s->claim.priority_set = req->priority_set;
	s->claim.want_priority = req->priority_set ? req->priority : 0;
	s->claim.tenant = s->tenant;
	/* The tenant: the certificate's name (or on the Unix socket the user's) as the supervisor
	 * itself finds it, else what a known token names, else default. Plain TCP proves nothing
	 * else: a token is required. The worker's own view must agree. */
	r = credential_name(s, req, named, sizeof(named), why, sizeof(why));
	if (r) {
		snprintf(s->tenant, sizeof(s->tenant), "unknown");
		refuse(s, why);
		return;
	}
	if (strcmp(req->tenant ? req->tenant : "", named) != 0) {
		if (named[0])
			snprintf(why, sizeof(why), "its credentials name \"%s\"", named);
		else
			snprintf(why, sizeof(why), "its session's credentials name no tenant");
		compromised(s, req->tenant ? req->tenant : "", why);
		return;
	}
	snprintf(s->cert_name, sizeof(s->cert_name), "%s", named);
	if (named[0]) {
		snprintf(s->tenant, sizeof(s->tenant), "%s", named);
	} else if (req->token && *req->token) {
		const char *t = gp_config_token_tenant(d->cfg, req->token);

		if (!t) {
			snprintf(s->tenant, sizeof(s->tenant), "unknown");
			refuse(s, "the token is not known to the pool");
			return;
		}
		snprintf(s->tenant, sizeof(s->tenant), "%s", t);
	} else if (s->transport == GP_TRANSPORT_PLAIN) {
		snprintf(s->tenant, sizeof(s->tenant), "unknown");
		refuse(s, "without TLS (listen_plain) a session needs a token the pool knows "
			  "(GPUPOOL_TOKEN)");
		return;
	} else {
		snprintf(s->tenant, sizeof(s->tenant), "default");
	}
	if (d->stopping) {
		refuse(s, "the pool is shutting down");
		return;
	}
	if (req->priority_set && (req->priority < 0 || req->priority > 9)) {
		snprintf(why, sizeof(why), "GPUPOOL_PRIORITY=%d is not a priority (0 to 9)",
			 (int)req->priority);
		s->claim.priority_set = false;
		refuse(s, why);
		return;
	}
	/* GPUPOOL_SLICE, parsed again here: the client's check proves nothing. */
	snprintf(s->slice, sizeof(s->slice), "%s", req->slice ? req->slice : "");
	if (gp_slice_parse(req->slice, &s->claim.slice, why, sizeof(why))) {
		refuse(s, why);
		return;
	}
	r = gp_pool_enqueue(&d->pool, d->cfg, &s->claim, uv_now(d->loop), why, sizeof(why));
	if (r) {
		refuse(s, r == GP_EREFUSED ? why : "the pool could not queue the session");
		return;
	}
	s->state = GP_SESSION_QUEUED;
	gp__admit_pump(d);
	/* A client that has other pools to try (quotes, interposer/discover.c) goes on to the
	 * next rather than wait here. */
	if (req->no_wait && s->claim.state == GP_CLAIM_QUEUED) {
		gp_pool_release(&d->pool, &s->claim);
		refuse(s, "no room for this session now (the client has other pools to try)");
		return;
	}
	/* Let in past max_sessions because others wait (supervisor.c): one waiter, of the
	 * tenant with the most, gives way, or this session does. */
	if (gp__sessions_live(d) > d->cfg->max_sessions) {
		struct gp_claim *c = gp_pool_displace(&d->pool, s->tenant);
		char msg[2 * sizeof(s->tenant) + 128];

		if (c) {
			snprintf(msg, sizeof(msg),
				 "max_sessions reached: tenant %s gave its newest place in the "
				 "queue to tenant %s, which had fewer waiting",
				 session_of(c)->tenant, s->tenant);
			refuse(session_of(c), msg);
		} else if (s->claim.state == GP_CLAIM_QUEUED) {
			gp_pool_release(&d->pool, &s->claim);
			refuse(s, "max_sessions reached, and no tenant has more sessions waiting "
				  "than this one's");
			return;
		}
	}
	if (s->claim.state != GP_CLAIM_QUEUED)
		return;
	if (!gp_pool_may_wait(&d->pool, d->cfg, &s->claim)) {
		gp_pool_release(&d->pool, &s->claim);
		refuse(s, d->cfg->queue_timeout == 0
				  ? "no GPU has room for this session now (queue_timeout 0)"
				  : "no GPU has room for this session now, and its tenant may not "
				    "wait (queue=0)");
		return;
	}
	gp_log_info("session %llu (tenant %s) waits for room: %u GPU(s), %llu bytes each",
		    (unsigned long long)s->id, s->tenant,
		    s->claim.want_gpus ? s->claim.want_gpus : 1,
		    (unsigned long long)s->claim.want_memory);
}

/* The first waiter waits for room that preemptible sessions it may preempt hold (of lower
 * priority, or of borrowing tenants when it is entitled; pool.h): they are told (logged) and
 * ended after preempt_grace (gp__admit_preempt_tick). */
static void preempt(struct gp_daemon *d)
{
	struct gp_claim *v[GP_STATS_MAX_DEVICES * 4], *w;
	unsigned n = gp_pool_preempt(&d->pool, d->cfg, v, sizeof(v) / sizeof(v[0]), &w);

	for (unsigned i = 0; i < n; i++) {
		struct gp_session *s = session_of(v[i]), *ws = session_of(w);
		char because[48];

		if (gp_pool_preempt_by_priority(d->cfg, v[i], w))
			snprintf(because, sizeof(because), "of priority %u (this session's is %u)",
				 gp_pool_priority(d->cfg, w), gp_pool_priority(d->cfg, v[i]));
		else
			snprintf(because, sizeof(because), "within its guarantee");
		s->preempt_noticed = uv_now(d->loop);
		gp__session_preempt_signal(s, GP_PREEMPT_NOTICE); /* its worker tells its client */
		snprintf(
			s->preempt_why, sizeof(s->preempt_why),
			"preempted: the session was preemptible, and its GPU memory or compute was "
			"needed for session %llu of tenant %s, %s",
			(unsigned long long)ws->id, ws->tenant, because);
		gp_log_info("session %llu (tenant %s) is preemptible: it will be ended in %u s "
			    "(preempt_grace) to admit session %llu (tenant %s, %s)",
			    (unsigned long long)s->id, s->tenant, d->cfg->preempt_grace,
			    (unsigned long long)ws->id, ws->tenant, because);
	}
}

void gp__admit_pump(struct gp_daemon *d)
{
	struct gp_claim *c;

	while ((c = gp_pool_admit_next(&d->pool, d->cfg)) != NULL)
		admitted(session_of(c));
	if (!d->stopping)
		preempt(d);
}

uint64_t gp__admit_preempt_deadline(const struct gp_session *s)
{
	if (!s->claim.preempting || !s->preempt_noticed)
		return 0;
	return s->preempt_noticed + (uint64_t)s->d->cfg->preempt_grace * 1000;
}

void gp__admit_preempt_tick(struct gp_daemon *d)
{
	uint64_t now = uv_now(d->loop);
	bool due = false, asked = false;

	for (struct gp_session *s = d->sessions; s; s = s->next) {
		if (!s->claim.preempting || !s->preempt_noticed ||
		    now < gp__admit_preempt_deadline(s) || s->term_at)
			continue;
		if (!asked) {
			due = gp_pool_preempt_due(&d->pool, d->cfg);
			asked = true;
		}
		if (!due)
			break;
		/* Said first: the worker tells its client why before it ends. */
		gp__session_preempt_signal(s, GP_PREEMPT_END);
		gp__session_end(s, "preempted", s->preempt_why);
	}
	if (asked && !due) {
		/* The waiter went or fits now: nobody is ended, the marks are gone. */
		for (struct gp_session *s = d->sessions; s; s = s->next) {
			if (s->preempt_noticed && !s->term_at) {
				gp_log_info(
					"session %llu (tenant %s): no longer preempted, its room "
					"is not needed now",
					(unsigned long long)s->id, s->tenant);
				/* else a later end of another kind would be told as this */
				gp__session_preempt_signal(s, GP_PREEMPT_CANCEL);
			}
			s->preempt_noticed = 0;
		}
		gp__admit_pump(d);
	}
}

void gp__admit_release(struct gp_session *s)
{
	gp_pool_release(&s->d->pool, &s->claim);
	gp__admit_pump(s->d);
}

void gp__admit_expire(struct gp_daemon *d, bool all, const char *why)
{
	uint64_t limit = all ? 0 : (uint64_t)d->cfg->queue_timeout * 1000;
	struct gp_claim *c;
	char msg[256];

	while ((c = gp_pool_expire_next(&d->pool, uv_now(d->loop), limit)) != NULL) {
		if (why)
			snprintf(msg, sizeof(msg), "%s", why);
		else
			snprintf(msg, sizeof(msg),
				 "waited %u s (queue_timeout) for %u GPU(s) with %llu bytes each; "
				 "none came free",
				 d->cfg->queue_timeout, c->want_gpus ? c->want_gpus : 1,
				 (unsigned long long)c->want_memory);
		refuse(session_of(c), msg);
	}
	gp__admit_pump(d);
}
