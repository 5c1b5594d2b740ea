/* The oneDNN engine: runs segments of a graph for the hybrid "onednn"
 * runtime through oneDNN's C API (Debian libdnnl 2.6, OpenMP CPU runtime).
 *
 * README: the files of this folder, in the order a segment meets them.
 *   onednn.c   this map; the engine interface (probe, which precisions
 *              this CPU runs, supports_node, compile)
 *   support.c  which nodes run here and why not: the checks shared by
 *              supports_node and compile, the parameters they read, and
 *              the operator table (op -> check, lowering, fusion head)
 *   fusion.c   planning fused groups (a Conv/MatMul/Gemm head and the
 *              chain after it as post-ops; SiLU and GELU patterns), the
 *              post-op lists, and lowering node by node or group by group
 *   memory.c   memory descriptors, the segment's buffers and memories,
 *              each value's representations (layout, data type) and the
 *              reorders between them
 *   primitive.c primitive creation (attributes, choosing an
 *              implementation, kernel names) and the segment's steps
 *   int8.c     int8: calibration entries -> quantised weights, output
 *              scales, biases, quantising reorders, zero points
 *   conv.c     Conv (fp32, bf16, int8) with its post-ops
 *   matmul.c   MatMul and Gemm (fp32, bf16, int8) with their post-ops
 *   eltwise.c  unary eltwise nodes, Erf, binary nodes
 *   pool.c     MaxPool, AveragePool and their global forms
 *   norm.c     BatchNormalization, Softmax, LayerNormalization
 *   reduce.c   the Reduce* operators
 *   rnn.c      LSTM, GRU and RNN as oneDNN's recurrent primitives (weights
 *              re-laid out at compile time, gate order mapped)
 *   movement.c Transpose, reshapes, Identity, Concat, Slice, Split
 *   session.c  the library state (status names, OpenMP threads), run(),
 *              per-primitive profiles, freeing a segment
 *   internal.h what these files share
 * Code both engines need (constants, checks, int8 parameter mapping) is in
 * ../engine_common.c.
 *
 * compile() turns a segment into a list of steps, each one oneDNN
 * primitive created once with its arguments bound: run() only points the
 * boundary memories at the caller's tensors and executes the list, with no
 * allocation. Layouts are oneDNN's choice (dnnl_format_tag_any) for
 * convolution, matmul weights, pooling and the chains after them, so
 * blocked layouts (2.6 picks NHWC or nChw16c) flow between consecutive
 * primitives; a reorder is inserted only where a primitive needs another
 * layout or data type than a value has: at the segment edges (ONNX layout,
 * float32) and before the few primitives that need a plain layout
 * (reshapes, layer normalization, matmul activations).
 *
 * Fusion: a Conv, MatMul or Gemm "heads" a group that takes in the chain of
 * nodes after it as post-ops while each link is the only reader of the
 * previous value: eltwise (Relu, Clip, Sigmoid, SiLU = x*sigmoid(x), the
 * Erf and the written-out tanh forms of GELU, scalar affine), sum (Add of a
 * same-shape activation, computed in place in that activation's buffer when it
 * dies there) and binary (Add/Mul/... of a broadcast operand; a MatMul's bias).
 * A whole group is emitted at the position of its last node, which is where the
 * liveness of every value it reads is counted. If oneDNN refuses the full
 * post-op list, or serves it only with its reference implementation,
 * shorter prefixes are tried and the rest of the chain is lowered node by
 * node, so compile() of accepted nodes never depends on what a fused form
 * happens to support.
 *
 * Transformers (issue 17): a MatMul of [b.., M, K] by 2-D weights folds
 * the leading dims into its rows (one GEMM, not b GEMVs); a scalar Mul/Div
 * on a product's input (the attention scale) becomes its alpha; a
 * reshape, or a transpose moving only size-1 dims, after a product
 * continues its chain (the residual Add after out_proj is a sum post-op);
 * a product whose result only a Transpose reads writes it in the layout
 * that makes the transpose plain; the attention mask is a binary post-op,
 * and so is a masked_fill of -inf (Where of a constant condition; Where
 * alone is a binary primitive); PyTorch's LayerNorm written out below
 * opset 17 (ReduceMean, Sub, Pow, ..., Div, Mul, Add) is one
 * layer_normalization;
 * products of one input by constant weights (BERT's separate Q, K and V
 * projections) run as one over their weights side by side, each result a
 * column window of it. INT8: a product whose result only int8 products
 * read, directly or through views (attention's head merge), writes it in
 * int8 (a last linear post-op requantises), so a FFN's hidden layer or the
 * attention output is not quantised again; int8 data read as float is
 * dequantised on the way (each representation knows its scale); a
 * product of two activations (q.k^T, probabilities.v) runs in int8 from
 * ranges derived from their calibration, and a Softmax read only by such
 * products writes u8. A column-major view copied for a product (k^T)
 * keeps that order: the kernel reads it as transposed weights.
 *
 * A binary primitive whose plain operand is broadcast in a middle dim has
 * its neighbouring dims merged first (oneDNN 2.6 serves the 5-D form only
 * with its reference kernel). Profiles name each line's kernel.
 *
 * Memory: values live in internal buffers reused once their last reader
 * has run (positions in the segment order), or directly in the caller's
 * output tensor when the producing primitive writes plain float32.
 * Transpose, Reshape, Flatten, Squeeze, Unsqueeze, Identity, Slice and
 * Split make views: the value is its input's memory seen with other
 * strides and an offset, nothing moves; a matmul reads a view as it is
 * (q, k, v sliced from one QKV product and split into heads), any other
 * reader that needs a dense layout gets one reorder. All primitives share
 * one user-managed scratchpad per segment.
 *
 * Threads: OpenMP's, options->threads, set before compiling and at every
 * run; primitives with little work run on one thread.
 *
 * BF16 (options->precision): activations and weights are bf16 inside the
 * segment, biases and normalization parameters float32, the boundary
 * float32; primitives oneDNN cannot run in bf16 fall back to float32 with
 * reorders around them. */
