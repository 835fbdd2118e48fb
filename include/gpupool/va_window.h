/* va_window.h -- the device address windows of a session that spans daemons.
 *
 * A program may use the GPUs of several daemons at once; their device pointers meet in one
 * process and must never collide. Each connection of such a session asks for a window
 * (Hello.va_window, 1..GP_VA_WINDOW_MAX; 0: none), and the worker places every device address
 * of that session inside it (HelloReply.va_window says whether it could). Window k spans
 * [GP_VA_WINDOW_BASE + k * GP_VA_WINDOW_SIZE, + GP_VA_WINDOW_SIZE); device d of the worker
 * has the GP_VA_DEVICE_STRIDE at window base + d * GP_VA_DEVICE_STRIDE, so a window holds
 * at most GP_VA_WINDOW_SIZE / GP_VA_DEVICE_STRIDE (8) devices. Window 0 is softgpu's own
 * default placement (softgpu/memory.c), which no spanning connection is given.
 */
#ifndef GPUPOOL_VA_WINDOW_H
#define GPUPOOL_VA_WINDOW_H

#define GP_VA_WINDOW_BASE (32ull << 40)
#define GP_VA_WINDOW_SIZE (8ull << 40)
#define GP_VA_WINDOW_MAX 11
#define GP_VA_DEVICE_STRIDE (1ull << 40)

/* The worker's handles (contexts, streams, events, modules, libraries, functions, graphs,
 * pools, arrays: every id it hands out) carry the session's window in these bits, so the
 * client knows which connection a handle belongs to; a worker refuses a handle whose
 * window is not its session's. */
#define GP_VA_HANDLE_SHIFT 52
#define GP_VA_HANDLE_TAG_MAX 0xfu
#define GP_VA_HANDLE_TAG(id) ((unsigned)((id) >> GP_VA_HANDLE_SHIFT) & GP_VA_HANDLE_TAG_MAX)

#endif
