/* modelbench explain: two profiles compared per op type (explain.h says
 * what the rows are and why they sum to the totals). */
#include "report/explain.h"

#include "core/json_parse.h"

#include <math.h>
#include <stdlib.h>

static const char *const kind_names[] = {
#define MB_X(name, str) str,
    MB_EXPLAIN_KIND_LIST(MB_X)
#undef MB_X
};
_Static_assert(sizeof kind_names / sizeof kind_names[0] ==
                   MB_EXPLAIN_KIND_COUNT,
               "one name per explain kind");

const char *mb__explain_kind_name(mb_explain_kind kind) {
  return (unsigned)kind < MB_EXPLAIN_KIND_COUNT ? kind_names[kind] : "?";
}

/* Runtime-specific names to the ONNX op they compute, or to the inserted
 * step they are. Names not listed are ONNX op types already (the reference
 * interpreter's nodes, oneDNN's primitives, ORT's unfused kernels). */
static const struct op_alias {
  const char *name, *op_type;
  mb_explain_kind kind;
} op_aliases[] = {
    /* ONNX Runtime's fused and quantised kernels */
    {"FusedConv", "Conv", MB_EXPLAIN_OP},
    {"NhwcFusedConv", "Conv", MB_EXPLAIN_OP},
    {"NhwcConv", "Conv", MB_EXPLAIN_OP},
    {"QLinearConv", "Conv", MB_EXPLAIN_OP},
    {"ConvInteger", "Conv", MB_EXPLAIN_OP},
    {"FusedGemm", "Gemm", MB_EXPLAIN_OP},
    {"FusedMatMul", "MatMul", MB_EXPLAIN_OP},
    {"QLinearMatMul", "MatMul", MB_EXPLAIN_OP},
    {"MatMulInteger", "MatMul", MB_EXPLAIN_OP},
    {"MatMulIntegerToFloat", "MatMul", MB_EXPLAIN_OP},
    {"DynamicQuantizeMatMul", "MatMul", MB_EXPLAIN_OP},
    {"QLinearAdd", "Add", MB_EXPLAIN_OP},
    {"QLinearMul", "Mul", MB_EXPLAIN_OP},
    {"QLinearConcat", "Concat", MB_EXPLAIN_OP},
    {"QLinearSoftmax", "Softmax", MB_EXPLAIN_OP},
    {"QLinearSigmoid", "Sigmoid", MB_EXPLAIN_OP},
    {"QLinearLeakyRelu", "LeakyRelu", MB_EXPLAIN_OP},
    {"QLinearAveragePool", "AveragePool", MB_EXPLAIN_OP},
    {"QLinearGlobalAveragePool", "GlobalAveragePool", MB_EXPLAIN_OP},
    {"SkipLayerNormalization", "LayerNormalization", MB_EXPLAIN_OP},
    {"BiasGelu", "Gelu", MB_EXPLAIN_OP},
    {"FastGelu", "Gelu", MB_EXPLAIN_OP},
    {"QuickGelu", "Gelu", MB_EXPLAIN_OP},
    {"BiasSoftmax", "Softmax", MB_EXPLAIN_OP},
    /* inserted work: layout changes, (de)quantisation, copies */
    {"reorder", "reorder", MB_EXPLAIN_INSERTED},
    {"ReorderInput", "reorder", MB_EXPLAIN_INSERTED},
    {"ReorderOutput", "reorder", MB_EXPLAIN_INSERTED},
    {"quantize", "quantize", MB_EXPLAIN_INSERTED},
    {"QuantizeLinear", "quantize", MB_EXPLAIN_INSERTED},
    {"DynamicQuantizeLinear", "quantize", MB_EXPLAIN_INSERTED},
    {"dequantize", "dequantize", MB_EXPLAIN_INSERTED},
    {"DequantizeLinear", "dequantize", MB_EXPLAIN_INSERTED},
    {"MemcpyToHost", "copy", MB_EXPLAIN_INSERTED},
    {"MemcpyFromHost", "copy", MB_EXPLAIN_INSERTED},
};

static const char overhead_name[] = "runtime overhead";

