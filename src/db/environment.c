/* Flattening a run's "environment" object and diffing two of them (see
 * environment.h). */
#include "db/environment.h"

#include <stdlib.h>

typedef struct flattener {
  mb_arena *arena;
  const char *source;
  mb_error *err;
  mb_env_entry *entries;
  int n, cap;
} flattener;

static mb_status oom(flattener *f) {
  return mb__error(f->err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory",
                   f->source);
}

static mb_status add(flattener *f, const char *key, const char *value,
                     bool variable) {
  if (f->n == f->cap) {
    int cap = f->cap ? f->cap * 2 : 32;
    mb_env_entry *grown =
        mb__arena_alloc(f->arena, sizeof *grown * (size_t)cap);
    if (!grown)
      return oom(f);
    if (f->n)
      memcpy(grown, f->entries, sizeof *grown * (size_t)f->n);
    f->entries = grown;
    f->cap = cap;
  }
  mb_env_entry *e = &f->entries[f->n];
  e->key = mb__arena_strdup(f->arena, key);
  e->value = mb__arena_strdup(f->arena, value);
  e->variable = variable;
  if (!e->key || !e->value)
    return oom(f);
  f->n++;
  return MB_STATUS_OK;
}

/* An array of strings as its words joined by spaces ("avx2 fma"). */
static mb_status join_words(flattener *f, const char *key,
                            const mb_json_value *v, char **out) {
  size_t size = 1;
  for (size_t i = 0; i < v->count; i++) {
    if (v->items[i].type != MB_JSON_STRING)
      return mb__json_value_error(f->err, f->source, &v->items[i],
                                  "environment.%s: expected strings", key);
    size += strlen(v->items[i].string) + 1;
  }
  char *s = mb__arena_alloc(f->arena, size);
  if (!s)
    return oom(f);
  s[0] = '\0';
  for (size_t i = 0; i < v->count; i++) {
    if (i)
      strcat(s, " ");
    strcat(s, v->items[i].string);
  }
  *out = s;
  return MB_STATUS_OK;
}

/* One member: key is "name" or "parent.name"; members of "variables" are
 * environment variables under their own names. */
static mb_status flatten(flattener *f, const char *key, const mb_json_value *v,
                         bool variable) {
  char number[64], *words = NULL;
  const char *value = NULL;
  mb_status status;
  switch (v->type) {
  case MB_JSON_NULL:
    return MB_STATUS_OK; /* not known in this run: not compared */
  case MB_JSON_STRING:
    value = v->string;
    break;
  case MB_JSON_NUMBER:
    if (v->is_integer)
      snprintf(number, sizeof number, "%lld", (long long)v->integer);
    else
      snprintf(number, sizeof number, "%.17g", v->number);
    value = number;
    break;
  case MB_JSON_BOOL:
    value = v->boolean ? "true" : "false";
    break;
  case MB_JSON_ARRAY:
    if ((status = join_words(f, key, v, &words)))
      return status;
    value = words;
    break;
  case MB_JSON_OBJECT: {
    bool variables = !variable && strcmp(key, "variables") == 0;
    for (size_t i = 0; i < v->count; i++) {
      const mb_json_member *m = &v->members[i];
      size_t size = strlen(key) + strlen(m->key) + 2;
      char *child = mb__arena_alloc(f->arena, size);
      if (!child)
        return oom(f);
      snprintf(child, size, "%s.%s", key, m->key);
      if (variables && m->value.type != MB_JSON_STRING)
        return mb__json_value_error(f->err, f->source, &m->value,
                                    "environment.variables.%s: expected a "
                                    "string",
                                    m->key);
      if ((status =
               flatten(f, variables ? m->key : child, &m->value, variables)))
        return status;
    }
    return MB_STATUS_OK;
  }
  default:
    return mb__json_value_error(f->err, f->source, v,
                                "environment.%s: unexpected value", key);
  }
  return add(f, key, value, variable);
}

mb_status mb__environment_from_json(mb_arena *arena, const mb_json_value *obj,
                                    const char *source,
                                    mb_env_entry **entries_out, int *n_out,
                                    mb_error *err) {
  flattener f = {arena, source, err, NULL, 0, 0};
  if (obj->type != MB_JSON_OBJECT)
    return mb__json_value_error(err, source, obj,
                                "\"environment\": expected an object, found %s",
                                mb__json_type_name(obj->type));
  for (size_t i = 0; i < obj->count; i++) {
    mb_status status =
        flatten(&f, obj->members[i].key, &obj->members[i].value, false);
    if (status)
      return status;
  }
  *entries_out = f.entries;
  *n_out = f.n;
  return MB_STATUS_OK;
}

static const mb_env_entry *find(const mb_env_entry *list, int n,
                                const char *key, bool variable) {
  for (int i = 0; i < n; i++)
    if (list[i].variable == variable && strcmp(list[i].key, key) == 0)
      return &list[i];
  return NULL;
}

static int by_key(const void *pa, const void *pb) {
  return strcmp(((const mb_env_difference *)pa)->key,
                ((const mb_env_difference *)pb)->key);
}

mb_status mb__environment_diff(const mb_env_entry *a, int na,
                               const mb_env_entry *b, int nb,
                               mb_env_difference **out, int *n_out,
                               mb_error *err) {
  int n = 0;
  mb_env_difference *diff = NULL;
  *out = NULL;
  *n_out = 0;
  if (na + nb == 0)
    return MB_STATUS_OK;
  if (!(diff = calloc((size_t)(na + nb), sizeof *diff)))
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "compare: out of memory");
  /* Variables: set on either side, and not to the same value. */
  for (int i = 0; i < na; i++) {
    const mb_env_entry *x = &a[i], *y = find(b, nb, x->key, true);
    if (x->variable && find(a, na, x->key, true) == x &&
        (!y || strcmp(x->value, y->value) != 0))
      diff[n++] =
          (mb_env_difference){x->key, x->value, y ? y->value : NULL, true};
  }
  for (int i = 0; i < nb; i++) {
    const mb_env_entry *y = &b[i];
    if (y->variable && find(b, nb, y->key, true) == y &&
        !find(a, na, y->key, true))
      diff[n++] = (mb_env_difference){y->key, NULL, y->value, true};
  }
  qsort(diff, (size_t)n, sizeof *diff, by_key);
  /* Facts: recorded on both sides and different. */
  for (int i = 0; i < na; i++) {
    const mb_env_entry *x = &a[i], *y = find(b, nb, x->key, false);
    if (!x->variable && y && find(a, na, x->key, false) == x &&
        strcmp(x->value, y->value) != 0)
      diff[n++] = (mb_env_difference){x->key, x->value, y->value, false};
  }
  if (n == 0) {
    free(diff);
    diff = NULL;
  }
  *out = diff;
  *n_out = n;
  return MB_STATUS_OK;
}
