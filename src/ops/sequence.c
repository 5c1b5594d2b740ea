/* Sequences and optionals: SequenceEmpty, SequenceConstruct,
 * SequenceInsert, SequenceAt, SequenceErase, SequenceLength,
 * SplitToSequence, ConcatFromSequence (opset 11), Optional,
 * OptionalHasElement, OptionalGetElement (15, 18), and Identity from opset
 * 14, which passes sequences and optionals through too.
 *
 * A sequence lives in the value's record (ctx->in_seqs / out_seqs, see
 * core/sequence.h); its items are tensors it owns. Every row here has
 * MB_OP_VALUES: infer says which outputs are sequences. During static
 * inference a sequence that was not computed reads as a tensor of undefined
 * type; the operators then answer MB_STATUS_DYNAMIC. */
#include "ops/op.h"

#include <stdlib.h>

#define SEQ_MAX_ITEMS ((int64_t)1 << 24)

/* Input i as a sequence. */
static mb_status seq_input(mb_op_ctx *ctx, int i, const mb__sequence **out) {
  mb__kind kind = mb__op_input_kind(ctx, i);
  const mb_tensor *t = mb__op_input(ctx, i);
  if (kind == MB__KIND_SEQUENCE) {
    *out = ctx->in_seqs[i];
    return MB_STATUS_OK;
  }
  if (kind == MB__KIND_TENSOR && t && t->dtype == MB_DTYPE_UNDEFINED)
    return MB_STATUS_DYNAMIC; /* not computed (static inference) */
  return mb__op_error(
      ctx, MB_STATUS_SHAPE, "input %d is a %s; a sequence is expected", i,
      t ? (kind == MB__KIND_NONE ? "empty optional" : mb__kind_name(kind))
        : "missing input");
}

/* Input i as a tensor (present, not a sequence). */
static mb_status tensor_input(mb_op_ctx *ctx, int i, const mb_tensor **out) {
  const mb_tensor *t = mb__op_input(ctx, i);
  mb__kind kind = mb__op_input_kind(ctx, i);
  if (!t || kind != MB__KIND_TENSOR)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "input %d is a %s; a tensor is expected", i,
                        !t ? "missing input" : mb__kind_name(kind));
  if (t->dtype == MB_DTYPE_UNDEFINED)
    return MB_STATUS_DYNAMIC;
  *out = t;
  return MB_STATUS_OK;
}

/* Optional integer scalar input i (a position), or `def` when omitted. */
static mb_status position_input(mb_op_ctx *ctx, int i, int64_t def,
                                int64_t *out) {
  const mb_tensor *t = mb__op_input(ctx, i);
  *out = def;
  if (!t)
    return MB_STATUS_OK;
  MB_OP_NEED_DATA(ctx, i);
  if (t->numel != 1 ||
      (t->dtype != MB_DTYPE_INT32 && t->dtype != MB_DTYPE_INT64))
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "position must be one int32 or int64 value");
  *out = mb__tensor_get_i64(t, 0);
  return MB_STATUS_OK;
}

/* Normalises a position against count; `end_ok` admits count itself. */
static mb_status seq_position(mb_op_ctx *ctx, int64_t pos, int count,
                              bool end_ok, int *out) {
  int64_t p = pos < 0 ? pos + count : pos;
  if (p < 0 || p > count || (p == count && !end_ok))
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "position %lld is outside a sequence of %d tensors",
                        (long long)pos, count);
  *out = (int)p;
  return MB_STATUS_OK;
}

static mb_status seq_output(mb_op_ctx *ctx, int j, mb__sequence **out) {
  *out = mb__op_output_seq(ctx, j);
  return *out ? MB_STATUS_OK : MB_STATUS_INTERNAL;
}

static mb_status seq_check_dtype(mb_op_ctx *ctx, mb_dtype seq_dtype,
                                 const mb_tensor *t) {
  if (seq_dtype != MB_DTYPE_UNDEFINED && t->dtype != seq_dtype)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "a %s tensor cannot join a sequence of %s",
                        mb_dtype_name(t->dtype), mb_dtype_name(seq_dtype));
  return MB_STATUS_OK;
}

