/* accounting.c -- one record per ended session in the accounting file, and its sums.
 *
 * DESIGN: the loop thread formats a session's record (src/acct.c) and queues it; the
 * writer thread, ours alone, appends it with one write(), fsyncs the file, and hands the
 * job back through a uv_async. Only then does the supervisor free the session
 * (gp__session_accounted), so a record is on disk before the daemon forgets the session
 * it describes, and a daemon crash loses no record of a session that had ended. The
 * fsync is off the loop thread because a slow disk may hold it for a long time; the loop
 * meanwhile keeps serving, and sessions whose records wait cost only their small struct.
 *
 * The writer owns the descriptor and the rotation: past accounting_max_bytes it renames
 * PATH.N-1 to PATH.N ... PATH to PATH.1 (the oldest beyond accounting_keep goes), fsyncs
 * the directory and starts PATH anew. A write that fails is logged with the record
 * itself, so the journal keeps what the file could not; the daemon carries on and the
 * next record opens the file again.
 *
 * `poolctl usage` reads the files on libuv's threadpool (uv_queue_work), never on the
 * loop: under the `files` lock it opens PATH.N .. PATH.1, PATH and notes their sizes
 * (no write is half done while that lock is held, and the writer renames only under
 * it), then reads each up to that size unlocked. Lines that are not records (a torn last
 * line after a crash) are counted and skipped.
 *
 * Locks: acct.lock guards the queue, the done list, `stop` and the settings; acct.files
 * is taken by the writer around a write or a rotation, and by a query while it opens the
 * files; the two are never held together. The loop thread takes only acct.lock, briefly.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "error.h"
#include "log.h"

struct gp_acct_job {
	struct gp_acct_job *next;
	struct gp_session *s;
	uint64_t session;
	size_t len;
	char line[];
};

/* The writer's own state: only its thread touches these after gp__acct_start. */
static struct {
	int fd;
	char *path; /* the file fd is, as opened */
	uint64_t size;
	dev_t dev;
	ino_t ino;
} w = {.fd = -1};

/* ---- the writer thread ------------------------------------------------------------- */

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static void close_file(void)
{
	if (w.fd >= 0)
		close(w.fd);
	w.fd = -1;
	free(w.path);
	w.path = NULL;
}

/* Opens path for appending. A last line without its newline (the daemon died while
 * writing it) is ended first, so the next record starts a line of its own. */
