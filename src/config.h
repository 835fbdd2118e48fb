/* config.h -- gpupoold's configuration file: "key value" lines. */
#ifndef GP_CONFIG_H
#define GP_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#define GP_CONFIG_DEFAULT_PATH "/etc/gpupool/gpupoold.conf"

struct gp_config {
	char *path;         /* the file it was read from */
	char *listen;       /* HOST:PORT */
	char *tls_cert;
	char *tls_key;
	char *tls_ca;       /* NULL: no client certificates asked for */
	char *driver;       /* the libcuda workers dlopen */
	char *admin_socket;
	char *worker;       /* gpupool-worker executable; NULL: beside gpupoold */
	int log_level;
	unsigned max_sessions;
};

/*
 * Reads a configuration file into a new struct. On error returns NULL and
 * writes "FILE:LINE: reason" into err. Unset keys take their defaults.
 */
struct gp_config *gp_config_load(const char *path, char *err, size_t errlen);
/* The same from a string (tests, -n checks of stdin); name is used in errors. */
struct gp_config *gp_config_parse(const char *text, const char *name, char *err, size_t errlen);
void gp_config_free(struct gp_config *cfg);

/* Parses "4096", "512K", "8M", "16G", "1T" (powers of 1024). Returns 0 or GP_ECONFIG. */
int gp_parse_size(const char *s, uint64_t *out);

#endif
