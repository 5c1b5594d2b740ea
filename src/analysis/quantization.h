/* Whether a model is already quantised: the one place that decides it, for
 * `analyze` (mb_model_stats) and for `bench`, which judges every conversion
 * of such a model by the reduced-precision accuracy criterion. */
#ifndef MB_ANALYSIS_QUANTIZATION_H
#define MB_ANALYSIS_QUANTIZATION_H

#include "core/internal.h"
#include "core/ir.h"

/* Looks at the main graph's nodes for quantisation operators (the table
 * in quantization.c: QuantizeLinear/DequantizeLinear, QLinear*, QGemm,
 * QAttention, MatMulInteger*, ConvInteger, DynamicQuantize*) and counts the
 * int8/uint8 initializers they read. buf (caller-owned, may be NULL when
 * size is 0) receives what was found, "QDQ: 12 QuantizeLinear, 12
 * DequantizeLinear; 26 int8/uint8 initializers", or "" when nothing.
 * Returns true when the model is pre-quantised: some operator quantises
 * activations or computes in integers, so runtimes round differently from
 * the reference interpreter at quantisation boundaries. DequantizeLinear
 * alone (weights stored in int8, arithmetic in fp32) is described but does
 * not make the model quantised. A NULL model or graph is not quantised. */
bool mb__model_quantization(const mb_model *model, char *buf, size_t size);

/* The accuracy criterion for a conversion at `precision` of a model that
 * is pre-quantised or not: COSINE for a reduced precision or a quantised
 * model, TOLERANCE (rtol/atol) for fp32 on a float model. */
mb_accuracy_criterion mb__accuracy_criterion(mb_precision precision,
                                             bool model_quantized);

#endif
