/* Cross-runtime tests in the spirit of ggml's test-backend-ops: the same
 * small graphs run on every hybrid runtime (XNNPACK, oneDNN) at every
 * precision it computes here, through the generic runtime interface
 * (probe, prepare, run, fetch_outputs, release), and are compared with the
 * reference interpreter behind the same interface.
 *
 * One table row per case: the graph's inputs and constants, and its nodes
 * in a small text form (grammar below), with the runtimes that must run
 * every node natively. Those are prepared with no_fallback, so a node the
 * engine stops accepting fails the case; on the other runtimes the case
 * runs with fallback when at least one node is native (the hybrid layer's
 * segment boundaries are then under test too) and is skipped, with the
 * reason, when none is.
 *
 * Each session is prepared with one set of input data as its example
 * inputs and run on two (the other one first), fetching the outputs after
 * each run. Tolerances: fp32 max |got - want| <= 1e-4 * max(1, max |want|);
 * fp16 and bf16 cosine similarity >= 0.999 unless a row says otherwise (and
 * why). Inputs are seeded from the case name, so every case is
 * deterministic and independent of the others.
 *
 * Prints one line per (runtime, case): ok, FAIL, skip(reason), or known
 * issue(reason) for a row marked as one. MB_XRT_FILTER=substring runs only
 * the cases whose name contains it. */
#include "runtime/runtime.h"
#include "test.h"

#include <stdarg.h>
#include <stdlib.h>

/* ------------------------------------------------------------------------ */
/* The runtimes                                                              */
/* ------------------------------------------------------------------------ */

enum { XNN = 1 << 0, DNN = 1 << 1, BOTH = XNN | DNN };

typedef struct runtime_row {
  const char *name; /* the adapter */
  unsigned bit;     /* its bit in xcase.native */
  mb_precision precision;
  int threads;
} runtime_row;

static const runtime_row runtimes[] = {
    {"xnnpack", XNN, MB_PRECISION_FP32, 2},
    {"xnnpack", XNN, MB_PRECISION_FP16, 1},
    {"onednn", DNN, MB_PRECISION_FP32, 2},
    {"onednn", DNN, MB_PRECISION_BF16, 1},
};

#define FP32_TOLERANCE 1e-4
#define LOW_PRECISION_MIN_COSINE 0.999

/* ------------------------------------------------------------------------ */
/* The cases                                                                 */
/* ------------------------------------------------------------------------ */

/* values: space-separated NAME[:KIND]SHAPE-OR-DATA items; the graph inputs
 * among them are declared in this order:
 *   x[2,3,4,5]       graph input, float32 uniform in [-1, 1)
 *   x:pos[2,3]       graph input in [0.5, 2) (Sqrt, Log, divisors)
 *   x:wide[2,3]      graph input in [-4, 4) (Floor, Ceil, HardSwish)
 *   w:c[8,3,3,3]     float32 initializer in [-1, 1)
 *   v:cpos[8]        float32 initializer in [0.5, 2) (variances)
 *   s:i64{2,-1}      int64 1-D initializer, k:i{0} int64 scalar
 *   l:i32{5,5}       int32 1-D initializer (RNN sequence_lens)
 *   f:f32{1,2}       float32 1-D initializer, a:f{0.5} float32 scalar
 * graph: nodes separated by ';', each `Op(in,in->out,out) attr=value ...`.
 * An empty input name is an omitted optional input. Every node output no
 * node reads is a graph output, in order of appearance; an output name
 * ending in '!' is one even though a later node reads it. Attribute
 * values: 3 an int, 0.5 or 1e-3 a float, [1,2] ints, [0.5,1.0] floats,
 * anything else a string. */
typedef struct xcase {
  const char *name;
  int opset; /* 0: 13 */
  const char *values;
  const char *graph;
  unsigned native; /* runtimes that must run every node (XNN, DNN) */
  /* fp16/bf16: the least cosine similarity; 0 means
   * LOW_PRECISION_MIN_COSINE (a looser bound needs a comment saying why). */
  double min_cosine;
  /* A known engine bug: "runtime" or "runtime/precision" where it shows,
   * and why. The case still runs and its line says so. */
  const char *known_at, *known_why;
} xcase;

/* The heads of the fusion cases: "c" is the value the fused op reads. */
#define CONV_HEAD_VALUES "x[1,20,7,7] w:c[24,20,3,3] b:c[24]"
#define CONV_HEAD "Conv(x,w,b->c) pads=[1,1,1,1]; "
#define MM_HEAD_VALUES "x[6,32] w:c[32,24]"
#define MM_HEAD "MatMul(x,w->c); "

