/* printf.c -- device-side printf (vprintf) and assert (__assertfail). */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "softgpu.h"

/*
 * DESIGN: blocks of one launch run on several host threads and may print at
 * once. Each printf is formatted into a private buffer and appended whole, in
 * one locked step, to the launch's output; the launch's output is written to
 * the process's stdout when the launch completes (a GPU prints at the next
 * synchronization), so lines never interleave. Assertion messages go to
 * stderr the same way.
 */

struct sg_pout {
	pthread_mutex_t lock;
	char *out;
	size_t out_len, out_cap;
	char *err;
	size_t err_len, err_cap;
	size_t limit;
};

struct sg_pout *sg_pout_new(size_t limit)
{
	struct sg_pout *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return NULL;
	pthread_mutex_init(&p->lock, NULL);
	p->limit = limit;
	return p;
}

static void append(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t nc = *cap ? *cap * 2 : 4096;
		char *nb;

		while (nc < *len + n + 1)
			nc *= 2;
		nb = realloc(*buf, nc);
		if (nb == NULL)
			return;
		*buf = nb;
		*cap = nc;
	}
	memcpy(*buf + *len, s, n);
	*len += n;
}

static void pout_add(struct sg_pout *p, bool err, const char *s, size_t n)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&p->lock);
	if (err)
		append(&p->err, &p->err_len, &p->err_cap, s, n);
	else if (p->out_len + n <= p->limit) /* a full FIFO drops output, as on a GPU */
		append(&p->out, &p->out_len, &p->out_cap, s, n);
	pthread_mutex_unlock(&p->lock);
}

void sg_pout_flush(struct sg_pout *p)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&p->lock);
	if (p->out_len) {
		fwrite(p->out, 1, p->out_len, stdout);
		fflush(stdout);
		p->out_len = 0;
	}
	if (p->err_len) {
		fwrite(p->err, 1, p->err_len, stderr);
		fflush(stderr);
		p->err_len = 0;
	}
	pthread_mutex_unlock(&p->lock);
}

void sg_pout_free(struct sg_pout *p)
{
	if (p == NULL)
		return;
	pthread_mutex_destroy(&p->lock);
	free(p->out);
	free(p->err);
	free(p);
}

/* A growable string for one printf call. */
struct line {
	char *s;
	size_t len, cap;
};

static void line_add(struct line *l, const char *s, size_t n)
{
	append(&l->s, &l->len, &l->cap, s, n);
}

