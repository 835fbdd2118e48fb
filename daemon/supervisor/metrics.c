/* metrics.c -- the pool in Prometheus' text format over HTTP (metrics_listen).
 *
 * Any request on the socket gets one answer, built from the same data as
 * `poolctl status`, and the connection is closed: a scraper needs no more.
 * A peer has 5 s to ask and take the answer, and at most 16 are served at once.
 * Labels carry tenant and program names, so their text is escaped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "acct.h"
#include "escape.h"
#include "log.h"

#define REQUEST_MAX 4096
#define CONN_MAX 16	     /* scrapers at once; more are closed on arrival */
#define CONN_TIMEOUT_MS 5000 /* to send a request and take the answer */

/* Open scrapes, so that a slow or silent peer is cut off and shutdown closes them all. */
struct metrics_conn {
	uv_tcp_t tcp;
	uv_timer_t timer;
	uv_write_t wr;
	struct gp_daemon *d;
	char req[REQUEST_MAX];
	size_t len;
	char *out;
	size_t outlen;
	bool answered, closing;
	int open_handles;
	struct metrics_conn *prev, *next;
};

static struct metrics_conn *conns;
static unsigned nconns;

static void on_closed(uv_handle_t *h)
{
	struct metrics_conn *c = h->data;

	if (--c->open_handles > 0)
		return;
	free(c->out);
	free(c);
}

static void conn_close(struct metrics_conn *c)
{
	if (c->closing)
		return;
	c->closing = true;
	if (c->prev)
		c->prev->next = c->next;
	else
		conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	nconns--;
	uv_close((uv_handle_t *)&c->timer, on_closed);
	uv_close((uv_handle_t *)&c->tcp, on_closed);
}

static void on_timeout(uv_timer_t *t)
{
	conn_close(t->data);
}

/* A label value: backslash, double quote and newline escaped. */
static void label(FILE *f, const char *raw)
{
	char buf[4 * 128 + 1];
	const char *v = buf;

	/* Names are the clients' (see escape.h): no control bytes, always valid UTF-8. */
	gp_escape(buf, sizeof(buf), raw, NULL);
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fprintf(f, "\\%c", *v);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
}

static void help(FILE *f, const char *name, const char *type, const char *text)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, type);
}

/* dcgm-exporter's labels for a GPU: gpu, UUID, modelName, Hostname (and a MIG instance's). */
static void dcgm_labels(FILE *f, const Gp__AdminReply *r, const Gp__GpuStatus *g)
{
	char uuid[48] = "";

	if (g->uuid.len == 16)
		gp_uuid_format(g->uuid.data, uuid);
	if (g->instance && uuid[0])
		memcpy(uuid, "MIG-", 4);
	fprintf(f, "{gpu=\"%u\",UUID=\"%s\",modelName=\"", g->instance ? g->parent : g->index,
		uuid);
	label(f, g->name);
	fputs("\",Hostname=\"", f);
	label(f, r->host ? r->host : "");
	if (g->instance) {
		fputs("\",GPU_I_PROFILE=\"", f);
		label(f, g->profile);
		fprintf(f, "\",GPU_I_ID=\"%u", g->gpu_instance);
	}
	fputs("\"}", f);
}

/*
 * Utilization (util.c), where it is known. A GPU's in dcgm-exporter's names: percent over
 * the last minute as DCGM_FI_DEV_GPU_UTIL, a MIG instance's as the ratio
 * DCGM_FI_PROF_GR_ENGINE_ACTIVE (DCGM has no GPU_UTIL per instance); then ours: each window
 * per GPU, each session's busy seconds and held seconds, each tenant's windows.
 */
