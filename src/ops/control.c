/* Control flow: If, Loop, Scan and SequenceMap, which run subgraphs
 * through the interpreter's hook (ctx->run_subgraph; outer-scope values
 * resolve inside it).
 *
 * The shapes of their outputs come from running the bodies, so every row
 * has MB_OP_ALLOCATES: infer only validates, run sizes and fills the
 * outputs. A body's outputs live in its session until its next run, so
 * whatever must survive an iteration (Loop's carried values, Scan's state,
 * collected scan outputs) is copied into storage the operator owns for the
 * duration of run. */
#include "ops/op.h"

#include <stdlib.h>

/* The most iterations one Loop runs, with or without a trip count: a body
 * whose condition never turns false, or a trip count no model means (the
 * exporter's INT64_MAX beside a condition is common and fine: the
 * condition ends those), is an error after about a million iterations,
 * not hours of work. */
int64_t mb__loop_max_iterations = (int64_t)1 << 20;

static const mb_graph *cf_graph_attr(mb_op_ctx *ctx, const char *name) {
  const mb_attr *a = mb__node_attr(ctx->node, name);
  if (!a || a->type != MB_ATTR_GRAPH || !a->g) {
    mb__op_error(ctx, MB_STATUS_PARSE, "graph attribute %s is missing", name);
    return NULL;
  }
  return a->g;
}

static mb_status cf_need_hook(mb_op_ctx *ctx) {
  if (!ctx->run_subgraph || !ctx->out_seqs)
    return mb__op_error(ctx, MB_STATUS_INTERNAL,
                        "subgraphs run only inside the interpreter");
  return MB_STATUS_OK;
}

static mb_op_value cf_input(mb_op_ctx *ctx, int i) {
  mb_op_value v = {ctx->inputs[i], ctx->in_seqs ? ctx->in_seqs[i] : NULL};
  return v;
}

static mb__kind cf_kind(const mb_op_value *v) {
  return v->seq ? v->seq->kind : MB__KIND_TENSOR;
}

/* A value the operator owns while it runs (carried state, copies). */
typedef struct cf_slot {
  mb_tensor tensor;
  mb__sequence seq;
} cf_slot;

static mb_op_value cf_slot_value(cf_slot *s) {
  mb_op_value v = {&s->tensor, &s->seq};
  return v;
}

static mb_status cf_slot_set(mb_op_ctx *ctx, cf_slot *dst,
                             const mb_op_value *src) {
  if (cf_kind(src) == MB__KIND_TENSOR) {
    if (!src->tensor) /* an omitted input where a value is carried */
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                          "a loop-carried or scan input is missing");
    mb__sequence_free(&dst->seq);
    return mb__op_copy_tensor(ctx, &dst->tensor, src->tensor);
  }
  return mb__op_label_error(ctx,
                            mb__sequence_copy(&dst->seq, src->seq, ctx->err));
}

static void cf_slots_free(cf_slot *slots, int n) {
  for (int i = 0; slots && i < n; i++) {
    mb__tensor_clear(&slots[i].tensor);
    mb__sequence_free(&slots[i].seq);
  }
  free(slots);
}

static cf_slot *cf_slots_new(mb_op_ctx *ctx, int n) {
  cf_slot *slots = calloc((size_t)n + 1, sizeof *slots);
  if (!slots)
    mb__op_error(ctx, MB_STATUS_OUT_OF_MEMORY, "cannot allocate %d values", n);
  return slots;
}

/* The one-element tensor of a condition or trip count. */
static mb_status cf_scalar(mb_op_ctx *ctx, const mb_op_value *v,
                           const char *what, const mb_tensor **out) {
  if (cf_kind(v) != MB__KIND_TENSOR || !v->tensor || v->tensor->numel != 1 ||
      mb_dtype_size(v->tensor->dtype) == 0)
    return mb__op_error(ctx, MB_STATUS_SHAPE, "%s must be a one-element tensor",
                        what);
  *out = v->tensor;
  return MB_STATUS_OK;
}

