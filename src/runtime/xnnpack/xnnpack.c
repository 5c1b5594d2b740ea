/* The XNNPACK engine: runs segments of a graph for the hybrid "xnnpack"
 * runtime through XNNPACK's subgraph API (the Debian snapshot
 * 0.0~git20220216).
 *
 * README: the files of this folder, in the order a segment meets them.
 *   xnnpack.c     this map; the engine interface (probe, which precisions
 *                 run here, supports_node, compile: one subgraph and one
 *                 runtime per segment, fp16 and int8 retries)
 *   support.c     which nodes run here and why not: the checks shared by
 *                 supports_node and compile, the geometry of windows, the
 *                 parameters they read, and the operator table
 *   subgraph.c    the subgraph builder: values and their ids, static data
 *                 owned by the segment, operands in NHWC
 *   int8.c        int8: calibration entries -> qint8 values, plans of an
 *                 int8 node, fused Relu/Clip, weight and bias quantisation
 *   conv.c        Conv, Gemm and MatMul (fp32, fp16, int8)
 *   elementwise.c binary (and their int8 form) and unary nodes
 *   pool.c        max, average and global pooling
 *   norm.c        Softmax, BatchNormalization
 *   shape.c       reshapes, Pad, Resize, DepthToSpace
 *   session.c     the library state (status names, initialisation, shared
 *                 thread pools), the segment's boundary (layouts, owned
 *                 buffers, transposes), run() and release
 *   internal.h    what these files share
 * Code both engines need (constants, checks, int8 parameter mapping) is in
 * ../engine_common.c.
 *
 * Each segment becomes one xnn_subgraph and one xnn_runtime. Inside a
 * segment every rank-4 tensor is NHWC, XNNPACK's layout; every other
 * tensor keeps its ONNX layout. At the boundary (ONNX layout, NCHW) run()
 * transposes rank-4 inputs into buffers the segment owns and rank-4
 * outputs back; weights and constants are repacked once in compile().
 * XNNPACK of this date has no transpose node, so a node whose meaning
 * depends on the layout and cannot be expressed in NHWC (Flatten of
 * [N,C,H,W], Softmax over H, ...) is rejected by supports_node and runs on
 * the reference interpreter.
 *
 * The external buffers never move (inputs are copied into owned buffers
 * padded by XNN_EXTRA_BYTES, which XNNPACK may read past the end; outputs
 * are the caller's tensors or owned buffers), so xnn_setup_runtime runs
 * once, and again only when the caller hands different output buffers.
 *
 * Threads: segments share one pthreadpool per thread count, their workers
 * sleep after each segment (XNN_FLAG_YIELD_WORKERS) so that they leave the
 * cores to the reference interpreter in between, and segments too small to
 * gain from threads run on the calling thread (see XNN_PARALLEL_MIN_WORK).
 *
 * FP16 (XNN_FLAG_FORCE_FP16_INFERENCE) covers few nodes in this snapshot;
 * fully connected layers are then lowered as 1x1 convolutions, which it
 * covers, and any other refusal fails compile() with XNNPACK's status and
 * the nodes likely at fault. The Debian library keeps its assertions, so a
 * node it would abort on is refused before XNNPACK sees it.
 *
 * INT8 (static quantisation; options->quant holds the calibrated ranges
 * and weight scales): a Conv (dense, grouped or depthwise), Gemm or MatMul
 * whose weight has a WEIGHT entry and whose input an ACTIVATION entry
 * runs as input -> convert -> qint8 (the uint8 zero point shifted by
 * -128) -> convolution with a per-channel qcint8 filter, quantised here
 * from the float weight as the static quantiser does, and a qcint32 bias
 * -> qint8 with the output's entry -> convert -> float. This snapshot's
 * int8 fully connected node takes one filter scale only, so Gemm and
 * MatMul become 1x1 convolutions (the converts reshape). A Relu or Clip
 * that alone reads the op's output is fused into it (its output's entry is
 * used, as ORT's quantiser removes it), and an int8 op reading what an
 * int8 op wrote with the same quantisation reads the qint8 value, with no
 * convert pair between them (ResNet's Conv -> Relu -> Conv). The ops
 * ORT's QDQ model also runs on uint8 go int8 when one input is at hand in
 * qint8 already (else the converts would cost more than the op) and the
 * output has an entry: Add and Mul of two activations (qs8 add/multiply,
 * a sole Relu/Clip reader fused as for Conv), MaxPool and the data
 * movement that is a reshape here (Reshape, Flatten, Squeeze, Unsqueeze,
 * Identity), whose output keeps the input's quantisation as in the QDQ
 * form, and GlobalAveragePool. ResNet and MobileNet then run in int8 from
 * the input's convert to the logits'. This snapshot has no qs8 average
 * pooling (AveragePool stays float). Everything else runs in float. What
 * XNNPACK would refuse in int8 (scales that are not normal, requantisation
 * scales from 256 up, Add's input-to-output scale ratios outside
 * [2^-10, 2^8), Mul's outside [2^-16, 2^8), global pooling's outside
 * [2^-8, 2^8)) is checked before it is asked, and the node stays float;
 * should creating the runtime still fail, the segment is compiled again in
 * float.
 *
 * Every lowering has a check (for supports_node) and a define (for
 * compile) sharing one parameter reader, so that compile() of any run of
 * accepted nodes succeeds. A node whose outputs are all constant (a
 * Constant the hybrid layer evaluated, an Identity of a weight) is accepted
 * and lowered to nothing. */
