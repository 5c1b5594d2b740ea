/* Optimizer steps of the ai.onnx.preview.training domain (opset 1):
 * Adagrad, Adam and Momentum (standard and Nesterov), as exported training
 * graphs contain them. Each takes the learning rate R and the step count T,
 * then groups of n tensors (weights X, gradients G, and the optimizer's
 * state), and returns the updated weights and state, group by group.
 * Arithmetic in double, as the ONNX reference (numpy) does it. */
#include "ops/op.h"

#include <math.h>

typedef enum opt_kind { OPT_ADAGRAD, OPT_ADAM, OPT_MOMENTUM } opt_kind;

/* Input groups after R and T, and output groups. */
static const struct opt_row {
  int in_groups, out_groups;
} opt_rows[] = {
    [OPT_ADAGRAD] = {3, 2},  /* X G H -> X' H' */
    [OPT_ADAM] = {4, 3},     /* X G V H -> X' V' H' */
    [OPT_MOMENTUM] = {3, 2}, /* X G V -> X' V' */
};

static mb_status opt_check(mb_op_ctx *ctx, opt_kind kind, int *n_out) {
  const struct opt_row *row = &opt_rows[kind];
  mb_status st = mb__op_check_arity(ctx, 2 + row->in_groups, -1);
  if (st)
    return st;
  int n = (ctx->n_inputs - 2) / row->in_groups;
  if ((ctx->n_inputs - 2) % row->in_groups ||
      ctx->n_outputs != n * row->out_groups)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "%d inputs and %d outputs do not make groups of %d "
                        "tensors in and %d out after R and T",
                        ctx->n_inputs, ctx->n_outputs, row->in_groups,
                        row->out_groups);
  const mb_tensor *r = ctx->inputs[0], *t = ctx->inputs[1];
  if (r->numel != 1 || !mb__dtype_is_float(r->dtype) || t->numel != 1 ||
      !mb__dtype_is_int(t->dtype))
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "R must be one float and T one integer");
  for (int i = 2; i < ctx->n_inputs; i++) {
    const mb_tensor *x = ctx->inputs[i], *ref = ctx->inputs[2 + (i - 2) % n];
    if (!x || !mb__dtype_is_float(x->dtype) || x->dtype != ref->dtype ||
        x->numel != ref->numel)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "input %d must be a float tensor like its weight "
                          "(input %d)",
                          i, 2 + (i - 2) % n);
  }
  for (int j = 0; j < ctx->n_outputs; j++) {
    const mb_tensor *like = ctx->inputs[2 + j % n];
    if (ctx->outputs[j] &&
        (st = mb__tensor_set_shape(ctx->outputs[j], like->dtype, like->rank,
                                   like->dims, ctx->err)))
      return st;
  }
  if (kind == OPT_MOMENTUM) {
    static const char *const required[] = {"alpha", "beta", "mode",
                                           "norm_coefficient"};
    for (size_t i = 0; i < MB_ARRAY_COUNT(required); i++)
      if (!mb__node_attr(ctx->node, required[i]))
        return mb__op_error(ctx, MB_STATUS_PARSE, "attribute '%s' is required",
                            required[i]);
    const char *mode = mb__node_attr_string(ctx->node, "mode", "");
    if (strcmp(mode, "standard") != 0 && strcmp(mode, "nesterov") != 0)
      return mb__op_error(ctx, MB_STATUS_PARSE,
                          "mode '%s' is neither 'standard' nor 'nesterov'",
                          mode);
  }
  *n_out = n;
  return MB_STATUS_OK;
}

static void put(mb_op_ctx *ctx, int j, int64_t e, double v) {
  if (ctx->outputs[j])
    mb__tensor_set_f64(ctx->outputs[j], e, v);
}

