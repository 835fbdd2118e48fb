/* ipc.c -- CUDA IPC between two processes, driven by test-ipc.sh through files in DIR:
 *   ipc export DIR   allocates and fills N words, writes DIR/handle (a memory handle and an
 *                    interprocess event's, 128 bytes), waits for DIR/recorded, waits on the
 *                    event and checks the importer's writes, writes DIR/checked, and frees and
 *                    exits once DIR/release appears;
 *   ipc import DIR   opens both handles, runs a kernel that reads and rewrites every word,
 *                    records the event and says so (DIR/recorded), then closes;
 *   ipc refused DIR  must fail to open the handles (another tenant, or the exporter gone);
 *   ipc freed DIR    exports and frees more allocations than a session may export at once,
 *                    then writes DIR/handle with three memory handles: of an allocation it
 *                    keeps, of one it freed (and allocated again, likely at its address), and
 *                    of one in a context it destroyed; waits for DIR/checked;
 *   ipc open-freed DIR  opens those: the first reads the kept words, the other two must fail
 *                    with CUDA_ERROR_INVALID_HANDLE;
 *   ipc handover DIR as export and import together, but the exporter is not dumpable (as a
 *                    pool worker) and its child importer (another user when run as root)
 *                    cannot reach its descriptors: softgpu's export table (softgpu_ipc.h)
 *                    gives them to the exporter, which sends them over a socket, and the
 *                    importer hands them to its softgpu before it opens the handles.
 * Each prints one line (OK ..., REFUSED ..., or FAIL ...) and exits 0 only when it holds. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda.h>

#include "softgpu_ipc.h"

#define N 256

/* twice(p): p[tid] = 2 * p[tid] + 1 */
static const char twice_ptx[] = ".version 7.0\n"
				".target sm_52\n"
				".address_size 64\n"
				".visible .entry twice(.param .u64 p)\n"
				"{\n"
				"  .reg .u32 %r<4>;\n"
				"  .reg .u64 %rd<4>;\n"
				"  ld.param.u64 %rd1, [p];\n"
				"  cvta.to.global.u64 %rd1, %rd1;\n"
				"  mov.u32 %r1, %tid.x;\n"
				"  mul.wide.u32 %rd2, %r1, 4;\n"
				"  add.u64 %rd3, %rd1, %rd2;\n"
				"  ld.global.u32 %r2, [%rd3];\n"
				"  mad.lo.u32 %r3, %r2, 2, 1;\n"
				"  st.global.u32 [%rd3], %r3;\n"
				"  ret;\n"
				"}\n";

static const char *dir;

static const char *name(CUresult r)
{
	const char *s = NULL;

	cuGetErrorName(r, &s);
	return s ? s : "?";
}

#define CK(call)                                                                            \
	do {                                                                                \
		CUresult r_ = (call);                                                       \
		if (r_ != CUDA_SUCCESS) {                                                   \
			printf("FAIL %s:%d %s: %s\n", __FILE__, __LINE__, #call, name(r_)); \
			exit(1);                                                            \
		}                                                                           \
	} while (0)

#define EXPECT(call, want)                                                                    \
	do {                                                                                  \
		CUresult r_ = (call);                                                         \
		if (r_ != (want)) {                                                           \
			printf("FAIL %s:%d %s: %s, expected %s\n", __FILE__, __LINE__, #call, \
			       name(r_), name(want));                                         \
			exit(1);                                                              \
		}                                                                             \
	} while (0)

/* DIR/file, in one of two buffers that take turns (rename needs two at once). */
static char *path(const char *file)
{
	static char buf[2][4096];
	static int turn;

	turn ^= 1;
	snprintf(buf[turn], sizeof(buf[turn]), "%s/%s", dir, file);
	return buf[turn];
}

static void touch(const char *file)
{
	FILE *f = fopen(path(file), "w");

	if (f == NULL || fclose(f)) {
		printf("FAIL cannot write %s\n", path(file));
		exit(1);
	}
}

/* Waits (generously) for DIR/file to exist. */
static void await(const char *file)
{
	for (int i = 0; i < 60000; i++) {
		if (access(path(file), F_OK) == 0)
			return;
		usleep(5000);
	}
	printf("FAIL %s never appeared\n", path(file));
	exit(1);
}

/* IPC_HOLD set (test-ipc-pool.sh, which looks at the pool's books meanwhile): says so in
 * DIR/what, with this process's pid, and waits for DIR/what.go. */
static void hold(const char *what)
{
	char file[64];
	FILE *f;

	if (!getenv("IPC_HOLD"))
		return;
	f = fopen(path("hold.tmp"), "w");
	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) ||
	    rename(path("hold.tmp"), path(what))) {
		printf("FAIL cannot write %s\n", path(what));
		exit(1);
	}
	snprintf(file, sizeof(file), "%s.go", what);
	await(file);
}

