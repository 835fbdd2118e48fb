/* log.c -- leveled logging to stderr (journald collects it under systemd). */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "escape.h"
#include "log.h"

static char log_tag[64] = "gpupool";
static int log_level = GP_LOG_INFO;
static FILE *log_out;		  /* NULL: stderr */
static _Atomic int log_time = -1; /* GPUPOOL_LOG_TIME=1: lines start with the monotonic clock */

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void gp_log_init(const char *tag, int level)
{
	if (tag)
		snprintf(log_tag, sizeof(log_tag), "%s", tag);
	log_level = level;
}

void gp_log_to(FILE *f)
{
	log_out = f;
}

void gp_log_set_level(int level)
{
	log_level = level;
}

int gp_log_level(void)
{
	return log_level;
}

int gp_log_parse_level(const char *s)
{
	if (!s || !*s)
		return -1;
	if (s[0] >= '0' && s[0] <= '3' && s[1] == '\0')
		return s[0] - '0';
	for (int i = 0; i < 4; i++)
		if (strcasecmp(s, level_names[i]) == 0)
			return i;
	return -1;
}

/*
 * Messages carry what clients chose (program and host names, certificate names, the
 * driver's and the peer's error text): escaped here, once for every line, so no message
 * can hold a newline that starts a forged line or bytes that drive a terminal.
 */
void gp_vlog(int level, const char *fmt, va_list ap)
{
	char msg[1024], line[4200];
	int n;

	if (level > log_level || log_level < 0)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (log_time < 0) {
		const char *t = getenv("GPUPOOL_LOG_TIME");

		log_time = t && strcmp(t, "1") == 0;
	}
	n = 0;
	if (log_time) {
		/* CLOCK_MONOTONIC, one clock for every process on the host: the client's, the
		 * supervisor's and the worker's lines of one session line up. */
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		n = snprintf(line, sizeof(line), "[%lld.%06ld] ", (long long)ts.tv_sec,
			     ts.tv_nsec / 1000);
	}
	n += snprintf(line + n, sizeof(line) - (size_t)n, "%s: %s: ", log_tag,
		      level >= 0 && level <= GP_LOG_DEBUG ? level_names[level] : "?");
	if (n < 0 || (size_t)n >= sizeof(line))
		n = 0;
	gp_escape(line + n, sizeof(line) - (size_t)n, msg, NULL);
	/* One write per line so lines from several processes do not interleave. */
	fprintf(log_out ? log_out : stderr, "%s\n", line);
	if (log_out)
		fflush(log_out);
}

void gp_log(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	gp_vlog(level, fmt, ap);
	va_end(ap);
}

void gp_log_errno(int level, const char *fmt, ...)
{
	char msg[768];
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	gp_log(level, "%s: %s", msg, strerror(saved));
}

void gp_fatal(const char *fmt, ...)
{
	char msg[768];
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (log_level < GP_LOG_ERROR)
		log_level = GP_LOG_ERROR;
	gp_log(GP_LOG_ERROR, "%s: %s", msg, strerror(saved));
	exit(1);
}

void gp_fatalx(const char *fmt, ...)
{
	va_list ap;

	if (log_level < GP_LOG_ERROR)
		log_level = GP_LOG_ERROR;
	va_start(ap, fmt);
	gp_vlog(GP_LOG_ERROR, fmt, ap);
	va_end(ap);
	exit(1);
}
