/* Graph passes: rewrites of a model's IR in place (constant folding, dead
 * code, BatchNormalization folding, shape simplification, float16).
 *
 * A pass is one mb_pass row; MB_PASS_LIST names every row and the family
 * file that defines it. Passes mutate the model they are given, so callers
 * work on a private copy (mb__model_clone, or mb__convert_model which
 * clones and runs). After every pass the driver re-sorts the graph with
 * mb__graph_finalize, so each pass may leave nodes out of order but must
 * leave the graph otherwise valid: every input produced, no value produced
 * twice, graph input and output names unchanged.
 *
 * Layering: passes sit above the runtimes (they evaluate constant nodes
 * with the reference interpreter's kernels) and below the conversions,
 * whose steps name them. */
#ifndef MB_PASSES_PASSES_H
#define MB_PASSES_PASSES_H

#include "core/ir.h"

/* ---- options ---- */

/* fold_constants: a node whose outputs are larger than its inputs is folded
 * only when they take at most this many bytes (so that Expand or Tile of a
 * scalar cannot bloat the model). */
#define MB_PASS_FOLD_LIMIT_DEFAULT ((size_t)1 << 20)

/* to_fp16: op types kept in float32 unless mb_pass_options.fp16_block says
 * otherwise. They are the numerically sensitive ones (large sums, exp/log,
 * normalisation statistics), as in onnxconverter-common's float16
 * converter's advice for transformers. */
#define MB_PASS_FP16_BLOCK_DEFAULT                                             \
  "Softmax,LayerNormalization,ReduceMean,ReduceSum,Pow,Exp,Log,Sqrt"

/* Everything a pass may need beyond the model. Zero-initialise: the zero
 * value means "defaults, input shapes unknown". */
typedef struct mb_pass_options {
  /* Concrete shapes of graph inputs, matched by name (e.g. from
   * mb_model_resolve_input_shapes). Borrowed for the call. simplify_shapes
   * needs one per graph input and pins the inputs to them; to_fp16 uses
   * them for type inference (unknown dims are taken as 1 otherwise). */
  int n_input_shapes;
  const mb_input_shape *input_shapes;
  /* fold_constants size cap in bytes; 0: MB_PASS_FOLD_LIMIT_DEFAULT. */
  size_t fold_limit_bytes;
  /* to_fp16 block list, comma separated op types. NULL or "": the default
   * (MB_PASS_FP16_BLOCK_DEFAULT); "none": block nothing; a plain name
   * starts a list of its own ("Softmax,Exp" blocks exactly those); "+Op"
   * adds to and "-Op" removes from the list so far, which is the default
   * when the string starts with a sign ("-Pow,+Erf"). Borrowed. */
  const char *fp16_block;
} mb_pass_options;

/* ---- statistics ---- */

/* What one run of one pass did. `changed` counts the pass's unit of work
 * (see each pass's summary: nodes folded, removed, converted ...); 0 means
 * the pass found nothing to do. */
typedef struct mb_pass_record {
  char name[32];
  int nodes_before, nodes_after;
  int64_t changed;
  char detail[224]; /* one line for logs, "" when nothing happened */
} mb_pass_record;

#define MB_PASS_STATS_MAX 32

/* Filled by mb__passes_run; zero-initialise before the first call (a
 * second call appends). */
typedef struct mb_pass_stats {
  int nodes_before, nodes_after;                 /* main graph, whole run */
  int64_t param_bytes_before, param_bytes_after; /* initializers + Constants */
  int n_passes;                                  /* entries in passes */
  mb_pass_record passes[MB_PASS_STATS_MAX];
} mb_pass_stats;

/* ---- the pass interface ---- */

typedef struct mb_pass {
  const char *name;    /* lower_case, as written in step lists */
  const char *summary; /* one line: what it does and what `changed` counts */
  /* Rewrites model->graph in place. opt: borrowed, never NULL. stats: the
   * run's statistics, never NULL; the pass fills the last record (see
   * mb__pass_record). On failure the model may be half rewritten: callers
   * discard their copy. */
  mb_status (*run)(mb_model *model, const mb_pass_options *opt,
                   mb_pass_stats *stats, mb_error *err);
} mb_pass;