#include "runtime/engine.h"

#define XNN_REASON_UNBUILT                                                     \
  "modelbench was built without XNNPACK (apt install libxnnpack-dev "          \
  "libpthreadpool-dev)"

#ifndef MB_HAVE_XNNPACK

MB_ENGINE_UNBUILT(xnnpack, XNN_REASON_UNBUILT);

#else /* MB_HAVE_XNNPACK */

#include "runtime/xnnpack/internal.h"

#include <pthread.h>

static void xnn_probe(mb_runtime_info *info) {
  enum xnn_status status = mb__xnn_ready();
  info->version[0] = info->reason[0] = '\0';
  info->available = status == xnn_status_success;
  if (info->available)
    snprintf(info->version, sizeof info->version, "%s", XNN_VERSION_STRING);
  else
    snprintf(info->reason, sizeof info->reason, "xnn_initialize returned %s%s",
             mb__xnn_status_name(status),
             status == xnn_status_unsupported_hardware
                 ? " (this CPU lacks the instructions XNNPACK needs)"
                 : "");
}

static pthread_once_t int8_once = PTHREAD_ONCE_INIT;
static enum xnn_status int8_status = xnn_status_uninitialized;

/* Whether this build has int8 kernels for this CPU: a runtime of one
 * fp32 -> qint8 -> 1x1 qcint8 convolution -> fp32 chain is created once
 * (XNNPACK picks its microkernels at xnn_initialize and says
 * unsupported_hardware when there are none). */
static void int8_probe_once(void) {
  static const float one = 1.0f;
  static const int8_t filter[1 + XNN_EXTRA_BYTES] = {1};
  static const int32_t bias[1] = {0};
  size_t dims[4] = {1, 1, 1, 1};
  xnn_subgraph_t sg = NULL;
  xnn_runtime_t rt = NULL;
  uint32_t x, xq, f, bi, yq, y;
  enum xnn_status s = mb__xnn_ready();
  if (s == xnn_status_success)
    s = xnn_create_subgraph(2, 0, &sg);
  if (s == xnn_status_success)
    s = xnn_define_tensor_value(sg, xnn_datatype_fp32, 4, dims, NULL, 0,
                                XNN_VALUE_FLAG_EXTERNAL_INPUT, &x);
  if (s == xnn_status_success)
    s = xnn_define_quantized_tensor_value(sg, xnn_datatype_qint8, 0, 1.0f, 4,
                                          dims, NULL, XNN_INVALID_VALUE_ID, 0,
                                          &xq);
  if (s == xnn_status_success)
    s = xnn_define_channelwise_quantized_tensor_value(
        sg, xnn_datatype_qcint8, &one, 4, 0, dims, filter, XNN_INVALID_VALUE_ID,
        0, &f);
  if (s == xnn_status_success)
    s = xnn_define_channelwise_quantized_tensor_value(
        sg, xnn_datatype_qcint32, &one, 1, 0, dims, bias, XNN_INVALID_VALUE_ID,
        0, &bi);
  if (s == xnn_status_success)
    s = xnn_define_quantized_tensor_value(sg, xnn_datatype_qint8, 0, 1.0f, 4,
                                          dims, NULL, XNN_INVALID_VALUE_ID, 0,
                                          &yq);
  if (s == xnn_status_success)
    s = xnn_define_tensor_value(sg, xnn_datatype_fp32, 4, dims, NULL, 1,
                                XNN_VALUE_FLAG_EXTERNAL_OUTPUT, &y);
  if (s == xnn_status_success)
    s = xnn_define_convert(sg, x, xq, 0);
  if (s == xnn_status_success)
    s = xnn_define_convolution_2d(sg, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                  -INFINITY, INFINITY, xq, f, bi, yq, 0);
  if (s == xnn_status_success)
    s = xnn_define_convert(sg, yq, y, 0);
  if (s == xnn_status_success)
    s = xnn_create_runtime_v2(sg, NULL, 0, &rt);
  if (rt)
    xnn_delete_runtime(rt);
  if (sg)
    xnn_delete_subgraph(sg);
  int8_status = s;
}

