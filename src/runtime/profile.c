/* Building mb_profile values: the runtimes' profile_collect slots add
 * segments and nodes with summed times, mb__profile_finish turns the sums
 * into per-inference means and shares. */
#include "runtime/runtime.h"

#include <stdlib.h>

static mb_status grow(void **array, int count, size_t elem, mb_error *err) {
  /* Capacity doubles at powers of two, so no separate field is needed. */
  if (count & (count - 1))
    return MB_STATUS_OK;
  size_t cap = count ? (size_t)count * 2 : 8;
  void *p = realloc(*array, cap * elem);
  if (!p)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "cannot grow the profile to %zu entries", cap);
  *array = p;
  return MB_STATUS_OK;
}

mb_status mb__profile_add_segment(mb_profile *p, const char *runtime, int nodes,
                                  const char *first_node, int64_t runs,
                                  double total_ms, mb_error *err) {
  mb_status status =
      grow((void **)&p->segments, p->n_segments, sizeof *p->segments, err);
  if (status)
    return status;
  mb_profile_segment *seg = &p->segments[p->n_segments++];
  memset(seg, 0, sizeof *seg);
  snprintf(seg->runtime, sizeof seg->runtime, "%s", runtime);
  snprintf(seg->first_node, sizeof seg->first_node, "%s",
           first_node ? first_node : "");
  seg->nodes = nodes;
  seg->runs = runs;
  seg->mean_ms = total_ms; /* a sum until mb__profile_finish */
  seg->gflops = -1.0;      /* the hybrid runtimes fill these two */
  return MB_STATUS_OK;
}

mb_status mb__profile_add_node(mb_profile *p, const char *runtime,
                               const char *op_type, const char *name,
                               const char *kernel, int64_t runs,
                               double total_ms, mb_error *err) {
  mb_status status =
      grow((void **)&p->nodes, p->n_nodes, sizeof *p->nodes, err);
  if (status)
    return status;
  mb_profile_node *node = &p->nodes[p->n_nodes++];
  memset(node, 0, sizeof *node);
  snprintf(node->runtime, sizeof node->runtime, "%s", runtime);
  snprintf(node->op_type, sizeof node->op_type, "%s", op_type);
  snprintf(node->name, sizeof node->name, "%s", name ? name : "");
  snprintf(node->kernel, sizeof node->kernel, "%s", kernel ? kernel : "");
  node->runs = runs;
  node->mean_ms = total_ms;
  return MB_STATUS_OK;
}

static int by_time_desc(const void *a, const void *b) {
  double x = ((const mb_profile_node *)a)->mean_ms;
  double y = ((const mb_profile_node *)b)->mean_ms;
  return (x < y) - (x > y);
}

void mb__profile_finish(mb_profile *p) {
  double iterations = p->iterations > 0 ? p->iterations : 1;
  double seg_total = 0.0, node_total = 0.0;
  for (int i = 0; i < p->n_segments; i++) {
    p->segments[i].mean_ms /= iterations;
    seg_total += p->segments[i].mean_ms;
  }
  for (int i = 0; i < p->n_nodes; i++) {
    p->nodes[i].mean_ms /= iterations;
    node_total += p->nodes[i].mean_ms;
  }
  for (int i = 0; i < p->n_segments; i++)
    p->segments[i].share =
        seg_total > 0 ? p->segments[i].mean_ms / seg_total : 0.0;
  for (int i = 0; i < p->n_nodes; i++)
    p->nodes[i].share = node_total > 0 ? p->nodes[i].mean_ms / node_total : 0;
  if (p->n_nodes > 1)
    qsort(p->nodes, (size_t)p->n_nodes, sizeof *p->nodes, by_time_desc);
}

void mb__profile_clear(mb_profile *p) {
  if (!p)
    return;
  free(p->segments);
  free(p->nodes);
  p->segments = NULL;
  p->nodes = NULL;
  p->n_segments = p->n_nodes = 0;
}

void mb_profile_free(mb_profile *p) {
  if (!p)
    return;
  mb__profile_clear(p);
  free(p);
}