static mb_status opt_run(mb_op_ctx *ctx, opt_kind kind) {
  int n;
  mb_status st = opt_check(ctx, kind, &n);
  if (st)
    return st;
  const mb_node *node = ctx->node;
  double r = mb__tensor_get_f64(ctx->inputs[0], 0);
  double t = (double)mb__tensor_get_i64(ctx->inputs[1], 0);
  double norm = mb__node_attr_float(node, "norm_coefficient", 0.0f);
  double eps = mb__node_attr_float(node, "epsilon", 0.0f);
  bool nesterov =
      strcmp(mb__node_attr_string(node, "mode", "standard"), "nesterov") == 0;
  double alpha =
      mb__node_attr_float(node, "alpha", kind == OPT_ADAM ? 0.9f : 0.0f);
  double beta =
      mb__node_attr_float(node, "beta", kind == OPT_ADAM ? 0.999f : 0.0f);
  double decay = mb__node_attr_float(node, "decay_factor", 0.0f);
  double post = mb__node_attr_float(node, "norm_coefficient_post", 0.0f);
  for (int k = 0; k < n; k++) {
    const mb_tensor *x = ctx->inputs[2 + k], *g = ctx->inputs[2 + n + k];
    const mb_tensor *s1 = ctx->inputs[2 + 2 * n + k];
    const mb_tensor *s2 = kind == OPT_ADAM ? ctx->inputs[2 + 3 * n + k] : NULL;
    for (int64_t e = 0; e < x->numel; e++) {
      double xv = mb__tensor_get_f64(x, e);
      double gr = norm * xv + mb__tensor_get_f64(g, e); /* regularised */
      double a = mb__tensor_get_f64(s1, e);
      switch (kind) {
      case OPT_ADAGRAD: { /* s1 = H */
        double h = a + gr * gr, lr = r / (1.0 + t * decay);
        put(ctx, k, e, xv - lr * gr / (sqrt(h) + eps));
        put(ctx, n + k, e, h);
        break;
      }
      case OPT_ADAM: { /* s1 = V, s2 = H */
        double v = alpha * a + (1.0 - alpha) * gr;
        double h = beta * mb__tensor_get_f64(s2, e) + (1.0 - beta) * gr * gr;
        double lr =
            t > 0 ? r * sqrt(1.0 - pow(beta, t)) / (1.0 - pow(alpha, t)) : r;
        double x_new = xv - lr * (v / (sqrt(h) + eps));
        put(ctx, k, e, (1.0 - post) * x_new);
        put(ctx, n + k, e, v);
        put(ctx, 2 * n + k, e, h);
        break;
      }
      case OPT_MOMENTUM: { /* s1 = V */
        double v = alpha * a + (t > 0 ? beta : 1.0) * gr;
        put(ctx, k, e, nesterov ? xv - r * (gr + alpha * v) : xv - r * v);
        put(ctx, n + k, e, v);
        break;
      }
      }
    }
  }
  return MB_STATUS_OK;
}

#define OPT_OP(name, kind)                                                     \
  static mb_status opt_infer_##name(mb_op_ctx *ctx) {                          \
    int n;                                                                     \
    return opt_check(ctx, kind, &n);                                           \
  }                                                                            \
  static mb_status opt_run_##name(mb_op_ctx *ctx) {                            \
    return opt_run(ctx, kind);                                                 \
  }
OPT_OP(Adagrad, OPT_ADAGRAD)
OPT_OP(Adam, OPT_ADAM)
OPT_OP(Momentum, OPT_MOMENTUM)
#undef OPT_OP

#define OPT_DOMAIN "ai.onnx.preview.training"
const mb_op_def mb__ops_training[] = {
    {OPT_DOMAIN, "Adagrad", 1, opt_infer_Adagrad, opt_run_Adagrad, 0},
    {OPT_DOMAIN, "Adam", 1, opt_infer_Adam, opt_run_Adam, 0},
    {OPT_DOMAIN, "Momentum", 1, opt_infer_Momentum, opt_run_Momentum, 0},
};
MB_OP_TABLE_END(training);