static int xnn_supports_precision(mb_precision precision, char *reason,
                                  size_t size) {
  /* FP16 is accepted here; whether XNNPACK can run a given segment in fp16
   * only shows when its runtime is created, and compile() reports that.
   * XNNPACK does fp16 arithmetic only with Arm's FP16 extension (asimdhp);
   * on x86 the XNNPACK Debian ships (git20220216) has F16C kernels, which
   * convert to and from fp32 around fp32 arithmetic, and no AVX512-FP16 ones
   * (they came later), so fp16 runs, slower than fp32, even on a CPU with
   * avx512_fp16. */
  if (precision == MB_PRECISION_FP32)
    return 1;
  if (precision == MB_PRECISION_FP16) {
#if defined(__x86_64__) || defined(__i386__)
    static const char *const avx512_fp16[] = {"avx512_fp16"};
    if (reason && size)
      snprintf(reason, size,
               "emulated on this CPU: XNNPACK %s has no x86 fp16 arithmetic "
               "(its F16C kernels convert to and from fp32)%s",
               XNN_VERSION_STRING,
               mb__engine_cpu_has(avx512_fp16, 1) > 0
                   ? "; this CPU has avx512_fp16, which a newer XNNPACK uses"
                   : "");
    return 2;
#else
    static const char *const asimdhp[] = {"asimdhp"};
    if (mb__engine_cpu_has(asimdhp, 1) > 0)
      return 1;
    if (reason && size)
      snprintf(reason, size,
               "emulated on this CPU: no fp16 arithmetic (asimdhp), XNNPACK "
               "converts to and from fp32");
    return 2;
#endif
  }
  if (precision == MB_PRECISION_INT8) {
    pthread_once(&int8_once, int8_probe_once);
    if (int8_status == xnn_status_success)
      return 1;
    if (reason && size)
      snprintf(reason, size,
               "XNNPACK %s cannot run int8 convolutions here (a qcint8 "
               "convolution runtime gave %s)",
               XNN_VERSION_STRING, mb__xnn_status_name(int8_status));
    return 0;
  }
  if (reason && size)
    snprintf(reason, size, "XNNPACK runs fp32, fp16 and int8, not %s",
             mb_precision_name(precision));
  return 0;
}

static int xnn_supports_node(const mb_engine_graph *eg, int node,
                             const mb_engine_options *options, char *reason,
                             size_t size) {
  const mb_node *n = &eg->graph->nodes[node];
  mb_engine_check c = {eg,     n,    mb__model_opset(eg->model, ""),
                       reason, size, &mb__xnn_limits};
  if (reason && size)
    reason[0] = '\0';
  if (mb__engine_node_folded(eg, n))
    return 1;
  const xnn_op_row *row = mb__xnn_op_find(n);
  if (!row)
    return mb__engine_reject(&c, "not supported by the XNNPACK engine");
  return row->check(&c);
}

/* Segments doing less than this many multiply-adds (or elements touched)
 * run on the calling thread only: waking the pool's workers and putting
 * them back to sleep costs more than such a segment computes (a
 * transformer cut into 30 segments of a few small nodes each ran 3x slower
 * on 2 threads than on 1). */
#define XNN_PARALLEL_MIN_WORK ((double)(1 << 20))

/* Rough cost of a node: multiply-adds of Conv, Gemm and MatMul, else the
 * elements it writes. */
