/* Fusion passes: BatchNormalization folded into the Conv or Gemm before it.
 *
 * Conv/Gemm + activation fusion is deliberately absent: the fused forms
 * (com.microsoft FusedConv, FusedGemm) run on ONNX Runtime only, and the
 * reference interpreter, which checks every conversion's accuracy, has no
 * kernel for them. ONNX Runtime fuses activations itself at its own
 * optimisation levels. */
#include "passes/edit.h"

#include <math.h>
#include <stdlib.h>

/* The float32 initializer behind value v, or NULL. */
static const mb_tensor *f32_const(const mb_graph *g, int v) {
  if (v < 0 || !g->values[v].initializer)
    return NULL;
  const mb_tensor *t = g->values[v].initializer;
  return t->dtype == MB_DTYPE_FLOAT ? t : NULL;
}

/* Input i of n, or -1 when absent. */
static int input_at(const mb_node *n, int i) {
  return i < n->n_inputs ? n->inputs[i] : -1;
}

typedef struct bn_params {
  int64_t channels;
  double *scale; /* gamma / sqrt(var + eps) */
  double *shift; /* beta - mean * scale */
} bn_params;

/* Reads BatchNormalization node bn's parameters when they are float32
 * initializers of `channels` entries. */
static bool read_bn(const mb_graph *g, const mb_node *bn, int64_t channels,
                    bn_params *out) {
  const mb_tensor *p[4];
  for (int i = 0; i < 4; i++) {
    p[i] = f32_const(g, input_at(bn, i + 1));
    if (!p[i] || p[i]->numel != channels || p[i]->rank != 1)
      return false;
  }
  double eps = mb__node_attr_float(bn, "epsilon", 1e-5f);
  out->channels = channels;
  out->scale = malloc(sizeof(double) * (size_t)channels);
  out->shift = malloc(sizeof(double) * (size_t)channels);
  if (!out->scale || !out->shift) {
    free(out->scale);
    free(out->shift);
    return false;
  }
  const float *gamma = p[0]->data, *beta = p[1]->data, *mean = p[2]->data,
              *var = p[3]->data;
  for (int64_t c = 0; c < channels; c++) {
    out->scale[c] = (double)gamma[c] / sqrt((double)var[c] + eps);
    out->shift[c] = (double)beta[c] - (double)mean[c] * out->scale[c];
  }
  return true;
}

/* A new float32 initializer named after value `like`. Returns its index or
 * -1 (err set; t freed). */
static int add_const(mb_graph *g, int like, const char *suffix, mb_tensor *t,
                     mb_error *err) {
  int v = mb__edit_new_value(g, g->values[like].name, suffix, err);
  if (v < 0) {
    mb_tensor_free(t);
    return -1;
  }
  return mb__edit_set_initializer(g, v, t, err) ? -1 : v;
}

/* Conv(X, W, B) -> BN becomes Conv(X, W * s, (B - mean) * s + beta). */
static mb_status fold_into_conv(mb_graph *g, int conv, const bn_params *bn,
                                mb_error *err) {
  const mb_node *n = &g->nodes[conv];
  int w = n->inputs[1], b = input_at(n, 2);
  const mb_tensor *wt = g->values[w].initializer;
  const mb_tensor *bt = b >= 0 ? g->values[b].initializer : NULL;
  mb_tensor *nw = NULL, *nb = NULL;
  int64_t channels = bn->channels, dims[1] = {channels};
  mb_status status = mb_tensor_clone(wt, &nw, err);
  if (status || (status = mb_tensor_create(MB_DTYPE_FLOAT, 1, dims, &nb, err)))
    goto fail;
  int64_t per_channel = wt->numel / channels;
  float *wd = nw->data, *bd = nb->data;
  for (int64_t c = 0; c < channels; c++) {
    for (int64_t k = 0; k < per_channel; k++)
      wd[c * per_channel + k] =
          (float)((double)wd[c * per_channel + k] * bn->scale[c]);
    double bias = bt ? (double)((const float *)bt->data)[c] : 0.0;
    bd[c] = (float)(bias * bn->scale[c] + bn->shift[c]);
  }
  int nw_v = add_const(g, w, "_bnfold", nw, err);
  nw = NULL;
  if (nw_v < 0)
    goto fail_status;
  int nb_v = add_const(g, b >= 0 ? b : w, b >= 0 ? "_bnfold" : "_bias_bnfold",
                       nb, err);
  nb = NULL;
  if (nb_v < 0)
    goto fail_status;
  int inputs[3] = {g->nodes[conv].inputs[0], nw_v, nb_v};
  return mb__edit_set_inputs(g, conv, 3, inputs, err);
fail_status:
  status = err ? err->status : MB_STATUS_OUT_OF_MEMORY;
fail:
  mb_tensor_free(nw);
  mb_tensor_free(nb);
  return status;
}

