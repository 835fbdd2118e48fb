/* log.h -- leveled logging to stderr, tagged with the program's role. */
#ifndef GP_LOG_H
#define GP_LOG_H

#include <stdarg.h>
#include <stdio.h>

enum gp_log_level {
	GP_LOG_NONE = -1, /* nothing at all: the interposer's default */
	GP_LOG_ERROR = 0,
	GP_LOG_WARN,
	GP_LOG_INFO,
	GP_LOG_DEBUG,
};

#define GP_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* Sets the tag printed before each line ("gpupoold", "worker 12") and the level. */
void gp_log_init(const char *tag, int level);
void gp_log_set_level(int level);
/* Log lines go to f from now on (NULL: stderr again), e.g. when fd 2 becomes a pipe. */
void gp_log_to(FILE *f);
int gp_log_level(void);
/* Parses "error", "warn", "info", "debug" or a digit; -1 when unknown. */
int gp_log_parse_level(const char *s);

void gp_log(int level, const char *fmt, ...) GP_PRINTF(2, 3);
void gp_vlog(int level, const char *fmt, va_list ap);

/* OpenBSD log.h shape: *_warn appends strerror(errno), *_warnx does not. */
#define gp_log_warn(...) gp_log_errno(GP_LOG_WARN, __VA_ARGS__)
#define gp_log_warnx(...) gp_log(GP_LOG_WARN, __VA_ARGS__)
#define gp_log_error(...) gp_log(GP_LOG_ERROR, __VA_ARGS__)
#define gp_log_info(...) gp_log(GP_LOG_INFO, __VA_ARGS__)
#define gp_log_debug(...) gp_log(GP_LOG_DEBUG, __VA_ARGS__)
void gp_log_errno(int level, const char *fmt, ...) GP_PRINTF(2, 3);

/* Log at ERROR and exit(1). fatal appends strerror(errno). */
void gp_fatal(const char *fmt, ...) GP_PRINTF(1, 2) __attribute__((noreturn));
void gp_fatalx(const char *fmt, ...) GP_PRINTF(1, 2) __attribute__((noreturn));

#endif