static double node_work(const mb_engine_graph *eg, const mb_node *n) {
  int y = mb__engine_output(n, 0);
  if (y < 0 || !eg->shapes[y].known)
    return 0;
  const mb_shape_info *ys = &eg->shapes[y];
  double out = (double)mb__engine_numel(ys->rank, ys->dims);
  const mb_tensor *w = mb__engine_constant(eg, mb__engine_input(n, 1));
  if (!w)
    return out;
  if (strcmp(n->op_type, "Conv") == 0 && w->rank == 4)
    return out * (double)(w->dims[1] * w->dims[2] * w->dims[3]);
  if ((strcmp(n->op_type, "Gemm") == 0 || strcmp(n->op_type, "MatMul") == 0) &&
      w->rank == 2 && w->dims[0] > 0 && w->dims[1] > 0) {
    const mb_shape_info *as = &eg->shapes[n->inputs[0]];
    return out * (double)as->dims[as->rank - 1];
  }
  return out;
}

/* Does XNNPACK's fp16 rewrite take node n (an accepted one)? Its operators
 * with an fp16 form, binary ones without constant operands, and a Gemm
 * whose C needs no separate add. */
static bool node_fp16_ok(const mb_engine_graph *eg, const mb_node *n) {
  const xnn_op_row *row = mb__xnn_op_find(n);
  if (!row)
    return false;
  bool ok = row->fp16_ok && !row->fp16_aborts;
  for (int k = 0; k < n->n_inputs && ok && row->lower == mb__xnn_lower_binary;
       k++)
    ok = !mb__engine_constant(eg, n->inputs[k]);
  if (ok && row->lower == mb__xnn_lower_fc) {
    /* A C that varies along M is added by a binary node afterwards. */
    char reason[8];
    mb_engine_check c = {eg,
                         n,
                         mb__model_opset(eg->model, ""),
                         reason,
                         sizeof reason,
                         &mb__xnn_limits};
    fc_params p;
    ok = mb__xnn_fc_params_get(&c, &p) && p.bias_kind != 2;
  }
  return ok;
}

static int xnn_node_precision(const mb_engine_graph *eg, int node,
                              const mb_engine_options *options) {
  const mb_node *n = &eg->graph->nodes[node];
  if (options->precision != MB_PRECISION_FP16 || mb__engine_node_folded(eg, n))
    return 1;
  return node_fp16_ok(eg, n);
}

/* "; nodes without fp16 support in XNNPACK git20220216: Gemm 'fc'" for
 * the message of a failed fp16 compile. */
static const char *fp16_culprits(const mb_segment_desc *d, char *buf,
                                 size_t size) {
  const mb_engine_graph *eg = d->eg;
  size_t used = 0;
  int shown = 0, more = 0;
  buf[0] = '\0';
  for (int i = 0; i < d->n_nodes; i++) {
    const mb_node *n = &eg->graph->nodes[d->nodes[i]];
    if (mb__engine_node_folded(eg, n) || !mb__xnn_op_find(n) ||
        node_fp16_ok(eg, n))
      continue;
    if (shown == 3) {
      more++;
      continue;
    }
    char label[160];
    used += (size_t)snprintf(
        buf + used, used < size ? size - used : 0, "%s%s",
        shown ? ", "
              : "; nodes without fp16 support in XNNPACK " XNN_VERSION_STRING
                ": ",
        mb__node_label(n, label, sizeof label));
    shown++;
  }
  if (more && used < size)
    snprintf(buf + used, size - used, " and %d more", more);
  if (!shown)
    snprintf(buf, size, "; the fp16 rewrite refused the segment");
  return buf;
}

/* "Conv 'a' .. Gemm 'b'" for messages about the whole segment. */
static const char *segment_label(const mb_segment_desc *d, char *buf,
                                 size_t size) {
  char first[160], last[160];
  const mb_graph *g = d->eg->graph;
  if (d->n_nodes == 0) {
    snprintf(buf, size, "(empty segment)");
    return buf;
  }
  mb__node_label(&g->nodes[d->nodes[0]], first, sizeof first);
  mb__node_label(&g->nodes[d->nodes[d->n_nodes - 1]], last, sizeof last);
  if (d->n_nodes == 1)
    snprintf(buf, size, "%s", first);
  else
    snprintf(buf, size, "%d nodes, %s .. %s", d->n_nodes, first, last);
  return buf;
}