/* ---- SequenceEmpty, SequenceConstruct, SequenceInsert, SequenceErase ---- */

/* infer of every operator whose only output is a sequence. */
static mb_status seq_out_infer(mb_op_ctx *ctx) {
  mb__sequence *out;
  mb_status st = seq_output(ctx, 0, &out);
  if (st == MB_STATUS_OK)
    out->kind = MB__KIND_SEQUENCE;
  return st;
}

static mb_status seq_empty_run(mb_op_ctx *ctx) {
  int64_t id = mb__node_attr_int(ctx->node, "dtype", MB_DTYPE_FLOAT);
  mb__sequence *out;
  mb_status st = seq_output(ctx, 0, &out);
  if (st)
    return st;
  if (id <= 0 || id >= MB_DTYPE_COUNT || mb_dtype_size((mb_dtype)id) == 0)
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "dtype %lld is not supported", (long long)id);
  mb__sequence_reset(out, (mb_dtype)id);
  return MB_STATUS_OK;
}

static mb_status seq_construct_infer(mb_op_ctx *ctx) {
  mb_status st = mb__op_check_arity(ctx, 1, -1);
  for (int i = 0; !st && i < ctx->n_inputs; i++) {
    const mb_tensor *t;
    if ((st = tensor_input(ctx, i, &t)))
      return st;
    if (t->dtype != ctx->inputs[0]->dtype)
      return mb__op_error(
          ctx, MB_STATUS_SHAPE, "input %d is %s but input 0 is %s", i,
          mb_dtype_name(t->dtype), mb_dtype_name(ctx->inputs[0]->dtype));
  }
  return st ? st : seq_out_infer(ctx);
}

static mb_status seq_construct_run(mb_op_ctx *ctx) {
  mb__sequence *out;
  mb_status st = seq_output(ctx, 0, &out);
  if (st)
    return st;
  mb__sequence_reset(out, ctx->inputs[0]->dtype);
  for (int i = 0; i < ctx->n_inputs && !st; i++)
    st = mb__sequence_insert_copy(out, i, ctx->inputs[i], ctx->err);
  return mb__op_label_error(ctx, st);
}

static mb_status seq_insert_infer(mb_op_ctx *ctx) {
  const mb__sequence *seq;
  const mb_tensor *t;
  int64_t pos;
  int at = 0;
  mb_status st = mb__op_check_arity(ctx, 2, 3);
  if (st || (st = seq_input(ctx, 0, &seq)) || (st = tensor_input(ctx, 1, &t)) ||
      (st = seq_check_dtype(ctx, seq->dtype, t)) ||
      (st = position_input(ctx, 2, seq->count, &pos)) ||
      (st = seq_position(ctx, pos, seq->count, true, &at)))
    return st;
  if (seq->count >= SEQ_MAX_ITEMS)
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "a sequence may hold at most %lld tensors",
                        (long long)SEQ_MAX_ITEMS);
  return seq_out_infer(ctx);
}

static mb_status seq_insert_run(mb_op_ctx *ctx) {
  const mb__sequence *seq;
  mb__sequence *out;
  int64_t pos;
  int at = 0;
  mb_status st;
  if ((st = seq_input(ctx, 0, &seq)) || (st = seq_output(ctx, 0, &out)) ||
      (st = position_input(ctx, 2, seq->count, &pos)) ||
      (st = seq_position(ctx, pos, seq->count, true, &at)))
    return st;
  st = mb__sequence_copy(out, seq, ctx->err);
  out->dtype = ctx->inputs[1]->dtype;
  if (!st)
    st = mb__sequence_insert_copy(out, at, ctx->inputs[1], ctx->err);
  return mb__op_label_error(ctx, st);
}

static mb_status seq_erase_infer(mb_op_ctx *ctx) {
  const mb__sequence *seq;
  int64_t pos;
  int at = 0;
  mb_status st = mb__op_check_arity(ctx, 1, 2);
  if (st || (st = seq_input(ctx, 0, &seq)) ||
      (st = position_input(ctx, 1, -1, &pos)) ||
      (st = seq_position(ctx, pos, seq->count, false, &at)))
    return st;
  return seq_out_infer(ctx);
}