static void render_util(FILE *f, const Gp__AdminReply *r)
{
	bool any = false, inst = false;

	for (size_t i = 0; i < r->n_gpu; i++) {
		any |= r->gpu[i]->util_known && !r->gpu[i]->instance && !r->gpu[i]->mig;
		inst |= r->gpu[i]->util_known && r->gpu[i]->instance;
	}
	if (any)
		help(f, "DCGM_FI_DEV_GPU_UTIL", "gauge",
		     "GPU utilization (in %): its sessions' kernel time over the last minute.");
	for (size_t i = 0; any && i < r->n_gpu; i++) {
		const Gp__GpuStatus *g = r->gpu[i];

		if (!g->util_known || g->instance || g->mig)
			continue;
		fputs("DCGM_FI_DEV_GPU_UTIL", f);
		dcgm_labels(f, r, g);
		fprintf(f, " %.0f\n", g->util_1m);
	}
	if (inst)
		help(f, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge",
		     "Ratio of time the MIG instance ran kernels, over the last minute.");
	for (size_t i = 0; inst && i < r->n_gpu; i++) {
		const Gp__GpuStatus *g = r->gpu[i];

		if (!g->util_known || !g->instance)
			continue;
		fputs("DCGM_FI_PROF_GR_ENGINE_ACTIVE", f);
		dcgm_labels(f, r, g);
		fprintf(f, " %.4f\n", g->util_1m / 100.0);
	}
	any |= inst;
	for (size_t i = 0; i < r->n_gpu; i++)
		any |= r->gpu[i]->util_known;
	if (any)
		help(f, "gpupool_gpu_utilization_ratio", "gauge",
		     "Ratio of the window its sessions' kernels ran (capped at 1), by window.");
	for (size_t i = 0; any && i < r->n_gpu; i++) {
		const Gp__GpuStatus *g = r->gpu[i];

		if (!g->util_known)
			continue;
		for (int k = 0; k < 2; k++) {
			fprintf(f, "gpupool_gpu_utilization_ratio{gpu=\"%u\",name=\"", g->index);
			label(f, g->name);
			fprintf(f, "\",window=\"%s\"} %.4f\n", k ? "1h" : "1m",
				(k ? g->util_1h : g->util_1m) / 100.0);
		}
	}
	any = false;
	for (size_t i = 0; i < r->n_session; i++)
		any |= r->session[i]->busy_known;
	if (any)
		help(f, "gpupool_session_gpu_busy_seconds_total", "counter",
		     "Seconds its kernels ran, summed over its GPUs (sessions whose driver "
		     "tells).");
	for (size_t i = 0; i < r->n_session; i++) {
		const Gp__SessionStatus *s = r->session[i];

		if (!s->busy_known)
			continue;
		fprintf(f, "gpupool_session_gpu_busy_seconds_total{session=\"%llu\",tenant=\"",
			(unsigned long long)s->id);
		label(f, s->tenant);
		fputs("\",program=\"", f);
		label(f, s->program);
		fprintf(f, "\"} %.6f\n", s->gpu_busy_seconds);
	}
	help(f, "gpupool_session_compute_held_seconds_total", "counter",
	     "Seconds its launches waited to keep its compute share (compute_enforce time).");
	for (size_t i = 0; i < r->n_session; i++) {
		const Gp__SessionStatus *s = r->session[i];

		fprintf(f, "gpupool_session_compute_held_seconds_total{session=\"%llu\",tenant=\"",
			(unsigned long long)s->id);
		label(f, s->tenant);
		fputs("\",program=\"", f);
		label(f, s->program);
		fprintf(f, "\"} %.6f\n", s->held_seconds);
	}
	if (r->n_tenant_util)
		help(f, "gpupool_tenant_gpu_busy_seconds", "gauge",
		     "Seconds its sessions' kernels ran in the window, on every GPU (a MIG "
		     "instance's weighed by its part of the GPU).");
	for (size_t i = 0; i < r->n_tenant_util; i++)
		for (int k = 0; k < 2; k++) {
			fputs("gpupool_tenant_gpu_busy_seconds{tenant=\"", f);
			label(f, r->tenant_util[i]->tenant);
			fprintf(f, "\",window=\"%s\"} %.6f\n", k ? "1h" : "1m",
				k ? r->tenant_util[i]->busy_1h_seconds
				  : r->tenant_util[i]->busy_1m_seconds);
		}
}

