/* Random generators: RandomUniform, RandomNormal, RandomUniformLike,
 * RandomNormalLike, Bernoulli and Multinomial.
 *
 * Every run is reproducible: the generator (xoshiro256**, seeded through
 * splitmix64) starts from the node's `seed` attribute when it has one and
 * from a hash of the node's name otherwise, and restarts on every run, so
 * a benchmark's reference outputs never change between runs. No
 * implementation's values are specified by ONNX, so tests compare shapes,
 * types and ranges only. */
#include "ops/op.h"

#include <math.h>

typedef struct rng {
  uint64_t s[4];
} rng;

static uint64_t rng_splitmix(uint64_t *x) {
  uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static uint64_t rng_rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(rng *r) {
  uint64_t *s = r->s, out = rng_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rng_rotl(s[3], 45);
  return out;
}

/* Uniform in [0, 1), 53 bits. */
static double rng_uniform(rng *r) {
  return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

static double rng_normal(rng *r) {
  double u1 = rng_uniform(r), u2 = rng_uniform(r);
  return sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2);
}

static void rng_init(mb_op_ctx *ctx, rng *r) {
  uint64_t x;
  const mb_attr *seed = mb__node_attr(ctx->node, "seed");
  if (seed && seed->type == MB_ATTR_FLOAT) {
    double v = seed->f;
    memcpy(&x, &v, sizeof x);
  } else {
    x = 1469598103934665603ull; /* FNV-1a of the node's name */
    for (const char *c = ctx->node->name; c && *c; c++)
      x = (x ^ (uint8_t)*c) * 1099511628211ull;
  }
  for (int i = 0; i < 4; i++)
    r->s[i] = rng_splitmix(&x);
}

/* The dtype attribute (a TensorProto id) or `def`; float types only unless
 * `any_numeric`. */
static mb_status random_dtype(mb_op_ctx *ctx, mb_dtype def, bool any_numeric,
                              mb_dtype *out) {
  int64_t id = mb__node_attr_int(ctx->node, "dtype", def);
  bool ok = id > 0 && id < MB_DTYPE_COUNT && mb_dtype_size((mb_dtype)id) > 0 &&
            id != MB_DTYPE_STRING && id != MB_DTYPE_COMPLEX64 &&
            id != MB_DTYPE_COMPLEX128 &&
            (any_numeric || mb__dtype_is_float((mb_dtype)id));
  if (!ok)
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "dtype %lld is not supported here", (long long)id);
  *out = (mb_dtype)id;
  return MB_STATUS_OK;
}

/* ---- RandomUniform, RandomNormal and their Like forms ---- */

typedef enum random_kind { RANDOM_UNIFORM, RANDOM_NORMAL } random_kind;

static mb_status random_infer(mb_op_ctx *ctx, bool like) {
  mb_status st = mb__op_check_arity(ctx, like ? 1 : 0, like ? 1 : 0);
  mb_dtype dt;
  mb_tensor *y = mb__op_output(ctx, 0);
  if (st)
    return st;
  if (like) {
    const mb_tensor *x = ctx->inputs[0];
    if ((st = random_dtype(ctx, x->dtype, false, &dt)))
      return st;
    return y ? mb__tensor_set_shape(y, dt, x->rank, x->dims, ctx->err)
             : MB_STATUS_OK;
  }
  if ((st = random_dtype(ctx, MB_DTYPE_FLOAT, false, &dt)))
    return st;
  const int64_t *shape = NULL;
  int64_t rank = mb__node_attr_ints(ctx->node, "shape", &shape);
  if (rank < 0 || rank > MB_MAX_RANK)
    return mb__op_error(ctx, MB_STATUS_PARSE,
                        "attribute shape is missing or has more than %d "
                        "entries",
                        MB_MAX_RANK);
  for (int64_t d = 0; d < rank; d++)
    if (shape[d] < 0)
      return mb__op_error(ctx, MB_STATUS_PARSE, "shape[%lld] is negative",
                          (long long)d);
  return y ? mb__tensor_set_shape(y, dt, (int)rank, shape, ctx->err)
           : MB_STATUS_OK;
}

static mb_status random_run(mb_op_ctx *ctx, random_kind kind) {
  mb_tensor *y = mb__op_output(ctx, 0);
  rng r;
  if (!y)
    return MB_STATUS_OK;
  rng_init(ctx, &r);
  double a = mb__node_attr_float(ctx->node,
                                 kind == RANDOM_UNIFORM ? "low" : "mean", 0.0f);
  double b = mb__node_attr_float(
      ctx->node, kind == RANDOM_UNIFORM ? "high" : "scale", 1.0f);
  for (int64_t i = 0; i < y->numel; i++) {
    double v = kind == RANDOM_UNIFORM ? a + (b - a) * rng_uniform(&r)
                                      : a + b * rng_normal(&r);
    mb__tensor_set_f64(y, i, v);
  }
  return MB_STATUS_OK;
}

#define RANDOM_OP(name, kind, like)                                            \
  static mb_status random_infer_##name(mb_op_ctx *ctx) {                       \
    return random_infer(ctx, like);                                            \
  }                                                                            \
  static mb_status random_run_##name(mb_op_ctx *ctx) {                         \
    return random_run(ctx, kind);                                              \
  }