static void canonical_op(const char *name, const char **op_type,
                         mb_explain_kind *kind) {
  *op_type = name && name[0] && strcmp(name, "?") != 0 ? name : "(unknown op)";
  *kind = MB_EXPLAIN_OP;
  for (size_t i = 0; i < sizeof op_aliases / sizeof op_aliases[0]; i++)
    if (name && strcmp(name, op_aliases[i].name) == 0) {
      *op_type = op_aliases[i].op_type;
      *kind = op_aliases[i].kind;
      return;
    }
}

static bool is_reference(const char *runtime) {
  return strcmp(runtime, "reference") == 0;
}

/* Room for one more of count elements: 16 at first, doubling when count
 * reaches a power of two from there, so no capacity field is needed.
 * false when out of memory. */
static bool grow(void **array, int count, size_t elem) {
  if (count && (count < 16 || (count & (count - 1))))
    return true;
  size_t cap = count ? (size_t)count * 2 : 16;
  void *p = realloc(*array, cap * elem);
  if (!p)
    return false;
  *array = p;
  return true;
}

/* The row for (op_type, kind), appended when new; NULL when out of
 * memory. Rows are few (op types), so a linear search is enough. */
static mb_explain_row *row_for(mb_explain *e, const char *op_type,
                               mb_explain_kind kind) {
  for (int i = 0; i < e->n_rows; i++)
    if (e->rows[i].kind == kind && strcmp(e->rows[i].op_type, op_type) == 0)
      return &e->rows[i];
  if (!grow((void **)&e->rows, e->n_rows, sizeof *e->rows))
    return NULL;
  mb_explain_row *row = &e->rows[e->n_rows++];
  memset(row, 0, sizeof *row);
  snprintf(row->op_type, sizeof row->op_type, "%s", op_type);
  row->kind = kind;
  return row;
}

/* Adds name to the row's variants unless present or out of room. */
static void add_variant(mb_explain_row *row, const char *name) {
  size_t len = strlen(row->variants), n = strlen(name);
  const char *p = row->variants;
  while ((p = strstr(p, name))) {
    bool starts = p == row->variants || p[-1] == ' ';
    bool ends = p[n] == '\0' || p[n] == ',';
    if (starts && ends)
      return;
    p += n;
  }
  if (len + n + 3 > sizeof row->variants)
    return;
  snprintf(row->variants + len, sizeof row->variants - len, "%s%s",
           len ? ", " : "", name);
}

/* The node entry of that name, appended when new; NULL when out of
 * memory. */
static mb_explain_node *node_for(mb_explain *e, const char *name,
                                 const char *op_type) {
  for (int i = 0; i < e->n_nodes; i++)
    if (strcmp(e->nodes[i].name, name) == 0)
      return &e->nodes[i];
  if (!grow((void **)&e->nodes, e->n_nodes, sizeof *e->nodes))
    return NULL;
  mb_explain_node *n = &e->nodes[e->n_nodes++];
  memset(n, 0, sizeof *n);
  snprintf(n->name, sizeof n->name, "%s", name);
  snprintf(n->op_type, sizeof n->op_type, "%s", op_type);
  return n;
}

static int by_node_difference(const void *x, const void *y) {
  const mb_explain_node *a = x, *b = y;
  double da = fabs(a->difference_ms), db = fabs(b->difference_ms);
  if (da != db)
    return da < db ? 1 : -1;
  return strcmp(a->name, b->name);
}

/* The segments' time of one runtime and how many nodes it reported. */
typedef struct runtime_sum {
  const char *name;
  double segment_ms;
  int nodes;
} runtime_sum;

