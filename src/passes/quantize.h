/* INT8 quantisation of a float32 model, in the two forms ONNX Runtime's CPU
 * provider runs on its integer kernels.
 *
 * Dynamic (mb__quantize_dynamic): the weights of MatMul and Gemm nodes with
 * constant 2-D weights are stored as int8 (symmetric, one scale per output
 * column unless per_tensor_weights); activations are quantised at run time.
 * Each such node becomes the chain onnxruntime.quantization.quantize_dynamic
 * writes, which ORT fuses into DynamicQuantizeMatMul:
 *
 *   A -> DynamicQuantizeLinear -> (A_q uint8, A_scale, A_zp)
 *   MatMulInteger(A_q, W_q int8 [K,N], A_zp, W_zp int8 zeros)  -> int32
 *   Cast(to float) -> Mul(., Mul(A_scale, W_scale)) [-> Add bias] -> Y
 *
 * Static (mb__calibrate, then mb__quantize_static): the float model runs on
 * the reference interpreter over caller-given calibration batches, which
 * gives a range per activation tensor (MinMax, or Percentile over a
 * histogram). QuantizeLinear -> DequantizeLinear pairs then go onto the
 * inputs and outputs of the ops ORT's CPU provider has QDQ fusions for, as
 * onnxruntime.quantization.quantize_static(quant_format=QDQ) places them:
 * Conv, MatMul, Gemm (QLinearConv, QLinearMatMul, QGemm), Add, Mul,
 * AveragePool, GlobalAveragePool, Sigmoid, LeakyRelu, Concat, and the ops
 * that run on uint8 with their input's scale (MaxPool, Reshape, Transpose,
 * Flatten, Squeeze, Unsqueeze, Resize, Gather, Slice). Weights become int8
 * + DequantizeLinear (per channel: axis 0 for Conv, the output column for
 * MatMul/Gemm) and Conv/Gemm biases int32 with scale input_scale *
 * weight_scale. A graph output is never quantised (the op before it then
 * fuses to a float-output form), so graph inputs and outputs stay float32.
 * BatchNormalization is not folded here: run the fold_batchnorm pass first
 * (before calibrating) or it stays a float op between Q/DQ pairs.
 *
 * Activations default to uint8 asymmetric, ORT's default on x86: its
 * kernels are U8S8 (uint8 activations x int8 weights), and with a zero
 * point a Relu or Clip(min <= 0) after a quantised op is absorbed by the
 * saturation of the Q node, so it is removed as ORT's quantiser removes it.
 * int8 symmetric activations are there for engines that want them; ORT
 * 1.30 on x86 runs them at about float speed (the Relus stay, most Conv
 * groups are not fused), so uint8 is the one to benchmark on ORT.
 *
 * Both passes rewrite a model in place: callers work on a private copy.
 * After them the model's path still names the float file, so runtimes must
 * be given the serialised bytes of the rewritten model. */
#ifndef MB_PASSES_QUANTIZE_H
#define MB_PASSES_QUANTIZE_H

#include "runtime/quant_params.h"

#define MB_QUANT_PERCENTILE_DEFAULT 99.999

/* Zero-initialise: zero means the default everywhere. */
typedef struct mb_quant_options {
  /* mb__calibrate: how a tensor's range is taken from what it saw. MINMAX
   * (the default, as ORT's) or PERCENTILE: the range keeps `percentile`
   * percent of the values, cutting the same share at each end. */
  mb_quant_calibration calibration;
  double percentile; /* in (0, 100]; 0: MB_QUANT_PERCENTILE_DEFAULT */
  mb_quant_activations activations; /* static; default UINT8 */
  /* 0: weights get one scale per output channel where the form allows (and
   * the model's opset is >= 13 for static QDQ); 1: one scale per tensor. */
  int per_tensor_weights;
  /* Static: 0 stores Conv and Gemm biases as int32 (what ORT's QLinearConv
   * and QGemm fusions need); 1 leaves them float. */
  int float_bias;
  /* Static, uint8 activations: 0 removes a Relu or Clip(min <= 0) that
   * follows a quantised op, its output's Q node clamping the same way. */
  int keep_relu;
  /* mb__calibrate: reference interpreter threads; <= 0: 1. */
  int threads;
  /* Width of the int8 weights of Conv, MatMul and Gemm (and of the
   * activation a product of two activations reads as its weights), the
   * int8 form (mb_int8_weights in modelbench.h): W8 (the default; AUTO
   * means W8) over [-127, 127]; W7 over [-64, 64], ORT's reduce_range;
   * MIXED: W7 for a product whose input is signed (its calibrated range
   * goes below 0, or is unknown: dynamic quantisation), W8 where it is
   * non-negative. mb__int8_form (runtime/runtime.h) says which a runtime
   * wants here. */
  mb_int8_weights weights;
  /* Static: 1 quantises only Conv, and MatMul and Gemm with constant
   * weights, on their inputs (no Q on their outputs, nothing else): the
   * model the engines that run those in int8 and float between them
   * compute (the quant_params rows: INT8_STATIC+ONEDNN, +XNNPACK), as
   * tune's estimator models them. */
  int products_only;
  /* Names of nodes left in float32 (borrowed for the call). */
  int n_exclude;
  const char *const *exclude;
} mb_quant_options;