static const xcase cases[] = {
    /* ---- Conv: strides, pads, dilations, groups, auto_pad, ranks ---- */
    {"conv/3x3_pad1_bias", 0, "x[1,3,8,8] w:c[4,3,3,3] b:c[4]",
     "Conv(x,w,b->y) pads=[1,1,1,1]", BOTH},
    {"conv/odd_strides_asym_pads", 0, "x[2,5,11,9] w:c[7,5,3,2]",
     "Conv(x,w->y) strides=[2,3] pads=[1,0,2,1]", BOTH},
    {"conv/dilated", 0, "x[1,4,13,12] w:c[6,4,3,3] b:c[6]",
     "Conv(x,w,b->y) dilations=[2,3] pads=[2,3,2,3]", BOTH},
    {"conv/groups3", 0, "x[1,6,7,7] w:c[9,2,3,3] b:c[9]",
     "Conv(x,w,b->y) group=3 pads=[1,1,1,1]", BOTH},
    {"conv/depthwise_s2", 0, "x[1,8,10,9] w:c[8,1,3,3] b:c[8]",
     "Conv(x,w,b->y) group=8 strides=[2,2] pads=[1,1,1,1]", BOTH},
    {"conv/depthwise_multiplier2", 0, "x[2,4,9,9] w:c[8,1,5,5]",
     "Conv(x,w->y) group=4 pads=[2,2,2,2]", BOTH},
    {"conv/same_upper_s2", 0, "x[1,3,10,7] w:c[5,3,4,3] b:c[5]",
     "Conv(x,w,b->y) auto_pad=SAME_UPPER strides=[2,2]", BOTH},
    {"conv/same_lower", 0, "x[1,3,9,9] w:c[5,3,2,2]",
     "Conv(x,w->y) auto_pad=SAME_LOWER kernel_shape=[2,2]", BOTH},
    {"conv/valid", 0, "x[1,2,6,5] w:c[3,2,3,2]",
     "Conv(x,w->y) auto_pad=VALID strides=[1,2]", BOTH},
    {"conv/1x1_batch3", 0, "x[3,16,5,5] w:c[8,16,1,1] b:c[8]", "Conv(x,w,b->y)",
     BOTH},
    {"conv/threaded_16x32x32", 0, "x[1,16,32,32] w:c[32,16,3,3] b:c[32]",
     "Conv(x,w,b->y) pads=[1,1,1,1]", BOTH},
    {"conv/1d", 0, "x[1,3,17] w:c[5,3,3] b:c[5]",
     "Conv(x,w,b->y) strides=[2] pads=[1,1]", DNN},
    {"conv/3d", 0, "x[1,2,5,6,7] w:c[3,2,3,3,3]",
     "Conv(x,w->y) pads=[1,1,1,1,1,1]", DNN},
    {"conv/odd_channels_17_to_33", 0, "x[1,17,9,9] w:c[33,17,3,3] b:c[33]",
     "Conv(x,w,b->y) pads=[1,1,1,1]", BOTH},
    {"conv/depthwise_dilated_strided", 0, "x[2,12,15,13] w:c[12,1,3,3]",
     "Conv(x,w->y) group=12 strides=[2,2] dilations=[2,2] pads=[2,2,2,2]",
     BOTH},
    {"conv/groups2_asym_kernel", 0, "x[1,6,8,7] w:c[4,3,3,1] b:c[4]",
     "Conv(x,w,b->y) group=2 pads=[1,0,1,0]", BOTH},
    {"conv/pads_beyond_kernel", 0, "x[1,2,5,5] w:c[3,2,2,2]",
     "Conv(x,w->y) pads=[3,3,3,3]", BOTH},
    {"conv/same_upper_dilated", 0, "x[1,3,11,10] w:c[4,3,3,3]",
     "Conv(x,w->y) auto_pad=SAME_UPPER dilations=[2,2]", BOTH},
    {"conv/1x1_strided", 0, "x[1,8,9,9] w:c[16,8,1,1]",
     "Conv(x,w->y) strides=[2,2]", BOTH},
    {"conv/kernel_covers_input", 0, "x[2,3,5,4] w:c[6,3,5,4] b:c[6]",
     "Conv(x,w,b->y)", BOTH},
    {"conv/batch4_wide_kernel", 0, "x[4,8,6,20] w:c[8,8,1,5]",
     "Conv(x,w->y) pads=[0,2,0,2]", BOTH},
    {"conv/3d_depthwise_strided", 0, "x[1,4,6,7,8] w:c[4,1,3,3,3]",
     "Conv(x,w->y) group=4 strides=[2,2,2] pads=[1,1,1,1,1,1]", DNN},

    /* ---- Gemm, MatMul ---- */
    {"gemm/transB_bias", 0, "a[5,7] w:c[6,7] c:c[6]", "Gemm(a,w,c->y) transB=1",
     BOTH},
    {"gemm/alpha_beta_row_bias", 0, "a[4,9] w:c[9,3] c:c[1,3]",
     "Gemm(a,w,c->y) alpha=0.5 beta=2.0", BOTH},
    {"gemm/full_c", 0, "a[3,5] w:c[5,4] c:c[3,4]", "Gemm(a,w,c->y)", BOTH},
    {"gemm/no_c", 0, "a[2,8] w:c[8,8]", "Gemm(a,w->y)", BOTH},
    {"gemm/transA", 0, "a[7,4] w:c[7,5] c:c[5]", "Gemm(a,w,c->y) transA=1",
     DNN},
    {"gemm/two_activations", 0, "a[3,4] b[4,5]", "Gemm(a,b->y)", DNN},
    {"matmul/2d_const", 0, "x[5,12] w:c[12,7]", "MatMul(x,w->y)", BOTH},
    {"matmul/3d_const", 0, "x[2,5,12] w:c[12,7]", "MatMul(x,w->y)", BOTH},
    {"matmul/batch_broadcast", 0, "a[2,1,4,6] b[3,6,5]", "MatMul(a,b->y)", DNN},
    {"matmul/4d_activations", 0, "a[2,3,4,6] b[2,3,6,5]", "MatMul(a,b->y)",
     DNN},
    {"gemm/transA_transB", 0, "a[6,3] w:c[5,6]",
     "Gemm(a,w->y) transA=1 transB=1", DNN},
    {"gemm/full_c_beta", 0, "a[3,5] w:c[5,4] c:c[3,4]",
     "Gemm(a,w,c->y) beta=0.5", XNN},
    {"gemm/scalar_c", 0, "a[3,5] w:c[5,4] c:f{0.7}", "Gemm(a,w,c->y)", BOTH},
    {"matmul/const_batched_weights", 0, "x[2,5,12] w:c[2,12,7]",
     "MatMul(x,w->y)", DNN},
    {"matmul/const_first_operand", 0, "w:c[4,6] x[2,6,5]", "MatMul(w,x->y)",
     DNN},

    /* ---- binary: every op, broadcasting ---- */
    {"add/same_shape", 0, "a[2,3,4,5] b[2,3,4,5]", "Add(a,b->y)", BOTH},
    {"sub/same_shape", 0, "a[2,3,4,5] b[2,3,4,5]", "Sub(a,b->y)", BOTH},
    {"mul/same_shape", 0, "a[2,3,4,5] b[2,3,4,5]", "Mul(a,b->y)", BOTH},
    {"div/same_shape", 0, "a[2,3,4,5] b:pos[2,3,4,5]", "Div(a,b->y)", BOTH},
    {"max/same_shape", 0, "a[2,3,4,5] b[2,3,4,5]", "Max(a,b->y)", BOTH},
    {"min/same_shape", 0, "a[2,3,4,5] b[2,3,4,5]", "Min(a,b->y)", BOTH},
    {"add/channel_const", 0, "x[1,6,5,4] c:c[6,1,1]", "Add(x,c->y)", BOTH},
    {"mul/const_first", 0, "x[1,6,5,4] c:c[6,1,1]", "Mul(c,x->y)", BOTH},
    {"sub/scalar_const_first", 0, "x[2,7,3] c:f{0.5}", "Sub(c,x->y)", BOTH},
    {"div/scalar_const_first", 0, "x:pos[2,7,3] c:f{1.5}", "Div(c,x->y)", BOTH},
    {"add/channel_activation", 0, "x[2,3,4,5] c[2,3,1,1]", "Add(x,c->y)", BOTH},
    {"max/rank1_activation_into_rank4", 0, "x[2,3,4,5] c[5]", "Max(x,c->y)",
     DNN},
    {"mul/both_sides_broadcast_rank3", 0, "a[3,1,5] b[1,4,1]", "Mul(a,b->y)",
     XNN},
    {"min/both_sides_broadcast_rank4", 0, "a[1,3,1,5] b[2,1,4,1]",
     "Min(a,b->y)", XNN},
    {"sub/rank2_row", 0, "a[4,6] b[1,6]", "Sub(a,b->y)", BOTH},
    {"add/rank5_const", 0, "x[2,2,3,2,4] c:c[3,1,4]", "Add(x,c->y)", BOTH},
    {"add/rank0_activation", 0, "a[2,3,4,5] b[]", "Add(a,b->y)", BOTH},
    {"sub/first_operand_broadcast", 0, "a[1,5] b[4,5]", "Sub(a,b->y)", BOTH},
    {"div/first_operand_broadcast", 0, "a[1,5] b:pos[4,5]", "Div(a,b->y)", XNN},
    {"mul/rank6_both_sides", 0, "a[2,1,3,1,2,3] b[1,2,1,2,1,3]", "Mul(a,b->y)",
     XNN},
    {"add/const_full_shape", 0, "x[2,3] c:c[2,3]", "Add(x,c->y)", BOTH},
    {"max/scalar_const", 0, "x[2,3,4,5] c:f{0.1}", "Max(x,c->y)", BOTH},
    {"div/by_const_row", 0, "x[3,7] c:cpos[7]", "Div(x,c->y)", BOTH},
    {"min/const_first_channel", 0, "c:c[3,1,1] x[2,3,4,5]", "Min(c,x->y)",
     BOTH},

    /* ---- unary ---- */
    {"relu/rank4", 0, "x[2,3,5,7]", "Relu(x->y)", BOTH},
    {"relu/rank1", 0, "x[7]", "Relu(x->y)", BOTH},
    {"relu/rank6", 0, "x[2,1,3,2,2,3]", "Relu(x->y)", BOTH},
    {"sigmoid/scalar", 0, "x[]", "Sigmoid(x->y)", BOTH},
    {"sigmoid/rank3", 0, "x[3,4,5]", "Sigmoid(x->y)", BOTH},
    {"leakyrelu/alpha", 0, "x[2,3,5,7]", "LeakyRelu(x->y) alpha=0.3", BOTH},
    {"elu/alpha", 0, "x[2,3,5,7]", "Elu(x->y) alpha=0.7", BOTH},
    {"hardswish/wide", 14, "x:wide[2,3,5,7]", "HardSwish(x->y)", BOTH},
    {"hardsigmoid/alpha_beta", 0, "x:wide[2,3,5]",
     "HardSigmoid(x->y) alpha=0.3 beta=0.4", BOTH},
    {"abs/rank2", 0, "x[6,5]", "Abs(x->y)", BOTH},
    {"neg/rank4", 0, "x[1,3,4,4]", "Neg(x->y)", BOTH},
    {"sqrt/positive", 0, "x:pos[2,3,4]", "Sqrt(x->y)", BOTH},
    {"floor/wide", 0, "x:wide[2,3,5,7]", "Floor(x->y)", XNN},
    {"ceil/wide", 0, "x:wide[2,3,5,7]", "Ceil(x->y)", XNN},
    {"tanh/rank4", 0, "x:wide[2,3,5,7]", "Tanh(x->y)", DNN},
    {"exp/rank3", 0, "x[2,5,6]", "Exp(x->y)", DNN},
    {"log/positive", 0, "x:pos[2,5,6]", "Log(x->y)", DNN},
    {"reciprocal/positive", 0, "x:pos[3,7]", "Reciprocal(x->y)", DNN},
    {"softplus/wide", 0, "x:wide[2,3,5]", "Softplus(x->y)", DNN},
    {"mish/wide", 18, "x:wide[2,3,5]", "Mish(x->y)", DNN},
    {"gelu/erf", 20, "x:wide[2,3,5,4]", "Gelu(x->y)", DNN},
    {"gelu/tanh", 20, "x:wide[2,3,5,4]", "Gelu(x->y) approximate=tanh", DNN},
    {"erf/alone", 0, "x:wide[3,11]", "Erf(x->y)", DNN},
    {"pow/square", 0, "x[2,3,4] p:f{2.0}", "Pow(x,p->y)", DNN},
    {"pow/sqrt_of_positive", 0, "x:pos[2,3,4] p:f{0.5}", "Pow(x,p->y)", DNN},
    {"clip/min_max_inputs", 0, "x:wide[2,3,4,5] lo:f{-0.5} hi:f{1.5}",
     "Clip(x,lo,hi->y)", BOTH},
    {"clip/max_only", 0, "x:wide[2,3,4] hi:f{0.25}", "Clip(x,,hi->y)", BOTH},
    {"clip/opset6_attributes", 6, "x:wide[2,3,4,5]",
     "Clip(x->y) min=-1.0 max=2.0", BOTH},
    {"prelu/per_channel", 0, "x[2,6,4,5] s:c[6,1,1]", "PRelu(x,s->y)", XNN},
    {"prelu/scalar_slope_rank2", 0, "x[5,7] s:c[1]", "PRelu(x,s->y)", XNN},

    /* ---- pooling ---- */
    {"maxpool/3x3_s2_p1", 0, "x[1,3,11,10]",
     "MaxPool(x->y) kernel_shape=[3,3] strides=[2,2] pads=[1,1,1,1]", BOTH},
    {"maxpool/ceil_mode", 0, "x[1,2,10,10]",
     "MaxPool(x->y) kernel_shape=[3,3] strides=[2,2] ceil_mode=1", BOTH},
    {"maxpool/dilated", 0, "x[1,2,9,9]",
     "MaxPool(x->y) kernel_shape=[2,2] dilations=[2,2]", BOTH},
    {"maxpool/asym_kernel_pads", 0, "x[2,3,7,9]",
     "MaxPool(x->y) kernel_shape=[2,3] strides=[1,2] pads=[0,1,1,0]", BOTH},
    {"maxpool/same_upper", 0, "x[1,2,7,8]",
     "MaxPool(x->y) kernel_shape=[3,3] strides=[2,2] auto_pad=SAME_UPPER",
     BOTH},
    {"maxpool/1d", 0, "x[1,3,15]", "MaxPool(x->y) kernel_shape=[3] strides=[2]",
     DNN},
    {"avgpool/exclude_pad", 0, "x[1,3,9,8]",
     "AveragePool(x->y) kernel_shape=[3,3] strides=[2,2] pads=[1,1,1,1]", BOTH},
    {"avgpool/include_pad", 0, "x[1,3,9,8]",
     "AveragePool(x->y) kernel_shape=[3,3] strides=[2,2] pads=[1,1,1,1] "
     "count_include_pad=1",
     BOTH},
    {"avgpool/ceil_mode", 0, "x[1,2,8,8]",
     "AveragePool(x->y) kernel_shape=[3,3] strides=[2,2] ceil_mode=1", BOTH},
    {"avgpool/3d", 0, "x[1,2,5,6,6]",
     "AveragePool(x->y) kernel_shape=[2,2,2] strides=[2,2,2]", DNN},
    {"globalavgpool/rank4", 0, "x[2,5,7,3]", "GlobalAveragePool(x->y)", BOTH},
    {"globalmaxpool/rank4", 0, "x[2,5,7,3]", "GlobalMaxPool(x->y)", BOTH},
    {"globalavgpool/1d", 0, "x[1,4,9]", "GlobalAveragePool(x->y)", DNN},
    {"maxpool/pads_and_dilation", 0, "x[1,3,10,11]",
     "MaxPool(x->y) kernel_shape=[3,2] strides=[2,1] dilations=[2,1] "
     "pads=[2,1,2,0]",
     BOTH},
    {"maxpool/ceil_with_pads", 0, "x[1,2,9,9]",
     "MaxPool(x->y) kernel_shape=[3,3] strides=[2,2] pads=[1,1,1,1] "
     "ceil_mode=1",
     BOTH},
    {"maxpool/3d", 0, "x[1,2,6,6,6]", "MaxPool(x->y) kernel_shape=[2,2,2]",
     DNN},
    {"avgpool/asym_pads", 0, "x[2,3,7,6]",
     "AveragePool(x->y) kernel_shape=[2,3] strides=[2,2] pads=[1,0,0,2]", BOTH},
    {"avgpool/same_lower", 0, "x[1,2,7,7]",
     "AveragePool(x->y) kernel_shape=[2,2] strides=[2,2] auto_pad=SAME_LOWER",
     BOTH},
    {"avgpool/ceil_include_pad", 0, "x[1,2,8,8]",
     "AveragePool(x->y) kernel_shape=[3,3] strides=[2,2] pads=[1,1,1,1] "
     "ceil_mode=1 count_include_pad=1",
     XNN},
    {"globalmaxpool/1x1_input", 0, "x[2,5,1,1]", "GlobalMaxPool(x->y)", DNN},

    /* ---- normalisation ---- */
    {"softmax/rank2_last", 0, "x:wide[3,10]", "Softmax(x->y)", BOTH},
    {"softmax/rank4_axis1", 0, "x:wide[1,5,3,3]", "Softmax(x->y) axis=1", BOTH},
    {"softmax/rank4_axis2", 0, "x:wide[2,3,4,5]", "Softmax(x->y) axis=2", DNN},
    {"softmax/rank3_negative_axis", 0, "x:wide[2,4,7]", "Softmax(x->y) axis=-1",
     BOTH},
    {"softmax/opset11_flattened", 11, "x:wide[2,3,2,2]", "Softmax(x->y) axis=1",
     BOTH},
    {"logsoftmax/last", 0, "x:wide[3,4,6]", "LogSoftmax(x->y)", DNN},
    {"softmax/opset11_axis2_rank4", 11, "x:wide[2,3,4,5]",
     "Softmax(x->y) axis=2", DNN},
    {"logsoftmax/rank4_axis1", 0, "x:wide[2,5,3,3]", "LogSoftmax(x->y) axis=1",
     DNN},
    {"batchnorm/rank4", 0, "x[2,5,4,3] s:c[5] b:c[5] m:c[5] v:cpos[5]",
     "BatchNormalization(x,s,b,m,v->y) epsilon=0.001", BOTH},
    {"batchnorm/rank2", 0, "x[4,5] s:c[5] b:c[5] m:c[5] v:cpos[5]",
     "BatchNormalization(x,s,b,m,v->y)", BOTH},
    {"batchnorm/rank3", 0, "x[2,5,7] s:c[5] b:c[5] m:c[5] v:cpos[5]",
     "BatchNormalization(x,s,b,m,v->y)", BOTH},
    {"layernorm/last_axis", 17, "x[2,5,8] s:c[8] b:c[8]",
     "LayerNormalization(x,s,b->y) epsilon=0.00001", DNN},
    {"layernorm/axis1_no_bias", 17, "x[2,3,4] s:c[3,4]",
     "LayerNormalization(x,s->y) axis=1", DNN},
    {"layernorm/rank4_axis_minus2", 17, "x[2,3,4,5] s:c[4,5] b:c[4,5]",
     "LayerNormalization(x,s,b->y) axis=-2", DNN},

    /* ---- data movement ---- */
    {"transpose/nchw_to_nhwc", 0, "x[2,3,4,5]",
     "Transpose(x->y) perm=[0,2,3,1]", DNN},
    {"transpose/default_reverse", 0, "x[3,4,5]", "Transpose(x->y)", DNN},
    {"transpose/rank5", 0, "x[2,3,1,4,2]", "Transpose(x->y) perm=[4,0,3,1,2]",
     DNN},
    {"transpose/rank2", 0, "x[7,9]", "Transpose(x->y)", DNN},
    {"reshape/to_rank4_1x1", 0, "x[2,8] s:i64{2,8,1,1}", "Reshape(x,s->y)",
     BOTH},
    {"unsqueeze/to_rank4_one_channel", 0, "x[3,5] a:i64{0,1}",
     "Unsqueeze(x,a->y)", BOTH},
    {"squeeze/rank4_to_rank3", 0, "x[2,3,1,5] a:i64{2}", "Squeeze(x,a->y)",
     DNN},
    {"flatten/axis0", 0, "x[2,3,4]", "Flatten(x->y) axis=0", BOTH},
    {"reshape/rank3_to_rank2", 0, "x[2,6,5] s:i64{4,15}", "Reshape(x,s->y)",
     BOTH},
    {"reshape/zero_and_minus_one", 0, "x[3,4,5] s:i64{0,-1}", "Reshape(x,s->y)",
     BOTH},
    {"reshape/nchw_flatten", 0, "x[2,3,4,5] s:i64{2,-1}", "Reshape(x,s->y)",
     DNN},
    {"reshape/1x1_spatial", 0, "x[2,8,1,1] s:i64{2,8}", "Reshape(x,s->y)",
     BOTH},
    {"flatten/axis1_nchw", 0, "x[2,3,4,5]", "Flatten(x->y) axis=1", DNN},
    {"flatten/axis1_1x1", 0, "x[2,8,1,1]", "Flatten(x->y) axis=1", BOTH},
    {"flatten/axis2_rank3", 0, "x[3,4,5]", "Flatten(x->y) axis=2", BOTH},
    {"squeeze/axis1", 0, "x[3,1,5] a:i64{1}", "Squeeze(x,a->y)", BOTH},
    {"squeeze/spatial", 0, "x[2,8,1,1] a:i64{2,3}", "Squeeze(x,a->y)", BOTH},
    {"unsqueeze/middle", 0, "x[3,5] a:i64{1}", "Unsqueeze(x,a->y)", BOTH},
    {"identity/rank4", 0, "x[2,3,4,5]", "Identity(x->y)", BOTH},
    {"dropout/inference", 0, "x[2,3,4,5]", "Dropout(x->y)", BOTH},
    {"pad/constant_value", 0, "x[1,3,5,4] p:i64{0,0,1,2,0,0,2,1} v:f{0.5}",
     "Pad(x,p,v->y)", XNN},
    {"pad/rank2", 0, "x[3,4] p:i64{1,0,0,2}", "Pad(x,p->y)", XNN},
    {"pad/opset18_axes", 18, "x[1,2,4,5] p:i64{1,1,2,0} a:i64{2,3}",
     "Pad(x,p,,a->y)", XNN},
    {"depthtospace/dcr_b2", 0, "x[1,8,3,4]", "DepthToSpace(x->y) blocksize=2",
     XNN},
    {"depthtospace/dcr_b3", 0, "x[2,18,2,3]", "DepthToSpace(x->y) blocksize=3",
     XNN},
    {"resize/linear_half_pixel", 0, "x[1,2,4,5] s:f32{1,1,2,2}",
     "Resize(x,,s->y) mode=linear", XNN},
    {"resize/linear_align_corners", 0, "x[1,2,4,5] z:i64{1,2,7,9}",
     "Resize(x,,,z->y) mode=linear coordinate_transformation_mode="
     "align_corners",
     XNN},
    {"resize/linear_asymmetric", 0, "x[2,3,3,4] s:f32{1,1,2,3}",
     "Resize(x,,s->y) mode=linear coordinate_transformation_mode=asymmetric",
     XNN},
    {"resize/linear_pytorch_half_pixel", 0, "x[1,2,4,5] z:i64{1,2,8,10}",
     "Resize(x,,,z->y) mode=linear "
     "coordinate_transformation_mode=pytorch_half_pixel",
     XNN},
    {"resize/linear_downscale", 0, "x[1,2,8,6] s:f32{1,1,0.5,0.5}",
     "Resize(x,,s->y) mode=linear", XNN},
    {"concat/axis1", 0, "a[2,3,4] b[2,5,4]", "Concat(a,b->y) axis=1", DNN},
    {"concat/three_with_const_last_axis", 0, "a[2,3,1] c:c[2,3,2] b[2,3,4]",
     "Concat(a,c,b->y) axis=-1", DNN},
    {"split/given_sizes", 0, "x[2,7,4] s:i64{2,5}", "Split(x,s->a,b) axis=1",
     DNN},
    {"split/equal_three", 0, "x[6,3]", "Split(x->a,b,c)", DNN},
    {"split/opset18_uneven", 18, "x[2,10]",
     "Split(x->a,b,c) axis=1 num_outputs=3", DNN},
    {"concat/rank4_channels", 0, "a[1,3,4,5] b[1,13,4,5]",
     "Concat(a,b->y) axis=1", DNN},
    {"concat/axis0", 0, "a[2,3] b[1,3]", "Concat(a,b->y) axis=0", DNN},
    {"slice/rank4_spatial_steps", 0,
     "x[1,3,8,8] st:i64{1,2} en:i64{7,-1} ax:i64{2,3} sp:i64{2,3}",
     "Slice(x,st,en,ax,sp->y)", DNN},
    {"slice/steps_negative_start", 0,
     "x[5,6,7] st:i64{1,-4} en:i64{4,100} ax:i64{0,2} sp:i64{1,2}",
     "Slice(x,st,en,ax,sp->y)", DNN},
    {"slice/default_axes", 0, "x[4,6] st:i64{1,2} en:i64{3,5}",
     "Slice(x,st,en->y)", DNN},

    /* ---- reductions ---- */
    {"reducemean/axis1_keepdims", 0, "x[2,5,4,3]",
     "ReduceMean(x->y) axes=[1] keepdims=1", DNN},
    {"reducemean/spatial_negative_axes", 0, "x[2,3,4,5]",
     "ReduceMean(x->y) axes=[-2,-1]", DNN},
    {"reducesum/axes_input_no_keepdims", 0, "x[2,5,4,3] a:i64{2,3}",
     "ReduceSum(x,a->y) keepdims=0", DNN},
    {"reducemax/opset18_last", 18, "x[3,4,6] a:i64{-1}", "ReduceMax(x,a->y)",
     DNN},
    {"reducemin/opset18_all", 18, "x[3,4,6]", "ReduceMin(x->y) keepdims=0",
     DNN},
    {"reduceprod/opset18_two_axes", 18, "x:pos[3,4,5] a:i64{0,2}",
     "ReduceProd(x,a->y)", DNN},
    {"reducesum/opset11_attribute", 11, "x[2,5,4,3]",
     "ReduceSum(x->y) axes=[1] keepdims=0", DNN},
    {"reducemean/all_keepdims", 0, "x[2,3,4]", "ReduceMean(x->y)", DNN},
    {"reducemax/opset13_two_axes", 0, "x[3,4,6]", "ReduceMax(x->y) axes=[0,2]",
     DNN},

    /* ---- a Conv or MatMul followed by each op an engine may fuse ---- */
    {"fuse/conv_leakyrelu", 0, CONV_HEAD_VALUES,
     CONV_HEAD "LeakyRelu(c->y) alpha=0.2", BOTH},
    {"fuse/conv_elu", 0, CONV_HEAD_VALUES, CONV_HEAD "Elu(c->y) alpha=0.5",
     BOTH},
    {"fuse/conv_sigmoid", 0, CONV_HEAD_VALUES, CONV_HEAD "Sigmoid(c->y)", BOTH},
    {"fuse/conv_tanh", 0, CONV_HEAD_VALUES, CONV_HEAD "Tanh(c->y)", DNN},
    {"fuse/conv_hardswish", 14, CONV_HEAD_VALUES, CONV_HEAD "HardSwish(c->y)",
     BOTH},
    {"fuse/conv_hardsigmoid", 0, CONV_HEAD_VALUES,
     CONV_HEAD "HardSigmoid(c->y) alpha=0.25", BOTH},
    {"fuse/conv_clip_relu6", 0, CONV_HEAD_VALUES " lo:f{0.0} hi:f{6.0}",
     CONV_HEAD "Clip(c,lo,hi->y)", BOTH},
    {"fuse/conv_gelu", 20, CONV_HEAD_VALUES, CONV_HEAD "Gelu(c->y)", DNN},
    {"fuse/conv_mish", 18, CONV_HEAD_VALUES, CONV_HEAD "Mish(c->y)", DNN},
    {"fuse/conv_softplus", 0, CONV_HEAD_VALUES, CONV_HEAD "Softplus(c->y)",
     DNN},
    {"fuse/conv_exp", 0, CONV_HEAD_VALUES, CONV_HEAD "Exp(c->y)", DNN},
    {"fuse/conv_abs", 0, CONV_HEAD_VALUES, CONV_HEAD "Abs(c->y)", BOTH},
    {"fuse/conv_neg", 0, CONV_HEAD_VALUES, CONV_HEAD "Neg(c->y)", BOTH},
    {"fuse/conv_square", 0, CONV_HEAD_VALUES " p:f{2.0}",
     CONV_HEAD "Pow(c,p->y)", DNN},
    {"fuse/conv_add_channel_const", 0, CONV_HEAD_VALUES " k:c[24,1,1]",
     CONV_HEAD "Add(c,k->y)", BOTH},
    {"fuse/conv_mul_channel_const", 0, CONV_HEAD_VALUES " k:c[24,1,1]",
     CONV_HEAD "Mul(k,c->y)", BOTH},
    {"fuse/conv_sub_from_scalar", 0, CONV_HEAD_VALUES " k:f{0.5}",
     CONV_HEAD "Sub(k,c->y)", BOTH},
    {"fuse/conv_div_by_scalar", 0, CONV_HEAD_VALUES " k:f{3.0}",
     CONV_HEAD "Div(c,k->y)", BOTH},
    {"fuse/conv_max_scalar", 0, CONV_HEAD_VALUES " k:f{0.1}",
     CONV_HEAD "Max(c,k->y)", BOTH},
    {"fuse/conv_min_channel_const", 0, CONV_HEAD_VALUES " k:c[24,1,1]",
     CONV_HEAD "Min(c,k->y)", BOTH},
    {"fuse/conv_batchnorm_relu", 0,
     CONV_HEAD_VALUES " s:c[24] bb:c[24] m:c[24] v:cpos[24]",
     CONV_HEAD "BatchNormalization(c,s,bb,m,v->n); Relu(n->y)", BOTH},
    {"fuse/conv_add_relu_add", 0, CONV_HEAD_VALUES " r[1,24,7,7] k:c[24,1,1]",
     CONV_HEAD "Add(c,r->s); Relu(s->t); Add(t,k->y)", BOTH},
    {"fuse/matmul_bias_relu", 0, MM_HEAD_VALUES " b:c[24]",
     MM_HEAD "Add(c,b->d); Relu(d->y)", BOTH},
    {"fuse/matmul_bias_tanh", 0, MM_HEAD_VALUES " b:c[24]",
     MM_HEAD "Add(b,c->d); Tanh(d->y)", DNN},
    {"fuse/matmul_gelu", 20, MM_HEAD_VALUES, MM_HEAD "Gelu(c->y)", DNN},
    {"fuse/matmul_scale", 0, MM_HEAD_VALUES " k:f{0.125}",
     MM_HEAD "Mul(c,k->y)", BOTH},
    {"fuse/matmul_sub_row", 0, MM_HEAD_VALUES " k:c[1,24]",
     MM_HEAD "Sub(c,k->y)", BOTH},
    {"fuse/matmul_clip", 0, MM_HEAD_VALUES " lo:f{-0.3} hi:f{0.4}",
     MM_HEAD "Clip(c,lo,hi->y)", BOTH},
    {"fuse/gemm_silu", 0, "x[6,32] w:c[24,32] b:c[24]",
     "Gemm(x,w,b->c) transB=1; Sigmoid(c->s); Mul(c,s->y)", BOTH},

    /* ---- chains: fusion and the hybrid layer's boundaries ---- */
    {"chain/conv_bn_relu_maxpool", 0,
     "x[1,3,10,10] w:c[8,3,3,3] b:c[8] s:c[8] bb:c[8] m:c[8] v:cpos[8]",
     "Conv(x,w,b->c) pads=[1,1,1,1]; BatchNormalization(c,s,bb,m,v->n); "
     "Relu(n->r); MaxPool(r->y) kernel_shape=[2,2] strides=[2,2]",
     BOTH},
    {"chain/residual_conv_add_relu", 0, "x[1,4,6,6] w:c[4,4,3,3] b:c[4]",
     "Conv(x,w,b->c) pads=[1,1,1,1]; Add(c,x->s); Relu(s->y)", BOTH},
    {"chain/mlp", 0, "x[3,10] w1:c[10,16] b1:c[16] w2:c[5,16] b2:c[5]",
     "MatMul(x,w1->h); Add(h,b1->h2); Relu(h2->h3); Gemm(h3,w2,b2->y) "
     "transB=1",
     BOTH},
    {"chain/silu", 0, "x:wide[2,8,5,5]", "Sigmoid(x->s); Mul(x,s->y)", BOTH},
    {"chain/gelu_erf_form", 0,
     "x:wide[4,16] r:f{1.4142135} one:f{1.0} "
     "half:f{0.5}",
     "Div(x,r->a); Erf(a->e); Add(e,one->f); Mul(x,f->g); Mul(g,half->y)", DNN},
    {"chain/attention", 0, "q[1,2,5,8] k[1,2,8,5] v[1,2,5,8] sc:f{0.35}",
     "MatMul(q,k->s); Mul(s,sc->t); Softmax(t->p) axis=-1; MatMul(p,v->y)",
     DNN},
    {"chain/conv_clip_gap_flatten_gemm", 0,
     "x[2,3,9,9] w:c[6,3,3,3] lo:f{0.0} hi:f{6.0} fw:c[4,6] fb:c[4]",
     "Conv(x,w->c) strides=[2,2]; Clip(c,lo,hi->r); GlobalAveragePool(r->g); "
     "Flatten(g->f); Gemm(f,fw,fb->y) transB=1",
     BOTH},
    {"chain/squeeze_excite", 0,
     "x[1,16,8,8] w:c[16,16,3,3] b:c[16] w1:c[4,16,1,1] b1:c[4] "
     "w2:c[16,4,1,1] b2:c[16]",
     "Conv(x,w,b->c) pads=[1,1,1,1]; GlobalAveragePool(c->g); "
     "Conv(g,w1,b1->h); Relu(h->h2); Conv(h2,w2,b2->s); Sigmoid(s->s2); "
     "Mul(c,s2->y)",
     BOTH},
    {"chain/inverted_residual", 0,
     "x[1,8,10,10] w1:c[24,8,1,1] w2:c[24,1,3,3] w3:c[8,24,1,1] lo:f{0.0} "
     "hi:f{6.0}",
     "Conv(x,w1->a); Clip(a,lo,hi->a2); Conv(a2,w2->b) group=24 "
     "pads=[1,1,1,1]; Clip(b,lo,hi->b2); Conv(b2,w3->c); Add(c,x->y)",
     BOTH},
    {"chain/residual_input_first", 0, "x[1,5,6,6] w:c[5,5,3,3]",
     "Conv(x,w->c) pads=[1,1,1,1]; Add(x,c->y)", BOTH},
    {"chain/sum_operand_read_later", 0, "x[1,4,6,6] w:c[4,4,3,3]",
     "Conv(x,w->c) pads=[1,1,1,1]; Add(c,x->s); Mul(s,x->y)", BOTH},
    {"chain/conv_output_two_readers", 0, "x[1,4,6,6] w:c[6,4,3,3]",
     "Conv(x,w->c) pads=[1,1,1,1]; Relu(c->a); Sigmoid(c->b); Add(a,b->y)",
     BOTH},
    {"chain/conv_concat_conv", 0,
     "x[1,6,7,7] w1:c[5,6,3,3] w2:c[11,6,1,1] w3:c[8,16,3,3]",
     "Conv(x,w1->a) pads=[1,1,1,1]; Conv(x,w2->b); Concat(a,b->c) axis=1; "
     "Conv(c,w3->y) pads=[1,1,1,1]",
     DNN},
    {"chain/conv_split_branches", 0, "x[1,6,7,7] w:c[16,6,3,3] sp:i64{7,9}",
     "Conv(x,w->c) pads=[1,1,1,1]; Split(c,sp->a,b) axis=1; Relu(a->y1); "
     "Sigmoid(b->y2)",
     DNN},
    {"chain/conv_transpose_reshape", 0, "x[1,3,6,6] w:c[8,3,3,3] s:i64{1,-1,8}",
     "Conv(x,w->c) pads=[1,1,1,1]; Transpose(c->t) perm=[0,2,3,1]; "
     "Reshape(t,s->y)",
     DNN},
    {"chain/conv_slice_channels", 0,
     "x[1,3,6,6] w:c[17,3,3,3] st:i64{2} en:i64{9} ax:i64{1}",
     "Conv(x,w->c) pads=[1,1,1,1]; Slice(c,st,en,ax->s); Relu(s->y)", DNN},
    {"chain/conv_reducemean_sigmoid", 0, "x[1,3,6,6] w:c[20,3,3,3]",
     "Conv(x,w->c) pads=[1,1,1,1]; ReduceMean(c->m) axes=[2,3]; "
     "Sigmoid(m->y)",
     DNN},
    {"chain/conv_softmax_channels", 0, "x[1,3,6,6] w:c[10,3,3,3]",
     "Conv(x,w->c) pads=[1,1,1,1]; Softmax(c->y) axis=1", BOTH},
    {"chain/transformer_ffn", 20,
     "x[2,5,16] g:c[16] be:c[16] w1:c[16,32] b1:c[32] w2:c[32,16] b2:c[16]",
     "LayerNormalization(x,g,be->n); MatMul(n,w1->h); Add(h,b1->h1); "
     "Gelu(h1->h2); MatMul(h2,w2->o); Add(o,b2->o1); Add(o1,x->y)",
     DNN},
    {"chain/matmul_two_activations_add", 0, "x[6,32] w:c[32,24] r[6,24]",
     "MatMul(x,w->m); Add(m,r->s); Sigmoid(s->y)", BOTH},
    {"chain/conv_depthtospace_conv", 0,
     "x[1,4,5,5] w1:c[16,4,3,3] w2:c[3,4,3,3]",
     "Conv(x,w1->a) pads=[1,1,1,1]; DepthToSpace(a->d) blocksize=2; "
     "Conv(d,w2->y) pads=[1,1,1,1]",
     XNN},
    {"chain/conv_pad_maxpool", 0,
     "x[1,3,8,8] w:c[6,3,3,3] p:i64{0,0,1,1,0,0,1,1}",
     "Conv(x,w->c); Pad(c,p->q); MaxPool(q->y) kernel_shape=[3,3] "
     "strides=[2,2]",
     XNN},
    {"chain/conv_resize_conv", 0,
     "x[1,3,5,5] w1:c[4,3,3,3] s:f32{1,1,2,2} w2:c[2,4,3,3]",
     "Conv(x,w1->a) pads=[1,1,1,1]; Resize(a,,s->r) mode=linear; "
     "Conv(r,w2->y)",
     XNN},
    {"chain/conv_prelu", 0, "x[1,3,6,6] w:c[8,3,3,3] sl:c[8,1,1]",
     "Conv(x,w->c) pads=[1,1,1,1]; PRelu(c,sl->y)", XNN},
    /* ---- recurrent layers (oneDNN's RNN primitives) ---- */
    {"rnn/lstm_forward", 14, "x[5,2,4] w:c[1,24,4] r:c[1,24,6] b:c[1,48]",
     "LSTM(x,w,r,b->y,yh,yc) hidden_size=6", DNN},
    {"rnn/lstm_bidirectional_states_peepholes", 14,
     "x[5,2,4] h[2,2,6] c[2,2,6] w:c[2,24,4] r:c[2,24,6] b:c[2,48] "
     "p:c[2,18] sl:i32{5,5}",
     "LSTM(x,w,r,b,sl,h,c,p->y,yh,yc) hidden_size=6 "
     "direction=bidirectional",
     DNN},
    {"rnn/lstm_reverse_batch_first_states_only", 14,
     "x[3,5,4] h[3,1,6] w:c[1,24,4] r:c[1,24,6]",
     "LSTM(x,w,r,,,h->,yh) hidden_size=6 direction=reverse layout=1", DNN},
    {"rnn/lstm_bidirectional_batch_first", 14,
     "x[2,4,3] w:c[2,20,3] r:c[2,20,5] b:c[2,40]",
     "LSTM(x,w,r,b->y,yh,yc) hidden_size=5 direction=bidirectional layout=1",
     DNN},
    {"rnn/gru_reset_after", 14,
     "x[6,2,4] h[1,2,5] w:c[1,15,4] r:c[1,15,5] "
     "b:c[1,30]",
     "GRU(x,w,r,b,,h->y,yh) hidden_size=5", DNN},
    {"rnn/gru_linear_before_reset_bidirectional", 14,
     "x[6,2,4] w:c[2,15,4] r:c[2,15,5] b:c[2,30]",
     "GRU(x,w,r,b->y,yh) hidden_size=5 direction=bidirectional "
     "linear_before_reset=1",
     DNN},
    {"rnn/vanilla_bidirectional", 14,
     "x[4,3,5] h[2,3,6] w:c[2,6,5] r:c[2,6,6] b:c[2,12]",
     "RNN(x,w,r,b,,h->y,yh) hidden_size=6 direction=bidirectional", DNN},
    {"rnn/lstm_then_linear", 14,
     "x[5,1,4] w:c[2,24,4] r:c[2,24,6] b:c[2,48] s:i64{5,12} fw:c[12,3]",
     "LSTM(x,w,r,b->y) hidden_size=6 direction=bidirectional; "
     "Transpose(y->t) perm=[0,2,1,3]; Reshape(t,s->f); MatMul(f,fw->o)",
     DNN},
    {"hybrid/fallback_in_the_middle", 0, "x[1,3,6,6] w:c[4,3,3,3]",
     "Conv(x,w->a) pads=[1,1,1,1]; Cos(a->b); Relu(b->y)"},
    {"hybrid/value_read_across_segments", 0, "x[1,3,6,6] w:c[4,3,3,3]",
     "Conv(x,w->a) pads=[1,1,1,1]; Cos(a->b); Add(a,b->y)"},
    {"hybrid/intermediate_is_output", 0, "x[1,3,6,6] w:c[4,3,3,3] b:c[4]",
     "Conv(x,w,b->a!) pads=[1,1,1,1]; Relu(a->y)", BOTH},
    {"hybrid/two_branches", 0, "x[2,3,4,5]",
     "Relu(x->a); Sigmoid(x->b); Add(a,b->y)", BOTH},
    {"hybrid/folded_shape_chain", 0, "x[2,8,1,1] i:i{0} ax:i64{0} m:i64{-1}",
     "Shape(x->s); Gather(s,i->n) axis=0; Unsqueeze(n,ax->n1); "
     "Concat(n1,m->shp) axis=0; Reshape(x,shp->y)",
     BOTH},
    {"hybrid/int64_shape_output", 0, "x[2,3,4]", "Shape(x->s); Relu(x->y)",
     BOTH},
    {"hybrid/folded_float_output", 0, "x[2,3,4] i:i{1}",
     "Shape(x->s); Gather(s,i->n) axis=0; Cast(n->f!) to=1; Mul(x,f->y)", BOTH},
    {"hybrid/input_read_only_by_fallback", 0,
     "a[1,3,6,6] b[1,4,6,6] w:c[4,3,3,3]",
     "Conv(a,w->c) pads=[1,1,1,1]; Cos(b->d); Add(c,d->y)"},
    {"hybrid/input_read_by_two_segments", 0, "x[1,4,6,6] w:c[4,4,3,3]",
     "Conv(x,w->c) pads=[1,1,1,1]; Cos(c->d); Add(d,x->y)"},
    {"hybrid/alternating_five_segments", 0, "x[2,3,4,5]",
     "Relu(x->a); Cos(a->b); Sigmoid(b->c); Sin(c->d); Abs(d->y)"},
    {"hybrid/nothing_native", 0, "x[3,4]", "Cos(x->y)"},
};