/* Gemm(A, B, C) -> BN over its columns becomes
 * Gemm(A, B * s, (beta * C - mean) * s + bn_beta) with beta = 1. */
static mb_status fold_into_gemm(mb_graph *g, int gemm, const bn_params *bn,
                                mb_error *err) {
  mb_node *n = &g->nodes[gemm];
  int b = n->inputs[1], c = input_at(n, 2);
  const mb_tensor *bt = g->values[b].initializer;
  const mb_tensor *ct = c >= 0 ? g->values[c].initializer : NULL;
  bool trans_b = mb__node_attr_int(n, "transB", 0) != 0;
  double beta = mb__node_attr_float(n, "beta", 1.0f);
  mb_tensor *nb = NULL, *nc = NULL;
  int64_t channels = bn->channels, dims[1] = {channels};
  int64_t k_dim = trans_b ? bt->dims[1] : bt->dims[0];
  mb_status status = mb_tensor_clone(bt, &nb, err);
  if (status || (status = mb_tensor_create(MB_DTYPE_FLOAT, 1, dims, &nc, err)))
    goto fail;
  float *bd = nb->data, *cd = nc->data;
  for (int64_t col = 0; col < channels; col++) {
    for (int64_t k = 0; k < k_dim; k++) {
      int64_t at = trans_b ? col * k_dim + k : k * channels + col;
      bd[at] = (float)((double)bd[at] * bn->scale[col]);
    }
    double bias = 0.0;
    if (ct)
      bias = beta * (double)((const float *)ct->data)[ct->numel == 1 ? 0 : col];
    cd[col] = (float)(bias * bn->scale[col] + bn->shift[col]);
  }
  int nb_v = add_const(g, b, "_bnfold", nb, err);
  nb = NULL;
  if (nb_v < 0)
    goto fail_status;
  int nc_v = add_const(g, c >= 0 ? c : b, c >= 0 ? "_bnfold" : "_bias_bnfold",
                       nc, err);
  nc = NULL;
  if (nc_v < 0)
    goto fail_status;
  n = &g->nodes[gemm];
  for (int j = 0; j < n->n_attrs; j++)
    if (strcmp(n->attrs[j].name, "beta") == 0) {
      n->attrs[j].type = MB_ATTR_FLOAT;
      n->attrs[j].f = 1.0f;
    }
  int inputs[3] = {n->inputs[0], nb_v, nc_v};
  return mb__edit_set_inputs(g, gemm, 3, inputs, err);
fail_status:
  status = err ? err->status : MB_STATUS_OUT_OF_MEMORY;
fail:
  mb_tensor_free(nb);
  mb_tensor_free(nc);
  return status;
}

/* The output channels of Conv or Gemm node p when its weights (and bias)
 * are float32 constants BatchNormalization can fold into, else 0. */
