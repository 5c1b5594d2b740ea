/* A GPU result's warnings: the state runtime/nvml.c sampled over the
 * timed phase, judged as a busy CPU is. */
#ifndef MB_BENCH_GPU_H
#define MB_BENCH_GPU_H

#include "runtime/nvml.h"

/* Warnings about a GPU result's state, added to result: the SM clock's
 * minimum under MB_GPU_CLOCK_DROP of its maximum over the run, or any
 * throttle reason that slows the device (power cap, thermal, hardware
 * slowdown). */
#define MB_GPU_CLOCK_DROP 0.9
void mb__gpu_state_warnings(const mb_gpu_state *state, mb_bench_result *result);

#endif /* MB_BENCH_GPU_H */