#include "runtime/engine.h"

#define DN_REASON_UNBUILT                                                      \
  "modelbench was built without oneDNN (apt install libdnnl-dev)"

#ifndef MB_HAVE_DNNL

MB_ENGINE_UNBUILT(onednn, DN_REASON_UNBUILT);

#else /* MB_HAVE_DNNL */

#include "runtime/onednn/internal.h"

static void dn_probe(mb_runtime_info *info) {
  dnnl_engine_t engine = NULL;
  dnnl_status_t st = dnnl_engine_create(&engine, dnnl_cpu, 0);
  info->version[0] = info->reason[0] = '\0';
  info->available = st == dnnl_success;
  if (engine)
    dnnl_engine_destroy(engine);
  if (info->available) {
    const dnnl_version_t *v = dnnl_version();
    snprintf(info->version, sizeof info->version, "%d.%d.%d", v->major,
             v->minor, v->patch);
  } else {
    snprintf(info->reason, sizeof info->reason,
             "dnnl_engine_create(cpu) returned %s", mb__dn_status_name(st));
  }
}

static const struct {
  dnnl_cpu_isa_t isa;
  const char *name;
} isa_names[] = {
    {dnnl_cpu_isa_avx512_core_amx, "avx512_core_amx"},
    {dnnl_cpu_isa_avx512_core_bf16, "avx512_core_bf16"},
    {dnnl_cpu_isa_avx512_core_vnni, "avx512_core_vnni"},
    {dnnl_cpu_isa_avx512_core, "avx512_core"},
    {dnnl_cpu_isa_avx2_vnni, "avx2_vnni"},
    {dnnl_cpu_isa_avx2, "avx2"},
    {dnnl_cpu_isa_avx, "avx"},
    {dnnl_cpu_isa_sse41, "sse41"},
};

static const char *isa_name(dnnl_cpu_isa_t isa) {
  for (size_t i = 0; i < MB_ARRAY_COUNT(isa_names); i++)
    if (isa == isa_names[i].isa)
      return isa_names[i].name;
  return "an older ISA";
}

static int dn_supports_precision(mb_precision precision, char *reason,
                                 size_t size) {
  static const char *const bf16_flags[] = {"avx512_bf16", "amx_bf16"};
  /* int8 runs on every x86-64 oneDNN supports; VNNI or AMX make it fast
   * (without them it still beats fp32 little, but it is correct). */
  if (precision == MB_PRECISION_FP32 || precision == MB_PRECISION_INT8)
    return 1;
  if (precision != MB_PRECISION_BF16) {
    if (reason && size)
      snprintf(reason, size, "oneDNN runs fp32, bf16 and int8 only, not %s",
               mb_precision_name(precision));
    return 0;
  }
  /* Native bf16 only: oneDNN would otherwise emulate it, slower than fp32. */
  dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
  bool isa_ok = ((unsigned)isa & (unsigned)dnnl_cpu_isa_avx512_core_bf16) ==
                (unsigned)dnnl_cpu_isa_avx512_core_bf16;
  int cpu = mb__engine_cpu_has(bf16_flags, 2);
  if (isa_ok && cpu != 0)
    return 1;
  if (reason && size) {
    if (!isa_ok)
      snprintf(reason, size,
               "oneDNN's effective ISA here is %s; bf16 needs "
               "avx512_core_bf16 or avx512_core_amx (CPU flags avx512_bf16 "
               "or amx_bf16)",
               isa_name(isa));
    else
      snprintf(reason, size,
               "the CPU flags lack avx512_bf16 and amx_bf16 although oneDNN "
               "reports %s",
               isa_name(isa));
  }
  return 0;
}