/* Marks the segment's nodes nothing needs (*dead_out, per position,
 * malloc'ed for the caller): no output of theirs leaves the segment or is
 * read by a needed node (a graph's dead ends: a fuzzed model's, an export's
 * unused branch). They are not lowered: XNNPACK git20220216's fp16 rewrite
 * asserts on a value only a dead node reads (found by fuzz model_hybrid). */
static mb_status mark_dead(const build_ctx *b, bool **dead_out) {
  const mb_segment_desc *d = b->seg_desc;
  const mb_graph *g = b->eg->graph;
  bool *needed = calloc((size_t)MB_MAX(g->n_values, 1), sizeof *needed);
  bool *dead = calloc((size_t)MB_MAX(d->n_nodes, 1), sizeof *dead);
  if (!needed || !dead) {
    free(needed);
    free(dead);
    return mb__error(b->err, MB_STATUS_OUT_OF_MEMORY,
                     "xnnpack: out of memory marking dead nodes");
  }
  for (int v = 0; v < g->n_values; v++)
    needed[v] = b->output_slot[v] >= 0;
  for (int p = d->n_nodes - 1; p >= 0; p--) {
    const mb_node *n = &g->nodes[d->nodes[p]];
    bool live = false;
    for (int j = 0; j < n->n_outputs && !live; j++)
      live = n->outputs[j] >= 0 && needed[n->outputs[j]];
    dead[p] = !live;
    for (int j = 0; live && j < n->n_inputs; j++)
      if (n->inputs[j] >= 0)
        needed[n->inputs[j]] = true;
  }
  free(needed);
  *dead_out = dead;
  return MB_STATUS_OK;
}

/* Allocates the builder's per-value tables (and, for int8, its
 * quantisation tables) and the segment; on failure the caller frees what
 * was made with mb__xnn_segment_free and mb__xnn_build_free. */
static mb_status build_alloc(build_ctx *b, const mb_engine_options *options,
                             bool int8) {
  const mb_graph *g = b->eg->graph;
  size_t n_values = (size_t)g->n_values;
  b->seg = calloc(1, sizeof *b->seg);
  b->ids = malloc(n_values * sizeof *b->ids);
  b->input_slot = malloc(n_values * sizeof *b->input_slot);
  b->output_slot = malloc(n_values * sizeof *b->output_slot);
  if (!b->seg || !b->ids || !b->input_slot || !b->output_slot)
    return mb__xnn_oom(b);
  if (int8) {
    b->quant = options->quant;
    b->qids = malloc(n_values * sizeof *b->qids);
    b->qscale = calloc(n_values, sizeof *b->qscale);
    b->qzp = calloc(n_values, sizeof *b->qzp);
    b->qrank = calloc(n_values, sizeof *b->qrank);
    b->qdims = calloc(n_values, sizeof *b->qdims);
    b->qkeep = calloc(n_values, sizeof *b->qkeep);
    b->fused = calloc((size_t)MB_MAX(g->n_nodes, 1), sizeof *b->fused);
    if (!b->qids || !b->qscale || !b->qzp || !b->qrank || !b->qdims ||
        !b->qkeep || !b->fused)
      return mb__xnn_oom(b);
  }
  for (size_t v = 0; v < n_values; v++) {
    b->ids[v] = XNN_INVALID_VALUE_ID;
    b->input_slot[v] = b->output_slot[v] = -1;
    if (b->qids)
      b->qids[v] = XNN_INVALID_VALUE_ID;
  }
  return MB_STATUS_OK;
}

/* Lowers the segment's live nodes into b->subgraph, checking each again
 * (and refusing an fp16 node XNNPACK would abort on); *work_out: their
 * work, which decides the thread count. */
static mb_status lower_nodes(build_ctx *b, const mb_engine_options *options,
                             double *work_out) {
  const mb_segment_desc *segment = b->seg_desc;
  const mb_engine_graph *eg = b->eg;
  mb_status status;
  double work = 0;
  for (int i = 0; i < segment->n_nodes; i++) {
    const mb_node *n = &eg->graph->nodes[segment->nodes[i]];
    b->node = n;
    if (b->dead[i] || mb__engine_node_folded(eg, n) ||
        (b->fused && b->fused[segment->nodes[i]]))
      continue;
    const xnn_op_row *row = mb__xnn_op_find(n);
    if (!row)
      return mb__xnn_recheck_failed(b, "not supported by the XNNPACK engine");
    char reason[256];
    mb_engine_check c = {
        eg, n, b->opset, reason, sizeof reason, &mb__xnn_limits};
    if (!row->check(&c))
      return mb__xnn_recheck_failed(b, reason);
    if (options->precision == MB_PRECISION_FP16 && row->fp16_aborts) {
      char label[160];
      return mb__error(
          b->err, MB_STATUS_UNSUPPORTED,
          "XNNPACK cannot run this segment in fp16: %s has no fp16 operator "
          "in XNNPACK %s, whose fp16 rewrite accepts it and then fails an "
          "assertion (so modelbench does not try)",
          mb__node_label(n, label, sizeof label), XNN_VERSION_STRING);
    }
    if ((status = row->lower(b)))
      return status;
    work += node_work(eg, n);
  }
  *work_out = work;
  return MB_STATUS_OK;
}