/* What a quantisation pass did. */
typedef struct mb_quant_stats {
  int nodes_quantized;       /* nodes that now run on integer kernels */
  int matmul_quantized;      /* of which MatMul */
  int gemm_quantized;        /* of which Gemm */
  int conv_quantized;        /* of which Conv */
  int weights_quantized;     /* constant tensors now int8 (or int32 bias) */
  int activations_quantized; /* Q/DQ pairs, or DynamicQuantizeLinear nodes */
  int nodes_removed;         /* Relu/Clip absorbed by a Q node */
  int nodes_skipped; /* candidates left in float (form, exclusion, range) */
  int64_t weight_bytes_before, weight_bytes_after; /* of those quantised */
} mb_quant_stats;

/* ---- the passes ---- */

/* Dynamic INT8: see the top of this file. model: modified in place (the
 * caller owns a private copy). opt: borrowed, may be NULL (defaults).
 * stats: may be NULL; else overwritten. A node whose form is not supported
 * (MatMul with a non-constant or non-2-D weight, Gemm with transA or a
 * non-constant bias and beta != 1) stays float and is counted in
 * nodes_skipped. Fails with MB_STATUS_UNSUPPORTED when the model's default
 * opset is below 11 (DynamicQuantizeLinear); the model is then unchanged.
 * On other failures (out of memory) it may be half rewritten. */
mb_status mb__quantize_dynamic(mb_model *model, const mb_quant_options *opt,
                               mb_quant_stats *stats, mb_error *err);

/* Runs the float model on the reference interpreter over n_batches
 * calibration batches and records the range of every float tensor it
 * computes (graph inputs and node outputs), with the scale and zero point
 * for opt->activations. batches[b] holds one tensor per graph input, in
 * graph input order (all borrowed for the call). model: borrowed. opt: may
 * be NULL. *params_out: release with mb__quant_params_free. Fails with
 * MB_STATUS_INVALID_ARGUMENT for no batches or a bad option, with the
 * interpreter's status (naming the batch) when a run fails, and with
 * MB_STATUS_UNSUPPORTED when the interpreter lacks an operator. */
mb_status mb__calibrate(const mb_model *model,
                        const mb_tensor *const *const *batches, int n_batches,
                        const mb_quant_options *opt,
                        mb_quant_params **params_out, mb_error *err);

/* Static INT8 in QDQ form: see the top of this file. model: the float model
 * that was calibrated (names must match; it may be the very object
 * mb__calibrate read, which keeps nothing), modified in place. params: the
 * calibration; on return the entries used are marked applied with the
 * scale and zero point in the graph (recomputed from their range for
 * opt->activations), and entries for the weights and biases quantised are
 * added, so that params describes the quantised model (write it with
 * mb__quant_params_write_json). opt: may be NULL. stats: may be NULL. An op
 * whose activations have no range stays float (a Conv, MatMul or Gemm is
 * then counted in nodes_skipped). Fails with
 * MB_STATUS_UNSUPPORTED when the default opset is below 10 (QDQ) and
 * MB_STATUS_INVALID_ARGUMENT for a bad option, the model then unchanged. */
mb_status mb__quantize_static(mb_model *model, mb_quant_params *params,
                              const mb_quant_options *opt,
                              mb_quant_stats *stats, mb_error *err);

/* ---- shared by the quantize_*.c files and calibrate.c ---- */

/* Copies *in (or the defaults when NULL) into *out with zeros replaced by
 * defaults. Fails with MB_STATUS_INVALID_ARGUMENT for a bad option. */
mb_status mb__quant_options_resolve(const mb_quant_options *in,
                                    mb_quant_options *out, mb_error *err);
#endif /* MB_PASSES_QUANTIZE_H */
