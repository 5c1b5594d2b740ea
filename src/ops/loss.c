/* Training losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
 * (opsets 12 and 13), as exported for evaluation graphs.
 *
 * Both read an input of shape [N, C, d1, ..., dk] and integer targets of
 * shape [N, d1, ..., dk]; SoftmaxCrossEntropyLoss takes the log-softmax over
 * C first (its optional second output) and then is NegativeLogLikelihoodLoss
 * of that. Sums run in double. */
#include "ops/op.h"

#include <math.h>

typedef enum loss_reduction { LOSS_NONE, LOSS_SUM, LOSS_MEAN } loss_reduction;

typedef struct loss_plan {
  loss_reduction reduction;
  bool has_ignore;
  int64_t ignore_index;
  int64_t n, c, inner; /* input viewed as [n, c, inner] */
} loss_plan;

static mb_status loss_plan_make(mb_op_ctx *ctx, loss_plan *p) {
  mb_status st;
  if ((st = mb__op_check_arity(ctx, 2, 3)))
    return st;
  const mb_tensor *x = ctx->inputs[0], *target = ctx->inputs[1];
  const mb_tensor *weight = mb__op_input(ctx, 2);
  const char *reduction = mb__node_attr_string(ctx->node, "reduction", "mean");
  static const struct {
    const char *name;
    loss_reduction value;
  } reductions[] = {
      {"none", LOSS_NONE}, {"sum", LOSS_SUM}, {"mean", LOSS_MEAN}};
  size_t r = 0;
  while (r < MB_ARRAY_COUNT(reductions) &&
         strcmp(reductions[r].name, reduction) != 0)
    r++;
  if (r == MB_ARRAY_COUNT(reductions))
    return mb__op_error(ctx, MB_STATUS_PARSE,
                        "reduction '%s' is not none, sum or mean", reduction);
  p->reduction = reductions[r].value;
  p->has_ignore = mb__node_attr(ctx->node, "ignore_index") != NULL;
  p->ignore_index = mb__node_attr_int(ctx->node, "ignore_index", 0);
  if (!mb__dtype_is_float(x->dtype))
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "input has element type %s; only float types are "
                        "supported",
                        mb_dtype_name(x->dtype));
  if (target->dtype != MB_DTYPE_INT32 && target->dtype != MB_DTYPE_INT64)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "target is %s, expected int32 or int64",
                        mb_dtype_name(target->dtype));
  char a[96], b[96];
  bool ok = x->rank >= 2 && target->rank == x->rank - 1 &&
            target->dims[0] == x->dims[0];
  for (int d = 2; d < x->rank && ok; d++)
    ok = target->dims[d - 1] == x->dims[d];
  if (!ok)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "input %s and target %s: the target must be the "
                        "input's shape without its class axis (1)",
                        mb__shape_str(x->rank, x->dims, a, sizeof a),
                        mb__shape_str(target->rank, target->dims, b, sizeof b));
  p->n = x->dims[0];
  p->c = x->dims[1];
  p->inner = 1;
  for (int d = 2; d < x->rank; d++)
    p->inner *= x->dims[d];
  if (weight && (weight->rank != 1 || weight->dims[0] != p->c ||
                 weight->dtype != x->dtype))
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "weight is %s %s, expected %s [%lld]",
                        mb_dtype_name(weight->dtype),
                        mb__shape_str(weight->rank, weight->dims, a, sizeof a),
                        mb_dtype_name(x->dtype), (long long)p->c);
  return MB_STATUS_OK;
}

/* Output 0: the target's shape for reduction none, else a scalar. */
static mb_status loss_infer_common(mb_op_ctx *ctx, loss_plan *p) {
  mb_status st = loss_plan_make(ctx, p);
  if (st)
    return st;
  const mb_tensor *x = ctx->inputs[0], *target = ctx->inputs[1];
  mb_tensor *y = mb__op_output(ctx, 0);
  if (!y)
    return MB_STATUS_OK;
  if (p->reduction == LOSS_NONE)
    return mb__tensor_set_shape(y, x->dtype, target->rank, target->dims,
                                ctx->err);
  return mb__tensor_set_shape(y, x->dtype, 0, NULL, ctx->err);
}

