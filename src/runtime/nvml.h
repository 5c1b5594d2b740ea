/* NVIDIA GPUs through NVML, the driver's own library (libnvidia-ml.so.1),
 * loaded at run time with dlopen: the build needs no CUDA, and a machine
 * without a driver says so instead of failing. MODELBENCH_NVML_LIB names
 * another file to load (tests load a fake that plays a GPU).
 *
 * Three uses: is there a GPU here (list, --device auto), which one is it
 * (a result's mb_gpu_info), and what state was it in while a conversion
 * ran (a sampler thread over the timed phase: clocks, temperature, power,
 * utilisation, throttle reasons); bench/gpu.c turns that state into
 * warnings. */
#ifndef MB_RUNTIME_NVML_H
#define MB_RUNTIME_NVML_H

#include "modelbench.h"

#include <stddef.h>

/* How many NVIDIA GPUs this process can see; 0 with the reason in
 * reason ("no NVIDIA driver: libnvidia-ml.so.1: cannot open shared
 * object file"). CUDA_VISIBLE_DEVICES="" or "-1" hides them all, saying
 * so. Never initialises CUDA (forking after it is safe). */
int mb__gpu_count(char *reason, size_t size);

/* NVML's index of CUDA's device `cuda_index`: CUDA_VISIBLE_DEVICES="2,3"
 * makes CUDA's device 0 NVML's 2, and a UUID (or a prefix of one) there is
 * looked up by NVML; cuda_index itself when the list is unset or does not
 * say. */
int mb__gpu_nvml_index(int cuda_index);

/* Fills info for device `index` (NVML's index): name, uuid, driver, the
 * CUDA the driver supports, compute capability, memory, maximum clocks,
 * power limit. info->cuda_runtime is left as it was (the runtime's). */
mb_status mb__gpu_describe(int index, mb_gpu_info *info, mb_error *err);

/* Samples device `index` every period_ms on a thread of its own until
 * stopped. */
typedef struct mb_gpu_sampler mb_gpu_sampler;
mb_status mb__gpu_sampler_start(int index, double period_ms,
                                mb_gpu_sampler **out, mb_error *err);
/* How many samples the sampler has taken so far (thread-safe), for
 * callers that must see some samples before stopping (tests). */
int64_t mb__gpu_sampler_samples(mb_gpu_sampler *sampler);
/* Stops the thread, summarises its samples into state (available 0 with
 * the reason when none could be taken) and frees the sampler. */
void mb__gpu_sampler_stop(mb_gpu_sampler *sampler, mb_gpu_state *state);

/* NVML's clocks-event reasons in words, comma-separated, for reasons. */
void mb__gpu_throttle_words(uint64_t reasons, char *out, size_t size);
/* The reasons that slow the device, each with what it means for a
 * reader ("sw_power_cap (the driver held the clocks down to stay under the
 * power limit); ..."); "" when none of them is known. */
void mb__gpu_throttle_explain(uint64_t reasons, char *out, size_t size);

#endif /* MB_RUNTIME_NVML_H */
