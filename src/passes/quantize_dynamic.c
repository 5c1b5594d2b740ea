/* Dynamic quantisation: MatMul and Gemm with constant 2-D weights become
 * the DynamicQuantizeLinear -> MatMulInteger chain ONNX Runtime fuses (see
 * quantize.h). */
#include "passes/quantize_internal.h"

/* A quantised weight of the dynamic form, shared by the nodes that read
 * the same constant the same way (exporters share weights through
 * Identity nodes). */
typedef struct dyn_weight {
  int source; /* constant_source of the float weight */
  bool trans_b;
  float alpha;
  int q, scale, zero_point; /* initializers */
} dyn_weight;

typedef struct dyn_cache {
  int count, capacity;
  dyn_weight *items;
} dyn_cache;

/* The int8 [K, N] initializers for weight value b of a MatMul (or of a
 * Gemm with trans_b and alpha), one scale per column N unless
 * per_tensor_weights, alpha folded into the scales. */
static mb_status dynamic_weight(mb_graph *g, int b, bool trans_b, float alpha,
                                const mb_quant_options *opt, dyn_cache *cache,
                                mb_quant_stats *st, dyn_weight *out,
                                mb_error *err) {
  int source = mb__qz_constant_source(g, b);
  for (int i = 0; i < cache->count; i++)
    if (cache->items[i].source == source &&
        cache->items[i].trans_b == trans_b && cache->items[i].alpha == alpha) {
      *out = cache->items[i];
      return MB_STATUS_OK;
    }
  if (cache->count == cache->capacity) {
    int cap = cache->capacity ? cache->capacity * 2 : 16;
    dyn_weight *grown = realloc(cache->items, sizeof *grown * (size_t)cap);
    if (!grown)
      return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    cache->items = grown;
    cache->capacity = cap;
  }
  const mb_tensor *w = mb__qz_constant_of(g, b);
  bool per_channel = !opt->per_tensor_weights;
  int64_t k = trans_b ? w->dims[1] : w->dims[0];
  int64_t cols = trans_b ? w->dims[0] : w->dims[1];
  int64_t channels = per_channel ? cols : 1;
  mb_tensor *q = NULL, *scale = NULL, *zp = NULL;
  float *scales = malloc(sizeof(float) * (size_t)channels);
  double lo, hi;
  if (!scales)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  mb_status status = mb__qz_quantize_symmetric(
      w, per_channel ? (trans_b ? 0 : 1) : -1,
      /* The input's range is known only at run time: signed for MIXED. */
      mb__quant_weight_qmax(opt->weights, true), &q, scales, &lo, &hi, err);
  if (!status && trans_b) {
    mb_tensor *t = NULL;
    int64_t dims[2] = {k, cols};
    status = mb_tensor_create(MB_DTYPE_INT8, 2, dims, &t, err);
    if (!status) {
      const int8_t *src = q->data;
      int8_t *dst = t->data;
      for (int64_t r = 0; r < cols; r++)
        for (int64_t col = 0; col < k; col++)
          dst[col * cols + r] = src[r * k + col];
    }
    mb_tensor_free(q);
    q = t;
  }
  for (int64_t ch = 0; ch < channels; ch++)
    scales[ch] *= alpha;
  if (!status)
    status = mb__qz_small_tensor(MB_DTYPE_FLOAT, channels, per_channel, scales,
                                 &scale, err);
  if (!status)
    status = mb__qz_small_tensor(MB_DTYPE_INT8, channels, per_channel, NULL,
                                 &zp, err);
  free(scales);
  if (status) {
    mb_tensor_free(q);
    mb_tensor_free(scale);
    return status;
  }
  st->weight_bytes_before += (int64_t)w->nbytes;
  st->weight_bytes_after += (int64_t)(q->nbytes + scale->nbytes);
  st->weights_quantized++;
  const char *name = g->values[source].name;
  dyn_weight d = {source, trans_b, alpha, -1, -1, -1};
  d.q = mb__qz_new_initializer(g, name, "_quantized", q, err);
  if (d.q >= 0) {
    d.scale = mb__qz_new_initializer(g, name, "_scale", scale, err);
    scale = NULL;
  }
  if (d.scale >= 0) {
    d.zero_point = mb__qz_new_initializer(g, name, "_zero_point", zp, err);
    zp = NULL;
  }
  mb_tensor_free(scale);
  mb_tensor_free(zp);
  if (d.zero_point < 0)
    return err ? err->status : MB_STATUS_OUT_OF_MEMORY;
  cache->items[cache->count++] = d;
  *out = d;
  return MB_STATUS_OK;
}