static void render(FILE *f, const Gp__AdminReply *r)
{
	static const struct {
		const char *name, *type, *text;
		int field;
	} gpu_metrics[] = {
		{"gpupool_gpu_memory_total_bytes", "gauge", "Memory of the GPU.", 0},
		{"gpupool_gpu_memory_used_bytes", "gauge", "Memory sessions have allocated.", 1},
		{"gpupool_gpu_memory_reserved_bytes", "gauge", "Memory reserved for sessions.", 2},
		{"gpupool_gpu_sessions", "gauge", "Sessions placed on the GPU.", 3},
		{"gpupool_gpu_draining", "gauge", "1 while the GPU takes no new sessions.", 4},
		{"gpupool_gpu_compute_reserved_percent", "gauge",
		 "Percent of its compute granted to sessions as shares.", 5},
	};
	static const struct {
		const char *name, *type, *text;
		int field;
	} session_metrics[] = {
		{"gpupool_session_memory_used_bytes", "gauge", "Device memory the session holds.",
		 0},
		{"gpupool_session_memory_peak_bytes", "gauge", "Most device memory it held.", 1},
		{"gpupool_session_memory_limit_bytes", "gauge", "Its reservation per GPU.", 2},
		{"gpupool_session_calls_total", "counter", "CUDA calls it made.", 3},
		{"gpupool_session_received_bytes_total", "counter", "Bytes from the client.", 4},
		{"gpupool_session_sent_bytes_total", "counter", "Bytes to the client.", 5},
		{"gpupool_session_compute_percent", "gauge",
		 "Its share of each of its GPUs' compute (0: none, not limited).", 6},
		{"gpupool_session_host_memory_bytes", "gauge",
		 "Host memory its worker uses (its cgroup's, else its resident set).", 7},
		{"gpupool_session_host_memory_limit_bytes", "gauge",
		 "The host memory its worker's cgroup allows (0: none enforced).", 8},
		{"gpupool_session_priority", "gauge",
		 "Its priority, 0-9 (GPUPOOL_PRIORITY cut to its tenant's priority=).", 9},
	};
	unsigned states[5] = {0};
	static const char *const state_names[] = {"handshake", "queued", "active", "closing"};

	help(f, "gpupool_up", "gauge", "1 while the daemon answers.");
	fprintf(f, "gpupool_up 1\n");
	help(f, "gpupool_start_time_seconds", "gauge", "When the daemon started (unix time).");
	fprintf(f, "gpupool_start_time_seconds %lld\n", (long long)r->started);
	help(f, "gpupool_draining", "gauge", "1 while the daemon drains for shutdown.");
	fprintf(f, "gpupool_draining %d\n", r->draining ? 1 : 0);
	/* A GPU in MIG mode is no target: its instances have these series, so that a sum over
	 * GPUs counts each byte once (its whole memory is gpupool_gpu_mig_memory_total_bytes);
	 * only its draining is its own. */
	for (size_t m = 0; m < sizeof(gpu_metrics) / sizeof(gpu_metrics[0]); m++) {
		help(f, gpu_metrics[m].name, gpu_metrics[m].type, gpu_metrics[m].text);
		for (size_t i = 0; i < r->n_gpu; i++) {
			const Gp__GpuStatus *g = r->gpu[i];
			uint64_t v[] = {g->total_mem, g->used_mem, g->reserved_mem,
					g->sessions,  g->draining, g->compute_reserved};

			if (g->mig && gpu_metrics[m].field != 4)
				continue;
			fprintf(f, "%s{gpu=\"%u\",name=\"", gpu_metrics[m].name, g->index);
			label(f, g->name);
			fprintf(f, "\"} %llu\n", (unsigned long long)v[gpu_metrics[m].field]);
		}
	}
	for (size_t i = 0, first = 1; i < r->n_gpu; i++) {
		const Gp__GpuStatus *g = r->gpu[i];

		if (!g->mig)
			continue;
		if (first)
			help(f, "gpupool_gpu_mig_memory_total_bytes", "gauge",
			     "Memory of a GPU in MIG mode (its instances' series have what "
			     "sessions can use).");
		first = 0;
		fprintf(f, "gpupool_gpu_mig_memory_total_bytes{gpu=\"%u\",name=\"", g->index);
		label(f, g->name);
		fprintf(f, "\"} %llu\n", (unsigned long long)g->total_mem);
	}
	/* MIG: which series are instances, of which GPU, with what profile and SMs (the family
	 * only where there are instances: no family goes without samples). */
	for (size_t i = 0, first = 1; i < r->n_gpu; i++) {
		const Gp__GpuStatus *g = r->gpu[i];

		if (!g->instance)
			continue;
		if (first)
			help(f, "gpupool_gpu_mig_instance", "gauge",
			     "1 for a MIG instance (a placement target of its own), labelled with "
			     "its GPU.");
		first = 0;
		fprintf(f, "gpupool_gpu_mig_instance{gpu=\"%u\",parent=\"%u\",profile=\"", g->index,
			g->parent);
		label(f, g->profile);
		fprintf(f, "\",sms=\"%u\"} 1\n", g->sms);
	}
	render_util(f, r);
	for (size_t i = 0; i < r->n_session; i++)
		for (int k = 0; k < 4; k++)
			if (strcmp(r->session[i]->state, state_names[k]) == 0)
				states[k]++;
	help(f, "gpupool_sessions", "gauge", "Sessions by state.");
	for (int k = 0; k < 4; k++)
		fprintf(f, "gpupool_sessions{state=\"%s\"} %u\n", state_names[k], states[k]);
	for (size_t m = 0; m < sizeof(session_metrics) / sizeof(session_metrics[0]); m++) {
		help(f, session_metrics[m].name, session_metrics[m].type, session_metrics[m].text);
		for (size_t i = 0; i < r->n_session; i++) {
			const Gp__SessionStatus *s = r->session[i];
			uint64_t v[] = {s->mem_used, s->mem_peak,    s->mem_limit,
					s->calls,    s->bytes_in,    s->bytes_out,
					s->compute,  s->host_memory, s->host_memory_limit,
					s->priority};

			fprintf(f, "%s{session=\"%llu\",tenant=\"", session_metrics[m].name,
				(unsigned long long)s->id);
			label(f, s->tenant);
			fputs("\",program=\"", f);
			label(f, s->program);
			fprintf(f, "\"} %llu\n", (unsigned long long)v[session_metrics[m].field]);
		}
	}
}