/* One side: rows filled at index s, side statistics. */
static mb_status add_side(mb_explain *e, int s, const mb_profile *p,
                          mb_error *err) {
  mb_explain_side *side = &e->side[s];
  enum { MAX_RUNTIMES = 8 };
  runtime_sum runtimes[MAX_RUNTIMES];
  int n_runtimes = 0;
  double attributed = 0.0;
  snprintf(side->conversion, sizeof side->conversion, "%s", p->conversion);
  snprintf(side->note, sizeof side->note, "%s", p->note);
  side->total_ms = p->total_mean_ms;
  side->segments = p->n_segments;
  for (int i = 0; i < p->n_segments; i++) {
    const mb_profile_segment *seg = &p->segments[i];
    if (is_reference(seg->runtime)) {
      side->reference_segments++;
    } else {
      side->engine_segments++;
      if (!side->engine[0])
        snprintf(side->engine, sizeof side->engine, "%s", seg->runtime);
    }
    int r = 0;
    while (r < n_runtimes && strcmp(runtimes[r].name, seg->runtime) != 0)
      r++;
    if (r == n_runtimes && n_runtimes < MAX_RUNTIMES)
      runtimes[n_runtimes++] = (runtime_sum){seg->runtime, 0.0, 0};
    if (r < n_runtimes)
      runtimes[r].segment_ms += seg->mean_ms;
  }
  side->hybrid = side->engine_segments > 0 && side->reference_segments > 0;
  for (int i = 0; i < p->n_nodes; i++) {
    const mb_profile_node *n = &p->nodes[i];
    const char *op_type;
    mb_explain_kind kind;
    canonical_op(n->op_type, &op_type, &kind);
    mb_explain_row *row = row_for(e, op_type, kind);
    if (!row)
      return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    row->ms[s] += n->mean_ms;
    row->entries[s]++;
    if (strcmp(op_type, n->op_type) != 0 && n->op_type[0])
      add_variant(row, n->op_type);
    if (side->hybrid && is_reference(n->runtime)) {
      row->fallback_ms[s] += n->mean_ms;
      side->fallback_ms += n->mean_ms;
    }
    if (kind == MB_EXPLAIN_INSERTED)
      side->inserted_ms += n->mean_ms;
    if (n->name[0]) {
      mb_explain_node *en = node_for(e, n->name, op_type);
      if (!en)
        return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
      en->ms[s] += n->mean_ms;
    }
    attributed += n->mean_ms;
    for (int r = 0; r < n_runtimes; r++)
      if (strcmp(runtimes[r].name, n->runtime) == 0)
        runtimes[r].nodes++;
  }
  /* Segments of a runtime that gave no per-node times (XNNPACK) are
   * attributed to the runtime as a whole. */
  for (int r = 0; r < n_runtimes; r++) {
    if (runtimes[r].nodes > 0 || runtimes[r].segment_ms <= 0)
      continue;
    char label[64];
    snprintf(label, sizeof label, "%s segments", runtimes[r].name);
    mb_explain_row *row = row_for(e, label, MB_EXPLAIN_SEGMENT);
    if (!row)
      return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    row->ms[s] += runtimes[r].segment_ms;
    row->entries[s]++;
    if (side->hybrid && is_reference(runtimes[r].name)) {
      row->fallback_ms[s] += runtimes[r].segment_ms;
      side->fallback_ms += runtimes[r].segment_ms;
    }
    attributed += runtimes[r].segment_ms;
  }
  mb_explain_row *row = row_for(e, overhead_name, MB_EXPLAIN_OVERHEAD);
  if (!row)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  row->ms[s] = p->total_mean_ms - attributed;
  row->entries[s] = 0;
  side->overhead_ms = row->ms[s];
  return MB_STATUS_OK;
}

/* Largest share of the difference first; with no difference to share
 * (every share 0), the largest absolute difference first. Ties by name, so
 * the order does not depend on the profiles' entry order. */
static int by_contribution(const void *x, const void *y) {
  const mb_explain_row *a = x, *b = y;
  if (a->share != b->share)
    return a->share < b->share ? 1 : -1;
  double da = fabs(a->difference_ms), db = fabs(b->difference_ms);
  if (da != db)
    return da < db ? 1 : -1;
  return strcmp(a->op_type, b->op_type);
}

