/* The pass registry and driver: parses a step list, runs each pass on the
 * model, re-finalises the graph after each and keeps the statistics. */
#include "passes/edit.h"

#include <ctype.h>
#include <stdlib.h>

static const mb_pass *const builtin[] = {
#define MB_X(name, family) &mb__pass_##name,
    MB_PASS_LIST(MB_X)
#undef MB_X
};

int mb__pass_count(void) {
  return (int)MB_ARRAY_COUNT(builtin);
}

const mb_pass *mb__pass_at(int index) {
  return index >= 0 && index < (int)MB_ARRAY_COUNT(builtin) ? builtin[index]
                                                            : NULL;
}

const mb_pass *mb__pass_find(const char *name) {
  for (size_t i = 0; name && i < MB_ARRAY_COUNT(builtin); i++)
    if (strcmp(builtin[i]->name, name) == 0)
      return builtin[i];
  return NULL;
}

mb_pass_record *mb__pass_record(mb_pass_stats *stats) {
  MB_ASSERT(stats && stats->n_passes > 0);
  return &stats->passes[stats->n_passes - 1];
}

/* ---- step lists ---- */

#define MB_MAX_STEPS 64

typedef struct step {
  const mb_pass *pass;
  bool from_alias; /* came from "optimize": may be skipped */
} step;

/* Appends the passes of a comma list (without aliases when nested). */
static mb_status parse_steps(const char *list, bool allow_alias, step *steps,
                             int *n_steps, mb_error *err) {
  const char *p = list;
  while (*p) {
    char name[64];
    size_t len = 0;
    while (*p == ',' || isspace((unsigned char)*p))
      p++;
    if (!*p)
      break;
    while (*p && *p != ',' && !isspace((unsigned char)*p)) {
      if (len + 1 < sizeof name)
        name[len] = *p;
      len++;
      p++;
    }
    name[len < sizeof name ? len : sizeof name - 1] = '\0';
    if (allow_alias && strcmp(name, "optimize") == 0) {
      mb_status status =
          parse_steps(MB_PASS_OPTIMIZE_STEPS, false, steps, n_steps, err);
      if (status)
        return status;
      continue;
    }
    const mb_pass *pass = mb__pass_find(name);
    if (!pass) {
      char known[512];
      size_t used = 0;
      known[0] = '\0';
      for (int i = 0; i < mb__pass_count() && used < sizeof known; i++)
        used += (size_t)snprintf(known + used, sizeof known - used, "%s, ",
                                 mb__pass_at(i)->name);
      return mb__error(err, MB_STATUS_NOT_FOUND,
                       "unknown pass '%s' (known: %soptimize)", name, known);
    }
    if (*n_steps == MB_MAX_STEPS)
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "at most %d passes per list", MB_MAX_STEPS);
    steps[*n_steps].pass = pass;
    steps[*n_steps].from_alias = !allow_alias;
    (*n_steps)++;
  }
  return MB_STATUS_OK;
}

/* Whether every graph input has a concrete shape (given or declared); the
 * reason into why_out when not. */
static bool input_shapes_known(const mb_model *model,
                               const mb_pass_options *opt, mb_error *why_out) {
  int n = model->graph->n_inputs;
  mb_tensor *shapes = calloc((size_t)n + 1, sizeof *shapes);
  if (!shapes) {
    mb__error(why_out, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    return false;
  }
  bool known = mb__edit_input_shapes(model, opt, true, shapes, why_out) == 0;
  free(shapes);
  return known;
}

static int64_t param_bytes(const mb_model *model) {
  int64_t count = 0, bytes = 0;
  mb__graph_param_stats(model->graph, &count, &bytes);
  return bytes;
}

mb_status mb__passes_run(mb_model *model, const char *steps_list,
                         const mb_pass_options *opt, mb_pass_stats *stats,
                         mb_error *err) {
  static const mb_pass_options defaults;
  step steps[MB_MAX_STEPS];
  int n_steps = 0;
  mb_pass_stats local;
  mb_status status;

  if (!model || !steps_list)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "mb__passes_run: model and steps are required");
  if (!opt)
    opt = &defaults;
  if (!stats) {
    memset(&local, 0, sizeof local);
    stats = &local;
  }
  if ((status = parse_steps(steps_list, true, steps, &n_steps, err)))
    return status;
  if (stats->n_passes == 0) {
    stats->nodes_before = model->graph->n_nodes;
    stats->param_bytes_before = param_bytes(model);
  }
  for (int i = 0; i < n_steps; i++) {
    const mb_pass *pass = steps[i].pass;
    /* Runs beyond the table still run; they share its last record. */
    if (stats->n_passes == MB_PASS_STATS_MAX)
      stats->n_passes--;
    mb_pass_record *rec = &stats->passes[stats->n_passes++];
    memset(rec, 0, sizeof *rec);
    snprintf(rec->name, sizeof rec->name, "%s", pass->name);
    rec->nodes_before = rec->nodes_after = model->graph->n_nodes;
    mb_error why = {0};
    if (steps[i].from_alias && pass == &mb__pass_simplify_shapes &&
        !input_shapes_known(model, opt, &why)) {
      snprintf(rec->detail, sizeof rec->detail, "skipped: %.200s", why.message);
    } else {
      if ((status = pass->run(model, opt, stats, err)))
        return mb__error_prefix(err, status, "pass '%s'", pass->name);
      mb__edit_drop_orphans(model->graph);
      if ((status = mb__graph_finalize(model->graph, err))) {
        mb__error_prefix(err, status, "pass '%s' left an invalid graph",
                         pass->name);
        if (err)
          err->status = MB_STATUS_INTERNAL;
        return MB_STATUS_INTERNAL;
      }
    }
    rec->nodes_after = model->graph->n_nodes;
  }
  stats->nodes_after = model->graph->n_nodes;
  stats->param_bytes_after = param_bytes(model);
  return MB_STATUS_OK;
}

mb_status mb__convert_model(const mb_model *in, const char *steps,
                            const mb_pass_options *opt, mb_model **out,
                            mb_pass_stats *stats, mb_error *err) {
  mb_model *copy = NULL;
  mb_status status = mb__model_clone(in, &copy, err);
  if (status)
    return status;
  if ((status = mb__passes_run(copy, steps, opt, stats, err))) {
    mb_model_free(copy);
    return status;
  }
  /* The copy no longer matches the file: a runtime that loads by path must
   * get the copy's bytes (mb__model_serialize) instead. */
  copy->path = NULL;
  *out = copy;
  return MB_STATUS_OK;
}

const char *mb__pass_stats_summary(const mb_pass_stats *stats, char *buf,
                                   size_t size) {
  size_t used = 0;
  if (!size)
    return buf;
  buf[0] = '\0';
  for (int i = 0; i < stats->n_passes && used < size; i++) {
    const mb_pass_record *r = &stats->passes[i];
    used += (size_t)snprintf(
        buf + used, size - used, "%s%s %lld (%d->%d nodes)%s%s", i ? "; " : "",
        r->name, (long long)r->changed, r->nodes_before, r->nodes_after,
        r->detail[0] ? ": " : "", r->detail);
  }
  return buf;
}
