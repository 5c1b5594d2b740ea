/* Shared by the operator tests that need more than one node: a one-node
 * harness that drives an operator row through infer + run with a
 * hand-made context (as the interpreter does), a small graph builder with a
 * sticky error, and runners that execute a built model on the reference
 * interpreter and on ONNX Runtime (when its library is installed).
 *
 * Everything is static inline so a test file may use any subset. */
#ifndef MB_TESTS_OP_HARNESS_H
#define MB_TESTS_OP_HARNESS_H

#include "ops/op.h"
#include "runtime/runtime.h"
#include "test.h"

#include <stdlib.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* One node                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct op_case {
  mb_model *model;
  int node;
  mb_error err;
  void *scratch[MB_OP_SCRATCH_SLOTS];
  size_t scratch_size[MB_OP_SCRATCH_SLOTS];
} op_case;

/* A model holding one node named "n" with inputs i0.. and outputs o0... */
static inline int case_init(op_case *c, const char *domain, const char *op_type,
                            int n_in, int n_out) {
  static const char *const in_names[] = {"i0", "i1", "i2", "i3", "i4",
                                         "i5", "i6", "i7", "i8", "i9"};
  static const char *const out_names[] = {"o0", "o1", "o2", "o3", "o4", "o5"};
  memset(c, 0, sizeof *c);
  if (n_in > (int)MB_ARRAY_COUNT(in_names) ||
      n_out > (int)MB_ARRAY_COUNT(out_names))
    return 1;
  c->model = mb__model_create();
  if (!c->model)
    return 1;
  c->node = mb__graph_add_node(c->model->graph, op_type, domain, "n", n_in,
                               in_names, n_out, out_names, &c->err);
  return c->node < 0;
}

static inline void case_free(op_case *c) {
  for (int i = 0; i < MB_OP_SCRATCH_SLOTS; i++)
    mb__aligned_free(c->scratch[i]);
  mb_model_free(c->model);
}

static inline void case_int(op_case *c, const char *name, int64_t v) {
  mb__node_set_int(c->model->graph, c->node, name, v, &c->err);
}
static inline void case_ints(op_case *c, const char *name, int n,
                             const int64_t *v) {
  mb__node_set_ints(c->model->graph, c->node, name, n, v, &c->err);
}
static inline void case_float(op_case *c, const char *name, float v) {
  mb__node_set_float(c->model->graph, c->node, name, v, &c->err);
}
static inline void case_string(op_case *c, const char *name, const char *v) {
  mb__node_set_string(c->model->graph, c->node, name, v, &c->err);
}

/* Runs infer, allocates the outputs, runs (the interpreter's protocol).
 * outputs[i] NULL: an omitted optional output; others get fresh data. */
static inline mb_status case_run_pool(op_case *c, int64_t opset,
                                      mb_tensor **inputs, int n_in,
                                      mb_tensor **outputs, int n_out,
                                      mb_threadpool *pool) {
  const mb_node *node = &c->model->graph->nodes[c->node];
  const mb_op_def *def = mb__op_find(node->domain, node->op_type, opset);
  mb_op_ctx ctx = {0};
  mb_status status;
  if (!def)
    return mb__error(&c->err, MB_STATUS_UNSUPPORTED, "no row for %s",
                     node->op_type);
  ctx.node = node;
  ctx.graph = c->model->graph;
  ctx.opset = opset;
  ctx.n_inputs = n_in;
  ctx.inputs = inputs;
  ctx.n_outputs = n_out;
  ctx.outputs = outputs;
  ctx.threads = mb__threadpool_threads(pool);
  ctx.pool = pool;
  mb__blas_set_threads(1);
  ctx.err = &c->err;
  ctx.scratch = c->scratch;
  ctx.scratch_size = c->scratch_size;
  if ((status = def->infer(&ctx)))
    return status;
  for (int i = 0; i < n_out; i++) {
    mb_tensor *t = outputs[i];
    if (t &&
        (status = mb__tensor_reset(t, t->dtype, t->rank, t->dims, &c->err)))
      return status;
  }
  return def->run(&ctx);
}