static void verdict(mb_explain *e) {
  const mb_explain_side *a = &e->side[0], *b = &e->side[1];
  size_t len = 0, cap = sizeof e->verdict;
  char *v = e->verdict;
  bool faster = e->speedup >= 1.0;
  /* An engine's unsplit segments hold some of every op type it ran, so an
   * op's own ratio would read that move as a speed-up. */
  const mb_explain_row *unsplit[2] = {NULL, NULL};
  for (int i = 0; i < e->n_rows; i++)
    for (int s = 0; s < 2; s++)
      if (e->rows[i].kind == MB_EXPLAIN_SEGMENT && e->rows[i].ms[s] > 0)
        unsplit[s] = &e->rows[i];
  len += (size_t)snprintf(v, cap, "%s is %.2fx %s than %s: %.3f ms vs %.3f ms",
                          b->conversion, faster ? e->speedup : 1.0 / e->speedup,
                          faster ? "faster" : "slower", a->conversion,
                          a->total_ms, b->total_ms);
  /* The main contributor: the first row, when it carries a positive share
   * (with equal totals every share is 0). */
  const mb_explain_row *r = e->n_rows ? &e->rows[0] : NULL;
  if (r && r->share > 0 && len < cap) {
    double saved = fabs(r->difference_ms), total = fabs(e->difference_ms);
    const char *what = e->difference_ms < 0 ? "saved" : "added";
    bool both = r->ms[0] > 0 && r->ms[1] > 0;
    if (both && !unsplit[0] && !unsplit[1]) {
      double ratio =
          r->ms[0] > r->ms[1] ? r->ms[0] / r->ms[1] : r->ms[1] / r->ms[0];
      len += (size_t)snprintf(v + len, cap - len,
                              "; %.1fx %s from %s: %.3f ms of the %.3f ms %s",
                              ratio, r->ms[1] < r->ms[0] ? "faster" : "slower",
                              r->op_type, saved, total, what);
    } else {
      len += (size_t)snprintf(v + len, cap - len,
                              "; most from %s%s: %.3f ms of the %.3f ms %s",
                              r->op_type,
                              both           ? ""
                              : r->ms[1] > 0 ? " (only in B)"
                                             : " (only in A)",
                              saved, total, what);
    }
  }
  /* Op types one side runs as nodes of their own and the other does not
   * (fused into a neighbour, folded, or never needed): on small models
   * they can be most of the difference. Unsplit segments hide which op
   * types an engine ran, so then nothing is said. */
  double only_share = 0.0;
  int only_count = 0, only_side = 0;
  for (int i = 0; i < e->n_rows; i++) {
    const mb_explain_row *o = &e->rows[i];
    if (o->kind == MB_EXPLAIN_OP && o->share > 0 &&
        (o->ms[0] > 0) != (o->ms[1] > 0)) {
      only_share += o->share;
      only_count++;
      only_side = o->ms[1] > 0;
    }
  }
  if (only_count >= 2 && only_share >= 0.2 && !unsplit[0] && !unsplit[1] &&
      len < cap)
    len += (size_t)snprintf(v + len, cap - len,
                            "; %.0f%% of it from %d op types only %s runs as "
                            "nodes of their own",
                            100.0 * only_share, only_count,
                            e->side[only_side].conversion);
  for (int s = 0; s < 2 && len < cap; s++)
    if (unsplit[s] && unsplit[s] != r)
      len += (size_t)snprintf(
          v + len, cap - len, " (%s's %s, %.3f ms, are not split by op type)",
          e->side[s].conversion, unsplit[s]->op_type, unsplit[s]->ms[s]);
  /* The largest fallback on either side. */
  int best_row = -1, best_side = 0;
  for (int i = 0; i < e->n_rows; i++)
    for (int s = 0; s < 2; s++)
      if (e->rows[i].fallback_ms[s] > 0 &&
          (best_row < 0 || e->rows[i].fallback_ms[s] >
                               e->rows[best_row].fallback_ms[best_side])) {
        best_row = i;
        best_side = s;
      }
  if (best_row >= 0 && len < cap) {
    const mb_explain_side *side = &e->side[best_side];
    snprintf(v + len, cap - len,
             "; %s fell back to the reference in %s: %.0f%% of its time",
             e->rows[best_row].op_type, side->conversion,
             100.0 * e->rows[best_row].fallback_ms[best_side] / side->total_ms);
  }
}

