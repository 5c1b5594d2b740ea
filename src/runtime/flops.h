/* FLOPs of a node from the shapes shape inference gave it: used by the
 * analysis (analyze) and by the hybrid runtime (a segment's FLOPs). */
#ifndef MB_RUNTIME_FLOPS_H
#define MB_RUNTIME_FLOPS_H

#include "runtime/reference.h"

/* Floating-point operations of one node of graph g (a multiply-add counts
 * as 2), from the static shapes of g's values (shapes: g->n_values entries,
 * as filled by mb__infer_shapes). Returns a negative value when a shape it
 * needs is unknown. Op types without a formula (data movement such as
 * Reshape or Concat) return 0 with *has_formula_out = false. */
double mb__node_flops(const mb_graph *g, const mb_node *node,
                      const mb_shape_info *shapes, bool *has_formula_out);

#endif
