/* Graph editing helpers shared by the pass files (src/passes/ only).
 *
 * The IR refers to values by index and never deletes one, so a pass
 * "removes" a value by dropping it: its initializer is freed and its
 * declared type cleared, so the writer emits nothing for it. Nodes are
 * removed by compacting the node array; value producers are then stale
 * until the driver re-finalises the graph. */
#ifndef MB_PASSES_EDIT_H
#define MB_PASSES_EDIT_H

#include "passes/passes.h"

/* Per value of g: how many times it is read (each node input slot, each
 * graph output listing and each subgraph that names it count once), and
 * whether a subgraph reads it by name (subgraph_read may be NULL). Both
 * are caller arrays of g->n_values entries. */
void mb__edit_count_uses(const mb_graph *g, int *uses, bool *subgraph_read);

/* Removes the nodes with remove[i] set, keeping the others in order, and
 * frees what their attributes own. Producers are recomputed. */
void mb__edit_remove_nodes(mb_graph *g, const bool *remove);

/* Makes value v unused: frees its initializer and clears its declared
 * type. Graph inputs and outputs must not be dropped. */
void mb__edit_drop_value(mb_graph *g, int v);

/* Drops every value that no node writes or reads and that is not a graph
 * input, output or initializer: what passes leave behind keeps no stale
 * declared type (which the writer would emit as value_info). */
void mb__edit_drop_orphans(mb_graph *g);

/* Turns value v (not a graph input) into an initializer holding `tensor`,
 * which it takes ownership of, also on failure. Its producer, if any, must
 * be removed by the caller. */
mb_status mb__edit_set_initializer(mb_graph *g, int v, mb_tensor *tensor,
                                   mb_error *err);

/* Creates a new value named `base` + `suffix`, with "_2", "_3" ... added
 * until the name is used nowhere in g or its subgraphs. Returns its index
 * or -1 (err set). */
int mb__edit_new_value(mb_graph *g, const char *base, const char *suffix,
                       mb_error *err);

/* Every node input slot that reads `from` reads `to` instead. */
void mb__edit_replace_uses(mb_graph *g, int from, int to);

/* Replaces node `node`'s inputs with `n` value indices (-1: omitted),
 * copied into the model's arena. */
mb_status mb__edit_set_inputs(mb_graph *g, int node, int n, const int *inputs,
                              mb_error *err);

/* Number of nodes of g whose op_type is `op_type` (default domain). */
int mb__edit_count_op(const mb_graph *g, const char *op_type);

/* True when node n has a GRAPH or GRAPHS attribute. */
bool mb__edit_has_subgraph(const mb_node *n);

/* Runs node `node` of the main graph on the reference interpreter's
 * kernels. Every input must be omitted or an initializer. outputs_out:
 * n_outputs slots, each set to a new tensor (NULL for omitted outputs).
 * Fails with MB_STATUS_UNSUPPORTED when the reference has no kernel, and
 * MB_STATUS_OVERFLOW without computing anything when the outputs would
 * exceed max_bytes. */
mb_status mb__edit_eval_node(const mb_model *model, int node, size_t max_bytes,
                             mb_tensor **outputs_out, mb_error *err);

/* Concrete shapes for the graph inputs: from opt by name, else the
 * declared static dims. A dim that is still unknown fails with
 * MB_STATUS_INVALID_ARGUMENT when `require` is set and becomes 1
 * otherwise. tensors_out: caller array, one per graph input, filled with
 * dtype and shape and NULL data. */
mb_status mb__edit_input_shapes(const mb_model *model,
                                const mb_pass_options *opt, bool require,
                                mb_tensor *tensors_out, mb_error *err);

#endif /* MB_PASSES_EDIT_H */