/* A condition (bool in a valid model; any number is true when non-zero). */
static mb_status cf_condition(mb_op_ctx *ctx, const mb_op_value *v,
                              const char *what, bool *out) {
  const mb_tensor *t;
  mb_status st = cf_scalar(ctx, v, what, &t);
  if (st)
    return st;
  *out = mb__dtype_is_float(t->dtype) ? mb__tensor_get_f64(t, 0) != 0
                                      : mb__tensor_get_i64(t, 0) != 0;
  return MB_STATUS_OK;
}

/* Loop's M, read as an integer: through a double, the INT64_MAX that
 * PyTorch exports for a while loop becomes 2^63, whose conversion back
 * is undefined (x86 gives INT64_MIN, so the loop ran zero times). */
static mb_status cf_trip_count(mb_op_ctx *ctx, const mb_op_value *v,
                               int64_t *out) {
  const mb_tensor *t;
  mb_status st = cf_scalar(ctx, v, "M (the trip count)", &t);
  if (st)
    return st;
  if (!mb__dtype_is_int(t->dtype))
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "M (the trip count) must be an integer, not %s",
                        mb_dtype_name(t->dtype));
  if (t->dtype == MB_DTYPE_UINT64 &&
      *(const uint64_t *)t->data > (uint64_t)INT64_MAX)
    *out = INT64_MAX; /* more than any loop runs */
  else
    *out = mb__tensor_get_i64(t, 0);
  return MB_STATUS_OK;
}

/* Output j = a stack of the tensors in `items` along a new axis `axis`,
 * reversed when asked; with no items, [0] + the body output's declared
 * shape (unknown dims 0). */
static mb_status cf_stack(mb_op_ctx *ctx, int j, const mb__sequence *items,
                          int64_t axis_attr, bool reverse,
                          const mb_value *decl) {
  mb_tensor *y = mb__op_output(ctx, j);
  if (!y)
    return MB_STATUS_OK;
  mb__op_output_is_tensor(ctx, j);
  int64_t dims[MB_MAX_RANK];
  if (items->count == 0) {
    int rank = decl->rank > 0 ? MB_MIN(decl->rank, MB_MAX_RANK - 1) : 0;
    dims[0] = 0;
    for (int d = 0; d < rank; d++)
      dims[d + 1] = decl->dims[d].value > 0 ? decl->dims[d].value : 0;
    mb_dtype dt =
        decl->dtype != MB_DTYPE_UNDEFINED ? decl->dtype : MB_DTYPE_FLOAT;
    return mb__tensor_reset(y, dt, rank + 1, dims, ctx->err);
  }
  const mb_tensor *first = items->items[0];
  int rank = first->rank + 1, axis;
  if (rank > MB_MAX_RANK)
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "scan output %d would have rank %d", j, rank);
  mb_status st = mb__op_axis(ctx, axis_attr, rank, "scan output axis", &axis);
  if (st)
    return st;
  for (int i = 0; i < items->count; i++) {
    const mb_tensor *t = items->items[i];
    bool same = t->dtype == first->dtype && t->rank == first->rank;
    for (int d = 0; d < t->rank && same; d++)
      same = t->dims[d] == first->dims[d];
    if (!same) {
      char a[96], b[96];
      return mb__op_error(
          ctx, MB_STATUS_SHAPE,
          "scan output %d is %s in iteration %d but %s in iteration 0", j,
          mb__shape_str(t->rank, t->dims, a, sizeof a), i,
          mb__shape_str(first->rank, first->dims, b, sizeof b));
    }
  }
  for (int d = 0, s = 0; d < rank; d++)
    dims[d] = d == axis ? items->count : first->dims[s++];
  if ((st = mb__tensor_reset(y, first->dtype, rank, dims, ctx->err)))
    return st;
  size_t es = mb_dtype_size(first->dtype);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; d++)
    outer *= dims[d];
  for (int d = axis + 1; d < rank; d++)
    inner *= dims[d];
  for (int i = 0; i < items->count; i++) {
    const mb_tensor *t = items->items[reverse ? items->count - 1 - i : i];
    for (int64_t o = 0; o < outer && inner; o++)
      memcpy((char *)y->data + (size_t)((o * items->count + i) * inner) * es,
             (const char *)t->data + (size_t)(o * inner) * es,
             (size_t)inner * es);
  }
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* If                                                                        */
/* ------------------------------------------------------------------------ */

