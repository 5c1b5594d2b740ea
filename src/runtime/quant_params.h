/* Quantisation parameters: how each tensor of a model is (or would be)
 * quantised to int8, the set of them a calibration gives, its JSON file,
 * and the scale arithmetic every int8 path shares. The passes that make
 * them are in src/passes/ (quantize.h); the native engines read them
 * (an INT8_STATIC conversion hands the engine the calibration), so they
 * live here, below both. */
#ifndef MB_RUNTIME_QUANT_PARAMS_H
#define MB_RUNTIME_QUANT_PARAMS_H

#include "core/ir.h"

/* X(NAME, "name") */
#define MB_QUANT_CALIBRATION_LIST(X)                                           \
  X(MINMAX, "minmax")                                                          \
  X(PERCENTILE, "percentile")

typedef enum mb_quant_calibration {
#define MB_X(name, str) MB_QUANT_CALIBRATION_##name,
  MB_QUANT_CALIBRATION_LIST(MB_X)
#undef MB_X
      MB_QUANT_CALIBRATION_COUNT
} mb_quant_calibration;

/* X(NAME, "name"): how activations are quantised (static) */
#define MB_QUANT_ACTIVATIONS_LIST(X)                                           \
  X(UINT8, "uint8")                                                            \
  X(INT8_SYMMETRIC, "int8-symmetric")

typedef enum mb_quant_activations {
#define MB_X(name, str) MB_QUANT_ACTIVATIONS_##name,
  MB_QUANT_ACTIVATIONS_LIST(MB_X)
#undef MB_X
      MB_QUANT_ACTIVATIONS_COUNT
} mb_quant_activations;

/* "minmax", "uint8" ...; "invalid" out of range. */
const char *mb__quant_calibration_name(mb_quant_calibration calibration);
const char *mb__quant_activations_name(mb_quant_activations activations);

/* X(NAME, "name") */
#define MB_QUANT_KIND_LIST(X)                                                  \
  X(ACTIVATION, "activation")                                                  \
  X(WEIGHT, "weight")                                                          \
  X(BIAS, "bias")

typedef enum mb_quant_kind {
#define MB_X(name, str) MB_QUANT_KIND_##name,
  MB_QUANT_KIND_LIST(MB_X)
#undef MB_X
      MB_QUANT_KIND_COUNT
} mb_quant_kind;
const char *mb__quant_kind_name(mb_quant_kind kind);

/* How one tensor is (or would be) quantised:
 *   real = (q - zero_point) * scale, q clamped to the range of dtype.
 * Everything is owned by the mb_quant_params holding it. */
typedef struct mb_quant_param {
  char *name; /* the tensor's name in the float model */
  mb_quant_kind kind;
  mb_dtype dtype;   /* UINT8 or INT8; INT32 for biases */
  double min, max;  /* range: calibrated (activations) or of the data */
  int64_t count;    /* activations: values seen in calibration */
  int axis;         /* per-channel axis of the tensor, -1 per tensor */
  int64_t channels; /* entries in scales/zero_points (1 per tensor) */
  float *scales;
  int32_t *zero_points;
  /* Set by mb__quantize_static on the entries it used (a Q/DQ pair, a
   * quantised weight or bias): their scale and zero point are the ones in
   * the graph, which for an op that keeps its input's scale (MaxPool,
   * Reshape ...) are its input's, with that range. */
  int applied;
} mb_quant_param;

typedef struct mb_quant_params {
  mb_quant_calibration calibration;
  double percentile; /* PERCENTILE only */
  mb_quant_activations activations;
  /* The int8 form (mb_quant_options.weights: W8, W7 or MIXED), so that
   * an engine quantising more operands itself (mb__quant_weight_qmax)
   * matches it. */
  mb_int8_weights weights;
  int samples; /* calibration batches run */
  int count, capacity;
  mb_quant_param *tensors;
} mb_quant_params;

/* The entry for tensor `name`, or NULL. params may be NULL. */
mb_quant_param *mb__quant_params_find(const mb_quant_params *params,
                                      const char *name);
/* Releases params and everything in it. NULL is allowed. */
void mb__quant_params_free(mb_quant_params *params);

/* Writes params as JSON (format "modelbench-quant-params", version 1):
 *   {"format": ..., "version": 1, "calibration": "minmax", "percentile": p,
 *    "activations": "uint8", "int8_weights": "8", "samples": n,
 *    "tensors": [{"name", "kind", "dtype", "min", "max", "count", "axis",
 *                 "scales": [...], "zero_points": [...], "applied"}, ...]}
 * Scales read back exactly as float32. params, path: borrowed. Fails with
 * MB_STATUS_IO naming the path. */
mb_status mb__quant_params_write_json(const mb_quant_params *params,
                                      const char *path, mb_error *err);

/* Reads what mb__quant_params_write_json wrote. path: borrowed.
 * *params_out: release with mb__quant_params_free. Fails with
 * MB_STATUS_IO for an unreadable file and MB_STATUS_PARSE (with line and
 * column) for anything else than that format: a user-edited file gets a
 * message, never a crash. */
mb_status mb__quant_params_read_json(const char *path,
                                     mb_quant_params **params_out,
                                     mb_error *err);

/* Scale and zero point for the range [rmin, rmax] (widened to include 0):
 * UINT8 asymmetric over [0, 255], or symmetric over [-127, 127] for INT8.
 * An empty or degenerate range gives scale 1, zero point 0. */
void mb__quant_scale_zero_point(double rmin, double rmax, mb_dtype dtype,
                                float *scale_out, int32_t *zero_point_out);

/* The largest magnitude of an int8 weight of form `weights` for a product
 * whose input is signed (signed_input) or non-negative: 64 (7 bits, as
 * ORT's reduce_range) for W7, and for MIXED with a signed input; else
 * 127. */
int mb__quant_weight_qmax(mb_int8_weights weights, bool signed_input);

/* The index of the entry named `name`, added (zeroed, one channel, of
 * `kind`) when missing; -1 on OOM (err set). Indices stay valid as params
 * grows; pointers into params->tensors do not. */
int mb__quant_params_add(mb_quant_params *params, const char *name,
                         mb_quant_kind kind, mb_error *err);

/* The activation dtype of a form: UINT8 or INT8. */
mb_dtype mb__qz_activation_dtype(mb_quant_activations a);
/* Sizes p's scales and zero points for `channels` entries (zeroed). */
mb_status mb__qz_param_set_channels(mb_quant_param *p, int64_t channels,
                                    mb_error *err);

#endif /* MB_RUNTIME_QUANT_PARAMS_H */