/* ------------------------------------------------------------------------ */
/* Building a case                                                           */
/* ------------------------------------------------------------------------ */

#define MAX_INPUTS 8
#define MAX_OUTPUTS 8
#define MAX_NODES 8
#define MAX_NODE_IO 8
#define MAX_LIST 16
/* Two sets of input data: runtimes are prepared with set 0 as the example
 * inputs and run on set 1 first, so one that kept the example's data, not
 * only its shapes, fails. */
#define DATA_SETS 2

typedef struct built {
  mb_model *model;
  mb_graph *g;
  int n_inputs;
  mb_tensor *inputs[DATA_SETS][MAX_INPUTS]; /* graph input order */
  int n_nodes;
  uint32_t rng;
  char message[512]; /* why building failed */
} built;

static void built_free(built *b) {
  for (int k = 0; k < DATA_SETS; k++)
    for (int i = 0; i < b->n_inputs; i++)
      mb_tensor_free(b->inputs[k][i]);
  mb_model_free(b->model);
  memset(b, 0, sizeof *b);
}

static int build_error(built *b, const char *fmt, ...) MB_PRINTF(2, 3);
static int build_error(built *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(b->message, sizeof b->message, fmt, ap);
  va_end(ap);
  return 1;
}

static uint32_t seed_of(const char *name) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (; *name; name++)
    h = (h ^ (uint8_t)*name) * 16777619u;
  return h;
}

