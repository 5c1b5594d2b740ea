/* The operator registry: one row per family table. A node resolves to the
 * row of its (domain, op_type) with the highest since_version that is not
 * above the model's opset for that domain. */
#include "ops/op.h"

typedef struct op_family {
  const char *name;
  const mb_op_def *defs;
  const size_t *count;
} op_family;

static const op_family families[] = {
#define MB_X(family) {#family, mb__ops_##family, &mb__ops_##family##_count},
    MB_OP_FAMILY_LIST(MB_X)
#undef MB_X
};

const mb_op_def *mb__op_find(const char *domain, const char *op_type,
                             int64_t opset) {
  const mb_op_def *best = NULL;
  if (!domain || strcmp(domain, "ai.onnx") == 0)
    domain = "";
  for (size_t f = 0; f < MB_ARRAY_COUNT(families); f++) {
    const mb_op_def *defs = families[f].defs;
    for (size_t i = 0; i < *families[f].count; i++) {
      const mb_op_def *d = &defs[i];
      if (strcmp(d->op_type, op_type) != 0 || strcmp(d->domain, domain) != 0)
        continue;
      if (d->since_version > opset)
        continue;
      if (!best || d->since_version > best->since_version)
        best = d;
    }
  }
  return best;
}

void mb__op_foreach(void (*fn)(const mb_op_def *def, void *user), void *user) {
  for (size_t f = 0; f < MB_ARRAY_COUNT(families); f++)
    for (size_t i = 0; i < *families[f].count; i++)
      fn(&families[f].defs[i], user);
}
