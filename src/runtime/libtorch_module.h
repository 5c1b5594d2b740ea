/* The C ABI between the libtorch runtime adapter (libtorch.c, inside
 * libmodelbench) and the modules built from libtorch_module.cpp, the only
 * code that links libtorch: libmodelbench-libtorch.so against Debian's
 * libtorch (TORCHSCRIPT) and libmodelbench-aoti.so against the libtorch in
 * the project's PyTorch 2.x wheel (AOTInductor packages, and TorchScript).
 *
 * libmodelbench never links libtorch: its static initialisers would run in
 * every process that loads the library (the CLI, every test binary, the
 * sanitizer builds). The adapter dlopens a module when a conversion of its
 * runtime is prepared and calls it through one table.
 *
 * The ABI uses only the public header's plain types (mb_status, mb_dtype,
 * mb_error): the module calls nothing in libmodelbench. Every function
 * catches C++ exceptions inside the module; failures come back as a status
 * and a one-line message in the caller's mb_error, and the full text
 * (TorchScript's traceback) from take_error_detail. */
#ifndef MB_RUNTIME_LIBTORCH_MODULE_H
#define MB_RUNTIME_LIBTORCH_MODULE_H

#include "modelbench.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever the table or the view below changes; the adapter
 * refuses a module built for another version. */
#define MB_LIBTORCH_ABI_VERSION 3
#define MB_LIBTORCH_MODULE_FILE "libmodelbench-libtorch.so"
#define MB_AOTI_MODULE_FILE "libmodelbench-aoti.so"
/* The one exported symbol: const mb_libtorch_module *(void). */
#define MB_LIBTORCH_MODULE_ENTRY "mb_libtorch_module_get"

/* A tensor crossing the ABI: borrowed data, contiguous, row-major. */
typedef struct mb_libtorch_tensor {
  const char *name; /* an input's name or an output's (a dict key), or NULL */
  mb_dtype dtype;
  int rank;
  int64_t dims[MB_MAX_RANK];
  void *data;
  size_t nbytes;
} mb_libtorch_tensor;

typedef struct mb_libtorch_module {
  int abi_version;     /* MB_LIBTORCH_ABI_VERSION */
  const char *version; /* libtorch's version, "1.13.0", "2.15.0" */
  /* Loads a TorchScript file as a C++ deployment does: torch::jit::load on
   * the CPU (cuda < 0) or onto CUDA device `cuda` (map_location), eval(),
   * at::set_num_threads(threads) and one inter-op thread. forward() must
   * take n_inputs tensors (arguments with defaults may be left out). path:
   * borrowed. *session_out: released with release. A module without CUDA
   * fails a cuda >= 0 with MB_STATUS_UNAVAILABLE and why. */
  mb_status (*load)(const char *path, int threads, int n_inputs, int cuda,
                    void **session_out, mb_error *err);
  /* One forward() under torch::InferenceMode: the timed call. inputs:
   * n_inputs views, borrowed until the next run or release (the module
   * wraps them without copying where libtorch has the dtype; on CUDA it
   * copies each sample to the device once, by its address, and keeps it
   * there). On CUDA the call is between two CUDA events on the current
   * stream and returns after a synchronisation. The result stays in the
   * session (on the device). */
  mb_status (*run)(void *session, const mb_libtorch_tensor *inputs,
                   mb_error *err);
  /* The last run's result as *count_out contiguous tensors (a tuple, list
   * or dict flattened in order; quantized tensors dequantized, float16 and
   * bfloat16 as float32). outputs_out: *count_out views, valid until the
   * next run, outputs or release; NULL when *count_out is 0. */
  mb_status (*outputs)(void *session, const mb_libtorch_tensor **outputs_out,
                       int *count_out, mb_error *err);
  void (*release)(void *session);
  /* Loads an AOTInductor package (torch._inductor.aoti_compile_and_package's
   * .pt2) as a C++ deployment does: AOTIModelPackageLoader, one runner,
   * at::set_num_threads(threads), on the device the package was compiled
   * for, which must be the one asked for (cuda < 0: the CPU; else CUDA
   * device `cuda`). Its run() takes n_inputs tensors and returns a list of
   * tensors; run, outputs and release as above. NULL in a module whose
   * libtorch has no AOTInductor (before 2.6). */
  mb_status (*load_package)(const char *path, int threads, int n_inputs,
                            int cuda, void **session_out, mb_error *err);
  /* The multi-line text of this thread's last failure, malloc'd for the
   * caller (free()), or NULL. */
  char *(*take_error_detail)(void);
  /* CUDA sessions (a session on the CPU, or a module built without CUDA,
   * answers < 0, 0 and MB_STATUS_UNSUPPORTED). The device time of the last
   * run in ms (its two events), < 0 before any. */
  double (*gpu_compute_ms)(void *session);
  /* 1 with gpu filled (caller-owned): the device's index, name, compute
   * capability, the CUDA this libtorch was built with, and the peak
   * memory PyTorch's caching allocator held in this process; 0 on the
   * CPU. */
  int (*gpu_describe)(void *session, mb_host_gpu *gpu);
  /* n timed copies of the n_inputs `inputs` to the device (from pinned
   * host memory, as a serving loop that pins its buffers does) and of the
   * last outputs back into pinned buffers, each between CUDA events:
   * h2d_ms[0..n), d2h_ms[0..n) (caller-owned); MB of one copy each way in
   * mb[0], mb[1]. */
  mb_status (*gpu_copies)(void *session, const mb_libtorch_tensor *inputs,
                          int n, double *h2d_ms, double *d2h_ms, double *mb,
                          mb_error *err);
} mb_libtorch_module;

typedef const mb_libtorch_module *(*mb_libtorch_module_get_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* MB_RUNTIME_LIBTORCH_MODULE_H */
