// rt_ipc.cu -- CUDA IPC from a cudart program: the parent exports device memory and an
// interprocess event, a child process (this program again, exec'd: CUDA does not survive
// fork) opens both, checks the parent's values, doubles them with a kernel and records the
// event; the parent waits on it and checks every value. Through the pool each process is its
// own session of one tenant (daemon/supervisor/ipc.c).
#include <cstring>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_check.h"

#define N 4096

__global__ void fill(int *p, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = 3 * i + 1;
}

__global__ void twice(int *p, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] *= 2;
}

static std::string hex(const void *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	const unsigned char *b = (const unsigned char *)p;
	std::string s;
	for (size_t i = 0; i < n; i++) {
		s += digits[b[i] >> 4];
		s += digits[b[i] & 15];
	}
	return s;
}

static void unhex(const char *s, void *p, size_t n)
{
	unsigned char *b = (unsigned char *)p;
	EXPECT(strlen(s) == 2 * n, "a handle of %zu hex digits", strlen(s));
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		EXPECT(sscanf(s + 2 * i, "%2x", &v) == 1, "hex at %zu", i);
		b[i] = (unsigned char)v;
	}
}

static int child(const char *mem, const char *event)
{
	cudaIpcMemHandle_t mh;
	cudaIpcEventHandle_t eh;
	cudaEvent_t ev;
	static int host[N];
	int *p;

	unhex(mem, &mh, sizeof(mh));
	unhex(event, &eh, sizeof(eh));
	CK(cudaSetDevice(0));
	CK(cudaIpcOpenMemHandle((void **)&p, mh, cudaIpcMemLazyEnablePeerAccess));
	CK(cudaMemcpy(host, p, sizeof(host), cudaMemcpyDeviceToHost));
	for (int i = 0; i < N; i++)
		EXPECT(host[i] == 3 * i + 1, "the child reads %d at %d", host[i], i);
	CK(cudaIpcOpenEventHandle(&ev, eh));
	twice<<<N / 256, 256>>>(p, N);
	CK(cudaGetLastError());
	CK(cudaEventRecord(ev, 0));
	CK(cudaDeviceSynchronize());
	CK(cudaIpcCloseMemHandle(p));
	CK(cudaEventDestroy(ev));
	return 0;
}

int main(int argc, char **argv)
{
	cudaIpcMemHandle_t mh;
	cudaIpcEventHandle_t eh;
	cudaEvent_t ev;
	static int host[N];
	int *d, status = -1;
	pid_t pid;

	if (argc == 4 && strcmp(argv[1], "child") == 0)
		return child(argv[2], argv[3]);
	CK(cudaSetDevice(0));
	CK(cudaMalloc(&d, sizeof(host)));
	fill<<<N / 256, 256>>>(d, N);
	CK(cudaDeviceSynchronize());
	CK(cudaEventCreateWithFlags(&ev, cudaEventInterprocess | cudaEventDisableTiming));
	CK(cudaIpcGetMemHandle(&mh, d));
	CK(cudaIpcGetEventHandle(&eh, ev));
	std::string m = hex(&mh, sizeof(mh)), e = hex(&eh, sizeof(eh));
	pid = fork();
	if (pid == 0) {
		execl("/proc/self/exe", argv[0], "child", m.c_str(), e.c_str(), (char *)NULL);
		_exit(127);
	}
	EXPECT(pid > 0, "fork");
	EXPECT(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "the child ended with status %d", status);
	CK(cudaStreamWaitEvent(0, ev, 0));
	CK(cudaMemcpy(host, d, sizeof(host), cudaMemcpyDeviceToHost));
	for (int i = 0; i < N; i++)
		EXPECT(host[i] == 2 * (3 * i + 1), "the parent reads %d at %d", host[i], i);
	CK(cudaEventDestroy(ev));
	CK(cudaFree(d));
	std::printf("rt_ipc: PASSED (a child process opened, doubled and signalled %d values)\n",
		    N);
	return 0;
}
