/* softgpu_ipc.h -- softgpu's own export table for the pool: the descriptors behind its IPC
 * handles, taken from the exporting worker and handed to the importing one. */
#ifndef GP_SOFTGPU_IPC_H
#define GP_SOFTGPU_IPC_H

#include <stdint.h>

#include <cuda.h>

/*
 * softgpu's cuIpcOpenMemHandle and cuIpcOpenEventHandle reach the exporter's memfds through
 * /proc/PID/fd, which works between two ordinary processes of one user. Pool workers are not
 * dumpable (and may run under different uids), so there the supervisor carries the
 * descriptors: the exporting worker asks softgpu for them (export_fds), sends them with
 * SCM_RIGHTS, and the importing worker gives them to its softgpu (provide_fds) before it opens
 * the handle. NVIDIA's driver does IPC itself and answers cuGetExportTable for this id with
 * CUDA_ERROR_NOT_FOUND, as does the interposer: only softgpu serves the table. In-process only
 * (function pointers), so softgpu keeps exporting exactly CUDA's names.
 */

/* "softgpu-ipc-fds": the bytes of the id (with the terminating NUL), in memory order. */
#define GP_SOFTGPU_IPC_ID_BYTES "softgpu-ipc-fds"

struct gp__softgpu_ipc {
	uint64_t size; /* sizeof(struct gp__softgpu_ipc) */
	/* The descriptors behind a handle (a CUipcMemHandle's or CUipcEventHandle's 64 bytes)
	 * made by this process: fds[0] the device memory's memfd (-1 for an event), fds[1] the
	 * registry of exports. New descriptors (close-on-exec) that the caller closes;
	 * CUDA_ERROR_INVALID_VALUE for a handle this process did not make or has withdrawn. */
	CUresult (*export_fds)(const void *handle, int fds[2]);
	/* Descriptors another process's export_fds gave for a handle made there, to be used by
	 * the next opens of that process's handles instead of /proc. Duplicated: the caller
	 * keeps (and closes) its own. CUDA_ERROR_INVALID_VALUE for a handle that is not
	 * softgpu's, or descriptors that are not what it names. */
	CUresult (*provide_fds)(const void *handle, const int fds[2]);
};

#endif
