/* float16 support of the operators an FP16 conversion produces.
 *
 * An FP16 conversion keeps the graph's inputs and outputs float32, puts a
 * Cast at each boundary and runs everything in between in float16. ONNX
 * Runtime's CPU provider computes most float16 kernels in float32 and rounds
 * each node's result to float16; the reference interpreter does the same.
 * So each case here runs one node twice on the same values (inputs already
 * rounded to float16): once in float32 and once in float16. The float16
 * output must be the float32 output rounded to float16 (one float16 ulp of
 * slack for reductions whose summation order may differ).
 *
 * Whole graphs then check the boundary: a float16 graph between Casts
 * against its float32 twin through the public session API, and against
 * ONNX Runtime when its library is installed. */
#include "op_harness.h"

static uint32_t rng_state = 777;
static float rnd(void) { /* uniform in [-1, 1) */
  rng_state = rng_state * 1664525u + 1013904223u;
  return (float)((rng_state >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static float round_f16(float v) {
  return mb__f16_to_f32(mb__f32_to_f16(v));
}

/* ------------------------------------------------------------------------ */
/* The table of single-node cases                                            */
/* ------------------------------------------------------------------------ */

typedef enum in_kind {
  IN_NONE = 0, /* omitted optional input */
  IN_RAND,     /* random in [-2, 2), float16 in the float16 run */
  IN_POS,      /* random in [0.25, 2.25), float16 in the float16 run */
  IN_F16,      /* fixed values, float16 in the float16 run */
  IN_F32,      /* fixed values, float32 in both runs (Resize scales) */
  IN_I64,      /* fixed int64 values */
  IN_BOOL,     /* fixed bool values */
  IN_RAND32,   /* random in [-2, 2), float32 in both runs */
} in_kind;

typedef struct in_spec {
  in_kind kind;
  int rank;
  int64_t dims[5];
  const double *values; /* IN_F16, IN_F32, IN_I64, IN_BOOL */
} in_spec;

typedef enum attr_kind {
  A_END = 0,
  A_INT,
  A_INTS,
  A_FLOAT,
  A_STRING
} attr_kind;

typedef struct attr_spec {
  attr_kind kind;
  const char *name;
  int n;
  int64_t ints[8];
  float f;
  const char *s;
} attr_spec;

#define MAX_IN 6
#define MAX_ATTRS 5

typedef struct fp16_case {
  const char *domain, *op;
  int64_t opset;
  int n_in, n_out;
  in_spec in[MAX_IN];
  attr_spec attrs[MAX_ATTRS];
  /* Bit k set: output k stays float32 (LayerNormalization's Mean and
   * InvStdDev have the stash_type, float32 by default). */
  unsigned f32_outputs;
} fp16_case;

#define V(...) ((const double[]){__VA_ARGS__})
#define RAND(r, ...)                                                           \
  { IN_RAND, r, {__VA_ARGS__}, NULL }
#define POS(r, ...)                                                            \
  { IN_POS, r, {__VA_ARGS__}, NULL }
#define F16(vals, r, ...)                                                      \
  { IN_F16, r, {__VA_ARGS__}, vals }
#define F32(vals, r, ...)                                                      \
  { IN_F32, r, {__VA_ARGS__}, vals }
#define I64(vals, r, ...)                                                      \
  { IN_I64, r, {__VA_ARGS__}, vals }
#define BOOL(vals, r, ...)                                                     \
  { IN_BOOL, r, {__VA_ARGS__}, vals }
#define RAND32(r, ...)                                                         \
  { IN_RAND32, r, {__VA_ARGS__}, NULL }
#define NONE                                                                   \
  { IN_NONE, 0, {0}, NULL }
#define AI(name, v)                                                            \
  { A_INT, name, 1, {v}, 0, NULL }
#define AIS(name, n, ...)                                                      \
  { A_INTS, name, n, {__VA_ARGS__}, 0, NULL }
#define AF(name, v)                                                            \
  { A_FLOAT, name, 0, {0}, v, NULL }
#define AS(name, v)                                                            \
  { A_STRING, name, 0, {0}, 0, v }

/* CASE(domain, op, opset, n_in, n_out, IN(inputs...), ATTRS(attributes...)) */
#define IN(...)                                                                \
  { __VA_ARGS__ }
#define ATTRS(...)                                                             \
  { __VA_ARGS__ }
#define NO_ATTRS ATTRS(ATTR_END)
#define ATTR_END                                                               \
  { A_END, NULL, 0, {0}, 0, NULL }
#define CASE(dom, op, opset, n_in, n_out, ins, attrs)                          \
  { dom, op, opset, n_in, n_out, ins, attrs, 0 }

/* The operators an FP16 conversion runs in float16 (issue #5's list). */
static const fp16_case conversion_cases[] = {
    CASE("", "Conv", 11, 3, 1,
         IN(RAND(4, 1, 3, 7, 7), RAND(4, 4, 3, 3, 3), RAND(1, 4)),
         ATTRS(AIS("pads", 4, 1, 1, 1, 1), AIS("strides", 2, 1, 2))),
    CASE("", "Conv", 11, 2, 1, IN(RAND(4, 1, 4, 9, 9), RAND(4, 4, 1, 3, 3)),
         ATTRS(AI("group", 4), AIS("pads", 4, 1, 1, 1, 1),
               AIS("strides", 2, 2, 2))),
    CASE("", "Gemm", 13, 3, 1, IN(RAND(2, 3, 5), RAND(2, 4, 5), RAND(1, 4)),
         ATTRS(AI("transB", 1), AF("alpha", 0.5f), AF("beta", 2.0f))),
    CASE("", "MatMul", 13, 2, 1, IN(RAND(3, 2, 3, 5), RAND(2, 5, 4)), NO_ATTRS),
    CASE("", "Add", 14, 2, 1, IN(RAND(3, 2, 3, 4), RAND(1, 4)), NO_ATTRS),
    CASE("", "Sub", 14, 2, 1, IN(RAND(1, 4), RAND(3, 2, 3, 4)), NO_ATTRS),
    CASE("", "Mul", 14, 2, 1, IN(RAND(3, 2, 3, 4), RAND(3, 2, 1, 4)), NO_ATTRS),
    CASE("", "Div", 14, 2, 1, IN(RAND(3, 2, 3, 4), POS(2, 3, 1)), NO_ATTRS),
    CASE("", "Pow", 15, 2, 1, IN(POS(2, 3, 4), F16(V(3.0), 0, 0)), NO_ATTRS),
    CASE("", "Pow", 15, 2, 1, IN(POS(2, 3, 4), F32(V(0.5), 0, 0)), NO_ATTRS),
    CASE("", "Relu", 14, 1, 1, IN(RAND(2, 5, 7)), NO_ATTRS),
    CASE("", "Sigmoid", 13, 1, 1, IN(RAND(2, 5, 7)), NO_ATTRS),
    CASE("", "Tanh", 13, 1, 1, IN(RAND(2, 5, 7)), NO_ATTRS),
    CASE("", "Erf", 13, 1, 1, IN(RAND(2, 5, 7)), NO_ATTRS),
    CASE("", "Exp", 13, 1, 1, IN(RAND(2, 5, 7)), NO_ATTRS),
    CASE("", "Sqrt", 13, 1, 1, IN(POS(2, 5, 7)), NO_ATTRS),
    CASE("", "HardSigmoid", 6, 1, 1, IN(RAND(2, 5, 7)),
         ATTRS(AF("alpha", 0.3f), AF("beta", 0.4f))),
    CASE("", "HardSwish", 14, 1, 1, IN(RAND(2, 5, 7)), NO_ATTRS),
    CASE("", "Gelu", 20, 1, 1, IN(RAND(2, 5, 7)), NO_ATTRS),
    CASE("", "Gelu", 20, 1, 1, IN(RAND(2, 5, 7)),
         ATTRS(AS("approximate", "tanh"))),
    CASE("com.microsoft", "Gelu", 1, 1, 1, IN(RAND(2, 5, 7)), NO_ATTRS),
    CASE("", "Clip", 13, 3, 1,
         IN(RAND(2, 5, 7), F16(V(-0.5), 0, 0), F16(V(0.75), 0, 0)), NO_ATTRS),
    CASE("", "Clip", 13, 3, 1, IN(RAND(2, 5, 7), NONE, F16(V(6.0), 0, 0)),
         NO_ATTRS),
    CASE("", "Clip", 6, 1, 1, IN(RAND(2, 5, 7)),
         ATTRS(AF("min", 0.0f), AF("max", 0.5f))),
    CASE("", "MaxPool", 12, 1, 2, IN(RAND(4, 1, 2, 7, 7)),
         ATTRS(AIS("kernel_shape", 2, 3, 3), AIS("strides", 2, 2, 2),
               AIS("pads", 4, 1, 1, 1, 1))),
    CASE("", "AveragePool", 11, 1, 1, IN(RAND(4, 1, 2, 7, 7)),
         ATTRS(AIS("kernel_shape", 2, 3, 3), AIS("strides", 2, 2, 2),
               AIS("pads", 4, 1, 1, 1, 1))),
    CASE("", "AveragePool", 11, 1, 1, IN(RAND(4, 1, 2, 7, 7)),
         ATTRS(AIS("kernel_shape", 2, 2, 2), AI("count_include_pad", 1),
               AIS("pads", 4, 0, 0, 1, 1))),
    CASE("", "GlobalAveragePool", 1, 1, 1, IN(RAND(4, 2, 3, 5, 4)), NO_ATTRS),
    CASE("", "Reshape", 14, 2, 1, IN(RAND(3, 2, 3, 4), I64(V(4, -1), 1, 2)),
         NO_ATTRS),
    CASE("", "Transpose", 13, 1, 1, IN(RAND(3, 2, 3, 4)),
         ATTRS(AIS("perm", 3, 2, 0, 1))),
    CASE("", "Concat", 13, 2, 1, IN(RAND(2, 2, 3), RAND(2, 2, 2)),
         ATTRS(AI("axis", 1))),
    CASE("", "Slice", 13, 5, 1,
         IN(RAND(2, 4, 6), I64(V(1, 0), 1, 2), I64(V(3, 6), 1, 2),
            I64(V(0, 1), 1, 2), I64(V(1, 2), 1, 2)),
         NO_ATTRS),
    CASE("", "Gather", 13, 2, 1, IN(RAND(2, 3, 5), I64(V(4, 0, -1), 1, 3)),
         ATTRS(AI("axis", 1))),
    CASE("", "Flatten", 13, 1, 1, IN(RAND(4, 2, 3, 4, 5)),
         ATTRS(AI("axis", 2))),
    CASE("", "Squeeze", 13, 2, 1, IN(RAND(3, 3, 1, 4), I64(V(1), 1, 1)),
         NO_ATTRS),
    CASE("", "Unsqueeze", 13, 2, 1, IN(RAND(2, 3, 4), I64(V(0, 3), 1, 2)),
         NO_ATTRS),
    CASE("", "BatchNormalization", 15, 5, 1,
         IN(RAND(4, 2, 3, 4, 4), RAND(1, 3), RAND(1, 3), RAND(1, 3), POS(1, 3)),
         ATTRS(AF("epsilon", 1e-3f))),
    CASE("", "LayerNormalization", 17, 3, 1,
         IN(RAND(3, 2, 3, 8), RAND(1, 8), RAND(1, 8)),
         ATTRS(AI("axis", -1), AF("epsilon", 1e-5f))),
    CASE("", "Softmax", 13, 1, 1, IN(RAND(3, 2, 3, 8)), ATTRS(AI("axis", -1))),
    CASE("", "Softmax", 11, 1, 1, IN(RAND(3, 2, 3, 8)), ATTRS(AI("axis", 1))),
    CASE("", "ReduceMean", 13, 1, 1, IN(RAND(3, 2, 3, 8)),
         ATTRS(AIS("axes", 1, -1), AI("keepdims", 1))),
    CASE("", "ReduceMean", 18, 2, 1, IN(RAND(3, 2, 3, 8), I64(V(1), 1, 1)),
         ATTRS(AI("keepdims", 0))),
    CASE("", "Resize", 13, 3, 1,
         IN(RAND(4, 1, 2, 4, 4), NONE, F32(V(1, 1, 2, 1.5), 1, 4)),
         ATTRS(AS("mode", "linear"))),
    CASE("", "Resize", 13, 3, 1,
         IN(RAND(4, 1, 2, 4, 4), NONE, F32(V(1, 1, 2, 2), 1, 4)),
         ATTRS(AS("mode", "nearest"))),
    CASE("", "Resize", 13, 4, 1,
         IN(RAND(4, 1, 2, 4, 4), NONE, NONE, I64(V(1, 2, 7, 6), 1, 4)),
         ATTRS(AS("mode", "cubic"))),
    CASE("", "Pad", 13, 3, 1,
         IN(RAND(2, 2, 3), I64(V(0, 1, 1, 2), 1, 4), F16(V(0.25), 0, 0)),
         NO_ATTRS),
    CASE("", "Pad", 13, 2, 1, IN(RAND(2, 3, 4), I64(V(1, 2, 1, 2), 1, 4)),
         ATTRS(AS("mode", "reflect"))),
};

/* Mixed types that converters leave, and other operators seen in
 * converted models. */
static const fp16_case other_cases[] = {
    /* float32 statistics of a float16
     * BatchNormalization (opset 15), a float16 Resize roi, LayerNorm's
     * float32 Mean and InvStdDev. */
    CASE("", "BatchNormalization", 15, 5, 1,
         IN(RAND(4, 2, 3, 4, 4), RAND32(1, 3), RAND32(1, 3), RAND32(1, 3),
            F32(V(0.5, 1, 2), 1, 3)),
         NO_ATTRS),
    CASE("", "Resize", 13, 3, 1,
         IN(RAND(4, 1, 2, 4, 4), F16(V(0, 0, 0, 0, 1, 1, 1, 1), 1, 8),
            F32(V(1, 1, 2, 2), 1, 4)),
         ATTRS(AS("mode", "linear"))),
    {"", "LayerNormalization", 17, 3, 3,
     IN(RAND(3, 2, 3, 8), RAND(1, 8), RAND(1, 8)), ATTRS(AI("axis", 1)), 6},
    CASE("", "InstanceNormalization", 6, 3, 1,
         IN(RAND(4, 2, 3, 4, 4), RAND(1, 3), RAND(1, 3)), NO_ATTRS),
    CASE("", "ReduceSum", 13, 2, 1, IN(RAND(3, 2, 3, 8), I64(V(1), 1, 1)),
         NO_ATTRS),
    CASE("", "ReduceMax", 13, 1, 1, IN(RAND(3, 2, 3, 8)),
         ATTRS(AIS("axes", 1, 2))),
    CASE("", "ReduceMin", 13, 1, 1, IN(RAND(3, 2, 3, 8)),
         ATTRS(AIS("axes", 1, 2))),
    CASE("", "ReduceProd", 13, 1, 1, IN(RAND(3, 2, 3, 8)),
         ATTRS(AIS("axes", 1, 2))),
    CASE("", "ReduceL2", 18, 2, 1, IN(RAND(3, 2, 3, 8), I64(V(1), 1, 1)),
         NO_ATTRS),
    CASE("", "ReduceSumSquare", 13, 1, 1, IN(RAND(3, 2, 3, 8)),
         ATTRS(AIS("axes", 1, 2))),
    CASE("", "ReduceLogSumExp", 13, 1, 1, IN(RAND(3, 2, 3, 8)),
         ATTRS(AIS("axes", 1, 2))),
    CASE("", "Where", 16, 3, 1,
         IN(BOOL(V(1, 0, 1, 0), 1, 4), RAND(2, 3, 4), RAND(1, 4)), NO_ATTRS),
    CASE("", "Expand", 13, 2, 1, IN(RAND(2, 3, 1), I64(V(2, 3, 4), 1, 3)),
         NO_ATTRS),
    CASE("", "Split", 13, 2, 2, IN(RAND(2, 4, 6), I64(V(2, 4), 1, 2)),
         ATTRS(AI("axis", 1))),
    CASE("", "Tile", 13, 2, 1, IN(RAND(2, 2, 3), I64(V(2, 2), 1, 2)), NO_ATTRS),
    CASE("", "ConvTranspose", 11, 3, 1,
         IN(RAND(4, 1, 3, 5, 5), RAND(4, 3, 2, 3, 3), RAND(1, 2)),
         ATTRS(AIS("strides", 2, 2, 2))),
    CASE("", "LeakyRelu", 16, 1, 1, IN(RAND(2, 5, 7)),
         ATTRS(AF("alpha", 0.1f))),
    CASE("", "PRelu", 16, 2, 1, IN(RAND(3, 2, 3, 4), RAND(1, 4)), NO_ATTRS),
    CASE("", "Neg", 13, 1, 1, IN(RAND(2, 5, 7)), NO_ATTRS),
    CASE("", "Abs", 13, 1, 1, IN(RAND(2, 5, 7)), NO_ATTRS),
    CASE("", "Reciprocal", 13, 1, 1, IN(POS(2, 5, 7)), NO_ATTRS),
    CASE("", "Log", 13, 1, 1, IN(POS(2, 5, 7)), NO_ATTRS),
    CASE("", "Floor", 13, 1, 1, IN(RAND(2, 5, 7)), NO_ATTRS),
    CASE("", "Round", 11, 1, 1, IN(RAND(2, 5, 7)), NO_ATTRS),
    CASE("", "Sin", 7, 1, 1, IN(RAND(2, 5, 7)), NO_ATTRS),
    CASE("", "Softplus", 1, 1, 1, IN(RAND(2, 5, 7)), NO_ATTRS),
    CASE("", "Mish", 18, 1, 1, IN(RAND(2, 5, 7)), NO_ATTRS),
    CASE("", "Elu", 6, 1, 1, IN(RAND(2, 5, 7)), NO_ATTRS),
    CASE("", "Celu", 12, 1, 1, IN(RAND(2, 5, 7)), NO_ATTRS),
    CASE("", "Selu", 6, 1, 1, IN(RAND(2, 5, 7)), NO_ATTRS),
    CASE("", "ThresholdedRelu", 10, 1, 1, IN(RAND(2, 5, 7)), NO_ATTRS),
    CASE("", "Max", 13, 2, 1, IN(RAND(2, 5, 7), RAND(1, 7)), NO_ATTRS),
    CASE("", "Sum", 13, 3, 1, IN(RAND(2, 5, 7), RAND(1, 7), RAND(2, 5, 1)),
         NO_ATTRS),
    CASE("", "Equal", 13, 2, 1, IN(RAND(2, 5, 7), RAND(1, 7)), NO_ATTRS),
    CASE("", "Less", 13, 2, 1, IN(RAND(2, 5, 7), RAND(1, 7)), NO_ATTRS),
    CASE("", "Identity", 16, 1, 1, IN(RAND(2, 5, 7)), NO_ATTRS),
    CASE("", "TopK", 11, 2, 2, IN(RAND(2, 5, 7), I64(V(3), 1, 1)), NO_ATTRS),
    CASE("", "ArgMax", 13, 1, 1, IN(RAND(2, 5, 7)), ATTRS(AI("axis", 1))),
    CASE("", "CumSum", 14, 2, 1, IN(RAND(2, 5, 7), I64(V(1), 0, 0)), NO_ATTRS),
    CASE("", "DepthToSpace", 13, 1, 1, IN(RAND(4, 1, 8, 2, 3)),
         ATTRS(AI("blocksize", 2))),
    CASE("", "Einsum", 12, 2, 1, IN(RAND(3, 2, 3, 4), RAND(3, 2, 4, 5)),
         ATTRS(AS("equation", "bij,bjk->bik"))),
    CASE("", "GlobalMaxPool", 1, 1, 1, IN(RAND(4, 2, 3, 5, 4)), NO_ATTRS),
    CASE("", "MaxPool", 12, 1, 1, IN(RAND(3, 1, 2, 9)),
         ATTRS(AIS("kernel_shape", 1, 3))),
    CASE("", "LpPool", 18, 1, 1, IN(RAND(4, 1, 2, 5, 5)),
         ATTRS(AIS("kernel_shape", 2, 2, 2))),
    CASE("", "LpNormalization", 1, 1, 1, IN(RAND(2, 5, 7)), NO_ATTRS),
    CASE("", "LogSoftmax", 13, 1, 1, IN(RAND(2, 5, 7)), NO_ATTRS),
    CASE("", "MeanVarianceNormalization", 13, 1, 1, IN(RAND(4, 2, 3, 4, 4)),
         NO_ATTRS),
    CASE("", "LRN", 13, 1, 1, IN(RAND(4, 1, 5, 3, 3)), ATTRS(AI("size", 3))),
    CASE("", "Upsample", 9, 2, 1,
         IN(RAND(4, 1, 2, 3, 3), F32(V(1, 1, 2, 2), 1, 4)), NO_ATTRS),
    CASE("", "Range", 11, 3, 1,
         IN(F16(V(1), 0, 0), F16(V(5), 0, 0), F16(V(0.5), 0, 0)), NO_ATTRS),
    CASE("", "ScatterND", 16, 3, 1,
         IN(RAND(2, 4, 3), I64(V(1, 3), 2, 2, 1), RAND(2, 2, 3)), NO_ATTRS),
    CASE("", "GatherElements", 13, 2, 1,
         IN(RAND(2, 3, 3), I64(V(0, 1, 2, 2, 1, 0), 2, 3, 2)),
         ATTRS(AI("axis", 1))),
    CASE("", "Trilu", 14, 1, 1, IN(RAND(2, 4, 4)), NO_ATTRS),
    CASE("", "ReverseSequence", 10, 2, 1,
         IN(RAND(3, 4, 2, 3), I64(V(1, 4), 1, 2)), NO_ATTRS),
};

/* The tensor of input spec s holding `values`: float32 in the float32 run;
 * float16 in the float16 run for the kinds that become float16. */
static mb_tensor *make_input(const in_spec *s, const float *values, bool half) {
  mb_tensor *t = NULL;
  mb_dtype dt = MB_DTYPE_FLOAT;
  if (s->kind == IN_NONE)
    return NULL;
  if (s->kind == IN_I64)
    dt = MB_DTYPE_INT64;
  else if (s->kind == IN_BOOL)
    dt = MB_DTYPE_BOOL;
  else if (half && s->kind != IN_F32 && s->kind != IN_RAND32)
    dt = MB_DTYPE_FLOAT16;
  if (mb_tensor_create(dt, s->rank, s->dims, &t, NULL))
    return NULL;
  for (int64_t i = 0; i < t->numel; i++) {
    if (dt == MB_DTYPE_INT64)
      ((int64_t *)t->data)[i] = (int64_t)s->values[i];
    else
      mb__tensor_set_f64(t, i, values[i]);
  }
  return t;
}

/* Values of input spec s (numel of them); those that become float16 are
 * rounded to it, so both runs see the same numbers. */
static void input_values(const in_spec *s, float *out, int64_t numel) {
  for (int64_t i = 0; i < numel; i++) {
    float v = 0;
    switch (s->kind) {
    case IN_RAND:
    case IN_RAND32:
      v = 2.0f * rnd();
      break;
    case IN_POS:
      v = 1.25f + rnd();
      break;
    case IN_F16:
    case IN_F32:
    case IN_I64:
    case IN_BOOL:
      v = (float)s->values[i];
      break;
    case IN_NONE:
      break;
    }
    out[i] = s->kind == IN_RAND || s->kind == IN_POS || s->kind == IN_F16
                 ? round_f16(v)
                 : v;
  }
}

static void set_attrs(op_case *c, const attr_spec *attrs) {
  mb_graph *g = c->model->graph;
  for (int a = 0; a < MAX_ATTRS && attrs[a].kind != A_END; a++) {
    const attr_spec *s = &attrs[a];
    switch (s->kind) {
    case A_INT:
      mb__node_set_int(g, c->node, s->name, s->ints[0], &c->err);
      break;
    case A_INTS:
      mb__node_set_ints(g, c->node, s->name, s->n, s->ints, &c->err);
      break;
    case A_FLOAT:
      mb__node_set_float(g, c->node, s->name, s->f, &c->err);
      break;
    case A_STRING:
      mb__node_set_string(g, c->node, s->name, s->s, &c->err);
      break;
    case A_END:
      break;
    }
  }
}

/* Runs the case in float32 or float16 into outs (n_out fresh tensors). */
static int run_case(const fp16_case *tc, float *const *values, bool half,
                    mb_tensor **outs) {
  op_case oc;
  mb_tensor *in[MAX_IN] = {0};
  int rc = case_init(&oc, tc->domain, tc->op, tc->n_in, tc->n_out);
  if (!rc)
    set_attrs(&oc, tc->attrs);
  for (int k = 0; !rc && k < tc->n_in; k++) {
    in[k] = make_input(&tc->in[k], values[k], half);
    if (tc->in[k].kind != IN_NONE && !in[k])
      rc = 1;
  }
  for (int k = 0; !rc && k < tc->n_out; k++)
    if (!(outs[k] = calloc(1, sizeof(mb_tensor))))
      rc = 1;
  if (!rc) {
    mb_status st = case_run(&oc, tc->opset, in, tc->n_in, outs, tc->n_out);
    if (st) {
      fprintf(stderr, "  %s (opset %lld, %s): %s\n", tc->op,
              (long long)tc->opset, half ? "float16" : "float32",
              oc.err.message);
      rc = 1;
    }
  }
  for (int k = 0; k < tc->n_in; k++)
    mb_tensor_free(in[k]);
  case_free(&oc);
  return rc;
}

/* One float16 ulp at |v| (the spacing of float16 values around v). */
static double f16_ulp(double v) {
  double a = fabs(v);
  if (a < 6.103515625e-05) /* subnormal range */
    return 5.960464477539063e-08;
  int e;
  frexp(a, &e);
  return ldexp(1.0, e - 11);
}

/* The float16 output must be the float32 output rounded to float16, within
 * `ulps` float16 ulps. Integer outputs (MaxPool indices) must be equal. */
static int compare_outputs(const fp16_case *tc, int k, const mb_tensor *ref,
                           const mb_tensor *got, int ulps) {
  bool is_float =
      ref->dtype == MB_DTYPE_FLOAT && !(tc->f32_outputs & (1u << k));
  mb_dtype want = is_float ? MB_DTYPE_FLOAT16 : ref->dtype;
  if (got->dtype != want || got->rank != ref->rank ||
      got->numel != ref->numel) {
    fprintf(stderr, "  %s output %d: %s with %lld elements, expected %s\n",
            tc->op, k, mb_dtype_name(got->dtype), (long long)got->numel,
            mb_dtype_name(want));
    return 1;
  }
  for (int d = 0; d < ref->rank; d++)
    if (got->dims[d] != ref->dims[d]) {
      fprintf(stderr, "  %s output %d: dim %d is %lld, expected %lld\n", tc->op,
              k, d, (long long)got->dims[d], (long long)ref->dims[d]);
      return 1;
    }
  for (int64_t i = 0; i < ref->numel; i++) {
    double r = mb__tensor_get_f64(ref, i), g = mb__tensor_get_f64(got, i);
    double expect = is_float ? round_f16((float)r) : r;
    double tol = is_float ? ulps * f16_ulp(expect) : 0;
    if (!(fabs(g - expect) <= tol)) {
      fprintf(stderr,
              "  %s (opset %lld) output %d element %lld: float16 gives %.8g, "
              "float32 rounded to float16 is %.8g\n",
              tc->op, (long long)tc->opset, k, (long long)i, g, expect);
      return 1;
    }
  }
  return 0;
}

static int check_case(const fp16_case *tc) {
  float *values[MAX_IN] = {0};
  mb_tensor *ref[3] = {0}, *got[3] = {0};
  int rc = 0;
  for (int k = 0; k < tc->n_in && !rc; k++) {
    int64_t n = 1;
    for (int d = 0; d < tc->in[k].rank; d++)
      n *= tc->in[k].dims[d];
    values[k] = calloc((size_t)n + 1, sizeof(float));
    if (!values[k])
      rc = 1;
    else
      input_values(&tc->in[k], values[k], n);
  }
  if (!rc)
    rc = run_case(tc, values, false, ref);
  if (!rc)
    rc = run_case(tc, values, true, got);
  /* Reductions (softmax, normalisation, pooling, products) may sum in a
   * different order in their float16 path: one ulp of slack. */
  for (int k = 0; !rc && k < tc->n_out; k++)
    rc = compare_outputs(tc, k, ref[k], got[k], 1);
  for (int k = 0; k < 3; k++) {
    mb_tensor_free(ref[k]);
    mb_tensor_free(got[k]);
  }
  for (int k = 0; k < MAX_IN; k++)
    free(values[k]);
  return rc;
}

static int check_table(const fp16_case *table, size_t n) {
  int failures = 0;
  for (size_t i = 0; i < n; i++)
    if (check_case(&table[i])) {
      fprintf(stderr, "  case %zu (%s opset %lld) failed\n", i, table[i].op,
              (long long)table[i].opset);
      failures++;
    }
  return failures;
}

TEST(conversion_ops_accept_float16) {
  ASSERT_EQ(check_table(conversion_cases, MB_ARRAY_COUNT(conversion_cases)), 0);
  return 0;
}

TEST(other_ops_accept_float16) {
  ASSERT_EQ(check_table(other_cases, MB_ARRAY_COUNT(other_cases)), 0);
  return 0;
}

TEST(cast_boundaries) {
  /* float32 -> float16 rounds to nearest even and overflows to infinity;
   * float16 -> float32 is exact. */
  static const double in[] = {1.0,     1.00048828125, 1.000732421875, -2.5e-8,
                              65504.0, 65520.0,       -1e6,           0.1};
  static const double want[] = {
      1.0,     1.0,      1.0009765625, -0.0,
      65504.0, INFINITY, -INFINITY,    0.0999755859375};
  int64_t dims[1] = {8};
  op_case oc;
  mb_tensor *x = tensor_of(MB_DTYPE_FLOAT, 1, dims, in);
  mb_tensor *h[1] = {empty_output()}, *back[1] = {empty_output()};
  ASSERT(x && h[0] && back[0]);
  ASSERT_EQ(case_init(&oc, "", "Cast", 1, 1), 0);
  case_int(&oc, "to", MB_DTYPE_FLOAT16);
  ASSERT_OK(case_run(&oc, 13, &x, 1, h, 1), &oc.err);
  case_free(&oc);
  ASSERT_EQ(h[0]->dtype, MB_DTYPE_FLOAT16);
  ASSERT_EQ(case_init(&oc, "", "Cast", 1, 1), 0);
  case_int(&oc, "to", MB_DTYPE_FLOAT);
  ASSERT_OK(case_run(&oc, 13, h, 1, back, 1), &oc.err);
  case_free(&oc);
  ASSERT_EQ(back[0]->dtype, MB_DTYPE_FLOAT);
  for (int i = 0; i < 8; i++) {
    double g = ((const float *)back[0]->data)[i];
    if (!(g == want[i]) || signbit(g) != signbit(want[i]))
      TEST_FAIL_("element %d: %.10g became %.10g, expected %.10g", i, in[i], g,
                 want[i]);
  }
  mb_tensor_free(x);
  free_tensors(h, 1);
  free_tensors(back, 1);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Whole graphs: float32 at the boundary, float16 inside                     */
/* ------------------------------------------------------------------------ */

/* A constant of the graph's float type holding `values` (already exact in
 * float16, so both twins hold the same numbers). */
static const char *fconst(graph_builder *b, bool half, int rank,
                          const int64_t *dims, const double *values) {
  return gb_const(b, half ? MB_DTYPE_FLOAT16 : MB_DTYPE_FLOAT, rank, dims,
                  values);
}

/* A constant of random values rounded to float16; `positive` gives values
 * in [0.5, 1.5). */
static const char *frand(graph_builder *b, bool half, int rank,
                         const int64_t *dims, bool positive) {
  double v[256];
  int64_t n = 1;
  for (int d = 0; d < rank; d++)
    n *= dims[d];
  if (n > 256)
    return "";
  for (int64_t i = 0; i < n; i++)
    v[i] = round_f16(positive ? 1.0f + 0.5f * rnd() : 0.5f * rnd());
  return fconst(b, half, rank, dims, v);
}

static const char *iconst(graph_builder *b, int n, const double *values) {
  int64_t dims[1] = {n};
  return gb_const(b, MB_DTYPE_INT64, 1, dims, values);
}

/* The network of an FP16 conversion (half) or its float32 twin: the same
 * nodes and weights with identity Casts. Convolution, normalisation,
 * activations, pooling, Resize, Pad, a GELU written out, LayerNormalization
 * and Softmax in one branch; data movement, MatMul and elementwise math in
 * the other. */
static mb_model *build_net(bool half) {
  graph_builder b;
  const int64_t in_dims[4] = {1, 3, 8, 8}, y1_dims[2] = {1, 5};
  const int64_t y2_dims[2] = {2, 5};
  const int64_t w_dims[4] = {8, 3, 3, 3}, c8[1] = {8}, c5[1] = {5};
  const int64_t wg_dims[2] = {5, 8}, wm_dims[2] = {2, 3}, scalar[1] = {1};
  const int64_t pads1[4] = {1, 1, 1, 1}, k2[2] = {2, 2};
  const int64_t f16 = half ? MB_DTYPE_FLOAT16 : MB_DTYPE_FLOAT;
  const int64_t scale_dims[1] = {4};
  rng_state = 4242; /* the same weights in both twins */
  gb_init(&b, 17);
  gb_input(&b, "x", MB_DTYPE_FLOAT, 4, in_dims);
  const char *h = GB_OP(&b, "Cast", "x");
  gb_int(&b, "to", f16);
  const char *c = GB_OP(&b, "Conv", h, frand(&b, half, 4, w_dims, false),
                        frand(&b, half, 1, c8, false));
  gb_ints(&b, "pads", 4, pads1);
  const char *bn =
      GB_OP(&b, "BatchNormalization", c, frand(&b, half, 1, c8, true),
            frand(&b, half, 1, c8, false), frand(&b, half, 1, c8, false),
            frand(&b, half, 1, c8, true));
  const char *a = GB_OP(&b, "HardSwish", bn);
  const char *p = GB_OP(&b, "MaxPool", a);
  gb_ints(&b, "kernel_shape", 2, k2);
  gb_ints(&b, "strides", 2, k2);
  const char *r =
      GB_OP(&b, "Resize", p, "",
            gb_const(&b, MB_DTYPE_FLOAT, 1, scale_dims, V(1, 1, 2, 2)));
  const char *ap = GB_OP(&b, "AveragePool", r);
  gb_ints(&b, "kernel_shape", 2, k2);
  gb_ints(&b, "strides", 2, k2);
  const char *pd =
      GB_OP(&b, "Pad", ap, iconst(&b, 8, V(0, 0, 1, 1, 0, 0, 1, 1)));
  const char *sw = GB_OP(&b, "Mul", pd, GB_OP(&b, "Sigmoid", pd));
  const char *f = GB_OP(&b, "Flatten", GB_OP(&b, "GlobalAveragePool", sw));
  const char *g = GB_OP(&b, "Gemm", f, frand(&b, half, 2, wg_dims, false),
                        frand(&b, half, 1, c5, false));
  gb_int(&b, "transB", 1);
  /* GELU as exporters write it: 0.5 * x * (1 + erf(x / sqrt(2))) */
  const char *e =
      GB_OP(&b, "Erf",
            GB_OP(&b, "Div", g, fconst(&b, half, 0, scalar, V(1.4140625))));
  const char *ge =
      GB_OP(&b, "Mul",
            GB_OP(&b, "Mul", g,
                  GB_OP(&b, "Add", e, fconst(&b, half, 0, scalar, V(1.0)))),
            fconst(&b, half, 0, scalar, V(0.5)));
  const char *ln =
      GB_OP(&b, "LayerNormalization", ge, frand(&b, half, 1, c5, true),
            frand(&b, half, 1, c5, false));
  gb_int(&b, "axis", -1);
  const char *sm = GB_OP(&b, "Softmax", ln);
  const char *y1 = GB_OP(&b, "Cast", sm);
  gb_int(&b, "to", MB_DTYPE_FLOAT);
  /* Second branch from f [1, 8]. */
  const char *u = GB_OP(&b, "Unsqueeze", f, iconst(&b, 1, V(0)));
  const char *tr =
      GB_OP(&b, "Transpose", GB_OP(&b, "Reshape", u, iconst(&b, 2, V(2, 4))));
  const char *mm = GB_OP(&b, "MatMul", tr, frand(&b, half, 2, wm_dims, false));
  const char *cc = GB_OP(&b, "Concat", mm, tr);
  gb_int(&b, "axis", 1);
  const char *sl = GB_OP(&b, "Slice", cc, iconst(&b, 1, V(1)),
                         iconst(&b, 1, V(4)), iconst(&b, 1, V(0)));
  const char *ga = GB_OP(&b, "Gather", sl, iconst(&b, 2, V(2, 0)));
  const char *rm = GB_OP(&b, "ReduceMean", ga);
  gb_ints(&b, "axes", 1, (const int64_t[]){1});
  const char *sb = GB_OP(&b, "Sub", ga, rm);
  const char *pw = GB_OP(&b, "Pow", sb, fconst(&b, half, 0, scalar, V(2.0)));
  const char *sq =
      GB_OP(&b, "Sqrt",
            GB_OP(&b, "Add", pw, fconst(&b, half, 0, scalar, V(0.0009765625))));
  const char *cl = GB_OP(&b, "Clip", GB_OP(&b, "Tanh", sq),
                         fconst(&b, half, 0, scalar, V(0.0)),
                         fconst(&b, half, 0, scalar, V(0.75)));
  const char *ex = GB_OP(&b, "Exp", cl);
  const char *sq2 =
      GB_OP(&b, "Squeeze", GB_OP(&b, "Unsqueeze", ex, iconst(&b, 1, V(0))),
            iconst(&b, 1, V(0)));
  const char *y2 = GB_OP(&b, "Cast", sq2);
  gb_int(&b, "to", MB_DTYPE_FLOAT);
  gb_output(&b, y1, MB_DTYPE_FLOAT, 2, y1_dims);
  gb_output(&b, y2, MB_DTYPE_FLOAT, 2, y2_dims);
  return gb_finish(&b);
}

static int compare_all(const char *what, mb_tensor **got, mb_tensor **want,
                       int n, double rtol, double atol) {
  for (int i = 0; i < n; i++) {
    mb_compare_result r;
    mb_error err = {0};
    ASSERT_OK(mb_tensor_compare(got[i], want[i], rtol, atol, &r, &err), &err);
    if (!r.shape_match || r.n_bad)
      TEST_FAIL_("%s, output %d: shape_match %d, %lld elements off, max abs "
                 "error %g",
                 what, i, r.shape_match, (long long)r.n_bad, r.max_abs_err);
  }
  return 0;
}

TEST(fp16_graph_matches_float32_twin_and_onnxruntime) {
  mb_model *m16 = build_net(true), *m32 = build_net(false);
  ASSERT(m16 && m32);
  int64_t dims[4] = {1, 3, 8, 8};
  double xv[192];
  for (int i = 0; i < 192; i++)
    xv[i] = 2.0 * rnd();
  mb_tensor *x[1] = {tensor_of(MB_DTYPE_FLOAT, 4, dims, xv)};
  mb_tensor *y16[2] = {0}, *y32[2] = {0}, *ort[2] = {0};
  ASSERT(x[0]);
  ASSERT_EQ(run_reference(m16, x, y16), 0);
  ASSERT_EQ(run_reference(m32, x, y32), 0);
  ASSERT_EQ(y16[0]->dtype, MB_DTYPE_FLOAT);
  ASSERT_EQ(y16[1]->dtype, MB_DTYPE_FLOAT);
  /* float16 inside costs about three decimal digits over ~20 nodes. */
  if (compare_all("float16 graph vs float32 twin", y16, y32, 2, 2e-2, 2e-2))
    return 1;
  int ort_rc = run_onnxruntime(m16, x, ort);
  ASSERT(ort_rc != 1);
  /* ORT computes these kernels in float32 between Casts as we do; allow a
   * few float16 ulps for its different summation orders. */
  if (ort_rc == 0 && compare_all("float16 graph: reference vs onnxruntime", y16,
                                 ort, 2, 4e-3, 2e-3))
    return 1;
  free_tensors(x, 1);
  free_tensors(y16, 2);
  free_tensors(y32, 2);
  free_tensors(ort, 2);
  mb_model_free(m16);
  mb_model_free(m32);
  return 0;
}

TEST_MAIN(TEST_ENTRY(conversion_ops_accept_float16),
          TEST_ENTRY(other_ops_accept_float16), TEST_ENTRY(cast_boundaries),
          TEST_ENTRY(fp16_graph_matches_float32_twin_and_onnxruntime))