mb_status mb__explain_profiles(const mb_profile *a, const mb_profile *b,
                               mb_explain *out, mb_error *err) {
  const mb_profile *p[2] = {a, b};
  mb_status status;
  memset(out, 0, sizeof *out);
  for (int s = 0; s < 2; s++)
    if (!(p[s]->total_mean_ms > 0) || !isfinite(p[s]->total_mean_ms))
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "profile %c (%s): total %g ms is not a positive time",
                       'A' + s, p[s]->conversion, p[s]->total_mean_ms);
  for (int s = 0; s < 2; s++)
    if ((status = add_side(out, s, p[s], err)))
      goto fail;
  out->difference_ms = b->total_mean_ms - a->total_mean_ms;
  out->speedup = a->total_mean_ms / b->total_mean_ms;
  /* Below a nanosecond the totals are equal: no difference to share. */
  bool shared = fabs(out->difference_ms) > 1e-6;
  for (int i = 0; i < out->n_rows; i++) {
    mb_explain_row *r = &out->rows[i];
    r->difference_ms = r->ms[1] - r->ms[0];
    r->share = shared ? r->difference_ms / out->difference_ms : 0.0;
  }
  qsort(out->rows, (size_t)out->n_rows, sizeof *out->rows, by_contribution);
  for (int i = 0; i < out->n_nodes; i++)
    out->nodes[i].difference_ms = out->nodes[i].ms[1] - out->nodes[i].ms[0];
  if (out->n_nodes > 1)
    qsort(out->nodes, (size_t)out->n_nodes, sizeof *out->nodes,
          by_node_difference);
  verdict(out);
  return MB_STATUS_OK;
fail:
  mb__explain_clear(out);
  return status;
}

void mb__explain_clear(mb_explain *e) {
  if (!e)
    return;
  free(e->rows);
  free(e->nodes);
  e->rows = NULL;
  e->nodes = NULL;
  e->n_rows = e->n_nodes = 0;
}

/* ---- text ---- */

static void print_side(FILE *f, char letter, const mb_explain_side *s) {
  fprintf(f, "%c            %-20s %9.3f ms per inference, %d segment%s", letter,
          s->conversion, s->total_ms, s->segments, s->segments == 1 ? "" : "s");
  if (s->engine_segments && s->reference_segments)
    fprintf(f, " (%d %s, %d reference)", s->engine_segments, s->engine,
            s->reference_segments);
  else if (s->segments)
    fprintf(f, " (%s)", s->engine[0] ? s->engine : "reference");
  fputc('\n', f);
}

