/* The harness of the engine tests (test_engine_onednn*.c,
 * test_engine_xnnpack*.c): small graphs built with the IR builder, prepared
 * as one segment of the whole graph, run on the reference interpreter; the
 * checks every engine makes (a graph against the reference, a node it must
 * reject, repeated runs of one compiled segment); and the quantisation
 * parameters the quant_params build step would make. The test file defines
 * `static const mb_engine *engine` (the engine under test) before
 * including this, after test.h. */
#ifndef MB_TESTS_ENGINE_HARNESS_H
#define MB_TESTS_ENGINE_HARNESS_H

#include "passes/passes.h"
#include "passes/quantize.h"

#include <math.h>
#include <stdlib.h>

/* ------------------------------------------------------------------------ */
/* Graph building                                                            */
/* ------------------------------------------------------------------------ */

typedef struct gcase {
  mb_model *model;
  mb_graph *g;
  mb_error err;
  int failed;    /* a builder call failed: err says why */
  float lo, hi;  /* range of random input data */
  int last_node; /* the node attribute setters apply to */
  int no_bf16;   /* skip the bf16 comparison (ill-conditioned output) */
  /* Constant-node outputs the test hands the engine as constants (as the
   * hybrid layer does after folding). */
  int n_folded;
  int folded_value[4];
  mb_tensor *folded_tensor[4];
} gcase;

static uint32_t rng_state = 20240611u;
static inline float rnd01(void) {
  rng_state = rng_state * 1664525u + 1013904223u;
  return (float)((rng_state >> 8) & 0xffffff) / (float)(1 << 24);
}

static inline void gc_init(gcase *c, int64_t opset) {
  memset(c, 0, sizeof *c);
  c->lo = -1.0f;
  c->hi = 1.0f;
  c->model = mb__model_create();
  if (!c->model) {
    c->failed = 1;
    return;
  }
  c->g = c->model->graph;
  if (mb__model_set_opset(c->model, "", opset, &c->err))
    c->failed = 1;
}

static inline void gc_free(gcase *c) {
  mb_model_free(c->model);
}

static inline void gc_input_typed(gcase *c, const char *name, mb_dtype dt,
                                  int rank, const int64_t *dims) {
  if (!c->failed &&
      mb__graph_add_input(c->g, name, dt, rank, dims, NULL, &c->err) < 0)
    c->failed = 1;
}

static inline void gc_input(gcase *c, const char *name, int rank,
                            const int64_t *dims) {
  gc_input_typed(c, name, MB_DTYPE_FLOAT, rank, dims);
}

/* A float initializer: `data` (numel values) or random in [lo, hi). */
static inline void gc_const(gcase *c, const char *name, int rank,
                            const int64_t *dims, const float *data, float lo,
                            float hi) {
  mb_tensor *t = NULL;
  if (c->failed)
    return;
  if (mb_tensor_create(MB_DTYPE_FLOAT, rank, dims, &t, &c->err)) {
    c->failed = 1;
    return;
  }
  float *x = t->data;
  for (int64_t i = 0; i < t->numel; i++)
    x[i] = data ? data[i] : lo + (hi - lo) * rnd01();
  if (mb__graph_add_initializer(c->g, name, t, &c->err) < 0)
    c->failed = 1;
}

static inline void gc_scalar(gcase *c, const char *name, float value) {
  gc_const(c, name, 0, NULL, &value, 0, 0);
}

static inline void gc_const_i64(gcase *c, const char *name, int n,
                                const int64_t *values) {
  mb_tensor *t = NULL;
  int64_t dims[1] = {n};
  if (c->failed)
    return;
  if (mb_tensor_create(MB_DTYPE_INT64, 1, dims, &t, &c->err)) {
    c->failed = 1;
    return;
  }
  memcpy(t->data, values, (size_t)n * sizeof *values);
  if (mb__graph_add_initializer(c->g, name, t, &c->err) < 0)
    c->failed = 1;
}

/* A node with comma-separated input and output names ("x,w,b" / "y"); an
 * empty item is an omitted optional input. */