static mb_status if_infer(mb_op_ctx *ctx) {
  mb_status st = mb__op_check_arity(ctx, 1, 1);
  if (st || (st = cf_need_hook(ctx)))
    return st;
  if (!cf_graph_attr(ctx, "then_branch") || !cf_graph_attr(ctx, "else_branch"))
    return MB_STATUS_PARSE;
  return MB_STATUS_OK;
}

static mb_status if_run(mb_op_ctx *ctx) {
  bool cond;
  mb_op_value c = cf_input(ctx, 0);
  mb_status st = cf_condition(ctx, &c, "cond", &cond);
  if (st)
    return st;
  const mb_graph *body =
      cf_graph_attr(ctx, cond ? "then_branch" : "else_branch");
  const mb_op_value *outs;
  int n_outs;
  if ((st = ctx->run_subgraph(ctx, body, 0, NULL, &outs, &n_outs)))
    return st;
  if (n_outs != ctx->n_outputs)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "the %s branch has %d outputs, the node %d",
                        cond ? "then" : "else", n_outs, ctx->n_outputs);
  for (int j = 0; j < n_outs && !st; j++)
    st = mb__op_set_output_value(ctx, j, &outs[j]);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Loop                                                                      */
/* ------------------------------------------------------------------------ */

static mb_status loop_infer(mb_op_ctx *ctx) {
  /* M and cond are optional, but their slots are not. */
  if (ctx->n_inputs < 2)
    return mb__op_error(ctx, MB_STATUS_PARSE,
                        "needs at least 2 inputs (M and cond, either may be "
                        "empty), has %d",
                        ctx->n_inputs);
  mb_status st = cf_need_hook(ctx);
  if (st)
    return st;
  const mb_graph *body = cf_graph_attr(ctx, "body");
  if (!body)
    return MB_STATUS_PARSE;
  int carried = ctx->n_inputs - 2;
  if (body->n_inputs != carried + 2 || body->n_outputs < carried + 1 ||
      ctx->n_outputs != body->n_outputs - 1)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "the body takes %d inputs and gives %d outputs; with "
                        "%d loop-carried values it must take %d and give "
                        "%d (the node has %d outputs)",
                        body->n_inputs, body->n_outputs, carried, carried + 2,
                        ctx->n_outputs + 1, ctx->n_outputs);
  return MB_STATUS_OK;
}