void mb__explain_print(const mb_explain *e, const char *model, int top_nodes,
                       void *out) {
  FILE *f = out;
  const mb_explain_side *a = &e->side[0], *b = &e->side[1];
  fprintf(f, "%s\n\n", e->verdict);
  if (model)
    fprintf(f, "model        %s\n", model);
  print_side(f, 'A', a);
  print_side(f, 'B', b);
  fprintf(f,
          "\nTime per op type (ms per inference; difference B - A; share of "
          "the %+.3f ms)\n",
          e->difference_ms);
  fprintf(f, "  %-26s %12s %12s %11s %8s  %s\n", "op type", "A ms", "B ms",
          "B - A", "share", "notes");
  double sum[2] = {0, 0}, share = 0;
  for (int i = 0; i < e->n_rows; i++) {
    const mb_explain_row *r = &e->rows[i];
    char notes[256] = "";
    size_t n = 0;
    if (r->kind == MB_EXPLAIN_INSERTED)
      n += (size_t)snprintf(notes + n, sizeof notes - n, "inserted ");
    for (int s = 0; s < 2 && n < sizeof notes; s++)
      if (r->fallback_ms[s] > 0)
        n += (size_t)snprintf(notes + n, sizeof notes - n,
                              "%c: %.3f on reference ", 'A' + s,
                              r->fallback_ms[s]);
    if (r->variants[0] && n < sizeof notes)
      snprintf(notes + n, sizeof notes - n, "(%s)", r->variants);
    fprintf(f, "  %-26s %12.3f %12.3f %+11.3f %7.1f%%  %s\n", r->op_type,
            r->ms[0], r->ms[1], r->difference_ms, 100.0 * r->share, notes);
    sum[0] += r->ms[0];
    sum[1] += r->ms[1];
    share += r->share;
  }
  fprintf(f, "  %-26s %12.3f %12.3f %+11.3f %7.1f%%\n", "total", sum[0], sum[1],
          sum[1] - sum[0], 100.0 * share);

  fprintf(f, "\nFallbacks, inserted work, segments\n");
  for (int s = 0; s < 2; s++) {
    const mb_explain_side *side = &e->side[s];
    if (side->hybrid)
      fprintf(f,
              "  %s: %d segment boundaries (%d %s, %d reference); %.3f ms "
              "(%.1f%%) on the reference\n",
              side->conversion, side->segments - 1, side->engine_segments,
              side->engine, side->reference_segments, side->fallback_ms,
              100.0 * side->fallback_ms / side->total_ms);
    for (int i = 0; i < e->n_rows; i++) {
      const mb_explain_row *r = &e->rows[i];
      if (r->fallback_ms[s] > 0)
        fprintf(f,
                "  %s: %s fell back to the reference: %.3f ms, %.1f%% of %s's "
                "time\n",
                side->conversion, r->op_type, r->fallback_ms[s],
                100.0 * r->fallback_ms[s] / side->total_ms, side->conversion);
    }
    for (int i = 0; i < e->n_rows; i++) {
      const mb_explain_row *r = &e->rows[i];
      if (r->kind == MB_EXPLAIN_INSERTED && r->ms[s] > 0)
        fprintf(f, "  %s: %s steps: %.3f ms, %.1f%% of %s's time\n",
                side->conversion, r->op_type, r->ms[s],
                100.0 * r->ms[s] / side->total_ms, side->conversion);
    }
    if (!side->hybrid && side->fallback_ms == 0 && side->inserted_ms == 0)
      fprintf(f, "  %s: none\n", side->conversion);
  }
  int shown = top_nodes > 0 ? MB_MIN(top_nodes, e->n_nodes) : e->n_nodes;
  fprintf(f, "\nNodes that differ most (%d of %d, matched by name)\n", shown,
          e->n_nodes);
  fprintf(f, "  %-48s %-20s %10s %10s %10s\n", "name", "op type", "A ms",
          "B ms", "B - A");
  for (int i = 0; i < shown; i++) {
    const mb_explain_node *n = &e->nodes[i];
    fprintf(f, "  %-48s %-20s %10.3f %10.3f %+10.3f\n", n->name, n->op_type,
            n->ms[0], n->ms[1], n->difference_ms);
  }
  if (e->n_nodes == 0)
    fprintf(f, "  (none)\n");
  for (int s = 0; s < 2; s++)
    if (e->side[s].note[0])
      fprintf(f, "\nnote (%s): %s\n", e->side[s].conversion, e->side[s].note);
}

/* ---- JSON ---- */

static void write_side(mb_json *j, const mb_explain_side *s) {
  mb__json_object_begin(j);
  mb__json_kv_string(j, "conversion", s->conversion);
  mb__json_kv_double(j, "total_ms", s->total_ms);
  mb__json_kv_double(j, "overhead_ms", s->overhead_ms);
  mb__json_kv_double(j, "fallback_ms", s->fallback_ms);
  mb__json_kv_double(j, "inserted_ms", s->inserted_ms);
  mb__json_kv_int(j, "segments", s->segments);
  mb__json_kv_int(j, "engine_segments", s->engine_segments);
  mb__json_kv_int(j, "reference_segments", s->reference_segments);
  mb__json_kv_bool(j, "hybrid", s->hybrid);
  mb__json_key(j, "engine");
  mb__json_string(j, s->engine[0] ? s->engine : NULL);
  mb__json_key(j, "note");
  mb__json_string(j, s->note[0] ? s->note : NULL);
  mb__json_object_end(j);
}