static float next_uniform(built *b, float lo, float hi) {
  b->rng = b->rng * 1664525u + 1013904223u;
  return lo + (hi - lo) * (float)((b->rng >> 8) & 0xffffff) / (float)(1 << 24);
}

/* How a value item is made. */
static const struct kind_row {
  const char *kind;
  bool input;   /* a graph input (else an initializer) */
  bool literal; /* {values} (else [dims] with random data) */
  bool scalar;  /* literal of rank 0 */
  mb_dtype dtype;
  float lo, hi; /* random data range */
} kinds[] = {
    {"", true, false, false, MB_DTYPE_FLOAT, -1.0f, 1.0f},
    {"pos", true, false, false, MB_DTYPE_FLOAT, 0.5f, 2.0f},
    {"wide", true, false, false, MB_DTYPE_FLOAT, -4.0f, 4.0f},
    {"c", false, false, false, MB_DTYPE_FLOAT, -1.0f, 1.0f},
    {"cpos", false, false, false, MB_DTYPE_FLOAT, 0.5f, 2.0f},
    {"i64", false, true, false, MB_DTYPE_INT64, 0, 0},
    {"i32", false, true, false, MB_DTYPE_INT32, 0, 0},
    {"i", false, true, true, MB_DTYPE_INT64, 0, 0},
    {"f32", false, true, false, MB_DTYPE_FLOAT, 0, 0},
    {"f", false, true, true, MB_DTYPE_FLOAT, 0, 0},
};