static inline void gc_node(gcase *c, const char *op, const char *ins,
                           const char *outs) {
  char buf[2][256];
  const char *names[2][12];
  int count[2] = {0, 0};
  const char *src[2] = {ins, outs};
  if (c->failed)
    return;
  for (int k = 0; k < 2; k++) {
    snprintf(buf[k], sizeof buf[k], "%s", src[k]);
    char *p = buf[k];
    if (!*p)
      continue;
    for (;;) {
      names[k][count[k]++] = p;
      char *comma = strchr(p, ',');
      if (!comma)
        break;
      *comma = '\0';
      p = comma + 1;
    }
  }
  char name[64];
  snprintf(name, sizeof name, "%s_%d", op, c->g->n_nodes);
  c->last_node = mb__graph_add_node(c->g, op, "", name, count[0], names[0],
                                    count[1], names[1], &c->err);
  if (c->last_node < 0)
    c->failed = 1;
}

static inline void gc_int(gcase *c, const char *name, int64_t v) {
  if (!c->failed && mb__node_set_int(c->g, c->last_node, name, v, &c->err))
    c->failed = 1;
}
static inline void gc_float(gcase *c, const char *name, float v) {
  if (!c->failed && mb__node_set_float(c->g, c->last_node, name, v, &c->err))
    c->failed = 1;
}
static inline void gc_str(gcase *c, const char *name, const char *v) {
  if (!c->failed && mb__node_set_string(c->g, c->last_node, name, v, &c->err))
    c->failed = 1;
}
static inline void gc_ints(gcase *c, const char *name, int n,
                           const int64_t *v) {
  if (!c->failed && mb__node_set_ints(c->g, c->last_node, name, n, v, &c->err))
    c->failed = 1;
}
#define GC_INTS(c, name, ...)                                                  \
  do {                                                                         \
    const int64_t v_[] = {__VA_ARGS__};                                        \
    gc_ints((c), (name), (int)(sizeof v_ / sizeof v_[0]), v_);                 \
  } while (0)

static inline void gc_output(gcase *c, const char *name) {
  if (!c->failed && mb__graph_add_output(c->g, name, MB_DTYPE_FLOAT, -1, NULL,
                                         NULL, &c->err) < 0)
    c->failed = 1;
}

/* A Conv over an [n, c_in, h, w] input with a random weight (and bias). */
typedef struct conv_spec {
  int64_t n, c_in, h, w, c_out, group, kh, kw;
  int64_t stride[2], dilation[2], pads[4];
  const char *auto_pad; /* NULL: NOTSET with pads */
  int bias;
} conv_spec;

static inline void build_conv(gcase *c, const conv_spec *s) {
  gc_init(c, 13);
  int64_t x[4] = {s->n, s->c_in, s->h, s->w};
  int64_t w[4] = {s->c_out, s->c_in / s->group, s->kh, s->kw};
  int64_t b[1] = {s->c_out};
  gc_input(c, "x", 4, x);
  gc_const(c, "w", 4, w, NULL, -0.5f, 0.5f);
  if (s->bias)
    gc_const(c, "b", 1, b, NULL, -1, 1);
  gc_node(c, "Conv", s->bias ? "x,w,b" : "x,w", "y");
  gc_int(c, "group", s->group);
  gc_ints(c, "strides", 2, s->stride);
  gc_ints(c, "dilations", 2, s->dilation);
  if (s->auto_pad)
    gc_str(c, "auto_pad", s->auto_pad);
  else
    gc_ints(c, "pads", 4, s->pads);
  gc_output(c, "y");
}

/* ------------------------------------------------------------------------ */
/* Running                                                                   */
/* ------------------------------------------------------------------------ */

static inline int engine_available(void) {
  mb_runtime_info info;
  memset(&info, 0, sizeof info);
  engine->probe(&info);
  if (!info.available)
    printf("SKIP: %s unavailable: %s\n", engine->name, info.reason);
  return info.available;
}

#define SKIP_UNLESS_AVAILABLE()                                                \
  do {                                                                         \
    if (!engine_available())                                                   \
      return 0;                                                                \
  } while (0)

/* Everything a compiled single-segment graph needs. */
typedef struct prepared {
  int n_inputs;
  mb_tensor *inputs[8];
  mb_shape_info *shapes;
  const mb_tensor **constants;
  mb_engine_graph eg;
  int *nodes, *seg_inputs, *seg_outputs;
  mb_segment_desc desc;
} prepared;