static inline mb_status case_run(op_case *c, int64_t opset, mb_tensor **inputs,
                                 int n_in, mb_tensor **outputs, int n_out) {
  return case_run_pool(c, opset, inputs, n_in, outputs, n_out, NULL);
}

/* ------------------------------------------------------------------------ */
/* Tensors                                                                   */
/* ------------------------------------------------------------------------ */

/* A new tensor holding `values` (numel of them, converted per Cast rules;
 * NULL leaves zeros). NULL on failure. */
static inline mb_tensor *tensor_of(mb_dtype dt, int rank, const int64_t *dims,
                                   const double *values) {
  mb_tensor *t = NULL;
  if (mb_tensor_create(dt, rank, dims, &t, NULL))
    return NULL;
  if (t->nbytes)
    memset(t->data, 0, t->nbytes);
  for (int64_t i = 0; values && i < t->numel; i++)
    mb__tensor_set_f64(t, i, values[i]);
  return t;
}

static inline mb_tensor *empty_output(void) {
  return calloc(1, sizeof(mb_tensor));
}

static inline void free_tensors(mb_tensor **ts, int n) {
  for (int i = 0; i < n; i++) {
    mb_tensor_free(ts[i]);
    ts[i] = NULL;
  }
}

/* ------------------------------------------------------------------------ */
/* Graphs                                                                    */
/* ------------------------------------------------------------------------ */

/* Builder with a sticky error: after the first failure every call does
 * nothing, so graph code reads as a list of nodes. */
typedef struct graph_builder {
  mb_model *model;
  mb_graph *graph;
  mb_error err;
  int last_node;
  int next_id;
} graph_builder;

static inline bool gb_failed(const graph_builder *b) {
  return b->err.status != MB_STATUS_OK;
}