static mb_status loop_run(mb_op_ctx *ctx) {
  const mb_graph *body = cf_graph_attr(ctx, "body");
  int carried = ctx->n_inputs - 2, scans = body->n_outputs - 1 - carried;
  /* As ONNX's pseudo-code and ONNX Runtime: iterations 0, 1, ... run while
   * i < M and cond, so an M of 0 or below runs none and the carried
   * values come out as they went in. */
  int64_t trip = INT64_MAX;
  bool cond = true, bounded = false;
  mb_status st = MB_STATUS_OK;
  if (mb__op_input(ctx, 0)) {
    mb_op_value m = cf_input(ctx, 0);
    if ((st = cf_trip_count(ctx, &m, &trip)))
      return st;
    bounded = true;
  }
  if (mb__op_input(ctx, 1)) {
    mb_op_value c = cf_input(ctx, 1);
    if ((st = cf_condition(ctx, &c, "cond", &cond)))
      return st;
  }
  /* state[0..carried): the values carried into the next iteration; next[]
   * receives the body's before they replace them. */
  cf_slot *state = cf_slots_new(ctx, carried),
          *next = cf_slots_new(ctx, carried);
  mb__sequence *scan = calloc((size_t)scans + 1, sizeof *scan);
  mb_op_value *in = calloc((size_t)carried + 2, sizeof *in);
  if (!state || !next || !scan || !in) {
    st = mb__op_error(ctx, MB_STATUS_OUT_OF_MEMORY, "cannot allocate the loop");
    goto done;
  }
  for (int k = 0; k < carried && !st; k++) {
    mb_op_value init = cf_input(ctx, k + 2);
    st = cf_slot_set(ctx, &state[k], &init);
  }
  for (int k = 0; k < scans; k++)
    mb__sequence_reset(&scan[k], MB_DTYPE_UNDEFINED);
  int64_t iter = 0;
  uint8_t cond_byte = cond;
  mb_tensor iter_t = {
      .dtype = MB_DTYPE_INT64, .numel = 1, .nbytes = 8, .data = &iter};
  mb_tensor cond_t = {
      .dtype = MB_DTYPE_BOOL, .numel = 1, .nbytes = 1, .data = &cond_byte};
  for (; !st && iter < trip && cond; iter++) {
    if (iter >= mb__loop_max_iterations) {
      st = mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "the loop ran %lld iterations, the most the reference "
                        "interpreter runs, %s",
                        (long long)iter,
                        bounded ? "before reaching its trip count"
                                : "without its condition turning false");
      break;
    }
    cond_byte = cond;
    in[0] = (mb_op_value){&iter_t, NULL};
    in[1] = (mb_op_value){&cond_t, NULL};
    for (int k = 0; k < carried; k++)
      in[k + 2] = cf_slot_value(&state[k]);
    const mb_op_value *outs;
    int n_outs;
    if ((st = ctx->run_subgraph(ctx, body, carried + 2, in, &outs, &n_outs)))
      break;
    if ((st = cf_condition(ctx, &outs[0], "the body's condition", &cond)))
      break;
    for (int k = 0; k < carried && !st; k++)
      st = cf_slot_set(ctx, &next[k], &outs[k + 1]);
    for (int k = 0; k < scans && !st; k++) {
      const mb_op_value *o = &outs[1 + carried + k];
      if (cf_kind(o) != MB__KIND_TENSOR)
        st = mb__op_error(ctx, MB_STATUS_SHAPE,
                          "scan output %d of the body is not a tensor", k);
      else
        st = mb__op_label_error(
            ctx, mb__sequence_insert_copy(&scan[k], scan[k].count, o->tensor,
                                          ctx->err));
    }
    for (int k = 0; k < carried; k++) { /* swap state and next */
      cf_slot t = state[k];
      state[k] = next[k];
      next[k] = t;
    }
  }
  for (int k = 0; k < carried && !st; k++) {
    mb_op_value final = cf_slot_value(&state[k]);
    st = mb__op_set_output_value(ctx, k, &final);
  }
  for (int k = 0; k < scans && !st; k++)
    st = cf_stack(ctx, carried + k, &scan[k], 0, false,
                  &body->values[body->outputs[1 + carried + k]]);
done:
  cf_slots_free(state, carried);
  cf_slots_free(next, carried);
  for (int k = 0; scan && k < scans; k++)
    mb__sequence_free(&scan[k]);
  free(scan);
  free(in);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Scan                                                                      */
/* ------------------------------------------------------------------------ */

typedef struct scan_plan {
  const mb_graph *body;
  int first;  /* index of the first state input (1 at opset 8) */
  int states; /* N */
  int ins;    /* M scan inputs */
  int outs;   /* K scan outputs */
  const int64_t *in_axes, *in_dirs, *out_axes, *out_dirs;
  int64_t n_in_axes, n_in_dirs, n_out_axes, n_out_dirs;
} scan_plan;