/* Below VNNI oneDNN's int8 convolutions, inner products and matmuls
 * multiply u8 x s8 with vpmaddubsw (its int8 guide: 'the intermediate
 * 16-bit results can saturate'), so weights need 7 bits where the input
 * is signed (int8_form.c). ONEDNN_MAX_CPU_ISA can hold the ISA below what
 * the CPU has. */
static mb_int8_weights dn_int8_weights(char *reason, size_t size) {
  dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
  /* The VNNI bits of avx512_core_vnni (and above) and of avx2_vnni. */
  unsigned vnni =
      ((unsigned)dnnl_cpu_isa_avx512_core_vnni &
       ~(unsigned)dnnl_cpu_isa_avx512_core) |
      ((unsigned)dnnl_cpu_isa_avx2_vnni & ~(unsigned)dnnl_cpu_isa_avx2);
  bool ok = ((unsigned)isa & vnni) != 0;
  if (reason && size)
    snprintf(reason, size,
             ok ? "oneDNN runs %s here: int8 products add in 32 bits and "
                  "cannot saturate"
                : "oneDNN runs %s here, without VNNI: u8 x s8 products "
                  "(vpmaddubsw) add in pairs in 16 bits and saturate",
             isa_name(isa));
  return ok ? MB_INT8_WEIGHTS_W8 : MB_INT8_WEIGHTS_MIXED;
}

static int dn_supports_node(const mb_engine_graph *eg, int node,
                            const mb_engine_options *options, char *reason,
                            size_t size) {
  const mb_node *n = &eg->graph->nodes[node];
  mb_engine_check c = {eg,     n,    mb__model_opset(eg->model, ""),
                       reason, size, &mb__dn_limits};
  if (reason && size)
    reason[0] = '\0';
  if (mb__engine_node_folded(eg, n))
    return 1;
  const dn_op_row *row = mb__dn_op_find(n);
  if (!row)
    return mb__engine_reject(&c, "not supported by the oneDNN engine");
  return row->check(&c);
}

/* INT8: a recurrent node without an int8 form here (rnn.c: peepholes, no
 * calibrated range, a cell oneDNN has no int8 primitive for) makes its
 * segment's compile fail, and runs in an fp32 segment of its own, so the
 * result says fp32 for its FLOPs. Every other node stays in its segment
 * (those without an int8 form compute in float32 inside it). */
static int dn_node_precision(const mb_engine_graph *eg, int node,
                             const mb_engine_options *options) {
  const mb_node *n = &eg->graph->nodes[node];
  const dn_op_row *row = mb__dn_op_find(n);
  if (options->precision != MB_PRECISION_INT8 ||
      mb__engine_node_folded(eg, n) || !row || row->lower != mb__dn_lower_rnn)
    return 1;
  return mb__dn_rnn_int8(eg, options->quant, n, NULL, 0);
}