static mb_status seq_erase_run(mb_op_ctx *ctx) {
  const mb__sequence *seq;
  mb__sequence *out;
  int64_t pos;
  int at = 0;
  mb_status st;
  if ((st = seq_input(ctx, 0, &seq)) || (st = seq_output(ctx, 0, &out)) ||
      (st = position_input(ctx, 1, -1, &pos)) ||
      (st = seq_position(ctx, pos, seq->count, false, &at)))
    return st;
  mb__sequence_reset(out, seq->dtype);
  out->copied = seq->copied;
  for (int i = 0; i < seq->count && !st; i++)
    if (i != at)
      st = mb__sequence_insert_copy(out, out->count, seq->items[i], ctx->err);
  return mb__op_label_error(ctx, st);
}

/* ---- SequenceAt, SequenceLength ---- */

static mb_status seq_at_infer(mb_op_ctx *ctx) {
  const mb__sequence *seq;
  int64_t pos;
  int at = 0;
  mb_status st = mb__op_check_arity(ctx, 2, 2);
  if (st || (st = seq_input(ctx, 0, &seq)) ||
      (st = position_input(ctx, 1, 0, &pos)) ||
      (st = seq_position(ctx, pos, seq->count, false, &at)))
    return st;
  mb__op_output_is_tensor(ctx, 0);
  const mb_tensor *item = seq->items[at];
  return mb__tensor_set_shape(ctx->outputs[0], item->dtype, item->rank,
                              item->dims, ctx->err);
}

static mb_status seq_at_run(mb_op_ctx *ctx) {
  const mb__sequence *seq;
  int64_t pos;
  int at = 0;
  mb_status st;
  if ((st = seq_input(ctx, 0, &seq)) ||
      (st = position_input(ctx, 1, 0, &pos)) ||
      (st = seq_position(ctx, pos, seq->count, false, &at)))
    return st;
  return mb__op_copy_tensor(ctx, ctx->outputs[0], seq->items[at]);
}

static mb_status seq_length_infer(mb_op_ctx *ctx) {
  const mb__sequence *seq;
  mb_status st = mb__op_check_arity(ctx, 1, 1);
  if (st || (st = seq_input(ctx, 0, &seq)))
    return st;
  mb__op_output_is_tensor(ctx, 0);
  return mb__tensor_set_shape(ctx->outputs[0], MB_DTYPE_INT64, 0, NULL,
                              ctx->err);
}

static mb_status seq_length_run(mb_op_ctx *ctx) {
  ((int64_t *)ctx->outputs[0]->data)[0] = ctx->in_seqs[0]->count;
  return MB_STATUS_OK;
}

/* ---- SplitToSequence ---- */

typedef struct split_plan {
  int axis;
  bool squeeze;
  int64_t count;
  int64_t *sizes; /* count chunk lengths (scratch) */
} split_plan;