static mb_status scan_plan_make(mb_op_ctx *ctx, scan_plan *p) {
  mb_status st = cf_need_hook(ctx);
  if (st)
    return st;
  if (!(p->body = cf_graph_attr(ctx, "body")))
    return MB_STATUS_PARSE;
  int64_t m = mb__node_attr_int(ctx->node, "num_scan_inputs", -1);
  p->first = ctx->opset < 9 ? 1 : 0;
  int rest = ctx->n_inputs - p->first;
  if (m < 1 || m > rest)
    return mb__op_error(ctx, MB_STATUS_PARSE,
                        "num_scan_inputs %lld does not fit %d inputs",
                        (long long)m, rest);
  p->ins = (int)m;
  p->states = rest - p->ins;
  p->outs = ctx->n_outputs - p->states;
  if (p->body->n_inputs != p->states + p->ins ||
      p->body->n_outputs != p->states + p->outs || p->outs < 0)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "the body takes %d inputs and gives %d outputs; the "
                        "node has %d states, %d scan inputs, %d outputs",
                        p->body->n_inputs, p->body->n_outputs, p->states,
                        p->ins, ctx->n_outputs);
  for (int i = p->first; i < ctx->n_inputs; i++)
    if (!ctx->inputs[i])
      return mb__op_error(ctx, MB_STATUS_PARSE, "input %d is missing", i);
  const char *dirs_name =
      ctx->opset < 9 ? "directions" : "scan_input_directions";
  p->n_in_axes = mb__node_attr_ints(ctx->node, "scan_input_axes", &p->in_axes);
  p->n_in_dirs = mb__node_attr_ints(ctx->node, dirs_name, &p->in_dirs);
  p->n_out_axes =
      mb__node_attr_ints(ctx->node, "scan_output_axes", &p->out_axes);
  p->n_out_dirs =
      mb__node_attr_ints(ctx->node, "scan_output_directions", &p->out_dirs);
  if ((p->n_in_axes >= 0 && p->n_in_axes != p->ins) ||
      (p->n_in_dirs >= 0 && p->n_in_dirs != p->ins) ||
      (p->n_out_axes >= 0 && p->n_out_axes != p->outs) ||
      (p->n_out_dirs >= 0 && p->n_out_dirs != p->outs))
    return mb__op_error(ctx, MB_STATUS_PARSE,
                        "the axes and directions attributes need one entry "
                        "per scan input (%d) or output (%d)",
                        p->ins, p->outs);
  return MB_STATUS_OK;
}

static mb_status scan_infer(mb_op_ctx *ctx) {
  scan_plan p;
  return scan_plan_make(ctx, &p);
}

/* dst = src[index] along `axis` (that axis removed). */
static mb_status scan_slice(mb_op_ctx *ctx, mb_tensor *dst,
                            const mb_tensor *src, int axis, int64_t index) {
  int64_t dims[MB_MAX_RANK];
  int rank = 0;
  /* Every scan input must have the scan's length along its axis: a shorter
   * one was read past its end (ASan; found by fuzz model_run). */
  if (index < 0 || index >= src->dims[axis])
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "a scan input has %lld steps along axis %d; the scan "
                        "reads step %lld",
                        (long long)src->dims[axis], axis, (long long)index);
  for (int d = 0; d < src->rank; d++)
    if (d != axis)
      dims[rank++] = src->dims[d];
  mb_status st = mb__tensor_reset(dst, src->dtype, rank, dims, ctx->err);
  if (st)
    return st;
  size_t es = mb_dtype_size(src->dtype);
  int64_t outer = 1, inner = 1, len = src->dims[axis];
  for (int d = 0; d < axis; d++)
    outer *= src->dims[d];
  for (int d = axis + 1; d < src->rank; d++)
    inner *= src->dims[d];
  for (int64_t o = 0; o < outer && inner; o++)
    memcpy((char *)dst->data + (size_t)(o * inner) * es,
           (const char *)src->data + (size_t)((o * len + index) * inner) * es,
           (size_t)inner * es);
  return MB_STATUS_OK;
}

/* One scan over `len` steps: states in/out of `state`, scan inputs read
 * from `inputs` (already without a batch axis), scan outputs collected in
 * `collected`. */