static mb_status dn_compile(const mb_segment_desc *d,
                            const mb_engine_options *options,
                            void **compiled_out, mb_error *err) {
  const mb_engine_graph *eg = d->eg;
  const mb_graph *g = eg->graph;
  lctx l;
  mb_status status = MB_STATUS_OK;
  *compiled_out = NULL;
  memset(&l, 0, sizeof l);
  l.err = err;
  l.d = d;
  l.eg = eg;
  l.g = g;
  l.opset = mb__model_opset(eg->model, "");
  l.act_dt = options->precision == MB_PRECISION_BF16 ? dnnl_bf16 : dnnl_f32;
  l.prof = -1;
  if (options->precision != MB_PRECISION_FP32 &&
      options->precision != MB_PRECISION_BF16 &&
      options->precision != MB_PRECISION_INT8)
    return mb__error(err, MB_STATUS_UNSUPPORTED, "onednn: cannot compute in %s",
                     mb_precision_name(options->precision));
  if (options->precision == MB_PRECISION_INT8 && !options->quant)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "onednn: int8 needs quantisation parameters");
  l.quant = options->precision == MB_PRECISION_INT8 ? options->quant : NULL;
  if (!(l.s = calloc(1, sizeof *l.s)))
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "onednn: out of memory");
  l.s->threads = MB_MAX(options->threads, 1);
  l.s->profile = options->profile != 0;
  l.s->scratch_buf = -1;
  mb__dn_set_threads(l.s->threads);
  l.node_pos = malloc(((size_t)g->n_nodes + 1) * sizeof *l.node_pos);
  l.vals = calloc((size_t)g->n_values + 1, sizeof *l.vals);
  l.groups = calloc((size_t)d->n_nodes + 1, sizeof *l.groups);
  l.group_of = malloc(((size_t)d->n_nodes + 1) * sizeof *l.group_of);
  if (!l.node_pos || !l.vals || !l.groups || !l.group_of) {
    status = mb__dn_oom(&l);
    goto done;
  }
  for (int i = 0; i < g->n_nodes; i++)
    l.node_pos[i] = -1;
  for (int p = 0; p < d->n_nodes; p++) {
    l.node_pos[d->nodes[p]] = p;
    l.group_of[p] = -1;
  }
  for (int v = 0; v < g->n_values; v++) {
    l.vals[v].last_use = -1;
    l.vals[v].out_slot = -1;
  }
  DN_GOTO(&l, dnnl_engine_create(&l.s->engine, dnnl_cpu, 0));
  DN_GOTO(&l, dnnl_stream_create(&l.s->stream, l.s->engine,
                                 dnnl_stream_default_flags));
  MB_TRY_GOTO(mb__dn_io_init(&l));
  mb__dn_plan_groups(&l);
  /* Liveness: a value is read where the group of its reader is emitted. */
  for (int p = 0; p < d->n_nodes; p++) {
    const mb_node *n = node_at(&l, p);
    int at = l.group_of[p] >= 0 ? l.groups[l.group_of[p]].last : p;
    for (int j = 0; j < n->n_inputs; j++)
      if (n->inputs[j] >= 0)
        l.vals[n->inputs[j]].last_use =
            MB_MAX(l.vals[n->inputs[j]].last_use, at);
  }
  /* Inserted layout changes and int8 conversions are profile lines of
   * their own (unused ones are dropped). */
  if ((l.prof_reorder = mb__dn_prof_new(&l, "reorder", "")) < 0 ||
      (l.prof_quantize = mb__dn_prof_new(&l, "quantize", "")) < 0 ||
      (l.prof_dequantize = mb__dn_prof_new(&l, "dequantize", "")) < 0) {
    status = mb__dn_oom(&l);
    goto done;
  }
  for (int p = 0; p < d->n_nodes; p++) {
    int gi = l.group_of[p];
    l.pos = p;
    if (gi >= 0 && l.groups[gi].last == p)
      status = mb__dn_lower_group(&l, &l.groups[gi]);
    else if (gi < 0)
      status = mb__dn_lower_node(&l, p);
    if (status)
      goto done;
  }
  l.node = NULL;
  for (int i = 0; i < d->n_outputs; i++) {
    int v = d->outputs[i];
    if (!l.s->outputs[i].constant && !l.vals[v].out_done) {
      status = mb__error(err, MB_STATUS_INTERNAL,
                         "onednn: segment output '%s' is never computed",
                         g->values[v].name);
      goto done;
    }
  }
  MB_TRY_GOTO(mb__dn_buffers_finish(&l));
  mb__dn_prof_compact(l.s);
  *compiled_out = l.s;
  l.s = NULL;
done:
  mb__dn_segment_free(l.s);
  free(l.node_pos);
  free(l.vals);
  free(l.groups);
  free(l.group_of);
  return status;
}

/* oneDNN's verbose mode 2 prints each primitive as it is created, with the
 * implementation it got ("brg:avx512_core_bf16", "jit:avx2"...); it also
 * prints every execution, so it is on only while segments compile. */
static void dn_log_compile(int on) {
  dnnl_set_verbose(on ? 2 : 0);
}

const mb_engine mb__engine_onednn = {
    .name = "onednn",
    .probe = dn_probe,
    .supports_precision = dn_supports_precision,
    .supports_node = dn_supports_node,
    .node_precision = dn_node_precision,
    .compile = dn_compile,
    .run = mb__dn_run,
    .node_profile = mb__dn_node_profile,
    .node_profile_reset = mb__dn_node_profile_reset,
    .release = mb__dn_release,
    .log_compile = dn_log_compile,
    .int8_weights = dn_int8_weights,
};

#endif /* MB_HAVE_DNNL */
