/* Reference interpreter internals shared with the analysis layer. */
#ifndef MB_RUNTIME_REFERENCE_H
#define MB_RUNTIME_REFERENCE_H

#include "ops/op.h"

/* Static shape of one graph value after inference. */
typedef struct mb_shape_info {
  bool known; /* false when it depends on data not known statically */
  mb_dtype dtype;
  int rank;
  int64_t dims[MB_MAX_RANK];
} mb_shape_info;

/* Static shape and type inference of the main graph for concrete input
 * shapes. inputs: borrowed, one per graph input (mb_model_input_count), with
 * dtype/rank/dims set and data NULL (or set, for value-dependent inputs).
 * Small constant subgraphs (Shape -> Gather -> Concat -> Reshape ...) are
 * evaluated so that dependent shapes resolve. shapes_out: caller-allocated,
 * model->graph->n_values entries. A node whose shape cannot be inferred
 * leaves its outputs known=false and inference continues; a genuine error
 * (wrong rank, incompatible shapes, unsupported op) fails with the node's
 * name in the message. */
mb_status mb__infer_shapes(const mb_model *model,
                           const mb_tensor *const *inputs,
                           mb_shape_info *shapes_out, mb_error *err);

/* The same, also returning the data of values that do not depend on the
 * data of user inputs and were small enough to compute (outputs of Constant
 * nodes, Shape -> Gather -> Concat chains, ...): folded_out is a caller
 * array of graph->n_values slots, each set to a new tensor (release with
 * mb_tensor_free) or NULL. The value's initializer is never copied. */
mb_status mb__infer_shapes_fold(const mb_model *model,
                                const mb_tensor *const *inputs,
                                mb_shape_info *shapes_out,
                                mb_tensor **folded_out, mb_error *err);

/* Runs without copying outputs out: they stay in the session (see
 * mb__session_output) until the next run. inputs: graph input order. */
mb_status mb__session_run_keep(mb_session *session,
                               const mb_tensor *const *inputs, mb_error *err);
/* Runs with inputs that may be sequences or optionals (graph input order;
 * borrowed until the next run); outputs stay in the session (see
 * mb__session_output_value). */
mb_status mb__session_run_values(mb_session *session, const mb_op_value *inputs,
                                 mb_error *err);
/* Graph output `index` after a run: its tensor and sequence record, owned
 * by the session until the next run. */
mb_op_value mb__session_output_value(const mb_session *session, int index);
/* Borrowed view of graph output `index` after mb__session_run_keep. */
const mb_tensor *mb__session_output(const mb_session *session, int index);

/* ---- pieces for the hybrid runtimes (src/runtime/hybrid.c) ---- */

/* A session that resolves only nodes with run_mask[i] (NULL: all); the
 * others must never be passed to mb__session_run_node. run_mask: borrowed,
 * read during the call only. */
mb_status mb__session_create_masked(const mb_model *model,
                                    const mb_session_options *options,
                                    const bool *run_mask,
                                    mb_session **session_out, mb_error *err);
/* Checks and binds the graph inputs (borrowed until the next bind). */
mb_status mb__session_bind_inputs(mb_session *session,
                                  const mb_tensor *const *inputs,
                                  mb_error *err);
/* Runs node `node` on the values bound or computed so far. */
mb_status mb__session_run_node(mb_session *session, int node, mb_error *err);
/* The session's storage of value `value` (graph index): others write
 * segment outputs into it (mb__tensor_reset) and read inputs from it. */
mb_tensor *mb__session_value(mb_session *session, int value);
/* Per-node timing: on clears and starts it; node_ms is NULL when off, else
 * graph->n_nodes sums in milliseconds. */
mb_status mb__session_set_profiling(mb_session *session, bool on,
                                    mb_error *err);
const double *mb__session_node_ms(const mb_session *session);

#endif
