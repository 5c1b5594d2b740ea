/* TEMPORARY until wt-nvml merges: no NVML. */
#include "runtime/nvml.h"
#include "core/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mb__gpu_count(char *reason, size_t size) {
  snprintf(reason, size, "no NVIDIA driver (stub)");
  return 0;
}
mb_status mb__gpu_describe(int index, mb_gpu_info *info, mb_error *err) {
  (void)index;
  (void)info;
  return mb__error(err, MB_STATUS_UNSUPPORTED, "no NVML (stub)");
}
mb_status mb__gpu_sampler_start(int index, double period_ms,
                                mb_gpu_sampler **out, mb_error *err) {
  (void)index;
  (void)period_ms;
  *out = NULL;
  return mb__error(err, MB_STATUS_UNSUPPORTED, "no NVML (stub)");
}
void mb__gpu_sampler_stop(mb_gpu_sampler *sampler, mb_gpu_state *state) {
  (void)sampler;
  memset(state, 0, sizeof *state);
}
void mb__gpu_throttle_words(uint64_t reasons, char *out, size_t size) {
  snprintf(out, size, "0x%llx", (unsigned long long)reasons);
}