/* The format is rebuilt from the device's, one conversion at a time. */
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static void line_fmt(struct line *l, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		line_add(l, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* Reads a NUL-terminated device string (at most max bytes); NULL after a fault. */
static int read_str(struct sg_thread *t, uint64_t addr, struct line *out, size_t max)
{
	for (size_t i = 0; i < max; i++) {
		const char *c = sg_addr(t, SG_SP_GENERIC, addr + i, 1, false);

		if (c == NULL)
			return -1;
		if (*c == 0)
			return 0;
		line_add(out, c, 1);
	}
	return 0;
}

static int read_arg(struct sg_thread *t, uint64_t args, size_t *off, unsigned size, uint64_t *v)
{
	const uint8_t *p;

	*off = (*off + size - 1) / size * size;
	p = sg_addr(t, SG_SP_GENERIC, args + *off, size, false);
	if (p == NULL)
		return -1;
	*v = 0;
	memcpy(v, p, size);
	*off += size;
	return 0;
}

int sg_builtin_vprintf(struct sg_thread *t, uint64_t fmt, uint64_t args, int32_t *ret)
{
	struct line f = {0}, out = {0};
	size_t off = 0;
	int nargs = 0, rc = 0;

	if (fmt == 0) {
		*ret = -1;
		return 0;
	}
	if (read_str(t, fmt, &f, 1 << 16)) {
		rc = -1;
		goto out;
	}
	line_add(&f, "", 1);
	for (const char *p = f.s; *p; p++) {
		char spec[32];
		size_t k = 0;
		int lng = 0;
		uint64_t v;

		if (*p != '%') {
			line_add(&out, p, 1);
			continue;
		}
		if (p[1] == '%') {
			line_add(&out, "%", 1);
			p++;
			continue;
		}
		spec[k++] = '%';
		p++;
		while (*p && strchr("-+ #0", *p) && k < 20)
			spec[k++] = *p++;
		while (*p >= '0' && *p <= '9' && k < 20)
			spec[k++] = *p++;
		if (*p == '.') {
			spec[k++] = *p++;
			while (*p >= '0' && *p <= '9' && k < 24)
				spec[k++] = *p++;
		}
		while (*p && strchr("hlLzjt", *p)) {
			if (*p == 'l' || *p == 'z' || *p == 'j' || *p == 't' || *p == 'L')
				lng++;
			p++;
		}
		if (*p == 0)
			break;
		nargs++;
		switch (*p) {
		case 'd':
		case 'i':
			if (read_arg(t, args, &off, lng ? 8 : 4, &v))
				goto fault;
			memcpy(spec + k, "lld", 4);
			line_fmt(&out, spec, lng ? (long long)v : (long long)(int32_t)v);
			break;
		case 'u':
		case 'o':
		case 'x':
		case 'X':
			if (read_arg(t, args, &off, lng ? 8 : 4, &v))
				goto fault;
			spec[k++] = 'l';
			spec[k++] = 'l';
			spec[k++] = *p;
			spec[k] = 0;
			line_fmt(&out, spec, (unsigned long long)(lng ? v : (uint32_t)v));
			break;
		case 'c':
			if (read_arg(t, args, &off, 4, &v))
				goto fault;
			spec[k++] = 'c';
			spec[k] = 0;
			line_fmt(&out, spec, (int)(uint8_t)v);
			break;
		case 'p':
			if (read_arg(t, args, &off, 8, &v))
				goto fault;
			line_fmt(&out, "0x%llx", (unsigned long long)v);
			break;
		case 's': {
			struct line s = {0};

			if (read_arg(t, args, &off, 8, &v))
				goto fault;
			if (v == 0) {
				line_add(&s, "(null)", 6);
			} else if (read_str(t, v, &s, 1 << 16)) {
				free(s.s);
				goto fault;
			}
			line_add(&s, "", 1);
			spec[k++] = 's';
			spec[k] = 0;
			line_fmt(&out, spec, s.s ? s.s : "");
			free(s.s);
			break;
		}
		case 'f':
		case 'F':
		case 'e':
		case 'E':
		case 'g':
		case 'G':
		case 'a':
		case 'A': {
			double d;

			if (read_arg(t, args, &off, 8, &v))
				goto fault;
			memcpy(&d, &v, 8);
			spec[k++] = *p;
			spec[k] = 0;
			line_fmt(&out, spec, d);
			break;
		}
		default:
			/* unknown conversion: printed as written, like the GPU's formatter */
			line_add(&out, spec, k);
			line_add(&out, p, 1);
			nargs--;
			break;
		}
	}
	pout_add(t->blk->grid->out, false, out.s ? out.s : "", out.len);
	*ret = nargs;
	goto out;
fault:
	rc = -1;
out:
	free(f.s);
	free(out.s);
	return rc;
}

int sg_builtin_assertfail(struct sg_thread *t, uint64_t msg, uint64_t file, uint32_t line,
			  uint64_t func)
{
	struct line m = {0}, f = {0}, fn = {0}, out = {0};
	const struct sg_block *b = t->blk;

	if (read_str(t, msg, &m, 4096) || read_str(t, file, &f, 4096) ||
	    read_str(t, func, &fn, 4096)) {
		free(m.s);
		free(f.s);
		free(fn.s);
		return SG_STOP_FAULT;
	}
	line_add(&m, "", 1);
	line_add(&f, "", 1);
	line_add(&fn, "", 1);
	line_fmt(&out, "%s:%u: %s: block: [%u,%u,%u], thread: [%u,%u,%u] Assertion `%s` failed.\n",
		 f.s, line, fn.s, b->ctaid[0], b->ctaid[1], b->ctaid[2], t->tid[0], t->tid[1],
		 t->tid[2], m.s);
	pout_add(b->grid->out, true, out.s, out.len);
	free(m.s);
	free(f.s);
	free(fn.s);
	free(out.s);
	return sg_fault(t, CUDA_ERROR_ASSERT, "device-side assert triggered");
}