/* The loss of log-probabilities logp ([n, c, inner], double) into y. */
static mb_status loss_nll(mb_op_ctx *ctx, const loss_plan *p,
                          const double *logp, mb_tensor *y) {
  const mb_tensor *target = ctx->inputs[1], *weight = mb__op_input(ctx, 2);
  double total = 0.0, weight_sum = 0.0;
  for (int64_t n = 0; n < p->n; n++) {
    for (int64_t i = 0; i < p->inner; i++) {
      int64_t at = n * p->inner + i;
      int64_t t = mb__tensor_get_i64(target, at);
      double loss = 0.0, w = 0.0;
      if (!(p->has_ignore && t == p->ignore_index)) {
        if (t < 0 || t >= p->c)
          return mb__op_error(
              ctx, MB_STATUS_SHAPE,
              "target %lld at element %lld is outside [0, %lld)", (long long)t,
              (long long)at, (long long)p->c);
        w = weight ? mb__tensor_get_f64(weight, t) : 1.0;
        loss = -logp[(n * p->c + t) * p->inner + i] * w;
      }
      if (p->reduction == LOSS_NONE && y)
        mb__tensor_set_f64(y, at, loss);
      total += loss;
      weight_sum += w;
    }
  }
  if (p->reduction != LOSS_NONE && y)
    mb__tensor_set_f64(y, 0,
                       p->reduction == LOSS_SUM ? total : total / weight_sum);
  return MB_STATUS_OK;
}

static double *loss_input_f64(mb_op_ctx *ctx, const mb_tensor *x) {
  double *v =
      mb__op_scratch(ctx, 0, sizeof(double) * (size_t)MB_MAX(x->numel, 1));
  if (v)
    for (int64_t i = 0; i < x->numel; i++)
      v[i] = mb__tensor_get_f64(x, i);
  return v;
}

static mb_status loss_nll_infer(mb_op_ctx *ctx) {
  loss_plan p;
  return loss_infer_common(ctx, &p);
}

static mb_status loss_nll_run(mb_op_ctx *ctx) {
  loss_plan p;
  mb_status st = loss_plan_make(ctx, &p);
  if (st)
    return st;
  double *logp = loss_input_f64(ctx, ctx->inputs[0]);
  if (!logp)
    return MB_STATUS_OUT_OF_MEMORY;
  return loss_nll(ctx, &p, logp, mb__op_output(ctx, 0));
}

static mb_status loss_sce_infer(mb_op_ctx *ctx) {
  loss_plan p;
  mb_status st = loss_infer_common(ctx, &p);
  mb_tensor *log_prob = mb__op_output(ctx, 1);
  if (st || !log_prob)
    return st;
  const mb_tensor *x = ctx->inputs[0];
  return mb__tensor_set_shape(log_prob, x->dtype, x->rank, x->dims, ctx->err);
}

static mb_status loss_sce_run(mb_op_ctx *ctx) {
  loss_plan p;
  mb_status st = loss_plan_make(ctx, &p);
  if (st)
    return st;
  double *logp = loss_input_f64(ctx, ctx->inputs[0]);
  if (!logp)
    return MB_STATUS_OUT_OF_MEMORY;
  /* Log-softmax over the class axis, in place. */
  for (int64_t n = 0; n < p.n; n++) {
    for (int64_t i = 0; i < p.inner; i++) {
      double *v = logp + n * p.c * p.inner + i;
      double max = -INFINITY, sum = 0.0;
      for (int64_t c = 0; c < p.c; c++)
        max = fmax(max, v[c * p.inner]);
      for (int64_t c = 0; c < p.c; c++)
        sum += exp(v[c * p.inner] - max);
      double lse = max + log(sum);
      for (int64_t c = 0; c < p.c; c++)
        v[c * p.inner] -= lse;
    }
  }
  mb_tensor *log_prob = mb__op_output(ctx, 1);
  if (log_prob)
    for (int64_t i = 0; i < log_prob->numel; i++)
      mb__tensor_set_f64(log_prob, i, logp[i]);
  return loss_nll(ctx, &p, logp, mb__op_output(ctx, 0));
}

/* Opset 13 only widened the element types. */
const mb_op_def mb__ops_loss[] = {
    {"", "NegativeLogLikelihoodLoss", 12, loss_nll_infer, loss_nll_run, 0},
    {"", "NegativeLogLikelihoodLoss", 13, loss_nll_infer, loss_nll_run, 0},
    {"", "SoftmaxCrossEntropyLoss", 12, loss_sce_infer, loss_sce_run, 0},
    {"", "SoftmaxCrossEntropyLoss", 13, loss_sce_infer, loss_sce_run, 0},
};
MB_OP_TABLE_END(loss);