static mb_status split_plan_make(mb_op_ctx *ctx, split_plan *p) {
  const mb_tensor *x;
  mb_status st = mb__op_check_arity(ctx, 1, 2);
  if (st || (st = tensor_input(ctx, 0, &x)))
    return st;
  if ((st = mb__op_axis(ctx, mb__node_attr_int(ctx->node, "axis", 0), x->rank,
                        "axis", &p->axis)))
    return st;
  int64_t dim = x->dims[p->axis];
  const mb_tensor *split = mb__op_input(ctx, 1);
  p->squeeze = false;
  if (!split) {
    p->count = dim;
    p->squeeze = mb__node_attr_int(ctx->node, "keepdims", 1) == 0;
  } else {
    MB_OP_NEED_DATA(ctx, 1);
    if (split->rank > 1 || !mb__dtype_is_int(split->dtype))
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "split must be an integer scalar or 1-D tensor");
    if (split->rank == 0) {
      int64_t chunk = mb__tensor_get_i64(split, 0);
      if (chunk < 1)
        return mb__op_error(ctx, MB_STATUS_SHAPE, "split %lld must be positive",
                            (long long)chunk);
      p->count = dim / chunk + (dim % chunk != 0); /* no dim + chunk */
    } else {
      p->count = split->numel;
    }
  }
  if (p->count > SEQ_MAX_ITEMS)
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "a sequence may hold at most %lld tensors",
                        (long long)SEQ_MAX_ITEMS);
  p->sizes = mb__op_scratch(ctx, 0, sizeof(int64_t) * (size_t)(p->count + 1));
  if (!p->sizes)
    return MB_STATUS_OUT_OF_MEMORY;
  int64_t total = 0;
  for (int64_t i = 0; i < p->count; i++) {
    if (!split)
      p->sizes[i] = 1;
    else if (split->rank == 0)
      p->sizes[i] = MB_MIN(mb__tensor_get_i64(split, 0),
                           dim - i * mb__tensor_get_i64(split, 0));
    else
      p->sizes[i] = mb__tensor_get_i64(split, i);
    if (p->sizes[i] < 0)
      return mb__op_error(ctx, MB_STATUS_SHAPE, "split[%lld] is negative",
                          (long long)i);
    if (p->sizes[i] > dim - total) /* total stays <= dim: no overflow */
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "split sizes add up to more than axis %d's %lld",
                          p->axis, (long long)dim);
    total += p->sizes[i];
  }
  if (total != dim)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "split sizes add up to %lld, axis %d has %lld",
                        (long long)total, p->axis, (long long)dim);
  return MB_STATUS_OK;
}

static mb_status split_to_seq_infer(mb_op_ctx *ctx) {
  split_plan p;
  mb_status st = split_plan_make(ctx, &p);
  return st ? st : seq_out_infer(ctx);
}

static mb_status split_to_seq_run(mb_op_ctx *ctx) {
  split_plan p;
  mb__sequence *out;
  mb_status st;
  if ((st = split_plan_make(ctx, &p)) || (st = seq_output(ctx, 0, &out)))
    return st;
  const mb_tensor *x = ctx->inputs[0];
  size_t es = mb_dtype_size(x->dtype);
  int64_t outer = 1, inner = 1, dim = x->dims[p.axis];
  for (int d = 0; d < p.axis; d++)
    outer *= x->dims[d];
  for (int d = p.axis + 1; d < x->rank; d++)
    inner *= x->dims[d];
  mb__sequence_reset(out, x->dtype);
  int64_t start = 0;
  for (int64_t i = 0; i < p.count; i++) {
    int64_t dims[MB_MAX_RANK];
    int rank = 0;
    for (int d = 0; d < x->rank; d++) {
      if (d == p.axis && p.squeeze)
        continue;
      dims[rank++] = d == p.axis ? p.sizes[i] : x->dims[d];
    }
    mb_tensor *t = NULL;
    if ((st = mb_tensor_create(x->dtype, rank, dims, &t, ctx->err)))
      return st;
    for (int64_t o = 0; o < outer && t->nbytes; o++)
      memcpy((char *)t->data + (size_t)(o * p.sizes[i] * inner) * es,
             (const char *)x->data + (size_t)((o * dim + start) * inner) * es,
             (size_t)(p.sizes[i] * inner) * es);
    if ((st = mb__sequence_push(out, t, ctx->err)))
      return st;
    start += p.sizes[i];
  }
  return MB_STATUS_OK;
}

/* ---- ConcatFromSequence ---- */