void mb__explain_write_json(const mb_explain *e, const char *model,
                            mb_json *j) {
  mb__json_object_begin(j);
  mb__json_kv_string(j, "model", model);
  mb__json_kv_string(j, "verdict", e->verdict);
  mb__json_kv_double(j, "speedup", e->speedup);
  mb__json_kv_double(j, "difference_ms", e->difference_ms);
  mb__json_key(j, "a");
  write_side(j, &e->side[0]);
  mb__json_key(j, "b");
  write_side(j, &e->side[1]);
  mb__json_key(j, "rows");
  mb__json_array_begin(j);
  for (int i = 0; i < e->n_rows; i++) {
    const mb_explain_row *r = &e->rows[i];
    mb__json_object_begin(j);
    mb__json_kv_string(j, "op_type", r->op_type);
    mb__json_kv_string(j, "kind", mb__explain_kind_name(r->kind));
    mb__json_kv_double(j, "a_ms", r->ms[0]);
    mb__json_kv_double(j, "b_ms", r->ms[1]);
    mb__json_kv_double(j, "difference_ms", r->difference_ms);
    mb__json_kv_double(j, "share", r->share);
    mb__json_kv_int(j, "a_entries", r->entries[0]);
    mb__json_kv_int(j, "b_entries", r->entries[1]);
    mb__json_kv_double(j, "a_fallback_ms", r->fallback_ms[0]);
    mb__json_kv_double(j, "b_fallback_ms", r->fallback_ms[1]);
    mb__json_key(j, "variants");
    mb__json_array_begin(j);
    for (const char *p = r->variants; *p;) {
      size_t n = strcspn(p, ",");
      mb__json_string_n(j, p, n);
      p += n;
      while (*p == ',' || *p == ' ')
        p++;
    }
    mb__json_array_end(j);
    mb__json_object_end(j);
  }
  mb__json_array_end(j);
  mb__json_key(j, "fallbacks");
  mb__json_array_begin(j);
  for (int s = 0; s < 2; s++)
    for (int i = 0; i < e->n_rows; i++) {
      const mb_explain_row *r = &e->rows[i];
      if (!(r->fallback_ms[s] > 0))
        continue;
      mb__json_object_begin(j);
      mb__json_kv_string(j, "side", s ? "b" : "a");
      mb__json_kv_string(j, "conversion", e->side[s].conversion);
      mb__json_kv_string(j, "op_type", r->op_type);
      mb__json_kv_double(j, "ms", r->fallback_ms[s]);
      mb__json_kv_double(j, "share_of_total",
                         r->fallback_ms[s] / e->side[s].total_ms);
      mb__json_object_end(j);
    }
  mb__json_array_end(j);
  mb__json_key(j, "nodes");
  mb__json_array_begin(j);
  for (int i = 0; i < e->n_nodes; i++) {
    const mb_explain_node *n = &e->nodes[i];
    mb__json_object_begin(j);
    mb__json_kv_string(j, "name", n->name);
    mb__json_kv_string(j, "op_type", n->op_type);
    mb__json_kv_double(j, "a_ms", n->ms[0]);
    mb__json_kv_double(j, "b_ms", n->ms[1]);
    mb__json_kv_double(j, "difference_ms", n->difference_ms);
    mb__json_object_end(j);
  }
  mb__json_array_end(j);
  mb__json_object_end(j);
}

/* ---- saved profiles ---- */

typedef struct field_reader {
  const char *path;
  mb_error *err;
  mb_status status;
} field_reader;

static const mb_json_value *field(field_reader *r, const mb_json_value *obj,
                                  const char *key, mb_json_type type) {
  const mb_json_value *v = mb__json_find(obj, key);
  if (r->status)
    return NULL;
  if (!v) {
    r->status = mb__json_value_error(r->err, r->path, obj,
                                     "missing \"%s\" (a profile from "
                                     "'modelbench profile --json' is "
                                     "expected)",
                                     key);
    return NULL;
  }
  if (v->type != type) {
    r->status = mb__json_value_error(
        r->err, r->path, v, "\"%s\": expected %s, got %s", key,
        mb__json_type_name(type), mb__json_type_name(v->type));
    return NULL;
  }
  return v;
}