/* Rewrites MatMul/Gemm node i into the DynamicQuantizeLinear ->
 * MatMulInteger -> Cast -> Mul chain. Returns MB_STATUS_OK with *done
 * false when the node's form is not supported. */
static mb_status dynamic_node(mb_graph *g, int i, const mb_quant_options *opt,
                              dyn_cache *cache, bool *remove,
                              mb_quant_stats *st, bool *done, mb_error *err) {
  const mb_node *n = &g->nodes[i];
  bool gemm = strcmp(n->op_type, "Gemm") == 0;
  int a = n->n_inputs > 0 ? n->inputs[0] : -1;
  int b = n->n_inputs > 1 ? n->inputs[1] : -1;
  int c = gemm && n->n_inputs > 2 ? n->inputs[2] : -1;
  int y = n->n_outputs > 0 ? n->outputs[0] : -1;
  const mb_tensor *w = mb__qz_constant_of(g, b);
  float alpha = gemm ? mb__node_attr_float(n, "alpha", 1.0f) : 1.0f;
  float beta = gemm ? mb__node_attr_float(n, "beta", 1.0f) : 1.0f;
  bool trans_b = gemm && mb__node_attr_int(n, "transB", 0) != 0;
  const mb_tensor *bias = mb__qz_constant_of(g, c);
  *done = false;
  if (a < 0 || y < 0 || !w || w->dtype != MB_DTYPE_FLOAT || w->rank != 2 ||
      w->numel == 0 || !w->data || mb__qz_constant_of(g, a) ||
      n->n_outputs != 1 || g->values[a].rank == 1)
    return MB_STATUS_OK;
  if (gemm && (mb__node_attr_int(n, "transA", 0) != 0 ||
               (c >= 0 && !bias && beta != 1.0f) ||
               (bias && bias->dtype != MB_DTYPE_FLOAT)))
    return MB_STATUS_OK;

  dyn_weight wd = {.q = -1, .scale = -1, .zero_point = -1};
  mb_status status =
      dynamic_weight(g, b, trans_b, alpha, opt, cache, st, &wd, err);
  if (status)
    return status;
  int cb = c; /* the bias operand: C, or beta * C */
  if (bias && beta != 1.0f) {
    mb_tensor *bias_t = NULL;
    if ((status = mb_tensor_clone(bias, &bias_t, err)))
      return status;
    for (int64_t e = 0; e < bias_t->numel; e++)
      ((float *)bias_t->data)[e] *= beta;
    cb = mb__qz_new_initializer(g, g->values[mb__qz_constant_source(g, c)].name,
                                "_scaled", bias_t, err);
    if (cb < 0)
      return err ? err->status : MB_STATUS_OUT_OF_MEMORY;
  }
  const char *aname = g->values[a].name, *yname = g->values[y].name;
  int aq = mb__qz_new_value(g, aname, "_quantized", err);
  int as = aq < 0 ? -1 : mb__qz_new_value(g, aname, "_scale", err);
  int az = as < 0 ? -1 : mb__qz_new_value(g, aname, "_zero_point", err);
  int mm = az < 0 ? -1 : mb__qz_new_value(g, yname, "_MatMulInteger", err);
  int cast = mm < 0 ? -1 : mb__qz_new_value(g, yname, "_cast", err);
  int sc = cast < 0 ? -1 : mb__qz_new_value(g, yname, "_scale", err);
  int pre = sc < 0    ? -1
            : cb >= 0 ? mb__qz_new_value(g, yname, "_unbiased", err)
                      : y;
  if (pre < 0)
    return err ? err->status : MB_STATUS_OUT_OF_MEMORY;
  /* Input orders as ORT's MatMulIntegerToFloat and DynamicQuantizeMatMul
   * fusions read them: Mul(A_scale, W_scale), Mul(cast, scale). */
  const int dql_out[3] = {aq, as, az}, mm_in[4] = {aq, wd.q, az, wd.zero_point};
  const int sc_in[2] = {as, wd.scale}, mul_in[2] = {cast, sc};
  const int add_in[2] = {pre, cb};
  int node;
  if (mb__qz_add_node(g, "DynamicQuantizeLinear", "", 1, &a, 3, dql_out, err) <
          0 ||
      mb__qz_add_node(g, "MatMulInteger", "", 4, mm_in, 1, &mm, err) < 0 ||
      (node = mb__qz_add_node(g, "Cast", "", 1, &mm, 1, &cast, err)) < 0 ||
      mb__node_set_int(g, node, "to", MB_DTYPE_FLOAT, err) ||
      mb__qz_add_node(g, "Mul", "", 2, sc_in, 1, &sc, err) < 0 ||
      mb__qz_add_node(g, "Mul", "", 2, mul_in, 1, &pre, err) < 0 ||
      (cb >= 0 && mb__qz_add_node(g, "Add", "", 2, add_in, 1, &y, err) < 0))
    return err ? err->status : MB_STATUS_OUT_OF_MEMORY;
  remove[i] = true;
  st->activations_quantized++;
  *done = true;
  return MB_STATUS_OK;
}