/* X(name, family): one row per pass; mb__pass_<name> is defined in
 * src/passes/<family>.c. */
#define MB_PASS_LIST(X)                                                        \
  X(constant_to_initializer, fold)                                             \
  X(fold_constants, fold)                                                      \
  X(simplify_shapes, fold)                                                     \
  X(remove_identity, cleanup)                                                  \
  X(eliminate_dead, cleanup)                                                   \
  X(fold_batchnorm, fuse)                                                      \
  X(to_fp16, fp16)

#define MB_X(name, family) extern const mb_pass mb__pass_##name;
MB_PASS_LIST(MB_X)
#undef MB_X

/* The standard pipeline that the step name "optimize" stands for. There,
 * simplify_shapes is skipped (and recorded as skipped, with the reason)
 * when a graph input has neither a given nor a static declared shape. */
#define MB_PASS_OPTIMIZE_STEPS                                                 \
  "constant_to_initializer,remove_identity,fold_constants,fold_batchnorm,"     \
  "simplify_shapes,eliminate_dead"

/* The pass named `name`, or NULL. */
const mb_pass *mb__pass_find(const char *name);
/* Number of passes and pass `index` (for listings), NULL when out of
 * range. */
int mb__pass_count(void);
const mb_pass *mb__pass_at(int index);

/* Applies `steps`, a comma separated list of pass names (spaces ignored;
 * "optimize" expands to MB_PASS_OPTIMIZE_STEPS), to model in place, in
 * order. The whole list is checked before anything runs: an unknown name
 * fails with MB_STATUS_NOT_FOUND listing the known ones. opt: borrowed, may
 * be NULL for defaults. stats: may be NULL; else records are appended.
 * After each pass the graph is re-finalised; a pass that breaks it fails
 * the run with MB_STATUS_INTERNAL naming the pass. */
mb_status mb__passes_run(mb_model *model, const char *steps,
                         const mb_pass_options *opt, mb_pass_stats *stats,
                         mb_error *err);

/* Clones `in` and applies `steps` to the copy: what a conversion step
 * calls. in: borrowed, unchanged. *out: a new model (release with
 * mb_model_free), left untouched on failure. Its path is NULL (it matches
 * no file; runtimes that load files need mb__model_serialize's bytes), its
 * base_dir and sha256 are in's. opt, stats: as in mb__passes_run. */
mb_status mb__convert_model(const mb_model *in, const char *steps,
                            const mb_pass_options *opt, mb_model **out,
                            mb_pass_stats *stats, mb_error *err);

/* "fold_constants 3 (120->117 nodes); ..." one line per run into buf
 * (truncated to size). Returns buf. */
const char *mb__pass_stats_summary(const mb_pass_stats *stats, char *buf,
                                   size_t size);

/* ---- model copies (clone.c) ---- */

/* Deep copy of a model: graph, subgraphs, attributes, initializer data.
 * src: borrowed. *model_out: release with mb_model_free. The copy keeps
 * src's sha256, path and base_dir (it describes where the model came
 * from). */
mb_status mb__model_clone(const mb_model *src, mb_model **model_out,
                          mb_error *err);

/* Serialises a model to ONNX bytes in memory (through the writer and a
 * temporary file), for runtimes that prepare from bytes. *bytes_out:
 * malloc'd, caller frees. Fails with MB_STATUS_UNSUPPORTED for models whose
 * tensors exceed the 2 GiB protobuf limit (they need external data). */
mb_status mb__model_serialize(const mb_model *model, void **bytes_out,
                              size_t *size_out, mb_error *err);

/* ---- for pass implementations ---- */

/* The record of the pass that is running (the last one). */
mb_pass_record *mb__pass_record(mb_pass_stats *stats);

#endif /* MB_PASSES_PASSES_H */
