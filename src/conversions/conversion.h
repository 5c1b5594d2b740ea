/* The conversion registry: one table row per conversion option. A name is a
 * list of steps joined by '+', applied left to right; the last step names
 * the runtime (REFERENCE, ORT_CPU, ORT_CPU_NO_OPT, ...); the steps before
 * it (OPTIMIZE+, FP16+, INT8_DYNAMIC+, INT8_STATIC+) are the row's `steps`,
 * applied to the model by the worker's build step (bench/build.c). A row's
 * `format` says which form of the model its runtime takes: the ONNX graph
 * for most, a TorchScript file (TORCHSCRIPT) or the PyTorch module itself
 * (EAGER, JIT_*, ..., run by the Python front's host runtime). */
#ifndef MB_CONVERSIONS_CONVERSION_H
#define MB_CONVERSIONS_CONVERSION_H

#include "runtime/runtime.h"

typedef struct mb_conversion_def {
  int id;              /* stable, never reused */
  const char *name;    /* UPPER_CASE steps joined by '+' */
  const char *runtime; /* adapter name in MB_RUNTIME_LIST */
  mb_device device;
  mb_precision precision;
  mb_graph_opt_level opt_level;
  int in_default_set;
  const char *description;
  /* Optional extra availability check beyond the runtime's probe (CPU
   * features, ...): returns 0 and fills reason when unavailable, 2 (with
   * a note in reason) when it runs emulated here (it then leaves tier 2). */
  int (*check)(char *reason, size_t size);
  /* 1: quick check (baseline + default ORT); 2: the core deployment
   * options (one fp32 option per runtime plus its reduced-precision one);
   * 3 (or 0): everything else. Tier N runs every row with tier <= N. */
  int tier;
  /* Model conversion applied at build time, before the runtime prepares:
   * comma-separated graph passes of src/passes ("optimize", "to_fp16") and
   * "quantize_dynamic" / "quantize_static"; NULL: the model as given. */
  const char *steps;
  /* The form of the model the runtime takes (mb_model_format); rows that
   * leave it out run the ONNX model. */
  mb_model_format format;
  /* The devices it can run on, 1u << mb_device; 0: `device` alone. The
   * config's device picks among them (mb__conversion_place). */
  unsigned devices;
} mb_conversion_def;

/* The devices row `def` can run on (its `devices`, or `device` alone). */
unsigned mb__conversion_devices(const mb_conversion_def *def);

/* Where a conversion runs: `wanted` is the config's device (CPU, CUDA or
 * AUTO), info the row as mb_conversion_get described it here. AUTO picks
 * CUDA where the row can run there and it is usable here, else the CPU.
 * CPU or CUDA asked of a row that cannot run there (or not here) fails,
 * with the reason in why, unless allow_override: then it runs where it
 * can, and why says so (a note for the result's warnings). Returns 1 with
 * *placed set, 0 when it cannot run. */
int mb__conversion_place(const mb_conversion_info *info, mb_device wanted,
                         int allow_override, mb_device *placed, char *why,
                         size_t size);

/* Does the row quantise to int8 (a quantize_* or quant_params step)?
 * Such rows have an int8 form (mb_int8_weights). */
bool mb__conversion_quantizes(const mb_conversion_def *def);

/* Row `index` (0 .. mb_conversion_count()-1), or NULL. */
const mb_conversion_def *mb__conversion_def(int index);
/* Adds a row at run time (tests). def must outlive the process. Returns the
 * new index or -1. */
int mb__conversion_register(const mb_conversion_def *def, mb_error *err);

#endif /* MB_CONVERSIONS_CONVERSION_H */
