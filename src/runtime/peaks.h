/* How fast a runtime's own GEMM kernels go on this machine: the compute
 * peaks behind each result's roofline (src/bench/peaks.c measures them). */
#ifndef MB_RUNTIME_PEAKS_H
#define MB_RUNTIME_PEAKS_H

#include "core/internal.h"

/* oneDNN's matmul of n x n by n x n at `precision` (FP32: f32; INT8:
 * u8 x s8 -> s32; BF16: bf16 x bf16 -> f32) on `threads` OpenMP threads:
 * the best of `reps` timed executions after one warm-up, in GFLOP/s
 * (2 n^3 operations each). Fails with MB_STATUS_UNAVAILABLE when modelbench
 * was built without oneDNN, MB_STATUS_UNSUPPORTED when oneDNN has no
 * primitive for the precision on this CPU, naming the precision. */
mb_status mb__dn_gemm_gflops(mb_precision precision, int threads, int n,
                             int reps, double *gflops_out, mb_error *err);

#endif /* MB_RUNTIME_PEAKS_H */