static void read_handles(CUipcMemHandle *mh, CUipcEventHandle *eh)
{
	FILE *f = fopen(path("handle"), "rb");

	if (f == NULL || fread(mh, sizeof(*mh), 1, f) != 1 || fread(eh, sizeof(*eh), 1, f) != 1) {
		printf("FAIL cannot read %s\n", path("handle"));
		exit(1);
	}
	fclose(f);
}

static void context(void)
{
	CUdevice dev;
	CUcontext ctx;

	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));
}

static CUmodule twice_module(CUfunction *fn)
{
	CUmodule mod;

	CK(cuModuleLoadData(&mod, twice_ptx));
	CK(cuModuleGetFunction(fn, mod, "twice"));
	return mod;
}

static int do_export(void)
{
	unsigned host[N], back[N];
	CUdeviceptr d, inner;
	CUipcMemHandle mh, mh2;
	CUipcEventHandle eh;
	CUevent ev, plain;
	CUdeviceptr self;
	int capable = 0, ev_ok = 0;
	FILE *f;

	context();
	for (unsigned i = 0; i < N; i++)
		host[i] = i * 7 + 3;
	CK(cuMemAlloc(&d, N * sizeof(unsigned)));
	CK(cuMemcpyHtoD(d, host, sizeof(host)));
	/* what the pointer and the device say agrees with what works */
	CK(cuPointerGetAttribute(&capable, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, d));
	CK(cuDeviceGetAttribute(&ev_ok, CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED, 0));
	if (capable != 1 || ev_ok != 1) {
		printf("FAIL IPC capable %d, IPC events supported %d\n", capable, ev_ok);
		return 1;
	}
	CK(cuIpcGetMemHandle(&mh, d));
	/* any pointer into the allocation names the whole allocation */
	inner = d + 64;
	CK(cuIpcGetMemHandle(&mh2, inner));
	if (memcmp(&mh, &mh2, sizeof(mh))) {
		printf("FAIL two handles of one allocation differ\n");
		return 1;
	}
	/* the process that made a handle cannot open it */
	if (cuIpcOpenMemHandle(&self, mh, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) == CUDA_SUCCESS) {
		printf("FAIL the exporter opened its own handle\n");
		return 1;
	}
	EXPECT(cuIpcGetMemHandle(NULL, d), CUDA_ERROR_INVALID_VALUE);
	EXPECT(cuIpcGetMemHandle(&mh2, 0), CUDA_ERROR_INVALID_VALUE);
	/* CUDA's event rules: interprocess needs DISABLE_TIMING; only such events export */
	EXPECT(cuEventCreate(&ev, CU_EVENT_INTERPROCESS), CUDA_ERROR_INVALID_VALUE);
	CK(cuEventCreate(&plain, CU_EVENT_DISABLE_TIMING));
	if (cuIpcGetEventHandle(&eh, plain) == CUDA_SUCCESS) {
		printf("FAIL an event without CU_EVENT_INTERPROCESS was exported\n");
		return 1;
	}
	CK(cuEventDestroy(plain));
	CK(cuEventCreate(&ev, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
	CK(cuIpcGetEventHandle(&eh, ev));

	f = fopen(path("handle.tmp"), "wb");
	if (f == NULL || fwrite(&mh, sizeof(mh), 1, f) != 1 || fwrite(&eh, sizeof(eh), 1, f) != 1 ||
	    fclose(f) || rename(path("handle.tmp"), path("handle"))) {
		printf("FAIL cannot write the handles\n");
		return 1;
	}
	await("recorded");
	/* the importer recorded after its kernel; waiting on the event waits for that kernel */
	CK(cuStreamWaitEvent(NULL, ev, 0));
	CK(cuEventSynchronize(ev));
	CK(cuMemcpyDtoH(back, d, sizeof(back)));
	for (unsigned i = 0; i < N; i++) {
		if (back[i] != 2 * host[i] + 1) {
			printf("FAIL word %u: %u, expected %u\n", i, back[i], 2 * host[i] + 1);
			return 1;
		}
	}
	touch("checked");
	printf("OK exporter: the importer's %d writes arrived, ordered by its event\n", N);
	fflush(stdout);
	await("release");
	CK(cuEventDestroy(ev));
	CK(cuMemFree(d));
	return 0;
}

static int do_import(void)
{
	CUipcMemHandle mh, bad;
	CUipcEventHandle eh;
	CUdeviceptr d, again, worse;
	CUfunction fn;
	CUevent ev;
	CUstream s;
	unsigned seen[N];
	size_t size = 0;
	CUdeviceptr base = 0;

	read_handles(&mh, &eh);
	context();
	twice_module(&fn);
	hold("before");
	EXPECT(cuIpcOpenMemHandle(&d, mh, 0x10), CUDA_ERROR_INVALID_VALUE);
	/* a handle with one byte of its tag changed opens nothing */
	bad = mh;
	bad.reserved[20] ^= 0x5a;
	if (cuIpcOpenMemHandle(&worse, bad, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) == CUDA_SUCCESS) {
		printf("FAIL a forged handle opened\n");
		return 1;
	}
	CK(cuIpcOpenMemHandle(&d, mh, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
	CK(cuMemGetAddressRange(&base, &size, d + 8));
	if (base != d || size != N * sizeof(unsigned)) {
		printf("FAIL the opened range is %#llx+%zu\n", (unsigned long long)base, size);
		return 1;
	}
	CK(cuMemcpyDtoH(seen, d, sizeof(seen)));
	for (unsigned i = 0; i < N; i++) {
		if (seen[i] != i * 7 + 3) {
			printf("FAIL the exporter's word %u reads %u\n", i, seen[i]);
			return 1;
		}
	}
	/* IPC memory is not the importer's to free */
	if (cuMemFree(d) == CUDA_SUCCESS) {
		printf("FAIL cuMemFree freed IPC memory\n");
		return 1;
	}
	CK(cuIpcOpenEventHandle(&ev, eh));
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	void *args[] = {&d};
	CK(cuLaunchKernel(fn, 1, 1, 1, N, 1, 1, 0, s, args, NULL));
	CK(cuEventRecord(ev, s));
	touch("recorded");
	CK(cuStreamSynchronize(s));
	await("checked");
	hold("holding");
	/* opened twice: the same address, closed twice */
	CK(cuIpcOpenMemHandle(&again, mh, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
	if (again != d) {
		printf("FAIL a second open gave another address\n");
		return 1;
	}
	CK(cuIpcCloseMemHandle(again));
	CK(cuIpcCloseMemHandle(d));
	EXPECT(cuIpcCloseMemHandle(d), CUDA_ERROR_INVALID_VALUE);
	CK(cuEventDestroy(ev));
	CK(cuStreamDestroy(s));
	printf("OK importer: read the exporter's words, wrote %d, recorded its event\n", N);
	return 0;
}

/* Handles changed in each part (kind, daemon, session, secret, padding), a zero handle and
 * the memory handle presented as an event's: none opens anything. */
static int do_forged(void)
{
	static const int at[] = {5, 10, 20, 30, 38, 50};
	CUipcMemHandle mh, bad;
	CUipcEventHandle eh, ebad;
	CUdeviceptr d;
	CUevent ev;
	CUresult r;

	read_handles(&mh, &eh);
	context();
	for (unsigned i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		bad = mh;
		bad.reserved[at[i]] ^= 0x01;
		r = cuIpcOpenMemHandle(&d, bad, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
		if (r != CUDA_ERROR_INVALID_HANDLE) {
			printf("FAIL memory handle changed at byte %d: %s\n", at[i], name(r));
			return 1;
		}
		ebad = eh;
		ebad.reserved[at[i]] ^= 0x01;
		r = cuIpcOpenEventHandle(&ev, ebad);
		if (r != CUDA_ERROR_INVALID_HANDLE) {
			printf("FAIL event handle changed at byte %d: %s\n", at[i], name(r));
			return 1;
		}
	}
	memset(&bad, 0, sizeof(bad));
	EXPECT(cuIpcOpenMemHandle(&d, bad, 0), CUDA_ERROR_INVALID_HANDLE);
	memcpy(ebad.reserved, mh.reserved, sizeof(ebad.reserved));
	EXPECT(cuIpcOpenEventHandle(&ev, ebad), CUDA_ERROR_INVALID_HANDLE);
	memcpy(bad.reserved, eh.reserved, sizeof(bad.reserved));
	EXPECT(cuIpcOpenMemHandle(&d, bad, 0), CUDA_ERROR_INVALID_HANDLE);
	printf("REFUSED every forged handle: CUDA_ERROR_INVALID_HANDLE\n");
	return 0;
}

static int do_refused(void)
{
	CUipcMemHandle mh;
	CUipcEventHandle eh;
	CUdeviceptr d;
	CUevent ev;
	CUresult rm, re;

	read_handles(&mh, &eh);
	context();
	rm = cuIpcOpenMemHandle(&d, mh, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
	re = cuIpcOpenEventHandle(&ev, eh);
	if (rm == CUDA_SUCCESS || re == CUDA_SUCCESS) {
		printf("FAIL opened: memory %s, event %s\n", name(rm), name(re));
		return 1;
	}
	printf("REFUSED memory %s, event %s\n", name(rm), name(re));
	return 0;
}

static const struct gp__softgpu_ipc *ipc_table(void)
{
	const void *t = NULL;
	CUuuid id;

	memcpy(id.bytes, GP_SOFTGPU_IPC_ID_BYTES, sizeof(id.bytes));
	CK(cuGetExportTable(&t, &id));
	return t;
}

/*
 * IPC_AS_NOBODY=1 (test-ipc.sh, when root and the build is readable by nobody): the importer
 * runs as nobody.
 */
static int do_handover(void)
{
	const char *nb = getenv("IPC_AS_NOBODY");
	bool as_nobody = nb && strcmp(nb, "1") == 0 && geteuid() == 0;
	unsigned host[N], back[N];
	const struct gp__softgpu_ipc *t;
	char msg[2 * CU_IPC_HANDLE_SIZE], cbuf[CMSG_SPACE(3 * sizeof(int))], fdarg[16], ok;
	struct iovec iov = {msg, sizeof(msg)};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *cm;
	CUipcMemHandle mh;
	CUipcEventHandle eh;
	CUdeviceptr d;
	CUevent ev;
	int sv[2], mfds[2], efds[2], status;
	pid_t pid;

	context();
	for (unsigned i = 0; i < N; i++)
		host[i] = i * 11 + 5;
	CK(cuMemAlloc(&d, sizeof(host)));
	CK(cuMemcpyHtoD(d, host, sizeof(host)));
	CK(cuIpcGetMemHandle(&mh, d));
	CK(cuEventCreate(&ev, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
	CK(cuIpcGetEventHandle(&eh, ev));
	t = ipc_table();
	CK(t->export_fds(&mh, mfds));
	CK(t->export_fds(&eh, efds));
	if (efds[0] != -1) {
		printf("FAIL an event's export gave a memory descriptor\n");
		return 1;
	}
	prctl(PR_SET_DUMPABLE, 0); /* as a pool worker: /proc/PID/fd closed to others */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return 1;
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		if (as_nobody && (setgroups(0, NULL) || setgid(65534) || setuid(65534)))
			_exit(98);
		snprintf(fdarg, sizeof(fdarg), "%d", fcntl(sv[1], F_DUPFD, 10));
		execl("/proc/self/exe", "ipc", "handed", dir, fdarg, (char *)NULL);
		_exit(99);
	}
	close(sv[1]);
	memcpy(msg, &mh, sizeof(mh));
	memcpy(msg + sizeof(mh), &eh, sizeof(eh));
	m.msg_control = cbuf;
	m.msg_controllen = sizeof(cbuf);
	cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(3 * sizeof(int));
	memcpy(CMSG_DATA(cm), (int[3]){mfds[0], mfds[1], efds[1]}, 3 * sizeof(int));
	if (sendmsg(sv[0], &m, 0) != (ssize_t)sizeof(msg)) {
		printf("FAIL sendmsg: %s\n", strerror(errno));
		return 1;
	}
	if (read(sv[0], &ok, 1) != 1 || ok != 'R') {
		waitpid(pid, &status, 0);
		printf("FAIL the importer did not record (status %d)\n", status);
		return 1;
	}
	CK(cuEventSynchronize(ev));
	CK(cuMemcpyDtoH(back, d, sizeof(back)));
	for (unsigned i = 0; i < N; i++) {
		if (back[i] != 2 * host[i] + 1) {
			printf("FAIL word %u: %u, expected %u\n", i, back[i], 2 * host[i] + 1);
			return 1;
		}
	}
	(void)!write(sv[0], "C", 1);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		printf("FAIL the importer ended with status %d\n", status);
		return 1;
	}
	printf("OK handover: a non-dumpable exporter's descriptors, handed over, opened its "
	       "memory and event in %s\n",
	       as_nobody ? "another user's process" : "a child");
	CK(cuEventDestroy(ev));
	CK(cuMemFree(d));
	return 0;
}

static int do_handed(int sock)
{
	char msg[2 * CU_IPC_HANDLE_SIZE], cbuf[CMSG_SPACE(3 * sizeof(int))], ok;
	struct iovec iov = {msg, sizeof(msg)};
	struct msghdr m = {.msg_iov = &iov,
			   .msg_iovlen = 1,
			   .msg_control = cbuf,
			   .msg_controllen = sizeof(cbuf)};
	const struct gp__softgpu_ipc *t;
	struct cmsghdr *cm;
	CUipcMemHandle mh;
	CUipcEventHandle eh;
	CUdeviceptr d;
	CUfunction fn;
	CUevent ev;
	int fds[3];

	if (recvmsg(sock, &m, MSG_CMSG_CLOEXEC) != (ssize_t)sizeof(msg) ||
	    !(cm = CMSG_FIRSTHDR(&m)) || cm->cmsg_len != CMSG_LEN(3 * sizeof(int))) {
		printf("FAIL no handles and descriptors arrived\n");
		return 1;
	}
	memcpy(fds, CMSG_DATA(cm), sizeof(fds));
	memcpy(&mh, msg, sizeof(mh));
	memcpy(&eh, msg + sizeof(mh), sizeof(eh));
	context();
	/* without the descriptors the exporter is out of reach (root's CAP_SYS_PTRACE would
	 * reach a process that is not dumpable) */
	if (geteuid() != 0)
		EXPECT(cuIpcOpenMemHandle(&d, mh, 0), CUDA_ERROR_INVALID_HANDLE);
	t = ipc_table();
	/* descriptors that are not the handle's exporter's are refused */
	EXPECT(t->provide_fds(&mh, (int[2]){fds[0], fds[0]}), CUDA_ERROR_INVALID_VALUE);
	CK(t->provide_fds(&mh, (int[2]){fds[0], fds[1]}));
	CK(t->provide_fds(&eh, (int[2]){-1, fds[2]}));
	close(fds[0]);
	close(fds[1]);
	close(fds[2]);
	CK(cuIpcOpenMemHandle(&d, mh, 0));
	CK(cuIpcOpenEventHandle(&ev, eh));
	twice_module(&fn);
	void *args[] = {&d};
	CK(cuLaunchKernel(fn, 1, 1, 1, N, 1, 1, 0, NULL, args, NULL));
	CK(cuEventRecord(ev, NULL));
	if (write(sock, "R", 1) != 1 || read(sock, &ok, 1) != 1)
		return 1;
	CK(cuIpcCloseMemHandle(d));
	CK(cuEventDestroy(ev));
	return 0;
}

static void write_mem_handles(const CUipcMemHandle *h, unsigned n)
{
	FILE *f = fopen(path("handle.tmp"), "wb");

	if (f == NULL || fwrite(h, sizeof(*h), n, f) != n || fclose(f) ||
	    rename(path("handle.tmp"), path("handle"))) {
		printf("FAIL cannot write the handles\n");
		exit(1);
	}
}

static int do_freed(void)
{
	unsigned host[N], other_words[N];
	CUipcMemHandle h[3], scratch;
	CUdeviceptr keep, gone, again, in_ctx, d;
	CUcontext primary, other;
	CUdevice dev;

	context();
	CK(cuCtxGetCurrent(&primary));
	CK(cuDeviceGet(&dev, 0));
	for (unsigned i = 0; i < N; i++) {
		host[i] = i * 5 + 1;
		other_words[i] = 0xa5a50000u + i;
	}
	CK(cuMemAlloc(&keep, sizeof(host)));
	CK(cuMemcpyHtoD(keep, host, sizeof(host)));
	CK(cuIpcGetMemHandle(&h[0], keep));
	/* Exported and freed, over and over: more than a session holds exported at once. */
	for (int i = 0; i < 300; i++) {
		CK(cuMemAlloc(&d, sizeof(host)));
		CK(cuIpcGetMemHandle(&scratch, d));
		CK(cuMemFree(d));
	}
	CK(cuMemAlloc(&gone, sizeof(host)));
	CK(cuMemcpyHtoD(gone, host, sizeof(host)));
	CK(cuIpcGetMemHandle(&h[1], gone));
	CK(cuMemFree(gone));
	/* Memory of the session's own that the freed allocation's handle must not reach. */
	CK(cuMemAlloc(&again, sizeof(other_words)));
	CK(cuMemcpyHtoD(again, other_words, sizeof(other_words)));
	CK(cuCtxCreate(&other, NULL, 0, dev));
	CK(cuMemAlloc(&in_ctx, sizeof(host)));
	CK(cuMemcpyHtoD(in_ctx, host, sizeof(host)));
	CK(cuIpcGetMemHandle(&h[2], in_ctx));
	CK(cuCtxDestroy(other));
	CK(cuCtxSetCurrent(primary));
	write_mem_handles(h, 3);
	await("checked");
	CK(cuMemFree(keep));
	CK(cuMemFree(again));
	printf("OK exporter: 302 allocations exported and freed, the address %s again\n",
	       again == gone ? "used" : "not used");
	return 0;
}

static int do_open_freed(void)
{
	static const char *what[3] = {"kept", "freed", "destroyed context's"};
	CUipcMemHandle h[3];
	unsigned seen[N];
	CUdeviceptr d;
	FILE *f = fopen(path("handle"), "rb");

	if (f == NULL || fread(h, sizeof(h[0]), 3, f) != 3) {
		printf("FAIL cannot read %s\n", path("handle"));
		return 1;
	}
	fclose(f);
	context();
	for (int k = 1; k < 3; k++) {
		CUresult r = cuIpcOpenMemHandle(&d, h[k], CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);

		if (r == CUDA_SUCCESS) {
			CK(cuMemcpyDtoH(seen, d, sizeof(seen)));
			printf("FAIL the %s allocation's handle opened (its first word %#x)\n",
			       what[k], seen[0]);
			return 1;
		}
		if (r != CUDA_ERROR_INVALID_HANDLE) {
			printf("FAIL the %s allocation's handle: %s\n", what[k], name(r));
			return 1;
		}
	}
	CK(cuIpcOpenMemHandle(&d, h[0], CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
	CK(cuMemcpyDtoH(seen, d, sizeof(seen)));
	for (unsigned i = 0; i < N; i++) {
		if (seen[i] != i * 5 + 1) {
			printf("FAIL the kept allocation's word %u reads %u\n", i, seen[i]);
			return 1;
		}
	}
	CK(cuIpcCloseMemHandle(d));
	touch("checked");
	printf("OK importer: the kept allocation opened and read, the freed ones refused\n");
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && strcmp(argv[1], "handed") == 0) {
		dir = argv[2];
		return do_handed(atoi(argv[3]));
	}
	if (argc != 3) {
		fprintf(stderr,
			"usage: ipc export|import|refused|forged|handover|freed|open-freed DIR\n");
		return 2;
	}
	dir = argv[2];
	if (strcmp(argv[1], "handover") == 0)
		return do_handover();
	if (strcmp(argv[1], "export") == 0)
		return do_export();
	if (strcmp(argv[1], "import") == 0)
		return do_import();
	if (strcmp(argv[1], "forged") == 0)
		return do_forged();
	if (strcmp(argv[1], "refused") == 0)
		return do_refused();
	if (strcmp(argv[1], "freed") == 0)
		return do_freed();
	if (strcmp(argv[1], "open-freed") == 0)
		return do_open_freed();
	fprintf(stderr, "ipc: unknown mode %s\n", argv[1]);
	return 2;
}