static inline void prepared_free(prepared *p) {
  for (int i = 0; i < p->n_inputs; i++)
    mb_tensor_free(p->inputs[i]);
  free(p->shapes);
  free(p->constants);
  free(p->nodes);
  free(p->seg_inputs);
  free(p->seg_outputs);
  memset(p, 0, sizeof *p);
}

/* Finalises the graph, makes random inputs, infers shapes and describes the
 * whole graph as one segment. */
static inline int prepare(gcase *c, prepared *p) {
  memset(p, 0, sizeof *p);
  if (c->failed)
    TEST_FAIL_("building the graph failed: %s", c->err.message);
  ASSERT_OK(mb__graph_finalize(c->g, &c->err), &c->err);
  mb_graph *g = c->g;
  p->n_inputs = mb_model_input_count(c->model);
  ASSERT(p->n_inputs <= 8);
  for (int i = 0; i < p->n_inputs; i++) {
    const mb_value *v = &g->values[g->inputs[i]];
    int64_t dims[MB_MAX_RANK];
    for (int d = 0; d < v->rank; d++)
      dims[d] = v->dims[d].value;
    ASSERT_OK(mb_tensor_create(v->dtype, v->rank, dims, &p->inputs[i], &c->err),
              &c->err);
    for (int64_t k = 0; k < p->inputs[i]->numel; k++)
      mb__tensor_set_f64(p->inputs[i], k, c->lo + (c->hi - c->lo) * rnd01());
  }
  p->shapes = calloc((size_t)g->n_values, sizeof *p->shapes);
  p->constants = calloc((size_t)g->n_values, sizeof *p->constants);
  p->nodes = malloc((size_t)(g->n_nodes + 1) * sizeof *p->nodes);
  p->seg_inputs = malloc((size_t)(g->n_inputs + 1) * sizeof(int));
  p->seg_outputs = malloc((size_t)(g->n_outputs + 1) * sizeof(int));
  ASSERT(p->shapes && p->constants && p->nodes && p->seg_inputs &&
         p->seg_outputs);
  ASSERT_OK(mb__infer_shapes(c->model, (const mb_tensor *const *)p->inputs,
                             p->shapes, &c->err),
            &c->err);
  for (int v = 0; v < g->n_values; v++)
    p->constants[v] = g->values[v].initializer;
  for (int i = 0; i < c->n_folded; i++)
    p->constants[c->folded_value[i]] = c->folded_tensor[i];
  p->eg.model = c->model;
  p->eg.graph = g;
  p->eg.shapes = p->shapes;
  p->eg.constants = p->constants;
  for (int i = 0; i < g->n_nodes; i++)
    p->nodes[i] = i;
  for (int i = 0; i < g->n_inputs; i++)
    p->seg_inputs[i] = g->inputs[i];
  for (int i = 0; i < g->n_outputs; i++)
    p->seg_outputs[i] = g->outputs[i];
  p->desc.eg = &p->eg;
  p->desc.n_nodes = g->n_nodes;
  p->desc.nodes = p->nodes;
  p->desc.n_inputs = g->n_inputs;
  p->desc.inputs = p->seg_inputs;
  p->desc.n_outputs = g->n_outputs;
  p->desc.outputs = p->seg_outputs;
  return 0;
}

/* max |got - want| / max(1, max |want|) */
static inline double normalised_error(const mb_tensor *got,
                                      const mb_tensor *want) {
  double max_err = 0, scale = 1;
  const float *a = got->data, *b = want->data;
  for (int64_t i = 0; i < want->numel; i++) {
    scale = fmax(scale, fabs(b[i]));
    double e = fabs((double)a[i] - b[i]);
    if (!(e <= max_err))
      max_err = isnan(e) ? INFINITY : e;
  }
  return max_err / scale;
}

/* Cosine similarity; 1 for two all-zero tensors. */
static inline double cosine(const mb_tensor *got, const mb_tensor *want) {
  double dot = 0, na = 0, nb = 0;
  const float *a = got->data, *b = want->data;
  for (int64_t i = 0; i < want->numel; i++) {
    dot += (double)a[i] * b[i];
    na += (double)a[i] * a[i];
    nb += (double)b[i] * b[i];
  }
  if (na == 0 && nb == 0)
    return 1;
  double c = dot / (sqrt(na) * sqrt(nb));
  return isnan(c) ? -1 : c;
}