static mb_status scan_loop(mb_op_ctx *ctx, const scan_plan *p,
                           const mb_tensor *const *inputs, int64_t len,
                           cf_slot *state, cf_slot *next, cf_slot *slices,
                           mb_op_value *in, mb__sequence *collected) {
  mb_status st = MB_STATUS_OK;
  for (int k = 0; k < p->outs; k++)
    mb__sequence_reset(&collected[k], MB_DTYPE_UNDEFINED);
  for (int64_t t = 0; t < len && !st; t++) {
    for (int m = 0; m < p->ins && !st; m++) {
      int64_t axis_attr = p->n_in_axes >= 0 ? p->in_axes[m] : 0;
      bool reverse = p->n_in_dirs >= 0 && p->in_dirs[m] != 0;
      int axis;
      if ((st = mb__op_axis(ctx, axis_attr, inputs[m]->rank, "scan input axis",
                            &axis)))
        break;
      st = scan_slice(ctx, &slices[m].tensor, inputs[m], axis,
                      reverse ? len - 1 - t : t);
    }
    for (int k = 0; k < p->states; k++)
      in[k] = cf_slot_value(&state[k]);
    for (int m = 0; m < p->ins; m++)
      in[p->states + m] = cf_slot_value(&slices[m]);
    const mb_op_value *outs;
    int n_outs;
    if (st || (st = ctx->run_subgraph(ctx, p->body, p->states + p->ins, in,
                                      &outs, &n_outs)))
      break;
    for (int k = 0; k < p->states && !st; k++)
      st = cf_slot_set(ctx, &next[k], &outs[k]);
    for (int k = 0; k < p->outs && !st; k++)
      st = mb__op_label_error(
          ctx, mb__sequence_insert_copy(&collected[k], collected[k].count,
                                        outs[p->states + k].tensor, ctx->err));
    for (int k = 0; k < p->states; k++) {
      cf_slot tmp = state[k];
      state[k] = next[k];
      next[k] = tmp;
    }
  }
  return st;
}