/* Reads "1,-2,3" up to `close`; returns the count or -1. */
static int parse_numbers(const char **text, char close, double *out) {
  const char *p = *text;
  int n = 0;
  while (*p == ' ')
    p++;
  if (*p == close) {
    *text = p + 1;
    return 0;
  }
  for (;;) {
    char *end;
    if (n == MAX_LIST)
      return -1;
    out[n++] = strtod(p, &end);
    if (end == p)
      return -1;
    p = end;
    while (*p == ' ')
      p++;
    if (*p == close) {
      *text = p + 1;
      return n;
    }
    if (*p != ',')
      return -1;
    p++;
  }
}

/* One NAME[:KIND](SHAPE|DATA) item at *text. */
static int build_value(built *b, const char **text) {
  const char *p = *text;
  char name[64], kind[16] = "";
  size_t len = strcspn(p, ":[{ ");
  double numbers[MAX_LIST];
  int64_t dims[MB_MAX_RANK];
  const struct kind_row *row = NULL;
  mb_tensor *t = NULL;
  mb_error err;
  if (len == 0 || len >= sizeof name)
    return build_error(b, "bad value name at \"%s\"", p);
  memcpy(name, p, len);
  name[len] = '\0';
  p += len;
  if (*p == ':') {
    len = strcspn(++p, "[{ ");
    if (len >= sizeof kind)
      return build_error(b, "bad kind for '%s'", name);
    memcpy(kind, p, len);
    kind[len] = '\0';
    p += len;
  }
  for (size_t i = 0; i < MB_ARRAY_COUNT(kinds) && !row; i++)
    if (strcmp(kinds[i].kind, kind) == 0)
      row = &kinds[i];
  if (!row)
    return build_error(b, "unknown kind '%s' for '%s'", kind, name);
  if (*p++ != (row->literal ? '{' : '['))
    return build_error(b, "'%s' wants %s", name,
                       row->literal ? "{values}" : "[dims]");
  int count = parse_numbers(&p, row->literal ? '}' : ']', numbers);
  if (count < 0 || (!row->literal && count > MB_MAX_RANK) ||
      (row->scalar && count != 1))
    return build_error(b, "bad shape or data for '%s'", name);
  int rank = row->literal ? (row->scalar ? 0 : 1) : count;
  if (row->literal)
    dims[0] = count;
  else
    for (int d = 0; d < rank; d++)
      dims[d] = (int64_t)numbers[d];
  if (mb_tensor_create(row->dtype, rank, dims, &t, &err))
    return build_error(b, "'%s': %s", name, err.message);
  for (int64_t i = 0; i < t->numel; i++)
    mb__tensor_set_f64(
        t, i, row->literal ? numbers[i] : next_uniform(b, row->lo, row->hi));
  if (row->input) {
    if (b->n_inputs == MAX_INPUTS) {
      mb_tensor_free(t);
      return build_error(b, "more than %d inputs", MAX_INPUTS);
    }
    b->inputs[0][b->n_inputs++] = t;
    for (int k = 1; k < DATA_SETS; k++) {
      mb_tensor *more = NULL;
      if (mb_tensor_create(row->dtype, rank, dims, &more, &err))
        return build_error(b, "'%s': %s", name, err.message);
      b->inputs[k][b->n_inputs - 1] = more;
      for (int64_t i = 0; i < more->numel; i++)
        mb__tensor_set_f64(more, i, next_uniform(b, row->lo, row->hi));
    }
    if (mb__graph_add_input(b->g, name, row->dtype, rank, dims, NULL, &err) < 0)
      return build_error(b, "input '%s': %s", name, err.message);
  } else if (mb__graph_add_initializer(b->g, name, t, &err) < 0) {
    return build_error(b, "initializer '%s': %s", name, err.message);
  }
  *text = p;
  return 0;
}

