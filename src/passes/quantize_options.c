/* INT8 quantisation passes (see quantize.h): dynamic MatMulInteger chains,
 * static QDQ from calibrated ranges, and the quantisation parameters they
 * share. Calibration itself is in calibrate.c.
 *
 * Both passes follow onnxruntime.quantization closely, because the point is
 * that ONNX Runtime's CPU provider recognises the result and runs it on its
 * integer kernels: the node patterns, the input order of each node and the
 * conventions for scales (symmetric int8 weights over [-127, 127], uint8
 * activations with a zero point, int32 biases with scale x_scale * w_scale)
 * are the ones its graph transformers match.
 *
 * README: the quantisation files (interface: quantize.h).
 *   quantize_options.c  options (the parameters themselves, their names,
 *                       scales and JSON file, are runtime/quant_params.c:
 *                       the engines read them too)
 *   quantize_graph.c    graph helpers (constants, uses, new values and
 *                       nodes, pruning) and weight quantisation
 *   quantize_dynamic.c  dynamic quantisation (MatMulInteger chains)
 *   quantize_static.c   static quantisation: the plan (which values get
 *                       Q/DQ pairs) and the rewrite
 *   calibrate.c         activation ranges on the reference interpreter
 *   quantize_internal.h what these files share */
#include "passes/quantize_internal.h"

mb_status mb__quant_options_resolve(const mb_quant_options *in,
                                    mb_quant_options *out, mb_error *err) {
  static const mb_quant_options defaults = {0};
  *out = in ? *in : defaults;
  if ((unsigned)out->calibration >= MB_QUANT_CALIBRATION_COUNT)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "quantisation: unknown calibration method %d",
                     (int)out->calibration);
  if ((unsigned)out->activations >= MB_QUANT_ACTIVATIONS_COUNT)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "quantisation: unknown activation type %d",
                     (int)out->activations);
  if (out->percentile == 0.0)
    out->percentile = MB_QUANT_PERCENTILE_DEFAULT;
  if (!(out->percentile > 0.0 && out->percentile <= 100.0))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "quantisation: percentile %g is not in (0, 100]",
                     out->percentile);
  if (out->n_exclude < 0 || (out->n_exclude > 0 && !out->exclude))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "quantisation: %d excluded nodes but no list",
                     out->n_exclude);
  if (out->threads <= 0)
    out->threads = 1;
  if (out->weights == MB_INT8_WEIGHTS_AUTO)
    out->weights = MB_INT8_WEIGHTS_W8;
  if ((unsigned)out->weights >= MB_INT8_WEIGHTS_COUNT)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "quantisation: unknown int8 weights form %d",
                     (int)out->weights);
  return MB_STATUS_OK;
}

bool mb__qz_excluded(const mb_quant_options *opt, const mb_node *n) {
  for (int i = 0; i < opt->n_exclude; i++)
    if (opt->exclude[i] && strcmp(opt->exclude[i], n->name) == 0)
      return true;
  return false;
}