static void on_written(uv_write_t *w, int status)
{
	conn_close(w->data);
}

static void answer(struct metrics_conn *c)
{
	Gp__AdminReply rep = GP__ADMIN_REPLY__INIT;
	char *body = NULL;
	size_t bodylen = 0;
	FILE *f;
	uv_buf_t buf;

	c->answered = true;
	f = open_memstream(&body, &bodylen);
	if (!f || gp__status_build(c->d, &rep)) {
		if (f)
			fclose(f);
		free(body);
		conn_close(c);
		return;
	}
	render(f, &rep);
	fclose(f);
	gp__status_free(&rep);
	f = open_memstream(&c->out, &c->outlen);
	if (!f) {
		free(body);
		conn_close(c);
		return;
	}
	fprintf(f,
		"HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
		"Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
		bodylen, body);
	fclose(f);
	free(body);
	buf = uv_buf_init(c->out, (unsigned)c->outlen);
	c->wr.data = c;
	if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, &buf, 1, on_written))
		conn_close(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct metrics_conn *c = h->data;

	*buf = uv_buf_init(c->req + c->len, (unsigned)(sizeof(c->req) - 1 - c->len));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct metrics_conn *c = s->data;

	if (n < 0) {
		conn_close(c);
		return;
	}
	c->len += (size_t)n;
	c->req[c->len] = '\0';
	if (c->answered)
		return;
	/* The end of the request head, or as much as we read of one. */
	if (strstr(c->req, "\r\n\r\n") || strstr(c->req, "\n\n") || c->len == sizeof(c->req) - 1) {
		uv_read_stop(s);
		answer(c);
	}
}

static void on_connection(uv_stream_t *server, int status)
{
	struct gp_daemon *d = server->data;
	struct metrics_conn *c;

	if (status < 0)
		return;
	c = calloc(1, sizeof(*c));
	if (!c)
		return;
	c->d = d;
	uv_tcp_init(d->loop, &c->tcp);
	uv_timer_init(d->loop, &c->timer);
	c->tcp.data = c->timer.data = c;
	c->open_handles = 2;
	c->next = conns;
	if (conns)
		conns->prev = c;
	conns = c;
	nconns++;
	if (uv_accept(server, (uv_stream_t *)&c->tcp) || nconns > CONN_MAX) {
		conn_close(c);
		return;
	}
	uv_timer_start(&c->timer, on_timeout, CONN_TIMEOUT_MS, 0);
	uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

int gp__metrics_listen(struct gp_daemon *d)
{
	char bound[128];
	int r;

	if (!d->cfg->metrics_listen)
		return 0;
	r = gp__tcp_listen(d, &d->metrics, d->cfg->metrics_listen, on_connection, bound,
			   sizeof(bound));
	if (r)
		return r;
	d->metrics_open = true;
	gp_log_info("metrics on http://%s/metrics", bound);
	return 0;
}

void gp__metrics_close(struct gp_daemon *d)
{
	if (!d->metrics_open)
		return;
	uv_close((uv_handle_t *)&d->metrics, NULL);
	d->metrics_open = false;
	while (conns)
		conn_close(conns);
}