static int64_t foldable_channels(const mb_graph *g, const mb_node *p,
                                 bool *is_conv) {
  if (p->domain[0] || p->n_outputs < 1)
    return 0;
  *is_conv = strcmp(p->op_type, "Conv") == 0;
  if (!*is_conv && strcmp(p->op_type, "Gemm") != 0)
    return 0;
  const mb_tensor *w = f32_const(g, input_at(p, 1));
  int bias = input_at(p, 2);
  const mb_tensor *b = f32_const(g, bias);
  if (!w || (bias >= 0 && !b))
    return 0;
  if (*is_conv) {
    if (w->rank < 3 || w->dims[0] <= 0 || (b && b->numel != w->dims[0]))
      return 0;
    return w->dims[0];
  }
  if (w->rank != 2)
    return 0;
  int64_t n = mb__node_attr_int(p, "transB", 0) ? w->dims[0] : w->dims[1];
  /* C must broadcast per column: a scalar, [N] or [1, N]. */
  if (b && !(b->numel == 1 || (b->numel == n && b->dims[b->rank - 1] == n)))
    return 0;
  return n;
}

static mb_status fold_batchnorm(mb_model *model, const mb_pass_options *opt,
                                mb_pass_stats *stats, mb_error *err) {
  mb_graph *g = model->graph;
  mb_pass_record *rec = mb__pass_record(stats);
  int *uses = calloc((size_t)g->n_values + 1, sizeof *uses);
  bool *sub_read = calloc((size_t)g->n_values + 1, sizeof *sub_read);
  bool *remove = calloc((size_t)g->n_nodes + 1, sizeof *remove);
  mb_status status = MB_STATUS_OK;
  int into_conv = 0, into_gemm = 0, kept = 0;
  if (!uses || !sub_read || !remove) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  mb__edit_count_uses(g, uses, sub_read);
  for (int i = 0; i < g->n_nodes; i++) {
    const mb_node *bn = &g->nodes[i];
    if (bn->domain[0] || strcmp(bn->op_type, "BatchNormalization") != 0)
      continue;
    int x = input_at(bn, 0), y = bn->n_outputs > 0 ? bn->outputs[0] : -1;
    bool ok = x >= 0 && y >= 0 && bn->n_inputs == 5 &&
              mb__node_attr_int(bn, "training_mode", 0) == 0 &&
              g->values[x].producer >= 0 && uses[x] == 1 &&
              !g->values[x].is_output && !sub_read[x];
    /* Training outputs (running mean and variance) must be unused. */
    for (int j = 1; j < bn->n_outputs && ok; j++)
      ok = bn->outputs[j] < 0 ||
           (uses[bn->outputs[j]] == 0 && !g->values[bn->outputs[j]].is_output);
    int p = ok ? g->values[x].producer : -1;
    bool is_conv = false;
    int64_t channels = p >= 0 && !remove[p] && g->nodes[p].outputs[0] == x
                           ? foldable_channels(g, &g->nodes[p], &is_conv)
                           : 0;
    bn_params params = {0};
    if (!channels || !read_bn(g, bn, channels, &params)) {
      kept++;
      continue;
    }
    status = is_conv ? fold_into_conv(g, p, &params, err)
                     : fold_into_gemm(g, p, &params, err);
    free(params.scale);
    free(params.shift);
    if (status)
      goto done;
    /* The Conv/Gemm now writes the BatchNormalization's output. */
    g->nodes[p].outputs[0] = g->nodes[i].outputs[0];
    remove[i] = true;
    into_conv += is_conv;
    into_gemm += !is_conv;
  }
  mb__edit_remove_nodes(g, remove);
  rec->changed = into_conv + into_gemm;
  if (into_conv || into_gemm || kept)
    snprintf(rec->detail, sizeof rec->detail,
             "%d BatchNormalization folded into Conv, %d into Gemm, %d kept",
             into_conv, into_gemm, kept);
done:
  free(uses);
  free(sub_read);
  free(remove);
  return status;
}

const mb_pass mb__pass_fold_batchnorm = {
    "fold_batchnorm",
    "folds BatchNormalization into the Conv or Gemm before it when that has "
    "no other reader; counts BatchNormalization nodes folded",
    fold_batchnorm,
};