static void copy_str(field_reader *r, const mb_json_value *obj, const char *key,
                     char *dst, size_t size) {
  const mb_json_value *v = field(r, obj, key, MB_JSON_STRING);
  if (v)
    snprintf(dst, size, "%s", v->string);
}

static double number(field_reader *r, const mb_json_value *obj,
                     const char *key) {
  const mb_json_value *v = field(r, obj, key, MB_JSON_NUMBER);
  return v ? v->number : 0.0;
}

static const mb_json_value *array(field_reader *r, const mb_json_value *obj,
                                  const char *key, size_t elem, void **out) {
  const mb_json_value *v = field(r, obj, key, MB_JSON_ARRAY);
  if (!v || !v->count)
    return v;
  if (!(*out = calloc(v->count, elem)))
    r->status = mb__error(r->err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  return r->status ? NULL : v;
}

mb_status mb__profile_load_json(const char *path, mb_profile **profile_out,
                                char *model, size_t model_size, mb_error *err) {
  mb_json_doc *doc = NULL;
  mb_profile *p = NULL;
  field_reader r = {path, err, MB_STATUS_OK};
  *profile_out = NULL;
  if (model && model_size)
    model[0] = '\0';
  if ((r.status = mb__json_parse_file(path, &doc, err)))
    goto done;
  const mb_json_value *root = &doc->root;
  if (root->type != MB_JSON_OBJECT) {
    r.status = mb__json_value_error(err, path, root,
                                    "a profile is a JSON object, not %s",
                                    mb__json_type_name(root->type));
    goto done;
  }
  if (!(p = calloc(1, sizeof *p))) {
    r.status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  const mb_json_value *m = mb__json_find(root, "model");
  if (model && model_size && m && m->type == MB_JSON_STRING)
    snprintf(model, model_size, "%s", m->string);
  copy_str(&r, root, "conversion", p->conversion, sizeof p->conversion);
  p->iterations = (int)number(&r, root, "iterations");
  p->total_mean_ms = number(&r, root, "mean_ms");
  const mb_json_value *note = mb__json_find(root, "note");
  if (note && note->type == MB_JSON_STRING)
    snprintf(p->note, sizeof p->note, "%s", note->string);
  const mb_json_value *segs =
      array(&r, root, "segments", sizeof *p->segments, (void **)&p->segments);
  for (size_t i = 0; segs && i < segs->count && !r.status; i++) {
    const mb_json_value *o = &segs->items[i];
    mb_profile_segment *s = &p->segments[p->n_segments++];
    copy_str(&r, o, "runtime", s->runtime, sizeof s->runtime);
    copy_str(&r, o, "first_node", s->first_node, sizeof s->first_node);
    s->nodes = (int)number(&r, o, "nodes");
    s->runs = (int64_t)number(&r, o, "runs");
    s->mean_ms = number(&r, o, "mean_ms");
    s->share = number(&r, o, "share");
    s->gflops = -1.0;
  }
  const mb_json_value *nodes =
      array(&r, root, "nodes", sizeof *p->nodes, (void **)&p->nodes);
  for (size_t i = 0; nodes && i < nodes->count && !r.status; i++) {
    const mb_json_value *o = &nodes->items[i];
    mb_profile_node *n = &p->nodes[p->n_nodes++];
    copy_str(&r, o, "runtime", n->runtime, sizeof n->runtime);
    copy_str(&r, o, "op_type", n->op_type, sizeof n->op_type);
    copy_str(&r, o, "name", n->name, sizeof n->name);
    copy_str(&r, o, "kernel", n->kernel, sizeof n->kernel);
    n->runs = (int64_t)number(&r, o, "runs");
    n->mean_ms = number(&r, o, "mean_ms");
    n->share = number(&r, o, "share");
  }
  if (!r.status && !(p->total_mean_ms > 0))
    r.status = mb__json_value_error(err, path, mb__json_find(root, "mean_ms"),
                                    "\"mean_ms\": %g is not a positive time",
                                    p->total_mean_ms);
  if (!r.status) {
    *profile_out = p;
    p = NULL;
  }
done:
  mb_profile_free(p);
  mb__json_doc_free(doc);
  return r.status;
}