/* Splits s in place at `sep` into at most max items (empty items kept). */
static int split_names(char *s, char sep, char **out, int max) {
  int n = 0;
  if (!*s)
    return 0;
  for (;;) {
    if (n == max)
      return -1;
    out[n++] = s;
    char *next = strchr(s, sep);
    if (!next)
      return n;
    *next = '\0';
    s = next + 1;
  }
}

/* One attribute "key=value" on node `node`. */
static int build_attr(built *b, int node, char *item) {
  char *eq = strchr(item, '=');
  mb_error err;
  mb_status status;
  if (!eq)
    return build_error(b, "attribute \"%s\" has no value", item);
  *eq = '\0';
  const char *key = item, *value = eq + 1;
  if (value[0] == '[') {
    const char *p = value + 1;
    double numbers[MAX_LIST];
    int64_t ints[MAX_LIST];
    float floats[MAX_LIST];
    bool is_float = strpbrk(value, ".eE") != NULL;
    int n = parse_numbers(&p, ']', numbers);
    if (n < 0)
      return build_error(b, "bad list for attribute '%s'", key);
    for (int i = 0; i < n; i++) {
      ints[i] = (int64_t)numbers[i];
      floats[i] = (float)numbers[i];
    }
    status = is_float ? mb__node_set_floats(b->g, node, key, n, floats, &err)
                      : mb__node_set_ints(b->g, node, key, n, ints, &err);
  } else {
    char *end;
    long long i = strtoll(value, &end, 10);
    if (*value && !*end) {
      status = mb__node_set_int(b->g, node, key, i, &err);
    } else {
      double f = strtod(value, &end);
      status = *value && !*end
                   ? mb__node_set_float(b->g, node, key, (float)f, &err)
                   : mb__node_set_string(b->g, node, key, value, &err);
    }
  }
  if (status)
    return build_error(b, "attribute '%s': %s", key, err.message);
  return 0;
}

typedef struct parsed_node {
  char *op;
  int n_in, n_out;
  char *in[MAX_NODE_IO], *out[MAX_NODE_IO];
  char *attrs;
} parsed_node;