/* Allocates engine outputs with the inferred shapes. */
static inline int make_outputs(prepared *p, mb_tensor **outs) {
  for (int j = 0; j < p->desc.n_outputs; j++) {
    const mb_shape_info *s = &p->shapes[p->desc.outputs[j]];
    ASSERT(s->known);
    ASSERT_OK(
        mb_tensor_create(MB_DTYPE_FLOAT, s->rank, s->dims, &outs[j], NULL),
        NULL);
  }
  return 0;
}

/* The reference run: ref[] receives new tensors. */
static inline int run_reference(gcase *c, prepared *p, mb_tensor **ref) {
  mb_session *session = NULL;
  ASSERT_OK(mb_session_create(c->model, NULL, &session, &c->err), &c->err);
  mb_status s =
      mb_session_run(session, p->n_inputs, (const mb_tensor *const *)p->inputs,
                     p->desc.n_outputs, ref, &c->err);
  mb_session_free(session);
  ASSERT_OK(s, &c->err);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Checks every engine test makes                                            */
/* ------------------------------------------------------------------------ */

static inline int bf16_supported(void) {
  char reason[256] = "";
  return engine->supports_precision(MB_PRECISION_BF16, reason, sizeof reason);
}

typedef struct run_opts {
  int threads;
  mb_precision precision;
  double tol;        /* fp32: normalised error */
  double min_cosine; /* bf16 */
} run_opts;

/* Compiles the prepared segment and compares two runs with the reference
 * outputs `ref` (the second run reuses what the first set up): fp32 and
 * fp16 by normalised error, bf16 by cosine. */
static inline int run_engine(gcase *c, prepared *p, mb_tensor **ref,
                             const run_opts *o) {
  mb_engine_options eo = {o->threads, o->precision, 0};
  void *compiled = NULL;
  mb_tensor *outs[8] = {0};
  int rc = 1;
  ASSERT(p->desc.n_outputs <= 8);
  ASSERT_OK(engine->compile(&p->desc, &eo, &compiled, &c->err), &c->err);
  if (make_outputs(p, outs))
    goto done;
  for (int r = 0; r < 2; r++) {
    for (int j = 0; j < p->desc.n_outputs; j++)
      memset(outs[j]->data, 0xff, outs[j]->nbytes); /* NaN */
    mb_status s = engine->run(compiled, (const mb_tensor *const *)p->inputs,
                              outs, &c->err);
    if (s) {
      fprintf(stderr, "  run failed: %s\n", c->err.message);
      goto done;
    }
    for (int j = 0; j < p->desc.n_outputs; j++) {
      const char *name = p->eg.graph->values[p->desc.outputs[j]].name;
      if (o->precision == MB_PRECISION_BF16) {
        double cs = cosine(outs[j], ref[j]);
        if (!(cs >= o->min_cosine)) {
          fprintf(stderr, "  output %d (%s): bf16 cosine %.6f < %g\n", j, name,
                  cs, o->min_cosine);
          goto done;
        }
      } else {
        double e = normalised_error(outs[j], ref[j]);
        if (!(e <= o->tol)) {
          fprintf(stderr,
                  "  output %d (%s): normalised error %g > %g (threads %d, "
                  "run %d)\n",
                  j, name, e, o->tol, o->threads, r);
          goto done;
        }
      }
    }
  }
  rc = 0;
done:
  for (int j = 0; j < p->desc.n_outputs; j++)
    mb_tensor_free(outs[j]);
  engine->release(compiled);
  return rc;
}

/* The whole check of one graph: every node accepted, fp32 at 1 and 2
 * threads within 1e-4 of the reference, bf16 (when the engine computes in
 * it) with cosine >= 0.999. Frees the case. */
static inline int check_graph(gcase *c) {
  prepared p;
  mb_tensor *ref[8] = {0};
  int rc = 1;
  if (prepare(c, &p))
    goto done;
  for (int i = 0; i < c->g->n_nodes; i++) {
    char reason[256] = "";
    mb_engine_options eo = {1, MB_PRECISION_FP32, 0};
    if (!engine->supports_node(&p.eg, i, &eo, reason, sizeof reason)) {
      fprintf(stderr, "  node %d (%s) rejected: %s\n", i,
              c->g->nodes[i].op_type, reason);
      goto done;
    }
  }
  if (run_reference(c, &p, ref))
    goto done;
  for (int threads = 1; threads <= 2; threads++) {
    run_opts o = {threads, MB_PRECISION_FP32, 1e-4, 0};
    if (run_engine(c, &p, ref, &o))
      goto done;
  }
  if (!c->no_bf16 && bf16_supported()) {
    run_opts o = {2, MB_PRECISION_BF16, 0, 0.999};
    if (run_engine(c, &p, ref, &o))
      goto done;
  }
  rc = 0;
done:
  for (int j = 0; j < 8; j++)
    mb_tensor_free(ref[j]);
  prepared_free(&p);
  gc_free(c);
  return rc;
}

/* supports_node on node `node` must say no, with a reason containing
 * `want`. Frees the case. */
static inline int check_rejected(gcase *c, int node, const char *want) {
  prepared p;
  char reason[256] = "";
  int rc = 1;
  if (prepare(c, &p))
    goto done;
  mb_engine_options eo = {1, MB_PRECISION_FP32, 0};
  if (engine->supports_node(&p.eg, node, &eo, reason, sizeof reason)) {
    fprintf(stderr, "  node %d (%s) accepted\n", node,
            c->g->nodes[node].op_type);
    goto done;
  }
  if (!strstr(reason, want)) {
    fprintf(stderr, "  reason \"%s\" does not contain \"%s\"\n", reason, want);
    goto done;
  }
  rc = 0;
done:
  prepared_free(&p);
  gc_free(c);
  return rc;
}

/* A small residual network with three outputs: an intermediate rank-4
 * value that is also read inside the segment (an owned buffer, in the
 * engine's layout), the logits and the probabilities (written straight
 * into the caller's tensors). */
static inline void build_residual(gcase *c) {
  int64_t x[4] = {1, 3, 16, 16}, w1[4] = {8, 3, 3, 3}, w2[4] = {8, 8, 3, 3},
          w3[4] = {8, 1, 3, 3}, b[1] = {8}, fc[2] = {8, 5};
  gc_init(c, 13);
  gc_input(c, "x", 4, x);
  gc_const(c, "w1", 4, w1, NULL, -0.4f, 0.4f);
  gc_const(c, "b1", 1, b, NULL, -0.2f, 0.2f);
  gc_const(c, "w2", 4, w2, NULL, -0.2f, 0.2f);
  gc_const(c, "w3", 4, w3, NULL, -0.4f, 0.4f);
  gc_const(c, "fc", 2, fc, NULL, -0.5f, 0.5f);
  gc_scalar(c, "six", 6.0f);
  gc_scalar(c, "zero", 0.0f);
  gc_node(c, "Conv", "x,w1,b1", "c1");
  GC_INTS(c, "pads", 1, 1, 1, 1);
  GC_INTS(c, "strides", 2, 2);
  gc_node(c, "Relu", "c1", "r1");
  gc_node(c, "Conv", "r1,w2", "c2");
  GC_INTS(c, "pads", 1, 1, 1, 1);
  gc_node(c, "Clip", "c2,zero,six", "r2");
  gc_node(c, "Conv", "r2,w3", "c3");
  GC_INTS(c, "pads", 1, 1, 1, 1);
  gc_int(c, "group", 8);
  gc_node(c, "Add", "c3,r1", "s");
  gc_node(c, "MaxPool", "s", "p");
  GC_INTS(c, "kernel_shape", 3, 3);
  GC_INTS(c, "strides", 2, 2);
  GC_INTS(c, "pads", 1, 1, 1, 1);
  gc_node(c, "GlobalAveragePool", "p", "g");
  gc_node(c, "Flatten", "g", "f");
  gc_node(c, "MatMul", "f,fc", "logits");
  gc_node(c, "Softmax", "logits", "probs");
  gc_output(c, "s");
  gc_output(c, "probs");
  gc_output(c, "logits");
}

/* build_residual compiled once (2 threads) and run three times with new
 * input data and new output buffers each time, every run within 1e-4 of
 * the reference. */
static inline int check_repeated_runs(void) {
  gcase c;
  prepared p;
  mb_tensor *ref[8] = {0}, *outs[8] = {0};
  void *compiled = NULL;
  int rc = 1;
  build_residual(&c);
  if (prepare(&c, &p))
    goto done;
  mb_engine_options eo = {2, MB_PRECISION_FP32, 0};
  if (engine->compile(&p.desc, &eo, &compiled, &c.err)) {
    fprintf(stderr, "  compile: %s\n", c.err.message);
    goto done;
  }
  for (int r = 0; r < 3; r++) {
    for (int i = 0; i < p.n_inputs; i++)
      for (int64_t k = 0; k < p.inputs[i]->numel; k++)
        ((float *)p.inputs[i]->data)[k] = 2 * rnd01() - 1;
    for (int j = 0; j < 8; j++) {
      mb_tensor_free(ref[j]);
      mb_tensor_free(outs[j]);
      ref[j] = outs[j] = NULL;
    }
    if (run_reference(&c, &p, ref) || make_outputs(&p, outs))
      goto done;
    if (engine->run(compiled, (const mb_tensor *const *)p.inputs, outs,
                    &c.err)) {
      fprintf(stderr, "  run: %s\n", c.err.message);
      goto done;
    }
    for (int j = 0; j < p.desc.n_outputs; j++) {
      double e = normalised_error(outs[j], ref[j]);
      if (!(e <= 1e-4)) {
        fprintf(stderr, "  run %d output %d: error %g\n", r, j, e);
        goto done;
      }
    }
  }
  rc = 0;
done:
  for (int j = 0; j < 8; j++) {
    mb_tensor_free(ref[j]);
    mb_tensor_free(outs[j]);
  }
  engine->release(compiled);
  prepared_free(&p);
  gc_free(&c);
  return rc;
}

/* ---- INT8 ---- */

#define INT8_BATCHES 8

/* What the quant_params build step makes for case c: its model calibrated
 * on INT8_BATCHES batches (the prepared inputs first, then random ones of
 * the same shapes from [c->lo, c->hi)), then the static quantisation
 * worked out on a copy, which adds the weight entries. *out: release with
 * mb__quant_params_free. Returns 0, or 1 after printing why. */
static inline int int8_params(gcase *c, prepared *p,
                              const mb_quant_options *qo_in,
                              mb_quant_params **out) {
  /* The int8 form the engine wants here, as the build step asks it (7-bit
   * weights for signed inputs where its u8 x s8 products saturate on this
   * CPU or ISA cap), unless the test chose one. */
  mb_quant_options qo_engine = qo_in ? *qo_in : (mb_quant_options){0};
  if (qo_engine.weights == MB_INT8_WEIGHTS_AUTO)
    qo_engine.weights = engine->int8_weights ? engine->int8_weights(NULL, 0)
                                             : MB_INT8_WEIGHTS_W8;
  const mb_quant_options *qo = &qo_engine;
  mb_tensor *extra[INT8_BATCHES][8];
  const mb_tensor *const *batches[INT8_BATCHES];
  mb_model *copy = NULL;
  int rc = 1;
  memset(extra, 0, sizeof extra);
  ASSERT(p->n_inputs <= 8);
  batches[0] = (const mb_tensor *const *)p->inputs;
  for (int b = 1; b < INT8_BATCHES; b++) {
    for (int i = 0; i < p->n_inputs; i++) {
      const mb_tensor *t = p->inputs[i];
      if (mb_tensor_create(t->dtype, t->rank, t->dims, &extra[b][i], &c->err)) {
        fprintf(stderr, "  calibration batch: %s\n", c->err.message);
        goto done;
      }
      for (int64_t k = 0; k < t->numel; k++)
        mb__tensor_set_f64(extra[b][i], k, c->lo + (c->hi - c->lo) * rnd01());
    }
    batches[b] = (const mb_tensor *const *)extra[b];
  }
  if (mb__calibrate(c->model, batches, INT8_BATCHES, qo, out, &c->err) ||
      mb__model_clone(c->model, &copy, &c->err) ||
      mb__quantize_static(copy, *out, qo, NULL, &c->err)) {
    fprintf(stderr, "  quantisation failed: %s\n", c->err.message);
    goto done;
  }
  rc = 0;
done:
  mb_model_free(copy);
  for (int b = 1; b < INT8_BATCHES; b++)
    for (int i = 0; i < p->n_inputs; i++)
      mb_tensor_free(extra[b][i]);
  return rc;
}

#endif /* MB_TESTS_ENGINE_HARNESS_H */
