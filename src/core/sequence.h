/* Values that are not plain tensors: sequences of tensors and optionals
 * (ONNX's sequence and optional types), as the reference interpreter holds
 * them beside each value's tensor. */
#ifndef MB_CORE_SEQUENCE_H
#define MB_CORE_SEQUENCE_H

#include "core/internal.h"

/* What a value holds at run time. */
typedef enum mb__kind {
  MB__KIND_TENSOR = 0, /* the value's tensor (the default) */
  MB__KIND_SEQUENCE,   /* the tensors in mb__sequence.items */
  MB__KIND_NONE,       /* an optional without a value */
} mb__kind;

/* The non-tensor state of one value. Zero-initialised it says "a tensor".
 * A sequence owns its items unless `borrowed` (a view bound as an input:
 * the items belong to the caller and are never freed here). */
typedef struct mb__sequence {
  mb__kind kind;
  mb_dtype dtype; /* element type of a sequence; UNDEFINED when unknown */
  int count, cap;
  mb_tensor **items; /* count tensors */
  bool borrowed;
  /* Tensors copied to make this sequence, its ancestors' copies included
   * (a sequence made from another starts at the other's count). Values are
   * immutable, so a loop that grows a sequence copies it every iteration:
   * quadratic work that MB__SEQUENCE_MAX_COPIED bounds. */
  int64_t copied;
} mb__sequence;

/* The most tensors copied to make one sequence (see `copied`): about 16
 * million, a few seconds; a sequence grown one tensor per loop iteration
 * reaches it at about 4,000 tensors (each
 * iteration copies it twice). */
#define MB__SEQUENCE_MAX_COPIED ((int64_t)1 << 24)

/* Frees owned items and forgets borrowed ones; keeps the array for reuse.
 * Leaves kind and dtype. */
void mb__sequence_clear(mb__sequence *s);
/* Clears and frees the item array; s is then zero (a tensor). */
void mb__sequence_free(mb__sequence *s);
/* Makes s an empty, owning sequence of `dtype` (copied 0). */
void mb__sequence_reset(mb__sequence *s, mb_dtype dtype);
/* Inserts a deep copy of t at position `at` (0..count). Fails with
 * MB_STATUS_UNSUPPORTED once s->copied reaches MB__SEQUENCE_MAX_COPIED. */
mb_status mb__sequence_insert_copy(mb__sequence *s, int at, const mb_tensor *t,
                                   mb_error *err);
/* Appends t, taking ownership (also on failure, when t is freed). */
mb_status mb__sequence_push(mb__sequence *s, mb_tensor *t, mb_error *err);
/* dst = deep copy of src (kind, dtype and items; copied = src's plus the
 * items copied). */
mb_status mb__sequence_copy(mb__sequence *dst, const mb__sequence *src,
                            mb_error *err);
/* dst = a borrowed view of src's items (src must outlive the view). */
void mb__sequence_view(mb__sequence *dst, const mb__sequence *src);

/* Reads a file holding a TensorProto, SequenceProto or OptionalProto (an
 * `input_N.pb` of the ONNX test data) as a value of declared `type` (from
 * core/ir.h's mb_value_type, passed as int to keep this header free of the
 * IR): a tensor goes to *tensor_out (seq_out->kind TENSOR), a sequence or
 * an empty optional to *seq_out, which must be zero or cleared. Implemented
 * in onnx/tensor_pb.c, beside mb_tensor_load_pb. */
mb_status mb__value_load_pb(const char *path, int type, mb_tensor **tensor_out,
                            mb__sequence *seq_out, mb_error *err);

/* "tensor", "sequence" or "none". */
const char *mb__kind_name(mb__kind kind);

#endif /* MB_CORE_SEQUENCE_H */
