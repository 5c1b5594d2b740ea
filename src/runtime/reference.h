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

/* Runs without copying outputs out: they stay in the session (see
 * mb__session_output) until the next run. inputs: graph input order. */
mb_status mb__session_run_keep(mb_session *session,
                               const mb_tensor *const *inputs, mb_error *err);
/* Borrowed view of graph output `index` after mb__session_run_keep. */
const mb_tensor *mb__session_output(const mb_session *session, int index);

#endif
