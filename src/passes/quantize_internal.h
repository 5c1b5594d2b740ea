/* What the files of the quantisation passes share (quantize_options.c,
 * quantize_graph.c, quantize_dynamic.c, quantize_static.c; quantize.h is
 * their interface): the functions one file calls in another (mb__qz_*). */
#ifndef MB_PASSES_QUANTIZE_INTERNAL_H
#define MB_PASSES_QUANTIZE_INTERNAL_H

#include "passes/quantize.h"

#include "core/json_parse.h"
#include "core/json_write.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>

/* quantize_options.c */
bool mb__qz_excluded(const mb_quant_options *opt, const mb_node *n);

/* quantize_graph.c */
int mb__qz_constant_source(const mb_graph *g, int v);
const mb_tensor *mb__qz_constant_of(const mb_graph *g, int v);
bool mb__qz_is_float_constant(const mb_graph *g, int v);
bool mb__qz_is_graph_output(const mb_graph *g, int v);
bool mb__qz_is_graph_input(const mb_graph *g, int v);
void mb__qz_count_uses(const mb_graph *g, const bool *skip, int *uses,
                       bool *sub_read);
int mb__qz_new_value(mb_graph *g, const char *base, const char *suffix,
                     mb_error *err);
int mb__qz_new_initializer(mb_graph *g, const char *base, const char *suffix,
                           mb_tensor *t, mb_error *err);
int mb__qz_add_node(mb_graph *g, const char *op_type, const char *name,
                    int n_inputs, const int *inputs, int n_outputs,
                    const int *outputs, mb_error *err);
mb_status mb__qz_set_float_attr(mb_graph *g, int i, const char *name, float v,
                                mb_error *err);
mb_status mb__qz_remove_and_prune(mb_graph *g, const bool *remove, int n_marked,
                                  mb_error *err);
mb_status mb__qz_quantize_symmetric(const mb_tensor *w, int axis, int qmax,
                                    mb_tensor **q_out, float *scales_out,
                                    double *min_out, double *max_out,
                                    mb_error *err);
mb_status mb__qz_small_tensor(mb_dtype dtype, int64_t channels,
                              bool per_channel, const float *values,
                              mb_tensor **out, mb_error *err);

#endif /* MB_PASSES_QUANTIZE_INTERNAL_H */
