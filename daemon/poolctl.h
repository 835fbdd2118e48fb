/* poolctl.h -- the admin client.
 *
 * poolctl.c         main: options, the subcommand table, talking to the socket
 * poolctl_status.c  status: tables for people, JSON for machines
 */
#ifndef GP_POOLCTL_H
#define GP_POOLCTL_H

#include <stdbool.h>

#include "codec.h"

struct poolctl {
	const char *socket;
	bool json;
};

/* Sends one request and waits for the reply. Exits 1 with a reason on failure. */
Gp__AdminReply *poolctl_request(struct poolctl *pc, const char *command, int argc, char **argv);

/* poolctl_status.c */
int poolctl_status(struct poolctl *pc, int argc, char **argv);

#endif