/* "Op(a,b->c) k=v k=v" in place. */
static int parse_node(built *b, char *text, parsed_node *pn) {
  while (*text == ' ')
    text++;
  char *open = strchr(text, '('), *close = open ? strchr(open, ')') : NULL;
  char *arrow = open ? strstr(open, "->") : NULL;
  if (!open || !close || !arrow || arrow > close)
    return build_error(b, "bad node \"%s\"", text);
  pn->op = text;
  *open = *arrow = *close = '\0';
  pn->attrs = close + 1;
  pn->n_in = split_names(open + 1, ',', pn->in, MAX_NODE_IO);
  pn->n_out = split_names(arrow + 2, ',', pn->out, MAX_NODE_IO);
  if (pn->n_in < 0 || pn->n_out <= 0)
    return build_error(b, "bad inputs or outputs of %s", pn->op);
  return 0;
}

/* Is `name` read by any node? */
static bool is_read(const parsed_node *nodes, int n_nodes, const char *name) {
  for (int k = 0; k < n_nodes; k++)
    for (int i = 0; i < nodes[k].n_in; i++)
      if (strcmp(nodes[k].in[i], name) == 0)
        return true;
  return false;
}

static int build_graph(built *b, const char *graph) {
  char *copy = strdup(graph);
  char *items[MAX_NODES];
  parsed_node nodes[MAX_NODES];
  mb_error err;
  int rc = 1;
  if (!copy)
    return build_error(b, "out of memory");
  b->n_nodes = split_names(copy, ';', items, MAX_NODES);
  if (b->n_nodes <= 0) {
    build_error(b, "no nodes or more than %d", MAX_NODES);
    goto done;
  }
  for (int k = 0; k < b->n_nodes; k++)
    if (parse_node(b, items[k], &nodes[k]))
      goto done;
  /* Output names marked '!' are graph outputs; the mark is not a name. */
  bool marked[MAX_NODES][MAX_NODE_IO];
  for (int k = 0; k < b->n_nodes; k++)
    for (int j = 0; j < nodes[k].n_out; j++) {
      char *o = nodes[k].out[j];
      size_t n = strlen(o);
      marked[k][j] = n > 0 && o[n - 1] == '!';
      if (marked[k][j])
        o[n - 1] = '\0';
    }
  for (int k = 0; k < b->n_nodes; k++) {
    parsed_node *pn = &nodes[k];
    int node = mb__graph_add_node(b->g, pn->op, "", pn->op, pn->n_in,
                                  (const char *const *)pn->in, pn->n_out,
                                  (const char *const *)pn->out, &err);
    if (node < 0) {
      build_error(b, "%s: %s", pn->op, err.message);
      goto done;
    }
    char *save = NULL;
    for (char *a = strtok_r(pn->attrs, " ", &save); a;
         a = strtok_r(NULL, " ", &save))
      if (build_attr(b, node, a))
        goto done;
  }
  for (int k = 0; k < b->n_nodes; k++)
    for (int j = 0; j < nodes[k].n_out; j++) {
      const char *o = nodes[k].out[j];
      if (!marked[k][j] && is_read(nodes, b->n_nodes, o))
        continue;
      if (mb__graph_add_output(b->g, o, MB_DTYPE_UNDEFINED, -1, NULL, NULL,
                               &err) < 0) {
        build_error(b, "output '%s': %s", o, err.message);
        goto done;
      }
    }
  if (mb__graph_finalize(b->g, &err)) {
    build_error(b, "%s", err.message);
    goto done;
  }
  rc = 0;
done:
  free(copy);
  return rc;
}

/* The model and seeded inputs of case xc; b->message says why not. */
static int build_case(const xcase *xc, built *b) {
  mb_error err;
  memset(b, 0, sizeof *b);
  b->rng = seed_of(xc->name);
  if (!(b->model = mb__model_create()))
    return build_error(b, "out of memory");
  b->g = b->model->graph;
  if (mb__model_set_opset(b->model, "", xc->opset ? xc->opset : 13, &err))
    return build_error(b, "%s", err.message);
  for (const char *p = xc->values; *p;) {
    if (*p == ' ') {
      p++;
      continue;
    }
    if (build_value(b, &p))
      return 1;
  }
  return build_graph(b, xc->graph);
}

/* ------------------------------------------------------------------------ */
/* Running and comparing                                                     */
/* ------------------------------------------------------------------------ */

typedef enum verdict { V_OK, V_FAIL, V_SKIP, V_KNOWN, V_COUNT } verdict;
static const char *const verdict_names[V_COUNT] = {"ok", "FAIL", "skip",
                                                   "known issue"};

/* The outputs of one session per data set. */
typedef struct outputs {
  int count;
  mb_tensor *t[DATA_SETS][MAX_OUTPUTS];
} outputs;

static void outputs_free(outputs *o) {
  for (int k = 0; k < DATA_SETS; k++)
    for (int i = 0; i < o->count; i++)
      mb_tensor_free(o->t[k][i]);
  memset(o, 0, sizeof *o);
}

/* Prepares `rt` (options->example_inputs: data set 0), then runs every data
 * set, the last first, fetching the outputs after each run. On failure
 * *stage_out names the call that failed. */
static mb_status run_adapter(const mb_runtime *rt, const built *b,
                             const mb_runtime_options *options, outputs *out,
                             const char **stage_out, mb_error *err) {
  void *session = NULL;
  mb_status status;
  *stage_out = "prepare";
  out->count = mb_model_output_count(b->model);
  if (out->count > MAX_OUTPUTS)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT, "more than %d outputs",
                     MAX_OUTPUTS);
  if ((status = rt->prepare(b->model, NULL, 0, options, &session, err)))
    return status;
  for (int k = DATA_SETS - 1; k >= 0 && !status; k--) {
    *stage_out = "run";
    status = rt->run(session, (const mb_tensor *const *)b->inputs[k], err);
    if (!status) {
      *stage_out = "fetch_outputs";
      status = rt->fetch_outputs(session, out->t[k], err);
    }
  }
  rt->release(session);
  return status;
}

/* Compares every output of every data set with the reference's; fills
 * detail. */
static verdict compare_outputs(const built *b, const outputs *got,
                               const outputs *want, bool low_precision,
                               double min_cosine, char *detail, size_t size) {
  double worst = 0.0, worst_cosine = 1.0;
  for (int j = 0; j < DATA_SETS * want->count; j++) {
    int k = j / want->count, i = j % want->count;
    const mb_tensor *g = got->t[k][i], *w = want->t[k][i];
    const char *name = b->g->values[b->g->outputs[i]].name;
    char gs[96], ws[96];
    double scale = 1.0;
    mb_compare_result c;
    mb_error err;
    if (!g) {
      snprintf(detail, size, "data set %d: output '%s' missing", k, name);
      return V_FAIL;
    }
    for (int64_t e = 0; e < w->numel; e++)
      scale = fmax(scale, fabs(mb__tensor_get_f64(w, e)));
    /* atol covers the fp32 bound; low precision counts only NaN and
     * infinity mismatches here and is judged by the cosine. */
    double atol = low_precision ? INFINITY : FP32_TOLERANCE * scale;
    if (mb_tensor_compare(g, w, 0.0, atol, &c, &err)) {
      snprintf(detail, size, "data set %d: output '%s': %s", k, name,
               err.message);
      return V_FAIL;
    }
    if (!c.shape_match) {
      snprintf(detail, size,
               "data set %d: output '%s' is %s %s, reference %s %s", k, name,
               mb_dtype_name(g->dtype), mb__shape_str(g->rank, g->dims, gs, 96),
               mb_dtype_name(w->dtype),
               mb__shape_str(w->rank, w->dims, ws, 96));
      return V_FAIL;
    }
    if (c.n_bad) {
      snprintf(detail, size,
               "data set %d: output '%s': %lld of %lld elements off (max abs "
               "err %.3g, normalised %.3g > %g)",
               k, name, (long long)c.n_bad, (long long)w->numel, c.max_abs_err,
               c.max_abs_err / scale, FP32_TOLERANCE);
      return V_FAIL;
    }
    if (low_precision && !(c.cosine >= min_cosine)) {
      snprintf(detail, size,
               "data set %d: output '%s': cosine %.7f < %.7g (max abs err "
               "%.3g)",
               k, name, c.cosine, min_cosine, c.max_abs_err);
      return V_FAIL;
    }
    worst = fmax(worst, c.max_abs_err / scale);
    worst_cosine = fmin(worst_cosine, c.cosine);
  }
  if (!low_precision)
    snprintf(detail, size, "err %.2g", worst);
  else
    snprintf(detail, size, "cosine %.7f, err %.2g", worst_cosine, worst);
  return V_OK;
}

static bool known_here(const xcase *xc, const runtime_row *row) {
  char where[64];
  if (!xc->known_at)
    return false;
  snprintf(where, sizeof where, "%s/%s", row->name,
           mb_precision_name(row->precision));
  return strcmp(xc->known_at, row->name) == 0 ||
         strcmp(xc->known_at, where) == 0;
}

/* Concrete input shapes of the case, for mb_model_partition. */
static void shape_spec(const built *b, mb_input_shape *shapes,
                       mb_shape_spec *spec) {
  for (int i = 0; i < b->n_inputs; i++) {
    shapes[i].name = b->g->values[b->g->inputs[i]].name;
    shapes[i].rank = b->inputs[0][i]->rank;
    memcpy(shapes[i].dims, b->inputs[0][i]->dims, sizeof shapes[i].dims);
  }
  spec->batch_size = 0;
  spec->n_shapes = b->n_inputs;
  spec->shapes = shapes;
}

