/* poolctl.h -- the admin client.
 *
 * poolctl.c  main: options, the subcommand table, talking to the socket
 * status.c   status and sessions: tables for people, JSON for machines
 * cmd.c      evict, drain, undrain, reload
 * usage.c    usage: the accounting records summed, as a table or JSON
 * remote.c   asking a daemon's admin endpoint (admin_listen) over mutual TLS
 * fleet.c    --pool: status, usage, quote and commands over many daemons at once
 */
#ifndef GP_POOLCTL_H
#define GP_POOLCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec.h"
#include "resolve.h"

struct poolctl {
	const char *socket;
	const char *pool; /* --pool: admin endpoints (HOST:PORT, names, srv:); NULL: the socket */
	const char *ca, *cert, *key; /* for the admin endpoints */
	bool json;
	double watch; /* seconds between refreshes; 0: once */
};

/* Sends one request and waits for the reply. Exits 1 with a reason on failure. */
Gp__AdminReply *poolctl_request(struct poolctl *pc, const char *command, int argc, char **argv);
/* The same for a request built by the caller. */
Gp__AdminReply *poolctl_send(struct poolctl *pc, Gp__AdminRequest *req);

/* remote.c */
/* Asks one daemon's admin endpoint; NULL with the reason in err. Never exits. */
Gp__AdminReply *poolctl_ask(struct poolctl *pc, const struct gp_endpoint *ep, Gp__AdminRequest *req,
			    char *err, size_t len);

/* fleet.c */
int poolctl_fleet_status(struct poolctl *pc, bool sessions_only);
/* evict HOST/ID, drain HOST[/GPU], undrain HOST[/GPU] over --pool. */
int poolctl_fleet_command(struct poolctl *pc, const char *command, const char *target);
int poolctl_fleet_usage(struct poolctl *pc, Gp__UsageQuery *q);
/* quote [--gpus N] [--memory SIZE] [--token T]: what each daemon would give, as a client
 * asks before it connects (docs/operations.md, "Many hosts"). */
int poolctl_quote(struct poolctl *pc, int argc, char **argv);

/* status.c         */
int poolctl_status(struct poolctl *pc, int argc, char **argv);
int poolctl_sessions(struct poolctl *pc, int argc, char **argv);
/* A client's string as JSON, always valid (escape.h); a table cell, escaped and cut. */
void poolctl_json_str(const char *s);
const char *poolctl_cell(char *buf, size_t width, const char *s);
/* Utilization, last minute and hour: "12%/3%", "-" when not known. */
const char *poolctl_util(bool known, double m, double h, char *buf, size_t len);
/* 1536 -> "1.5 KiB" */
const char *poolctl_human(uint64_t v, char *buf, size_t len);

/* usage.c */
int poolctl_usage(struct poolctl *pc, int argc, char **argv);
/* Adds one daemon's row into a sum (mem_peak: the largest). */
void poolctl_usage_add(Gp__UsageRow *sum, const Gp__UsageRow *r);
/* Prints a report and its total, as a table or JSON. */
void poolctl_usage_print(struct poolctl *pc, const Gp__UsageReport *u);

/* cmd.c */
int poolctl_simple(struct poolctl *pc, const char *command, int argc, char **argv);
int poolctl_evict(struct poolctl *pc, int argc, char **argv);
int poolctl_drain(struct poolctl *pc, int argc, char **argv);
int poolctl_undrain(struct poolctl *pc, int argc, char **argv);
int poolctl_reload(struct poolctl *pc, int argc, char **argv);

#endif
