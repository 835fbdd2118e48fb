/* fuzz_config.c -- gpupoold.conf parsing on arbitrary text.
 *
 * A text that parses gives a config whose required strings are set and whose
 * values are in range, and lookups find what it holds; one that does not
 * leaves a "NAME:LINE: reason" or "NAME: reason" message. Either way nothing
 * leaks (LeakSanitizer).
 */
#include <string.h>

#include "config.h"
#include "fuzz.h"
#include "log.h"

static void check_config(const struct gp_config *cfg)
{
	FUZZ_CHECK(cfg->path && strcmp(cfg->path, "fuzz.conf") == 0);
	FUZZ_CHECK(cfg->listen && cfg->tls_cert && cfg->tls_key && cfg->driver &&
		   cfg->admin_socket);
	FUZZ_CHECK(cfg->log_level >= GP_LOG_ERROR && cfg->log_level <= GP_LOG_DEBUG);
	FUZZ_CHECK(cfg->placement == GP_PLACE_SPREAD || cfg->placement == GP_PLACE_BINPACK);
	FUZZ_CHECK(cfg->max_sessions <= 1000000 && cfg->queue_timeout <= 1000000 &&
		   cfg->idle_timeout <= 1000000 && cfg->drain_grace <= 1000000);
	FUZZ_CHECK(cfg->ntenants == 0 || cfg->tenants);
	for (size_t i = 0; i < cfg->ntenants; i++) {
		const struct gp_tenant *t = &cfg->tenants[i];

		FUZZ_CHECK(t->name);
		FUZZ_CHECK(gp_config_tenant(cfg, t->name) == t); /* names are unique */
	}
	FUZZ_CHECK(cfg->ntokens == 0 || cfg->tokens);
	for (size_t i = 0; i < cfg->ntokens; i++) {
		const struct gp_token *k = &cfg->tokens[i];

		FUZZ_CHECK(k->secret && strlen(k->secret) >= 16 && k->tenant);
		FUZZ_CHECK(gp_config_token_tenant(cfg, k->secret) != NULL);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gp_config *cfg;
	char err[512];
	char *text;
	uint64_t v;

	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';

	err[0] = '\0';
	cfg = gp_config_parse(text, "fuzz.conf", err, sizeof(err));
	if (cfg) {
		check_config(cfg);
		gp_config_free(cfg);
	} else {
		FUZZ_CHECK(strncmp(err, "fuzz.conf:", 10) == 0);
		FUZZ_CHECK(memchr(err, '\0', sizeof(err)) != NULL);
	}

	/* The size syntax on its own: plain digits mean bytes. */
	if (gp_parse_size(text, &v) == 0 && strspn(text, "0123456789") == strlen(text))
		FUZZ_CHECK(v == strtoull(text, NULL, 10));
	free(text);
	return 0;
}
