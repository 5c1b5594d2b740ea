/* TEMPORARY until wt-nvml merges. */
#include "bench/gpu.h"
#include "bench/bench_internal.h"

void mb__gpu_state_warnings(const mb_gpu_state *state,
                            mb_bench_result *result) {
  (void)state;
  (void)result;
}