static int open_file(const char *path)
{
	struct stat st;
	char last;
	int r;

	close_file();
	w.fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (w.fd < 0)
		return -errno;
	if (fstat(w.fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		r = S_ISREG(st.st_mode) ? -errno : -EINVAL;
		close_file();
		return r;
	}
	w.size = (uint64_t)st.st_size;
	w.dev = st.st_dev;
	w.ino = st.st_ino;
	w.path = strdup(path);
	if (!w.path) {
		close_file();
		return -ENOMEM;
	}
	if (w.size > 0) {
		int rfd = open(path, O_RDONLY | O_CLOEXEC);

		if (rfd >= 0 && pread(rfd, &last, 1, (off_t)w.size - 1) == 1 && last != '\n' &&
		    write_all(w.fd, "\n", 1) == 0) {
			gp_log_warnx(
				"accounting: %s ended in the middle of a line (a crash while "
				"writing?); that line is left as it is and skipped when summed",
				path);
			w.size++;
		}
		if (rfd >= 0)
			close(rfd);
	}
	return 0;
}

/* The file at path is still the one open: not renamed or removed by someone else. */
static bool still_there(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && st.st_dev == w.dev && st.st_ino == w.ino;
}

static void rotated_name(char *out, size_t len, const char *path, unsigned n)
{
	if (n == 0)
		snprintf(out, len, "%s", path);
	else
		snprintf(out, len, "%s.%u", path, n);
}

static int rotate(const char *path, unsigned keep)
{
	char from[4096 + 16], to[4096 + 16], dir[4096 + 16];
	int dfd;

	for (unsigned i = keep; i >= 1; i--) {
		rotated_name(from, sizeof(from), path, i - 1);
		rotated_name(to, sizeof(to), path, i);
		if (rename(from, to) < 0 && errno != ENOENT)
			return -errno;
	}
	/* The renames last only once the directory is on disk too. */
	snprintf(dir, sizeof(dir), "%s", path);
	dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	gp_log_info("accounting: %s reached %llu bytes; rotated (keeping %u older files)", path,
		    (unsigned long long)w.size, keep);
	return open_file(path);
}

/* Writes one record; the settings are the writer's copy of the moment. */
static int write_record(struct gp_acct *a, const struct gp_acct_job *j, const char *path,
			uint64_t max, unsigned keep, const char **what)
{
	int r = 0;

	pthread_mutex_lock(&a->files);
	*what = "open";
	if (w.fd < 0 || !w.path || strcmp(w.path, path) != 0 || !still_there(path))
		r = open_file(path);
	if (!r && max && w.size > 0 && w.size + j->len > max) {
		*what = "rotate";
		r = rotate(path, keep);
	}
	if (!r) {
		*what = "write";
		r = write_all(w.fd, j->line, j->len);
		if (!r)
			w.size += j->len;
	}
	pthread_mutex_unlock(&a->files);
	if (!r) {
		*what = "fsync";
		if (fsync(w.fd) < 0)
			r = -errno;
	}
	if (r)
		close_file(); /* the next record starts afresh */
	return r;
}

/* The journal keeps a record the file could not: the log line is cut at 1 KiB, so in
 * parts. (The log escapes each backslash as \x5c.) */
static void log_lost(const struct gp_acct_job *j)
{
	const size_t part = 800;
	size_t n = j->len ? j->len - 1 : 0, parts = (n + part - 1) / part;

	for (size_t i = 0; i < parts; i++)
		gp_log_error("accounting: record of session %llu, part %zu/%zu: %.*s",
			     (unsigned long long)j->session, i + 1, parts,
			     (int)(n - i * part < part ? n - i * part : part), j->line + i * part);
}

static void *writer(void *arg)
{
	struct gp_acct *a = arg;
	char *path = NULL;

	for (;;) {
		struct gp_acct_job *j;
		uint64_t max;
		unsigned keep;
		const char *what = "";
		int r;

		pthread_mutex_lock(&a->lock);
		while (!a->queue && !a->stop)
			pthread_cond_wait(&a->cv, &a->lock);
		if (!a->queue) {
			pthread_mutex_unlock(&a->lock);
			break;
		}
		j = a->queue;
		a->queue = j->next;
		if (!a->queue)
			a->qtail = &a->queue;
		free(path);
		path = a->path ? strdup(a->path) : NULL;
		max = a->max_bytes;
		keep = a->keep;
		pthread_mutex_unlock(&a->lock);

		if (!path) {
			gp_log_error("accounting: accounting_file was turned off by a reload; the "
				     "record of session %llu is kept in this log instead",
				     (unsigned long long)j->session);
			log_lost(j);
		} else if ((r = write_record(a, j, path, max, keep, &what)) != 0) {
			gp_log_error("accounting: cannot %s %s for the record of session %llu: %s; "
				     "the record is kept in this log instead",
				     what, path ? path : "the accounting file",
				     (unsigned long long)j->session, strerror(-r));
			log_lost(j);
		}
		pthread_mutex_lock(&a->lock);
		j->next = a->done;
		a->done = j;
		pthread_mutex_unlock(&a->lock);
		uv_async_send(&a->async);
	}
	free(path);
	close_file();
	return NULL;
}

/* ---- the loop thread's side -------------------------------------------------------- */

static void on_written(uv_async_t *h)
{
	struct gp_acct *a = h->data;
	struct gp_acct_job *j, *next;

	pthread_mutex_lock(&a->lock);
	j = a->done;
	a->done = NULL;
	pthread_mutex_unlock(&a->lock);
	for (; j; j = next) {
		struct gp_session *s = j->s;

		next = j->next;
		free(j);
		s->acct_pending = false;
		gp__session_accounted(s);
	}
}

static int set_settings(struct gp_acct *a, const struct gp_config *cfg)
{
	char *path = cfg->accounting_file ? strdup(cfg->accounting_file) : NULL;

	if (cfg->accounting_file && !path)
		return -ENOMEM;
	pthread_mutex_lock(&a->lock);
	free(a->path);
	a->path = path;
	a->max_bytes = cfg->accounting_max_bytes;
	a->keep = cfg->accounting_keep;
	pthread_mutex_unlock(&a->lock);
	return 0;
}

int gp__acct_start(struct gp_daemon *d)
{
	struct gp_acct *a = &d->acct;
	int r;

	pthread_mutex_init(&a->lock, NULL);
	pthread_mutex_init(&a->files, NULL);
	pthread_cond_init(&a->cv, NULL);
	a->qtail = &a->queue;
	if (set_settings(a, d->cfg))
		return -ENOMEM;
	/* At start a file that cannot be opened is the operator's to fix before anything runs;
	 * the writer thread is not running yet, so its state is ours here. */
	if (a->path) {
		r = open_file(a->path);
		if (r) {
			gp_log_error("accounting_file %s: %s", a->path, strerror(-r));
			return r;
		}
		gp_log_info("accounting: one record per session in %s", a->path);
	}
	r = uv_async_init(d->loop, &a->async, on_written);
	if (r) {
		gp_log_error("accounting: %s", uv_strerror(r));
		return r;
	}
	a->async.data = a;
	a->async_open = true;
	r = pthread_create(&a->thread, NULL, writer, a);
	if (r) {
		gp_log_error("accounting: cannot start the writer thread: %s", strerror(r));
		return -r;
	}
	a->running = true;
	return 0;
}

void gp__acct_configure(struct gp_daemon *d)
{
	if (set_settings(&d->acct, d->cfg))
		gp_log_error("accounting: out of memory; the accounting settings are unchanged");
}

static bool submit(struct gp_session *s, const struct gp_acct_record *r)
{
	struct gp_acct *a = &s->d->acct;
	struct gp_acct_job *j;
	char line[GP_ACCT_LINE_MAX];
	bool on;
	int n;

	pthread_mutex_lock(&a->lock);
	on = a->path != NULL;
	pthread_mutex_unlock(&a->lock);
	if (!on || !a->running)
		return false;
	n = gp_acct_format(r, line, sizeof(line));
	j = n > 0 ? malloc(sizeof(*j) + (size_t)n) : NULL;
	if (!j) {
		gp_log_error("accounting: session %llu: %s; no record written",
			     (unsigned long long)s->id,
			     n > 0 ? "out of memory" : "record too long");
		return false;
	}
	j->next = NULL;
	j->s = s;
	j->session = s->id;
	j->len = (size_t)n;
	memcpy(j->line, line, (size_t)n);
	pthread_mutex_lock(&a->lock);
	*a->qtail = j;
	a->qtail = &j->next;
	pthread_cond_signal(&a->cv);
	pthread_mutex_unlock(&a->lock);
	s->acct_pending = true;
	return true;
}

int64_t gp__wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void gp__acct_session_ended(struct gp_session *s, int64_t status, int sig)
{
	struct gp_daemon *d = s->d;
	struct gp_stats *st = s->stats;
	struct gp_acct_record *r;

	gp__util_session_end(s);
	if (!s->admitted_ms || !st)
		return; /* refused or never asked: it held nothing */
	r = calloc(1, sizeof(*r));
	if (!r) {
		gp_log_error("accounting: session %llu: out of memory; no record written",
			     (unsigned long long)s->id);
		return;
	}
	r->session = s->id;
	snprintf(r->pool_host, sizeof(r->pool_host), "%s", d->hostname);
	snprintf(r->tenant, sizeof(r->tenant), "%s", s->tenant);
	snprintf(r->client_cert, sizeof(r->client_cert), "%s", s->cert_name);
	snprintf(r->client_addr, sizeof(r->client_addr), "%s", s->client_addr);
	snprintf(r->client_host, sizeof(r->client_host), "%s", s->client_host);
	r->client_pid = s->client_pid;
	snprintf(r->program, sizeof(r->program), "%s", s->program);
	r->start_ms = s->started_ms;
	r->admitted_ms = s->admitted_ms;
	r->end_ms = gp__wall_ms();
	r->held_s = (double)(uv_now(d->loop) - s->admitted_at) / 1000.0;
	/* The claim still holds its GPUs: the caller releases it after this. */
	r->ngpus = s->claim.ndev;
	for (uint32_t i = 0; i < s->claim.ndev && i < GP_STATS_MAX_DEVICES; i++) {
		r->gpu[i] = s->claim.dev[i];
		for (uint32_t g = 0; g < d->pool.ngpus; g++)
			if (d->pool.gpu[g].index == s->claim.dev[i]) {
				gp_uuid_format(d->gpus[g].uuid, r->gpu_uuid[i]);
				if (d->pool.gpu[g].instance) /* a MIG instance's own */
					memcpy(r->gpu_uuid[i], "MIG-", 4);
			}
	}
	r->mem_limit = s->claim.mem_limit;
	r->gpu_seconds = r->ngpus * r->held_s;
	/* Measured by its worker (daemon/worker/busy.c), or not: docs/operations.md, "Metering". */
	r->busy_known =
		atomic_load_explicit(&st->busy_known, memory_order_relaxed) == GP_BUSY_KNOWN;
	for (uint32_t i = 0; r->busy_known && i < s->claim.ndev && i < GP_STATS_MAX_DEVICES; i++)
		r->gpu_busy_seconds +=
			(double)atomic_load_explicit(&st->dev_busy_ns[i], memory_order_relaxed) /
			1e9;
	r->mem_gib_seconds = (double)r->mem_limit * r->ngpus / (1024.0 * 1024 * 1024) * r->held_s;
	r->mem_peak = atomic_load_explicit(&st->mem_peak, memory_order_relaxed);
	r->bytes_in = atomic_load_explicit(&st->bytes_in, memory_order_relaxed);
	r->bytes_out = atomic_load_explicit(&st->bytes_out, memory_order_relaxed);
	r->calls = atomic_load_explicit(&st->calls, memory_order_relaxed);
	snprintf(r->ended, sizeof(r->ended), "%s",
		 gp_acct_ended(s->end_code, sig, status,
			       atomic_load_explicit(&st->ended, memory_order_relaxed), r->detail,
			       sizeof(r->detail)));
	if (!submit(s, r))
		gp_log_debug("session %llu: no accounting record (no accounting_file)",
			     (unsigned long long)s->id);
	free(r);
}

void gp__acct_stop(struct gp_daemon *d)
{
	struct gp_acct *a = &d->acct;

	if (a->running) {
		pthread_mutex_lock(&a->lock);
		a->stop = true;
		pthread_cond_signal(&a->cv);
		pthread_mutex_unlock(&a->lock);
		/* Sessions wait for their records before they are freed, and this runs once
		 * none is left: the queue is empty and the join is immediate. */
		pthread_join(a->thread, NULL);
		a->running = false;
	}
	if (a->async_open) {
		uv_close((uv_handle_t *)&a->async, NULL);
		a->async_open = false;
	}
	pthread_mutex_lock(&a->lock);
	free(a->path);
	a->path = NULL;
	pthread_mutex_unlock(&a->lock);
}

/* ---- usage: the sums, read on the threadpool ---------------------------------------- */

struct usage_file {
	int fd;
	off_t size;
	char *name;
};

struct usage {
	uv_work_t req;
	struct gp_daemon *d;
	struct gp_acct *a;
	char *path;
	struct gp_acct_tally t;
	struct usage_file files[GP_ACCT_KEEP_MAX + 1]; /* oldest first */
	unsigned nfiles;
	int err;
	char msg[4096 + 128]; /* a file's name and why */
	gp_acct_usage_cb cb;
	void *arg;
};

/* Opens PATH.N .. PATH.1, PATH under the files lock, so no record moves between them. */
static int open_all(struct usage *u)
{
	char name[4096 + 16];
	unsigned n = 0;
	int r = 0;

	pthread_mutex_lock(&u->a->files);
	/* How many rotated files there are: PATH.1 up to the first that is missing. */
	while (n < GP_ACCT_KEEP_MAX) {
		rotated_name(name, sizeof(name), u->path, n + 1);
		if (access(name, F_OK) != 0)
			break;
		n++;
	}
	for (unsigned i = n + 1; i-- > 0 && !r;) {
		struct usage_file *f = &u->files[u->nfiles];
		struct stat st;

		rotated_name(name, sizeof(name), u->path, i);
		f->fd = open(name, O_RDONLY | O_CLOEXEC);
		if (f->fd < 0) {
			if (errno == ENOENT)
				continue; /* PATH itself, before the first record */
			r = -errno;
			snprintf(u->msg, sizeof(u->msg), "%s: %s", name, strerror(errno));
			break;
		}
		if (fstat(f->fd, &st) < 0 || !(f->name = strdup(name))) {
			r = -ENOMEM;
			close(f->fd);
			snprintf(u->msg, sizeof(u->msg), "%s: %s", name, strerror(ENOMEM));
			break;
		}
		f->size = st.st_size;
		u->nfiles++;
	}
	pthread_mutex_unlock(&u->a->files);
	return r;
}

/* Tallies the records of one file, up to the size it had when opened, a buffer at a time.
 * Lines past GP_ACCT_LINE_MAX are not kept whole: counted as skipped, and discarded up to
 * their newline. */
static int read_file(struct usage *u, struct usage_file *f)
{
	static const size_t cap = 4 * GP_ACCT_LINE_MAX;
	char *buf = malloc(cap);
	size_t pos = 0, have = 0; /* the unread bytes are buf[pos, have) */
	off_t left = f->size;
	bool too_long = false; /* in a line already counted as skipped */
	int r = 0;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		char *line = buf + pos, *nl = memchr(line, '\n', have - pos);
		size_t n, want;
		ssize_t k;

		if (!nl && left > 0) {
			if (have - pos > GP_ACCT_LINE_MAX) {
				if (!too_long)
					u->t.skipped++;
				too_long = true;
				pos = have;
			}
			/* Keep the start of the line, and read on behind it. */
			memmove(buf, buf + pos, have - pos);
			have -= pos;
			pos = 0;
			want = cap - have < (size_t)left ? cap - have : (size_t)left;
			k = read(f->fd, buf + have, want);
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0) {
				r = -errno;
				snprintf(u->msg, sizeof(u->msg), "%s: %s", f->name,
					 strerror(errno));
				break;
			}
			if (k == 0)
				left = 0; /* it shrank: what was read is all */
			have += (size_t)k;
			left -= k;
			continue;
		}
		if (!nl && pos == have)
			break;
		/* A whole line, or the last one without its newline (torn: it is skipped). */
		n = nl ? (size_t)(nl - line) : have - pos;
		if (!too_long && n > GP_ACCT_LINE_MAX)
			u->t.skipped++;
		else if (!too_long && n > 0)
			r = gp_acct_tally_line(&u->t, line, n);
		too_long = false;
		pos += n + (nl ? 1 : 0);
		if (r)
			break;
	}
	free(buf);
	if (r == -ENOSPC)
		snprintf(u->msg, sizeof(u->msg),
			 "more than %d groups in the range; ask for a shorter one",
			 GP_ACCT_MAX_ROWS);
	else if (r == -ENOMEM)
		snprintf(u->msg, sizeof(u->msg), "out of memory");
	return r;
}