static mb_status scan_run(mb_op_ctx *ctx) {
  scan_plan p;
  mb_status st = scan_plan_make(ctx, &p);
  if (st)
    return st;
  int n = p.states + p.ins;
  cf_slot *state = cf_slots_new(ctx, p.states),
          *next = cf_slots_new(ctx, p.states),
          *slices = cf_slots_new(ctx, p.ins),
          *batch_in = cf_slots_new(ctx, p.ins);
  mb__sequence *collected = calloc((size_t)p.outs + 1, sizeof *collected);
  mb_op_value *in = calloc((size_t)n + 1, sizeof *in);
  const mb_tensor **scan_inputs =
      calloc((size_t)p.ins + 1, sizeof *scan_inputs);
  if (!state || !next || !slices || !batch_in || !collected || !in ||
      !scan_inputs) {
    st = mb__op_error(ctx, MB_STATUS_OUT_OF_MEMORY, "cannot allocate the scan");
    goto done;
  }
  if (ctx->opset >= 9) {
    int64_t len = -1;
    for (int m = 0; m < p.ins && !st; m++) {
      const mb_tensor *x = ctx->inputs[p.states + m];
      int axis;
      if ((st = mb__op_axis(ctx, p.n_in_axes >= 0 ? p.in_axes[m] : 0, x->rank,
                            "scan input axis", &axis)))
        break;
      if (len >= 0 && x->dims[axis] != len)
        st = mb__op_error(ctx, MB_STATUS_SHAPE,
                          "scan inputs have %lld and %lld steps",
                          (long long)len, (long long)x->dims[axis]);
      len = x->dims[axis];
      scan_inputs[m] = x;
    }
    for (int k = 0; k < p.states && !st; k++) {
      mb_op_value init = cf_input(ctx, k);
      st = cf_slot_set(ctx, &state[k], &init);
    }
    if (!st)
      st = scan_loop(ctx, &p, scan_inputs, len, state, next, slices, in,
                     collected);
    for (int k = 0; k < p.states && !st; k++) {
      mb_op_value final = cf_slot_value(&state[k]);
      st = mb__op_set_output_value(ctx, k, &final);
    }
    for (int k = 0; k < p.outs && !st; k++)
      st = cf_stack(ctx, p.states + k, &collected[k],
                    p.n_out_axes >= 0 ? p.out_axes[k] : 0,
                    p.n_out_dirs >= 0 && p.out_dirs[k] != 0,
                    &p.body->values[p.body->outputs[p.states + k]]);
    goto done;
  }
  /* Opset 8: axis 0 of every input is a batch, axis 1 of the scan inputs
   * is time; sequence_lens (input 0) may end some entries early, whose
   * scan outputs are then zero-padded. */
  {
    const mb_tensor *lens = mb__op_input(ctx, 0);
    int64_t batch = ctx->inputs[1]->dims[0], max_len = 0;
    for (int i = 1; i < ctx->n_inputs && !st; i++)
      if (ctx->inputs[i]->rank < 1 || ctx->inputs[i]->dims[0] != batch ||
          (i > p.states && ctx->inputs[i]->rank < 2))
        st = mb__op_error(ctx, MB_STATUS_SHAPE,
                          "input %d lacks the batch (and time) axes", i);
    if (!st && lens && lens->numel != batch)
      st = mb__op_error(ctx, MB_STATUS_SHAPE,
                        "sequence_lens must hold one length per batch "
                        "element (%lld), not %lld",
                        (long long)batch, (long long)lens->numel);
    for (int m = 0; m < p.ins && !st; m++)
      max_len = MB_MAX(max_len, ctx->inputs[1 + p.states + m]->dims[1]);
    for (int64_t b = 0; b < batch && !st; b++) {
      int64_t len = lens ? mb__tensor_get_i64(lens, b) : max_len;
      if (len < 0 || len > max_len) {
        st = mb__op_error(ctx, MB_STATUS_SHAPE,
                          "sequence_lens[%lld] = %lld is outside [0, %lld]",
                          (long long)b, (long long)len, (long long)max_len);
        break;
      }
      for (int k = 0; k < p.states && !st; k++)
        st = scan_slice(ctx, &state[k].tensor, ctx->inputs[1 + k], 0, b);
      for (int m = 0; m < p.ins && !st; m++) {
        st = scan_slice(ctx, &batch_in[m].tensor, ctx->inputs[1 + p.states + m],
                        0, b);
        scan_inputs[m] = &batch_in[m].tensor;
      }
      if (st || (st = scan_loop(ctx, &p, scan_inputs, len, state, next, slices,
                                in, collected)))
        break;
      /* Write batch entry b of every output. */
      for (int k = 0; k < p.states + p.outs && !st; k++) {
        mb_tensor *y = mb__op_output(ctx, k);
        const mb_tensor *part;
        int64_t steps = 1;
        if (k < p.states) {
          part = &state[k].tensor;
        } else if (collected[k - p.states].count > 0) {
          part = collected[k - p.states].items[0];
          steps = max_len;
        } else {
          continue; /* nothing ran: stays zero */
        }
        if (!y)
          continue;
        if (b == 0) {
          int64_t dims[MB_MAX_RANK];
          int rank = 0;
          dims[rank++] = batch;
          if (k >= p.states)
            dims[rank++] = max_len;
          for (int d = 0; d < part->rank && rank < MB_MAX_RANK; d++)
            dims[rank++] = part->dims[d];
          mb__op_output_is_tensor(ctx, k);
          if ((st = mb__tensor_reset(y, part->dtype, rank, dims, ctx->err)))
            break;
          memset(y->data, 0, y->nbytes);
        }
        size_t chunk = part->nbytes;
        if ((size_t)steps * chunk * (size_t)batch != y->nbytes) {
          st = mb__op_error(ctx, MB_STATUS_SHAPE,
                            "output %d changes shape between batch entries", k);
          break;
        }
        if (y->nbytes == 0) /* empty: no storage to point into */
          continue;
        char *dst = (char *)y->data + (size_t)b * (size_t)steps * chunk;
        if (k < p.states) {
          memcpy(dst, part->data, chunk);
        } else {
          const mb__sequence *c = &collected[k - p.states];
          for (int i = 0; i < c->count; i++)
            memcpy(dst + (size_t)i * chunk, c->items[i]->data, chunk);
        }
      }
    }
  }
done:
  cf_slots_free(state, p.states);
  cf_slots_free(next, p.states);
  cf_slots_free(slices, p.ins);
  cf_slots_free(batch_in, p.ins);
  for (int k = 0; collected && k < p.outs; k++)
    mb__sequence_free(&collected[k]);
  free(collected);
  free(in);
  free(scan_inputs);
  return st;
}

/* ------------------------------------------------------------------------ */
/* SequenceMap                                                               */
/* ------------------------------------------------------------------------ */

