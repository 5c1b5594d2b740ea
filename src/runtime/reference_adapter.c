/* The reference interpreter behind the runtime interface: always available,
 * the baseline every other runtime's outputs are compared with. */
#include "runtime/reference.h"
#include "runtime/runtime.h"

#include <stdlib.h>

typedef struct reference_session {
  mb_session *session;
  const mb_model *model;
} reference_session;

static void reference_probe(mb_runtime_info *info) {
  info->available = 1;
  snprintf(info->version, sizeof info->version, "%s", MB_VERSION_STRING);
  info->reason[0] = '\0';
}

static mb_status reference_prepare(const mb_model *model,
                                   const void *model_bytes, size_t model_size,
                                   const mb_runtime_options *options,
                                   void **session_out, mb_error *err) {
  mb_session_options opts = {options ? options->threads : 1};
  reference_session *rs = calloc(1, sizeof *rs);
  mb_status status;
  if (!rs)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot allocate session");
  rs->model = model;
  if ((status = mb_session_create(model, &opts, &rs->session, err))) {
    free(rs);
    return status;
  }
  *session_out = rs;
  return MB_STATUS_OK;
}

static mb_status reference_run(void *session, const mb_tensor *const *inputs,
                               mb_error *err) {
  return mb__session_run_keep(((reference_session *)session)->session, inputs,
                              err);
}

static mb_status reference_fetch_outputs(void *session, mb_tensor **outputs_out,
                                         mb_error *err) {
  reference_session *rs = session;
  int n = mb_model_output_count(rs->model);
  for (int i = 0; i < n; i++)
    outputs_out[i] = NULL;
  for (int i = 0; i < n; i++) {
    mb_status status = mb_tensor_clone(mb__session_output(rs->session, i),
                                       &outputs_out[i], err);
    if (status) {
      for (int j = 0; j < i; j++) {
        mb_tensor_free(outputs_out[j]);
        outputs_out[j] = NULL;
      }
      return status;
    }
  }
  return MB_STATUS_OK;
}

static void reference_release(void *session) {
  reference_session *rs = session;
  if (!rs)
    return;
  mb_session_free(rs->session);
  free(rs);
}

static void reference_profile_reset(void *session, int level) {
  reference_session *rs = session;
  /* Out of memory only loses the profile, which collect then reports. */
  mb__session_set_profiling(rs->session, level >= 1, NULL);
}

static mb_status reference_profile_collect(void *session, mb_profile *out,
                                           mb_error *err) {
  reference_session *rs = session;
  const mb_graph *g = rs->model->graph;
  const double *node_ms = mb__session_node_ms(rs->session);
  double total = 0.0;
  mb_status status;
  char label[160];
  if (!node_ms)
    return mb__error(err, MB_STATUS_INTERNAL, "profiling was not on");
  for (int i = 0; i < g->n_nodes; i++) {
    const mb_node *n = &g->nodes[i];
    total += node_ms[i];
    if ((status = mb__profile_add_node(out, "reference", n->op_type, n->name,
                                       NULL, out->iterations, node_ms[i], err)))
      return status;
  }
  return mb__profile_add_segment(
      out, "reference", g->n_nodes,
      g->n_nodes ? mb__node_label(&g->nodes[0], label, sizeof label) : "",
      out->iterations, total, err);
}

const mb_runtime mb__runtime_reference = {
    .name = "reference",
    .probe = reference_probe,
    .prepare = reference_prepare,
    .run = reference_run,
    .fetch_outputs = reference_fetch_outputs,
    .release = reference_release,
    .profile_reset = reference_profile_reset,
    .profile_collect = reference_profile_collect,
    /* INT8_STATIC+REFERENCE runs the model ONNX Runtime would run here (it
     * shows that model's accuracy without ORT): the same form as ORT's. */
    .int8_weights = mb__cpu_int8_weights,
};