static void usage_run(uv_work_t *req)
{
	struct usage *u = req->data;

	u->err = open_all(u);
	for (unsigned i = 0; i < u->nfiles && !u->err; i++)
		u->err = read_file(u, &u->files[i]);
	if (!u->err)
		gp_acct_tally_sort(&u->t);
}

static void usage_done(uv_work_t *req, int status)
{
	struct usage *u = req->data;
	Gp__AdminReply rep = GP__ADMIN_REPLY__INIT;
	Gp__UsageReport report = GP__USAGE_REPORT__INIT;
	Gp__UsageRow *rows = NULL, **rowp = NULL;
	char *names[GP_ACCT_KEEP_MAX + 1];

	if (status && !u->err) {
		u->err = status;
		snprintf(u->msg, sizeof(u->msg), "the query was cancelled");
	}
	if (!u->err && u->t.nrows) {
		rows = calloc(u->t.nrows, sizeof(*rows));
		rowp = calloc(u->t.nrows, sizeof(*rowp));
		if (!rows || !rowp) {
			u->err = -ENOMEM;
			snprintf(u->msg, sizeof(u->msg), "out of memory");
		}
	}
	if (u->err) {
		rep.status = u->err;
		rep.message = u->msg;
	} else {
		for (size_t i = 0; i < u->t.nrows; i++) {
			const struct gp_acct_row *x = &u->t.rows[i];

			gp__usage_row__init(&rows[i]);
			rows[i].key = (char *)x->key;
			rows[i].sessions = x->sessions;
			rows[i].gpu_seconds = x->gpu_seconds;
			rows[i].busy_sessions = x->busy_sessions;
			rows[i].gpu_busy_seconds = x->gpu_busy_seconds;
			rows[i].mem_gib_seconds = x->mem_gib_seconds;
			rows[i].mem_peak = x->mem_peak;
			rows[i].bytes_in = x->bytes_in;
			rows[i].bytes_out = x->bytes_out;
			rows[i].calls = x->calls;
			rowp[i] = &rows[i];
		}
		for (unsigned i = 0; i < u->nfiles; i++)
			names[i] = u->files[i].name;
		report.pool_host = u->d->hostname;
		report.by = (char *)gp_acct_by_name(u->t.by);
		report.since = u->t.since_ms;
		report.until = u->t.until_ms == INT64_MAX ? 0 : u->t.until_ms;
		report.n_row = u->t.nrows;
		report.row = rowp;
		report.records = u->t.records;
		report.skipped = u->t.skipped;
		report.n_file = u->nfiles;
		report.file = names;
		rep.usage = &report;
		gp_log_debug("usage: %llu records in %u files, %llu lines skipped",
			     (unsigned long long)u->t.records, u->nfiles,
			     (unsigned long long)u->t.skipped);
	}
	u->cb(u->arg, &rep);
	free(rows);
	free(rowp);
	for (unsigned i = 0; i < u->nfiles; i++) {
		close(u->files[i].fd);
		free(u->files[i].name);
	}
	gp_acct_tally_deinit(&u->t);
	free(u->path);
	free(u);
}