RANDOM_OP(RandomUniform, RANDOM_UNIFORM, false)
RANDOM_OP(RandomNormal, RANDOM_NORMAL, false)
RANDOM_OP(RandomUniformLike, RANDOM_UNIFORM, true)
RANDOM_OP(RandomNormalLike, RANDOM_NORMAL, true)
#undef RANDOM_OP

/* ---- Bernoulli: 1 with the input's probability ---- */

static mb_status bernoulli_infer(mb_op_ctx *ctx) {
  mb_status st = mb__op_check_arity(ctx, 1, 1);
  mb_dtype dt;
  if (st)
    return st;
  const mb_tensor *x = ctx->inputs[0];
  if (!mb__dtype_is_float(x->dtype))
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "input is %s; probabilities must be floats",
                        mb_dtype_name(x->dtype));
  if ((st = random_dtype(ctx, x->dtype, true, &dt)))
    return st;
  mb_tensor *y = mb__op_output(ctx, 0);
  return y ? mb__tensor_set_shape(y, dt, x->rank, x->dims, ctx->err)
           : MB_STATUS_OK;
}

static mb_status bernoulli_run(mb_op_ctx *ctx) {
  const mb_tensor *x = ctx->inputs[0];
  mb_tensor *y = mb__op_output(ctx, 0);
  rng r;
  if (!y)
    return MB_STATUS_OK;
  rng_init(ctx, &r);
  for (int64_t i = 0; i < y->numel; i++)
    mb__tensor_set_f64(y, i, rng_uniform(&r) < mb__tensor_get_f64(x, i));
  return MB_STATUS_OK;
}

/* ---- Multinomial: class indices drawn from unnormalised log-probs ---- */

static mb_status multinomial_infer(mb_op_ctx *ctx) {
  mb_status st = mb__op_check_arity(ctx, 1, 1);
  mb_dtype dt;
  char buf[96];
  if (st)
    return st;
  const mb_tensor *x = ctx->inputs[0];
  int64_t samples = mb__node_attr_int(ctx->node, "sample_size", 1);
  if (!mb__dtype_is_float(x->dtype) || x->rank != 2)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "input is %s %s; expected float [batch, classes]",
                        mb_dtype_name(x->dtype),
                        mb__shape_str(x->rank, x->dims, buf, sizeof buf));
  if (samples < 1 || samples > MB_OP_ATTR_MAX)
    return mb__op_error(ctx, MB_STATUS_PARSE, "sample_size %lld is invalid",
                        (long long)samples);
  if ((st = random_dtype(ctx, MB_DTYPE_INT32, true, &dt)))
    return st;
  if (dt != MB_DTYPE_INT32 && dt != MB_DTYPE_INT64)
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "dtype %s is not int32 or int64", mb_dtype_name(dt));
  int64_t dims[2] = {x->dims[0], samples};
  mb_tensor *y = mb__op_output(ctx, 0);
  return y ? mb__tensor_set_shape(y, dt, 2, dims, ctx->err) : MB_STATUS_OK;
}

static mb_status multinomial_run(mb_op_ctx *ctx) {
  const mb_tensor *x = ctx->inputs[0];
  mb_tensor *y = mb__op_output(ctx, 0);
  int64_t batch = x->dims[0], classes = x->dims[1];
  rng r;
  if (!y)
    return MB_STATUS_OK;
  double *cdf =
      mb__op_scratch(ctx, 0, sizeof(double) * (size_t)MB_MAX(classes, 1));
  if (!cdf)
    return MB_STATUS_OUT_OF_MEMORY;
  rng_init(ctx, &r);
  for (int64_t b = 0; b < batch; b++) {
    double max = -INFINITY, total = 0.0;
    for (int64_t c = 0; c < classes; c++)
      max = fmax(max, mb__tensor_get_f64(x, b * classes + c));
    for (int64_t c = 0; c < classes; c++)
      cdf[c] = total += exp(mb__tensor_get_f64(x, b * classes + c) - max);
    for (int64_t s = 0; s < y->dims[1]; s++) {
      double u = rng_uniform(&r) * total;
      int64_t c = 0;
      while (c < classes - 1 && cdf[c] <= u)
        c++;
      mb__tensor_set_f64(y, b * y->dims[1] + s, (double)c);
    }
  }
  return MB_STATUS_OK;
}

const mb_op_def mb__ops_random[] = {
    {"", "RandomUniform", 1, random_infer_RandomUniform,
     random_run_RandomUniform, 0},
    {"", "RandomNormal", 1, random_infer_RandomNormal, random_run_RandomNormal,
     0},
    {"", "RandomUniformLike", 1, random_infer_RandomUniformLike,
     random_run_RandomUniformLike, 0},
    {"", "RandomNormalLike", 1, random_infer_RandomNormalLike,
     random_run_RandomNormalLike, 0},
    {"", "Bernoulli", 15, bernoulli_infer, bernoulli_run, 0},
    {"", "Multinomial", 7, multinomial_infer, multinomial_run, 0},
};
MB_OP_TABLE_END(random);