/* Fails unless every non-constant output of the segment was written. */
static mb_status check_outputs(build_ctx *b) {
  for (int j = 0; j < b->seg->n_outputs; j++) {
    io_slot *io = &b->seg->outputs[j];
    if (!io->constant && io->id == XNN_INVALID_VALUE_ID)
      return mb__error(b->err, MB_STATUS_INTERNAL,
                       "xnnpack: segment output '%s' is not produced by the "
                       "segment",
                       b->eg->graph->values[io->value].name);
  }
  return MB_STATUS_OK;
}

/* Creates b->seg's runtime from the subgraph on a shared pool (one thread
 * for a segment of less than XNN_PARALLEL_MIN_WORK), and its table of
 * external values. What it made is freed with the segment. */
static mb_status create_runtime(build_ctx *b, const mb_engine_options *options,
                                double work) {
  const mb_segment_desc *segment = b->seg_desc;
  mb_error *err = b->err;
  char where[400], culprits[400];
  b->seg->n_external = (int)b->next_external;
  b->seg->external =
      calloc((size_t)MB_MAX(b->seg->n_external, 1), sizeof *b->seg->external);
  if (!b->seg->external)
    return mb__xnn_oom(b);
  bool pool_failed;
  b->seg->pool = mb__xnn_pool_acquire(
      work < XNN_PARALLEL_MIN_WORK ? 1 : options->threads, &pool_failed);
  if (pool_failed)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "xnnpack: cannot start a pool of %d threads",
                     options->threads);
  /* Workers sleep after the last operator instead of spinning: between
   * segments the reference interpreter needs the cores. */
  uint32_t flags = XNN_FLAG_YIELD_WORKERS;
  if (options->precision == MB_PRECISION_FP16)
    flags |= XNN_FLAG_FORCE_FP16_INFERENCE;
  enum xnn_status xs =
      xnn_create_runtime_v2(b->subgraph, b->seg->pool, flags, &b->seg->runtime);
  if (xs != xnn_status_success) {
    b->seg->runtime = NULL;
    segment_label(segment, where, sizeof where);
    if (options->precision == MB_PRECISION_FP16)
      return mb__error(
          err, MB_STATUS_UNSUPPORTED,
          "XNNPACK cannot run this segment in fp16: xnn_create_runtime_v2 "
          "returned %s with XNN_FLAG_FORCE_FP16_INFERENCE (%s)%s",
          mb__xnn_status_name(xs), where,
          xs == xnn_status_unsupported_hardware
              ? "; this XNNPACK build has no fp16 kernels for this CPU"
              : fp16_culprits(segment, culprits, sizeof culprits));
    return mb__error(err,
                     xs == xnn_status_out_of_memory ? MB_STATUS_OUT_OF_MEMORY
                                                    : MB_STATUS_UNSUPPORTED,
                     "xnnpack: xnn_create_runtime_v2 returned %s (%s)",
                     mb__xnn_status_name(xs), where);
  }
  /* Externals in id order; direct outputs get their pointers per run. */
  for (int k = 0; k < b->seg->n_inputs + b->seg->n_outputs; k++) {
    io_slot *io = k < b->seg->n_inputs ? &b->seg->inputs[k]
                                       : &b->seg->outputs[k - b->seg->n_inputs];
    if (io->id == XNN_INVALID_VALUE_ID)
      continue;
    b->seg->external[io->id].id = io->id;
    b->seg->external[io->id].data = io->buffer;
  }
  return MB_STATUS_OK;
}

/* Compiles a segment; int8: Conv, Gemm and MatMul with parameters in
 * options->quant run on int8 (else everything in float or fp16). */