static mb_status seqmap_infer(mb_op_ctx *ctx) {
  mb_status st = mb__op_check_arity(ctx, 1, -1);
  if (st || (st = cf_need_hook(ctx)))
    return st;
  const mb_graph *body = cf_graph_attr(ctx, "body");
  if (!body)
    return MB_STATUS_PARSE;
  if (body->n_inputs != ctx->n_inputs || body->n_outputs != ctx->n_outputs)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "the body takes %d inputs and gives %d outputs, the "
                        "node has %d and %d",
                        body->n_inputs, body->n_outputs, ctx->n_inputs,
                        ctx->n_outputs);
  if (mb__op_input_kind(ctx, 0) != MB__KIND_SEQUENCE)
    return mb__op_error(ctx, MB_STATUS_SHAPE, "input 0 is not a sequence");
  return MB_STATUS_OK;
}

static mb_status seqmap_run(mb_op_ctx *ctx) {
  const mb_graph *body = cf_graph_attr(ctx, "body");
  int count = ctx->in_seqs[0]->count;
  mb_status st = MB_STATUS_OK;
  mb_op_value *in = calloc((size_t)ctx->n_inputs + 1, sizeof *in);
  if (!in)
    return mb__op_error(ctx, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; i < ctx->n_inputs && !st; i++)
    if (mb__op_input_kind(ctx, i) == MB__KIND_SEQUENCE &&
        ctx->in_seqs[i]->count != count)
      st = mb__op_error(ctx, MB_STATUS_SHAPE,
                        "input sequence %d has %d tensors, input 0 has %d", i,
                        ctx->in_seqs[i]->count, count);
  for (int j = 0; j < ctx->n_outputs && !st; j++) {
    mb__sequence *out = mb__op_output_seq(ctx, j);
    if (!out) {
      st = MB_STATUS_INTERNAL;
      break;
    }
    const mb_value *decl = &body->values[body->outputs[j]];
    mb__sequence_reset(out, decl->dtype);
  }
  for (int t = 0; t < count && !st; t++) {
    for (int i = 0; i < ctx->n_inputs; i++) {
      bool seq = mb__op_input_kind(ctx, i) == MB__KIND_SEQUENCE;
      in[i].tensor = seq ? ctx->in_seqs[i]->items[t] : ctx->inputs[i];
      in[i].seq = NULL;
    }
    const mb_op_value *outs;
    int n_outs;
    if ((st = ctx->run_subgraph(ctx, body, ctx->n_inputs, in, &outs, &n_outs)))
      break;
    for (int j = 0; j < n_outs && !st; j++) {
      mb__sequence *out = ctx->out_seqs[j];
      if (cf_kind(&outs[j]) != MB__KIND_TENSOR)
        st = mb__op_error(ctx, MB_STATUS_SHAPE,
                          "body output %d is not a tensor", j);
      else
        st = mb__op_label_error(ctx, mb__sequence_insert_copy(out, out->count,
                                                              outs[j].tensor,
                                                              ctx->err));
      if (!st)
        out->dtype = outs[j].tensor->dtype;
    }
  }
  free(in);
  return st;
}

#define CF_FLAGS (MB_OP_VALUES | MB_OP_ALLOCATES)
const mb_op_def mb__ops_control[] = {
    {"", "If", 1, if_infer, if_run, CF_FLAGS},
    {"", "If", 11, if_infer, if_run, CF_FLAGS},
    {"", "If", 13, if_infer, if_run, CF_FLAGS},
    {"", "If", 16, if_infer, if_run, CF_FLAGS},
    {"", "Loop", 1, loop_infer, loop_run, CF_FLAGS},
    {"", "Loop", 11, loop_infer, loop_run, CF_FLAGS},
    {"", "Loop", 13, loop_infer, loop_run, CF_FLAGS},
    {"", "Loop", 16, loop_infer, loop_run, CF_FLAGS},
    {"", "Scan", 8, scan_infer, scan_run, MB_OP_ALLOCATES},
    {"", "Scan", 9, scan_infer, scan_run, MB_OP_ALLOCATES},
    {"", "Scan", 11, scan_infer, scan_run, MB_OP_ALLOCATES},
    {"", "Scan", 16, scan_infer, scan_run, MB_OP_ALLOCATES},
    {"", "SequenceMap", 17, seqmap_infer, seqmap_run, CF_FLAGS},
};
MB_OP_TABLE_END(control);