/* One (runtime, case): the verdict and a line of detail. */
static verdict check_case(const runtime_row *row, const xcase *xc,
                          const built *b, const outputs *ref, char *detail,
                          size_t size) {
  const mb_runtime *rt = mb__runtime_find(row->name);
  bool low = row->precision != MB_PRECISION_FP32;
  bool must_be_native = (xc->native & row->bit) != 0;
  char partial[160] = "";
  const char *stage;
  outputs got = {0};
  mb_error err;
  verdict v;
  memset(&err, 0, sizeof err);
  if (!must_be_native) {
    /* Only worth running when the engine takes some of it. */
    mb_input_shape shapes[MAX_INPUTS];
    mb_shape_spec spec;
    mb_partition *p = NULL;
    shape_spec(b, shapes, &spec);
    mb_status s = mb_model_partition(b->model, row->name, row->precision, &spec,
                                     &p, &err);
    if (s) {
      snprintf(detail, size, "partition: %s: %s", mb_status_string(s),
               err.message);
      return V_FAIL;
    }
    if (p->n_native_nodes == 0) {
      snprintf(detail, size, "%s",
               p->n_unsupported ? p->unsupported[0] : "no node is native");
      mb_partition_free(p);
      return V_SKIP;
    }
    snprintf(partial, sizeof partial, "; %d of %d nodes native, fallback: %s",
             p->n_native_nodes, p->n_nodes,
             p->n_unsupported ? p->unsupported[0] : "none");
    mb_partition_free(p);
  }
  mb_runtime_options options = {
      .threads = row->threads,
      .precision = row->precision,
      .example_inputs = (const mb_tensor *const *)b->inputs[0],
      .no_fallback = must_be_native,
  };
  mb_status s = run_adapter(rt, b, &options, &got, &stage, &err);
  if (s == MB_STATUS_UNSUPPORTED && low) {
    /* The engine refuses this precision for the segment: a limit of the
     * library, reported as such. */
    snprintf(detail, size, "%s", err.message);
    v = V_SKIP;
  } else if (s) {
    snprintf(detail, size, "%s: %s: %s", stage, mb_status_string(s),
             err.message);
    v = V_FAIL;
  } else {
    v = compare_outputs(b, &got, ref, low,
                        xc->min_cosine ? xc->min_cosine
                                       : LOW_PRECISION_MIN_COSINE,
                        detail, size);
    size_t used = strlen(detail);
    snprintf(detail + used, size - used, "%s", partial);
  }
  outputs_free(&got);
  return v;
}

static int counts[MB_ARRAY_COUNT(runtimes)][V_COUNT];

/* Why runtime row `row` cannot run anything here, or NULL. */
static const char *row_unavailable(const runtime_row *row, char *buf,
                                   size_t size) {
  static const xcase probe_case = {"probe", 0, "x[2,3]", "Relu(x->y)"};
  mb_input_shape shapes[MAX_INPUTS];
  mb_shape_spec spec;
  mb_partition *p = NULL;
  mb_error err;
  built b;
  const char *why = NULL;
  memset(&err, 0, sizeof err);
  if (!mb__runtime_find(row->name)) {
    snprintf(buf, size, "no runtime '%s'", row->name);
    return buf;
  }
  if (build_case(&probe_case, &b)) {
    snprintf(buf, size, "%s", b.message);
    why = buf;
  } else {
    shape_spec(&b, shapes, &spec);
    if (mb_model_partition(b.model, row->name, row->precision, &spec, &p,
                           &err)) {
      snprintf(buf, size, "%s", err.message);
      why = buf;
    }
  }
  mb_partition_free(p);
  built_free(&b);
  return why;
}

TEST(every_case_on_every_runtime) {
  const mb_runtime *ref_rt = mb__runtime_find("reference");
  const char *filter = getenv("MB_XRT_FILTER");
  char row_skip[MB_ARRAY_COUNT(runtimes)][MB_ERROR_MESSAGE_SIZE + 64];
  const char *skip_reason[MB_ARRAY_COUNT(runtimes)];
  int failed = 0, n_cases = 0;
  ASSERT(ref_rt);
  for (size_t r = 0; r < MB_ARRAY_COUNT(runtimes); r++)
    skip_reason[r] =
        row_unavailable(&runtimes[r], row_skip[r], sizeof row_skip[r]);
  for (size_t i = 0; i < MB_ARRAY_COUNT(cases); i++) {
    const xcase *xc = &cases[i];
    built b;
    outputs ref = {0};
    const char *stage;
    mb_error err;
    if (filter && !strstr(xc->name, filter))
      continue;
    n_cases++;
    memset(&err, 0, sizeof err);
    if (build_case(xc, &b)) {
      printf("%-14s %-40s FAIL (building: %s)\n", "-", xc->name, b.message);
      failed++;
      built_free(&b);
      continue;
    }
    mb_runtime_options ropts = {
        .threads = 1,
        .example_inputs = (const mb_tensor *const *)b.inputs[0],
    };
    mb_status s = run_adapter(ref_rt, &b, &ropts, &ref, &stage, &err);
    if (s) {
      printf("%-14s %-40s FAIL (%s: %s)\n", "reference", xc->name, stage,
             err.message);
      failed++;
    }
    for (size_t r = 0; r < MB_ARRAY_COUNT(runtimes) && !s; r++) {
      const runtime_row *row = &runtimes[r];
      char label[48], detail[1024];
      verdict v;
      snprintf(label, sizeof label, "%s/%s", row->name,
               mb_precision_name(row->precision));
      if (skip_reason[r]) {
        v = V_SKIP;
        snprintf(detail, sizeof detail, "%s", skip_reason[r]);
      } else {
        v = check_case(row, xc, &b, &ref, detail, sizeof detail);
      }
      bool known = known_here(xc, row);
      if (known && v == V_FAIL) {
        v = V_KNOWN;
        printf("%-14s %-40s known issue (%s): %s\n", label, xc->name,
               xc->known_why, detail);
      } else if (v == V_SKIP) {
        printf("%-14s %-40s skip(%s)\n", label, xc->name, detail);
      } else {
        printf("%-14s %-40s %s (%s)%s%s\n", label, xc->name, verdict_names[v],
               detail,
               known && v == V_OK ? "; marked known issue, now passes: " : "",
               known && v == V_OK ? xc->known_why : "");
      }
      counts[r][v]++;
      failed += v == V_FAIL;
    }
    fflush(stdout);
    outputs_free(&ref);
    built_free(&b);
  }
  printf("\n%d cases x %d runtimes:\n", n_cases, (int)MB_ARRAY_COUNT(runtimes));
  for (size_t r = 0; r < MB_ARRAY_COUNT(runtimes); r++)
    printf("  %s/%-5s %3d ok, %3d failed, %3d skipped, %d known issues\n",
           runtimes[r].name, mb_precision_name(runtimes[r].precision),
           counts[r][V_OK], counts[r][V_FAIL], counts[r][V_SKIP],
           counts[r][V_KNOWN]);
  ASSERT_EQ(failed, 0);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Errors the adapters must report                                           */
/* ------------------------------------------------------------------------ */

typedef struct error_row {
  const char *runtime;
  mb_precision precision;
  bool no_example_inputs;
  const char *graph; /* on input x[2,3] */
  mb_status status;
  const char *message; /* a substring of the error */
} error_row;

static const error_row error_rows[] = {
    {"xnnpack", MB_PRECISION_FP32, true, "Relu(x->y)",
     MB_STATUS_INVALID_ARGUMENT, "concrete input shapes"},
    {"onednn", MB_PRECISION_FP32, true, "Relu(x->y)",
     MB_STATUS_INVALID_ARGUMENT, "concrete input shapes"},
    {"xnnpack", MB_PRECISION_BF16, false, "Relu(x->y)", MB_STATUS_UNSUPPORTED,
     "cannot compute in bf16"},
    {"onednn", MB_PRECISION_FP16, false, "Relu(x->y)", MB_STATUS_UNSUPPORTED,
     "cannot compute in fp16"},
    {"xnnpack", MB_PRECISION_FP32, false, "Relu(x->a); Cos(a->y)",
     MB_STATUS_UNSUPPORTED, "Cos"},
    {"onednn", MB_PRECISION_FP32, false, "Relu(x->a); Cos(a->y)",
     MB_STATUS_UNSUPPORTED, "Cos"},
};

TEST(adapters_report_errors) {
  for (size_t i = 0; i < MB_ARRAY_COUNT(error_rows); i++) {
    const error_row *e = &error_rows[i];
    const mb_runtime *rt = mb__runtime_find(e->runtime);
    mb_runtime_info info = {.name = e->runtime};
    xcase xc = {"error", 0, "x[2,3]", e->graph};
    built b;
    outputs got = {0};
    const char *stage;
    mb_error err;
    memset(&err, 0, sizeof err);
    ASSERT(rt);
    rt->probe(&info);
    if (!info.available) {
      printf("  %s: skip(%s)\n", e->runtime, info.reason);
      continue;
    }
    if (build_case(&xc, &b)) {
      fprintf(stderr, "  building: %s\n", b.message);
      built_free(&b);
      return 1;
    }
    mb_runtime_options options = {
        .threads = 1,
        .precision = e->precision,
        .example_inputs =
            e->no_example_inputs ? NULL : (const mb_tensor *const *)b.inputs[0],
        .no_fallback = 1,
    };
    mb_status s = run_adapter(rt, &b, &options, &got, &stage, &err);
    outputs_free(&got);
    built_free(&b);
    printf("  %s %s: %s: %s\n", e->runtime, e->graph, mb_status_string(s),
           err.message);
    ASSERT_EQ(s, e->status);
    ASSERT_STR_EQ(stage, "prepare");
    ASSERT_CONTAINS(err.message, e->message);
  }
  return 0;
}

TEST_MAIN(TEST_ENTRY(every_case_on_every_runtime),
          TEST_ENTRY(adapters_report_errors))
