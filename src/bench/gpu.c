/* A GPU result's warnings (gpu.h): the state runtime/nvml.c sampled over
 * the timed phase, judged as a busy CPU is. */
#include "bench/gpu.h"

#include "bench/bench_internal.h"

/* ---- warnings ---- */

void mb__gpu_state_warnings(const mb_gpu_state *state,
                            mb_bench_result *result) {
  if (!state || !state->available)
    return;
  if (state->sm_clock_mhz_max > 0.0 &&
      state->sm_clock_mhz_min < MB_GPU_CLOCK_DROP * state->sm_clock_mhz_max) {
    char why[200] = "";
    if (state->throttle[0])
      snprintf(why, sizeof why, " (throttled: %s)", state->throttle);
    mb__result_add_warning(
        result,
        "GPU clocks dropped: the SM clock went down to %.0f MHz, %.0f%% of "
        "the %.0f MHz it reached during the timed phase%s; latencies include "
        "slower periods",
        state->sm_clock_mhz_min,
        100.0 * state->sm_clock_mhz_min / state->sm_clock_mhz_max,
        state->sm_clock_mhz_max, why);
  }
  if (state->throttle_reasons) {
    char what[400];
    mb__gpu_throttle_explain(state->throttle_reasons, what, sizeof what);
    if (!what[0]) /* bits this table does not know */
      snprintf(what, sizeof what, "%s", state->throttle);
    mb__result_add_warning(result,
                           "GPU throttled during the timed phase: %s; the "
                           "latencies are slower than the GPU's best and "
                           "may not repeat",
                           what);
  }
}