/* Answers at once, on the loop thread: the query cannot be run. */
static void usage_refuse(gp_acct_usage_cb cb, void *arg, int status, const char *msg)
{
	Gp__AdminReply rep = GP__ADMIN_REPLY__INIT;

	rep.status = status;
	rep.message = (char *)msg;
	cb(arg, &rep);
}

void gp__acct_usage(struct gp_daemon *d, const Gp__UsageQuery *q, gp_acct_usage_cb cb, void *arg)
{
	struct gp_acct *a = &d->acct;
	enum gp_acct_by by;
	struct usage *u;
	int r;

	if (!q || q->since < 0 || q->until < 0) {
		usage_refuse(cb, arg, GP_ETYPE,
			     "usage: a query needs since (and until) in unix ms");
		return;
	}
	if (gp_acct_by_parse(q->by && *q->by ? q->by : "tenant", &by)) {
		usage_refuse(cb, arg, GP_ETYPE, "usage: by must be tenant, host or day");
		return;
	}
	if (!d->cfg->accounting_file) {
		usage_refuse(cb, arg, -ENOENT,
			     "no accounting_file is configured: this daemon keeps no records");
		return;
	}
	u = calloc(1, sizeof(*u));
	if (u)
		u->path = strdup(d->cfg->accounting_file);
	if (!u || !u->path) {
		free(u);
		usage_refuse(cb, arg, -ENOMEM, "out of memory");
		return;
	}
	u->d = d;
	u->a = a;
	u->cb = cb;
	u->arg = arg;
	gp_acct_tally_init(&u->t, by, q->since, q->until ? q->until : INT64_MAX);
	u->req.data = u;
	r = uv_queue_work(d->loop, &u->req, usage_run, usage_done);
	if (r) {
		free(u->path);
		free(u);
		usage_refuse(cb, arg, r, uv_strerror(r));
	}
}