static mb_status compile_segment(const mb_segment_desc *segment,
                                 const mb_engine_options *options, bool int8,
                                 void **compiled_out, mb_error *err) {
  const mb_engine_graph *eg = segment->eg;
  build_ctx b = {0};
  mb_status status;
  double work = 0;
  b.seg_desc = segment;
  b.eg = eg;
  b.err = err;
  b.opset = mb__model_opset(eg->model, "");
  b.fp16 = options->precision == MB_PRECISION_FP16;
  if ((status = build_alloc(&b, options, int8)) ||
      (status = mb__xnn_io_init(&b)) || (status = mark_dead(&b, &b.dead)))
    goto fail;
  enum xnn_status xs = xnn_create_subgraph(
      (uint32_t)(segment->n_inputs + segment->n_outputs), 0, &b.subgraph);
  if (xs != xnn_status_success) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                       "xnnpack: xnn_create_subgraph returned %s",
                       mb__xnn_status_name(xs));
    goto fail;
  }
  if ((status = lower_nodes(&b, options, &work)) ||
      (b.fp16 && (status = mb__xnn_copy_outputs_fp16(&b))) ||
      (status = check_outputs(&b)))
    goto fail;
  /* Nothing observable to compute (every output is a constant): no
   * runtime, run() only copies the constants out. */
  bool computes = false;
  for (int j = 0; j < b.seg->n_outputs; j++)
    computes |= b.seg->outputs[j].id != XNN_INVALID_VALUE_ID;
  if (computes && (status = create_runtime(&b, options, work)))
    goto fail;
  xnn_delete_subgraph(b.subgraph);
  mb__xnn_build_free(&b);
  *compiled_out = b.seg;
  return MB_STATUS_OK;

fail:
  if (b.subgraph)
    xnn_delete_subgraph(b.subgraph);
  mb__xnn_segment_free(b.seg);
  mb__xnn_build_free(&b);
  return status;
}

static mb_status xnn_compile(const mb_segment_desc *segment,
                             const mb_engine_options *options,
                             void **compiled_out, mb_error *err) {
  enum xnn_status xs = mb__xnn_ready();
  if (xs != xnn_status_success)
    return mb__error(err, MB_STATUS_UNAVAILABLE,
                     "xnnpack: xnn_initialize returned %s",
                     mb__xnn_status_name(xs));
  switch (options->precision) {
  case MB_PRECISION_FP32:
  case MB_PRECISION_FP16:
    return compile_segment(segment, options, false, compiled_out, err);
  case MB_PRECISION_INT8:
    if (!options->quant)
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "xnnpack: int8 needs quantisation parameters (a "
                       "conversion with the quant_params step calibrates "
                       "them)");
    if (compile_segment(segment, options, true, compiled_out, err) ==
        MB_STATUS_OK)
      return MB_STATUS_OK;
    /* int8_plan_get refuses up front what XNNPACK would refuse, so this
     * is not expected; should XNNPACK still refuse an int8 operator when
     * it creates the runtime, the segment runs in float rather than not
     * at all, and the log says so. */
    mb__log(MB_LOG_WARN, "xnnpack: int8 segment refused (%s); it runs in fp32",
            err ? err->message : "?");
    return compile_segment(segment, options, false, compiled_out, err);
  default:
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "xnnpack: precision %s is not supported",
                     mb_precision_name(options->precision));
  }
}

/* XNNPACK's x86 qs8 kernels sign-extend both operands to 16 bits and
 * multiply-add into 32 (vpmaddwd): no saturation on any CPU. */
static mb_int8_weights xnn_int8_weights(char *reason, size_t size) {
  if (reason && size)
    snprintf(reason, size,
             "XNNPACK's qs8 kernels widen to 16 bits before they multiply "
             "(vpmaddwd): no saturation on any CPU");
  return MB_INT8_WEIGHTS_W8;
}

const mb_engine mb__engine_xnnpack = {
    .name = "xnnpack",
    .probe = xnn_probe,
    .supports_precision = xnn_supports_precision,
    .supports_node = xnn_supports_node,
    .node_precision = xnn_node_precision,
    .compile = xnn_compile,
    .run = mb__xnn_run,
    /* This snapshot has no per-operator profiling. */
    .node_profile = NULL,
    .release = mb__xnn_release,
    .int8_weights = xnn_int8_weights,
};

#endif /* MB_HAVE_XNNPACK */