/* ORT folds a bias Add into MatMulIntegerToFloat only when the bias is its
 * second input: swaps Add(bias, y) where y has no other reader. */
static void bias_second(mb_graph *g, int y, const int *uses) {
  if (y < 0 || uses[y] != 1 || mb__qz_is_graph_output(g, y))
    return;
  for (int i = 0; i < g->n_nodes; i++) {
    mb_node *n = &g->nodes[i];
    if (strcmp(n->op_type, "Add") != 0 || n->domain[0] || n->n_inputs != 2 ||
        n->inputs[1] != y || !mb__qz_constant_of(g, n->inputs[0]))
      continue;
    n->inputs[1] = n->inputs[0];
    n->inputs[0] = y;
    return;
  }
}

mb_status mb__quantize_dynamic(mb_model *model, const mb_quant_options *opt_in,
                               mb_quant_stats *stats, mb_error *err) {
  mb_quant_options opt;
  mb_quant_stats st = {0};
  mb_status status = mb__quant_options_resolve(opt_in, &opt, err);
  if (status)
    return status;
  mb_graph *g = model->graph;
  int64_t opset = mb__model_opset(model, "");
  if (opset < 11)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "dynamic quantisation needs opset >= 11 "
                     "(DynamicQuantizeLinear); the model imports opset %lld",
                     (long long)opset);
  int n_orig = g->n_nodes;
  dyn_cache cache = {0};
  bool *remove = calloc((size_t)n_orig + 1, sizeof *remove);
  int *outputs = calloc((size_t)n_orig + 1, sizeof *outputs);
  int *uses = NULL;
  bool *sub_read = NULL;
  if (!remove || !outputs) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (int i = 0; i < n_orig; i++) {
    const mb_node *n = &g->nodes[i];
    outputs[i] = -1;
    if (n->domain[0] ||
        (strcmp(n->op_type, "MatMul") != 0 && strcmp(n->op_type, "Gemm") != 0))
      continue;
    bool done = false;
    if (!mb__qz_excluded(&opt, n) &&
        (status = dynamic_node(g, i, &opt, &cache, remove, &st, &done, err))) {
      char label[160];
      mb__error_prefix(err, status, "dynamic quantisation of %s",
                       mb__node_label(&g->nodes[i], label, sizeof label));
      goto done;
    }
    if (!done) {
      st.nodes_skipped++;
      continue;
    }
    outputs[i] = g->nodes[i].outputs[0];
    st.nodes_quantized++;
    if (strcmp(g->nodes[i].op_type, "Gemm") == 0)
      st.gemm_quantized++;
    else
      st.matmul_quantized++;
  }
  if ((status = mb__qz_remove_and_prune(g, remove, n_orig, err)))
    goto done;
  if ((status = mb__graph_finalize(g, err))) {
    mb__error_prefix(err, status, "dynamic quantisation");
    goto done;
  }
  uses = calloc((size_t)g->n_values + 1, sizeof *uses);
  sub_read = calloc((size_t)g->n_values + 1, sizeof *sub_read);
  if (!uses || !sub_read) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  mb__qz_count_uses(g, NULL, uses, sub_read);
  for (int i = 0; i < n_orig; i++)
    bias_second(g, outputs[i], uses);
done:
  free(cache.items);
  free(remove);
  free(outputs);
  free(uses);
  free(sub_read);
  if (!status && stats)
    *stats = st;
  return status;
}