static inline void gb_init(graph_builder *b, int64_t opset) {
  memset(b, 0, sizeof *b);
  b->model = mb__model_create();
  if (!b->model) {
    mb__error(&b->err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    return;
  }
  b->graph = b->model->graph;
  b->model->ir_version = 8;
  mb__model_set_opset(b->model, "", opset, &b->err);
}

/* A fresh value name in the model's arena. */
static inline const char *gb_name(graph_builder *b, const char *prefix) {
  char buf[64];
  snprintf(buf, sizeof buf, "%s_%d", prefix, b->next_id++);
  const char *s = gb_failed(b) ? "" : mb__arena_strdup(b->model->arena, buf);
  if (!s && !gb_failed(b))
    mb__error(&b->err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  return s ? s : "";
}

/* Adds an initializer holding `values`; returns its name. */
static inline const char *gb_const(graph_builder *b, mb_dtype dt, int rank,
                                   const int64_t *dims, const double *values) {
  if (gb_failed(b))
    return "";
  mb_tensor *t = tensor_of(dt, rank, dims, values);
  if (!t) {
    mb__error(&b->err, MB_STATUS_OUT_OF_MEMORY, "cannot create a constant");
    return "";
  }
  const char *name = gb_name(b, "c");
  mb__graph_add_initializer(b->graph, name, t, &b->err);
  return name;
}

/* Appends a one-output node; attributes then go to b->last_node. Input
 * names "" are omitted optional inputs. Returns the output's name. */
static inline const char *gb_node(graph_builder *b, const char *op, int n_in,
                                  const char *const *in) {
  if (gb_failed(b))
    return "";
  const char *out = gb_name(b, op);
  const char *outs[1] = {out};
  b->last_node = mb__graph_add_node(b->graph, op, "", gb_name(b, "node"), n_in,
                                    in, 1, outs, &b->err);
  return out;
}

/* Appends a node with several outputs, named by the caller. */
static inline void gb_node_outs(graph_builder *b, const char *op, int n_in,
                                const char *const *in, int n_out,
                                const char *const *outs) {
  if (!gb_failed(b))
    b->last_node = mb__graph_add_node(b->graph, op, "", gb_name(b, "node"),
                                      n_in, in, n_out, outs, &b->err);
}

#define GB_IN_(...)                                                            \
  (int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)),         \
      (const char *const[]) {                                                  \
    __VA_ARGS__                                                                \
  }
/* GB_OP(b, "Relu", x) */
#define GB_OP(b, op, ...) gb_node((b), (op), GB_IN_(__VA_ARGS__))

static inline void gb_int(graph_builder *b, const char *name, int64_t v) {
  if (!gb_failed(b))
    mb__node_set_int(b->graph, b->last_node, name, v, &b->err);
}
static inline void gb_ints(graph_builder *b, const char *name, int n,
                           const int64_t *v) {
  if (!gb_failed(b))
    mb__node_set_ints(b->graph, b->last_node, name, n, v, &b->err);
}
static inline void gb_float(graph_builder *b, const char *name, float v) {
  if (!gb_failed(b))
    mb__node_set_float(b->graph, b->last_node, name, v, &b->err);
}

static inline void gb_input(graph_builder *b, const char *name, mb_dtype dt,
                            int rank, const int64_t *dims) {
  if (!gb_failed(b))
    mb__graph_add_input(b->graph, name, dt, rank, dims, NULL, &b->err);
}

/* Declares `value` a graph output of the given type and shape. An output
 * must be a named value; an Identity renames it when needed. */
static inline void gb_output(graph_builder *b, const char *value, mb_dtype dt,
                             int rank, const int64_t *dims) {
  if (!gb_failed(b))
    mb__graph_add_output(b->graph, value, dt, rank, dims, NULL, &b->err);
}

/* Finalises the graph; returns the model (caller frees) or NULL, printing
 * the builder's error. */
static inline mb_model *gb_finish(graph_builder *b) {
  if (!gb_failed(b))
    mb__graph_finalize(b->graph, &b->err);
  if (gb_failed(b)) {
    fprintf(stderr, "  building the graph failed: %s\n", b->err.message);
    mb_model_free(b->model);
    return NULL;
  }
  return b->model;
}

/* ------------------------------------------------------------------------ */
/* Running whole models                                                      */
/* ------------------------------------------------------------------------ */

/* Runs `model` on the reference interpreter; outputs get new tensors. */
static inline int run_reference(const mb_model *model, mb_tensor **inputs,
                                mb_tensor **outputs) {
  mb_error err = {0};
  mb_session *s = NULL;
  mb_status st = mb_session_create(model, NULL, &s, &err);
  if (!st)
    st = mb_session_run(s, mb_model_input_count(model),
                        (const mb_tensor *const *)inputs,
                        mb_model_output_count(model), outputs, &err);
  mb_session_free(s);
  if (st)
    fprintf(stderr, "  reference: %s\n", err.message);
  return st != MB_STATUS_OK;
}

/* Runs `model` on ONNX Runtime (graph optimisations off, so ORT runs the
 * nodes as written). Returns 0 with outputs set, 1 on failure, -1 when ORT
 * is not installed (the caller skips the comparison). The model goes
 * through our writer and ORT's parser, so this also checks that the
 * written model is valid ONNX. */
static inline int run_onnxruntime(const mb_model *model, mb_tensor **inputs,
                                  mb_tensor **outputs) {
  mb_runtime_info info = {0};
  mb__runtime_onnxruntime.probe(&info);
  if (!info.available) {
    fprintf(stderr, "  ONNX Runtime comparison skipped: %s\n", info.reason);
    return -1;
  }
  char path[] = "/tmp/mb_op_test_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    return 1;
  close(fd);
  mb_error err = {0};
  void *bytes = NULL, *session = NULL;
  size_t size = 0;
  mb_runtime_options options = {.threads = 1,
                                .opt_level = MB_GRAPH_OPT_DISABLED};
  mb_status st = mb_model_save(model, path, NULL, &err);
  if (!st)
    st = mb__read_file(path, &bytes, &size, &err);
  unlink(path);
  if (!st)
    st = mb__runtime_onnxruntime.prepare(model, bytes, size, &options, &session,
                                         &err);
  if (!st)
    st = mb__runtime_onnxruntime.run(session, (const mb_tensor *const *)inputs,
                                     &err);
  if (!st)
    st = mb__runtime_onnxruntime.fetch_outputs(session, outputs, &err);
  if (session)
    mb__runtime_onnxruntime.release(session);
  free(bytes);
  if (st)
    fprintf(stderr, "  onnxruntime: %s\n", err.message);
  return st != MB_STATUS_OK;
}

#endif /* MB_TESTS_OP_HARNESS_H */