static mb_status concat_plan(mb_op_ctx *ctx, const mb__sequence **seq_out,
                             int *axis_out, int64_t *dims_out, int *rank_out) {
  const mb__sequence *seq;
  mb_status st = mb__op_check_arity(ctx, 1, 1);
  if (st || (st = seq_input(ctx, 0, &seq)))
    return st;
  if (seq->count == 0)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "cannot concatenate an empty sequence");
  bool new_axis = mb__node_attr_int(ctx->node, "new_axis", 0) != 0;
  if (!mb__node_attr(ctx->node, "axis"))
    return mb__op_error(ctx, MB_STATUS_PARSE, "attribute axis is missing");
  const mb_tensor *first = seq->items[0];
  int rank = first->rank + (new_axis ? 1 : 0), axis;
  if (rank > MB_MAX_RANK)
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED, "rank %d is too high",
                        rank);
  if ((st = mb__op_axis(ctx, mb__node_attr_int(ctx->node, "axis", 0), rank,
                        "axis", &axis)))
    return st;
  int64_t total = 0;
  for (int i = 0; i < seq->count; i++) {
    const mb_tensor *t = seq->items[i];
    bool ok = t->rank == first->rank && t->dtype == first->dtype;
    for (int d = 0; d < t->rank && ok; d++)
      ok = t->dims[d] == first->dims[d] || (!new_axis && d == axis);
    if (!ok) {
      char a[96], b[96];
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "tensor %d (%s %s) does not fit tensor 0 (%s %s)", i,
                          mb_dtype_name(t->dtype),
                          mb__shape_str(t->rank, t->dims, a, sizeof a),
                          mb_dtype_name(first->dtype),
                          mb__shape_str(first->rank, first->dims, b, sizeof b));
    }
    total += new_axis ? 1 : t->dims[axis];
  }
  /* The items' dims, with the concatenated (or new) axis in place. */
  for (int d = 0, s = 0; d < rank; d++) {
    if (d == axis) {
      dims_out[d] = total;
      s += new_axis ? 0 : 1;
    } else {
      dims_out[d] = first->dims[s++];
    }
  }
  *seq_out = seq;
  *axis_out = axis;
  *rank_out = rank;
  return MB_STATUS_OK;
}

static mb_status concat_from_seq_infer(mb_op_ctx *ctx) {
  const mb__sequence *seq;
  int axis, rank;
  int64_t dims[MB_MAX_RANK];
  mb_status st = concat_plan(ctx, &seq, &axis, dims, &rank);
  if (st)
    return st;
  mb__op_output_is_tensor(ctx, 0);
  return mb__tensor_set_shape(ctx->outputs[0], seq->items[0]->dtype, rank, dims,
                              ctx->err);
}

static mb_status concat_from_seq_run(mb_op_ctx *ctx) {
  const mb__sequence *seq;
  int axis, rank;
  int64_t dims[MB_MAX_RANK];
  mb_status st = concat_plan(ctx, &seq, &axis, dims, &rank);
  if (st)
    return st;
  mb_tensor *y = ctx->outputs[0];
  size_t es = mb_dtype_size(y->dtype);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; d++)
    outer *= dims[d];
  for (int d = axis + 1; d < rank; d++)
    inner *= dims[d];
  int64_t offset = 0;
  for (int i = 0; i < seq->count; i++) {
    const mb_tensor *t = seq->items[i];
    int64_t len = t->rank == rank ? t->dims[axis] : 1;
    for (int64_t o = 0; o < outer && t->nbytes; o++)
      memcpy((char *)y->data + (size_t)((o * dims[axis] + offset) * inner) * es,
             (const char *)t->data + (size_t)(o * len * inner) * es,
             (size_t)(len * inner) * es);
    offset += len;
  }
  return MB_STATUS_OK;
}

/* ---- Identity (14, 16), Optional, OptionalHasElement/GetElement ---- */

/* Output 0 mirrors the kind of input 0 (infer), then copies it (run). */
static mb_status value_copy_infer(mb_op_ctx *ctx, int input) {
  mb__kind kind = mb__op_input_kind(ctx, input);
  const mb_tensor *t = ctx->inputs[input];
  if (kind == MB__KIND_TENSOR) {
    if (t->dtype == MB_DTYPE_UNDEFINED)
      return MB_STATUS_DYNAMIC;
    mb__op_output_is_tensor(ctx, 0);
    return mb__tensor_set_shape(ctx->outputs[0], t->dtype, t->rank, t->dims,
                                ctx->err);
  }
  mb__sequence *out;
  mb_status st = seq_output(ctx, 0, &out);
  if (st == MB_STATUS_OK)
    out->kind = kind;
  return st;
}

static mb_status value_copy_run(mb_op_ctx *ctx, int input) {
  mb_op_value src = {ctx->inputs[input],
                     ctx->in_seqs ? ctx->in_seqs[input] : NULL};
  return mb__op_set_output_value(ctx, 0, &src);
}

