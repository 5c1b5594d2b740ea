/* Pre-quantised models: which operators make a model quantised, found by
 * one table. A model quantised before modelbench sees it (QDQ from a
 * quantisation tool, QOperator, integer MatMul/Conv, dynamic quantisation)
 * rounds at every quantisation boundary, and the reference interpreter and
 * each runtime round differently there (ties, requantisation order, int32
 * accumulation, fused scales), so fp32 tolerances do not fit it. */
#include "analysis/quantization.h"

#include <stdlib.h>

typedef enum quant_match { MATCH_EXACT, MATCH_PREFIX } quant_match;

/* One kind of quantisation operator. quantizes: it quantises activations
 * or computes in integers (DequantizeLinear alone only widens stored
 * weights, which every runtime does exactly). Domains are not checked: the
 * com.microsoft spellings (QLinearAdd, QGemm, DynamicQuantizeMatMul, ...)
 * quantise as much as the ai.onnx ones. Rows of one family are adjacent. */
typedef struct quant_op_row {
  const char *family;
  const char *op_type;
  quant_match match;
  bool quantizes;
} quant_op_row;

static const quant_op_row quant_ops[] = {
    {"QDQ", "QuantizeLinear", MATCH_EXACT, true},
    {"QDQ", "DequantizeLinear", MATCH_EXACT, false},
    {"QOperator", "QLinear", MATCH_PREFIX, true},
    {"QOperator", "QGemm", MATCH_EXACT, true},
    {"QOperator", "QAttention", MATCH_EXACT, true},
    {"integer", "MatMulInteger", MATCH_PREFIX, true},
    {"integer", "ConvInteger", MATCH_EXACT, true},
    {"dynamic", "DynamicQuantize", MATCH_PREFIX, true},
};

/* Distinct operator names a description lists; more are counted in the
 * flag but not named (no real model has that many). */
#define MAX_FOUND 32

typedef struct quant_found {
  const char *op_type; /* the model's spelling (its arena) */
  int row;             /* into quant_ops */
  int64_t count;
} quant_found;

static int quant_row(const char *op_type) {
  for (int i = 0; i < (int)MB_ARRAY_COUNT(quant_ops); i++) {
    const quant_op_row *row = &quant_ops[i];
    size_t n = strlen(row->op_type);
    if (row->match == MATCH_EXACT ? strcmp(op_type, row->op_type) == 0
                                  : strncmp(op_type, row->op_type, n) == 0)
      return i;
  }
  return -1;
}

static void add_found(quant_found *found, int *n_found, const char *op_type,
                      int row) {
  for (int i = 0; i < *n_found; i++) {
    if (strcmp(found[i].op_type, op_type) == 0) {
      found[i].count++;
      return;
    }
  }
  if (*n_found < MAX_FOUND)
    found[(*n_found)++] = (quant_found){op_type, row, 1};
}

static bool is_int8_initializer(const mb_value *v) {
  return v->kind == MB_VALUE_INITIALIZER && v->initializer &&
         (v->initializer->dtype == MB_DTYPE_INT8 ||
          v->initializer->dtype == MB_DTYPE_UINT8);
}

/* Appends to buf at *used, cutting what does not fit. */
static void append(char *buf, size_t size, size_t *used, const char *fmt, ...)
    MB_PRINTF(4, 5);
static void append(char *buf, size_t size, size_t *used, const char *fmt, ...) {
  if (!buf || *used + 1 >= size)
    return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + *used, size - *used, fmt, ap);
  va_end(ap);
  if (n > 0)
    *used = MB_MIN(*used + (size_t)n, size - 1);
}

/* "QDQ: 12 QuantizeLinear, 12 DequantizeLinear; integer: 1 MatMulInteger",
 * families in table order, then the int8/uint8 initializers. */
static void describe(const quant_found *found, int n_found,
                     int64_t int8_initializers, char *buf, size_t size) {
  size_t used = 0;
  const char *family = NULL;
  for (int row = 0; row < (int)MB_ARRAY_COUNT(quant_ops); row++) {
    for (int i = 0; i < n_found; i++) {
      if (found[i].row != row)
        continue;
      bool same = family && strcmp(family, quant_ops[row].family) == 0;
      if (!same)
        append(buf, size, &used, "%s%s: ", family ? "; " : "",
               quant_ops[row].family);
      append(buf, size, &used, "%s%lld %s", same ? ", " : "",
             (long long)found[i].count, found[i].op_type);
      family = quant_ops[row].family;
    }
  }
  if (int8_initializers > 0)
    append(buf, size, &used, "; %lld int8/uint8 initializer%s",
           (long long)int8_initializers, int8_initializers == 1 ? "" : "s");
}

bool mb__model_quantization(const mb_model *model, char *buf, size_t size) {
  quant_found found[MAX_FOUND];
  int n_found = 0;
  int64_t int8_initializers = 0;
  bool quantized = false;
  if (buf && size > 0)
    buf[0] = '\0';
  const mb_graph *g = model ? model->graph : NULL;
  if (!g)
    return false;
  /* An initializer read by several quantisation nodes (a shared zero
   * point) counts once; without memory for the marks the count is left
   * out, the verdict is not. */
  bool *counted = calloc((size_t)MB_MAX(g->n_values, 1), sizeof *counted);
  for (int n = 0; n < g->n_nodes; n++) {
    const mb_node *node = &g->nodes[n];
    int row = node->op_type ? quant_row(node->op_type) : -1;
    if (row < 0)
      continue;
    quantized = quantized || quant_ops[row].quantizes;
    add_found(found, &n_found, node->op_type, row);
    for (int i = 0; counted && i < node->n_inputs; i++) {
      int v = node->inputs[i];
      if (v < 0 || v >= g->n_values || counted[v] ||
          !is_int8_initializer(&g->values[v]))
        continue;
      counted[v] = true;
      int8_initializers++;
    }
  }
  free(counted);
  describe(found, n_found, int8_initializers, buf, size);
  return quantized;
}

mb_accuracy_criterion mb__accuracy_criterion(mb_precision precision,
                                             bool model_quantized) {
  return precision != MB_PRECISION_FP32 || model_quantized
             ? MB_ACCURACY_COSINE
             : MB_ACCURACY_TOLERANCE;
}
