/* Sequences and optionals held beside tensors (see sequence.h). */
#include "core/sequence.h"

#include <stdlib.h>

void mb__sequence_clear(mb__sequence *s) {
  if (!s->borrowed)
    for (int i = 0; i < s->count; i++)
      mb_tensor_free(s->items[i]);
  s->count = 0;
}

void mb__sequence_free(mb__sequence *s) {
  mb__sequence_clear(s);
  if (!s->borrowed)
    free(s->items);
  memset(s, 0, sizeof *s);
}

void mb__sequence_reset(mb__sequence *s, mb_dtype dtype) {
  mb__sequence_clear(s);
  if (s->borrowed) { /* the array was the caller's too */
    s->items = NULL;
    s->cap = 0;
    s->borrowed = false;
  }
  s->kind = MB__KIND_SEQUENCE;
  s->dtype = dtype;
  s->copied = 0;
}

static mb_status sequence_grow(mb__sequence *s, mb_error *err) {
  if (s->count < s->cap)
    return MB_STATUS_OK;
  int cap = s->cap ? s->cap * 2 : 8;
  mb_tensor **items = realloc(s->items, sizeof *items * (size_t)cap);
  if (!items)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "cannot grow a sequence to %d tensors", cap);
  s->items = items;
  s->cap = cap;
  return MB_STATUS_OK;
}

mb_status mb__sequence_push(mb__sequence *s, mb_tensor *t, mb_error *err) {
  mb_status status = sequence_grow(s, err);
  if (status) {
    mb_tensor_free(t);
    return status;
  }
  s->items[s->count++] = t;
  return MB_STATUS_OK;
}

mb_status mb__sequence_insert_copy(mb__sequence *s, int at, const mb_tensor *t,
                                   mb_error *err) {
  mb_tensor *copy = NULL;
  if (s->copied >= MB__SEQUENCE_MAX_COPIED)
    return mb__error(
        err, MB_STATUS_UNSUPPORTED,
        "making this sequence copied %lld tensors, the most the reference "
        "interpreter copies: it copies a sequence at every step that "
        "changes it, so a sequence grown one tensor per loop iteration "
        "stops at about 4,000 tensors",
        (long long)s->copied);
  s->copied++;
  mb_status status = mb_tensor_clone(t, &copy, err);
  if (status)
    return status;
  if ((status = mb__sequence_push(s, copy, err)))
    return status;
  memmove(&s->items[at + 1], &s->items[at],
          sizeof *s->items * (size_t)(s->count - 1 - at));
  s->items[at] = copy;
  return MB_STATUS_OK;
}

mb_status mb__sequence_copy(mb__sequence *dst, const mb__sequence *src,
                            mb_error *err) {
  if (dst == src)
    return MB_STATUS_OK;
  mb__sequence_reset(dst, src->dtype);
  dst->kind = src->kind;
  dst->copied = src->copied;
  for (int i = 0; src->kind == MB__KIND_SEQUENCE && i < src->count; i++) {
    mb_status status = mb__sequence_insert_copy(dst, i, src->items[i], err);
    if (status)
      return status;
  }
  return MB_STATUS_OK;
}

void mb__sequence_view(mb__sequence *dst, const mb__sequence *src) {
  if (dst == src)
    return;
  mb__sequence_free(dst);
  *dst = *src;
  dst->borrowed = true;
  dst->cap = src->count;
}

const char *mb__kind_name(mb__kind kind) {
  static const char *const names[] = {"tensor", "sequence", "none"};
  return (unsigned)kind < MB_ARRAY_COUNT(names) ? names[kind] : "invalid";
}
