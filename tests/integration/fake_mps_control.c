/* fake_mps_control.c -- a stand-in for nvidia-cuda-mps-control, used only to observe what
 * gpupoold does with the control daemons it owns (test-mps.sh). It does not do what MPS
 * does: nothing here serves a CUDA client. Each run appends a line to $FAKE_MPS_LOG.
 *
 *   fake_mps_control -f   the "control daemon": logs "start pid=P args=-f pipe=D log=L
 *                         visible=V", makes the FIFO D/control and reads commands from it
 *                         until "quit" (logs "quit pid=P", exits 0); SIGTERM logs "term".
 *                         With FAKE_MPS_IGNORE_QUIT=1 it logs "ignored quit" and goes on;
 *                         with FAKE_MPS_IGNORE_TERM=1 too, SIGTERM logs "ignored term"
 *                         and it goes on (only SIGKILL ends it).
 *   fake_mps_control      the "control client": passes each line of its stdin to D/control
 *                         (logs "client cmd=C"); exits 1 when no daemon reads it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

static void note(const char *fmt, ...)
{
	const char *path = getenv("FAKE_MPS_LOG");
	va_list ap;
	FILE *f;

	if (!path)
		return;
	f = fopen(path, "a");
	if (!f)
		return;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v ? v : "(unset)";
}

static volatile sig_atomic_t ignore_term;

static void on_term(int sig)
{
	(void)sig;
	if (ignore_term) {
		note("ignored term pid=%d", (int)getpid());
		return;
	}
	note("term pid=%d", (int)getpid());
	_exit(0);
}

int main(int argc, char **argv)
{
	char fifo[4096], line[256];
	const char *dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
	FILE *in;

	if (!dir) {
		fprintf(stderr, "fake_mps_control: CUDA_MPS_PIPE_DIRECTORY is not set\n");
		return 2;
	}
	snprintf(fifo, sizeof(fifo), "%s/control", dir);
	if (argc == 2 && strcmp(argv[1], "-f") == 0) {
		ignore_term = getenv("FAKE_MPS_IGNORE_TERM") != NULL;
		signal(SIGTERM, on_term);
		/* A daemon killed outright leaves no stand-in behind (SIGKILL for one that
		 * ignores SIGTERM). */
		prctl(PR_SET_PDEATHSIG, ignore_term ? SIGKILL : SIGTERM);
		if (getppid() == 1)
			return 2;
		unlink(fifo);
		if (mkfifo(fifo, 0600) != 0) {
			perror("fake_mps_control: mkfifo");
			return 2;
		}
		note("start pid=%d args=%s pipe=%s log=%s visible=%s", (int)getpid(), argv[1], dir,
		     env("CUDA_MPS_LOG_DIRECTORY"), env("CUDA_VISIBLE_DEVICES"));
		/* O_RDWR: a client closing its end is no end of file for us. */
		in = fopen(fifo, "r+");
		if (!in)
			return 2;
		while (fgets(line, sizeof(line), in)) {
			line[strcspn(line, "\n")] = '\0';
			note("command pid=%d cmd=%s", (int)getpid(), line);
			if (strcmp(line, "quit") == 0 && getenv("FAKE_MPS_IGNORE_QUIT")) {
				note("ignored quit pid=%d", (int)getpid());
			} else if (strcmp(line, "quit") == 0) {
				note("quit pid=%d", (int)getpid());
				unlink(fifo);
				return 0;
			}
		}
		return 1;
	}
	if (argc != 1) {
		fprintf(stderr, "usage: fake_mps_control [-f]\n");
		return 2;
	}
	while (fgets(line, sizeof(line), stdin)) {
		int fd = open(fifo, O_WRONLY | O_NONBLOCK);

		if (fd < 0) {
			note("client no-daemon err=%s", strerror(errno));
			return 1;
		}
		note("client cmd=%.*s", (int)strcspn(line, "\n"), line);
		if (write(fd, line, strlen(line)) < 0)
			return 1;
		close(fd);
	}
	return 0;
}