static mb_status identity_infer(mb_op_ctx *ctx) {
  mb_status st = mb__op_check_arity(ctx, 1, 1);
  return st ? st : value_copy_infer(ctx, 0);
}
static mb_status identity_run(mb_op_ctx *ctx) {
  return value_copy_run(ctx, 0);
}

/* Optional: wraps its input, or makes an empty optional without one. */
static mb_status optional_infer(mb_op_ctx *ctx) {
  mb_status st = mb__op_check_arity(ctx, 0, 1);
  if (st)
    return st;
  if (mb__op_input(ctx, 0))
    return value_copy_infer(ctx, 0);
  if (!mb__node_attr(ctx->node, "type"))
    return mb__op_error(ctx, MB_STATUS_PARSE,
                        "without an input the type attribute is required");
  mb__sequence *out;
  if ((st = seq_output(ctx, 0, &out)))
    return st;
  mb__sequence_free(out);
  out->kind = MB__KIND_NONE;
  return MB_STATUS_OK;
}

static mb_status optional_run(mb_op_ctx *ctx) {
  return mb__op_input(ctx, 0) ? value_copy_run(ctx, 0) : MB_STATUS_OK;
}

static mb_status has_element_infer(mb_op_ctx *ctx) {
  mb_status st = mb__op_check_arity(ctx, 0, 1);
  if (st)
    return st;
  mb__op_output_is_tensor(ctx, 0);
  return mb__tensor_set_shape(ctx->outputs[0], MB_DTYPE_BOOL, 0, NULL,
                              ctx->err);
}

static mb_status has_element_run(mb_op_ctx *ctx) {
  bool has = mb__op_input(ctx, 0) && mb__op_input_kind(ctx, 0) != MB__KIND_NONE;
  ((uint8_t *)ctx->outputs[0]->data)[0] = has;
  return MB_STATUS_OK;
}

static mb_status get_element_infer(mb_op_ctx *ctx) {
  mb_status st = mb__op_check_arity(ctx, 1, 1);
  if (st)
    return st;
  if (mb__op_input_kind(ctx, 0) == MB__KIND_NONE)
    return mb__op_error(ctx, MB_STATUS_SHAPE, "the optional input is empty");
  return value_copy_infer(ctx, 0);
}

static mb_status get_element_run(mb_op_ctx *ctx) {
  return value_copy_run(ctx, 0);
}

#define SEQ_ROW(op, since, infer, run)                                         \
  { "", op, since, infer, run, MB_OP_VALUES }
const mb_op_def mb__ops_sequence[] = {
    SEQ_ROW("SequenceEmpty", 11, seq_out_infer, seq_empty_run),
    SEQ_ROW("SequenceConstruct", 11, seq_construct_infer, seq_construct_run),
    SEQ_ROW("SequenceInsert", 11, seq_insert_infer, seq_insert_run),
    SEQ_ROW("SequenceAt", 11, seq_at_infer, seq_at_run),
    SEQ_ROW("SequenceErase", 11, seq_erase_infer, seq_erase_run),
    SEQ_ROW("SequenceLength", 11, seq_length_infer, seq_length_run),
    SEQ_ROW("SplitToSequence", 11, split_to_seq_infer, split_to_seq_run),
    SEQ_ROW("ConcatFromSequence", 11, concat_from_seq_infer,
            concat_from_seq_run),
    /* Identity took sequences from 14 and optionals from 16; earlier rows
     * are cast.c's. */
    SEQ_ROW("Identity", 14, identity_infer, identity_run),
    SEQ_ROW("Identity", 16, identity_infer, identity_run),
    SEQ_ROW("Optional", 15, optional_infer, optional_run),
    SEQ_ROW("OptionalHasElement", 15, has_element_infer, has_element_run),
    SEQ_ROW("OptionalHasElement", 18, has_element_infer, has_element_run),
    SEQ_ROW("OptionalGetElement", 15, get_element_infer, get_element_run),
    SEQ_ROW("OptionalGetElement", 18, get_element_infer, get_element_run),
};
MB_OP_TABLE_END(sequence);
