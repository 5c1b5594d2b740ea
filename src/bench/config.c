/* Benchmark configuration: defaults and the JSON config file.
 *
 * A config file's keys are the long CLI option names with '_' for '-', so
 * that what users learn from --help carries over. Every key is one row of
 * the table below. Loading is all-or-nothing: values are staged on a copy of
 * the config, checked, and only then copied back, with every string and
 * array the config points to packed into one malloc'd block. */
#include "bench/bench_internal.h"
#include "core/json_parse.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

void mb_bench_config_init(mb_bench_config *config) {
  memset(config, 0, sizeof *config);
  config->batch_size = 1;
  config->n_samples = 1;
  config->device = MB_DEVICE_CPU;
  config->allow_device_override = 0;
  config->isolate = 1;
  config->fail_fast = 0;
  config->build_only = 0;
  config->threads = 1;
  config->roofline = 1;
  config->segments = 1;
  config->warmup_iterations = 5;
  config->warmup_seconds = 0.5;
  config->min_iterations = 20;
  config->min_seconds = 2.0;
  config->max_seconds = 30.0;
  config->timeout_seconds = 300.0;
  config->seed = 0;
  config->rtol = 1e-3;
  config->atol = 1e-4;
  config->baseline = -1;
  config->reference = -1;
  config->log_level = (int)mb__log_get_level(); /* honours MODELBENCH_LOG */
  config->load.scenario = MB_LOAD_NONE;
  config->load.concurrency = 1;
  config->load.min_duration = 10.0;
  config->load.min_queries = 100;
  config->load.qps_tolerance = 0.1;
}

/* ---- staging ---- */

/* What a file sets that needs storage; pointers borrow from the parsed
 * document or from the scratch arrays here until pack() copies them. */
typedef struct staged {
  mb_bench_config config;
  const char *path;
  int *conversions; /* scratch, malloc'd */
  mb_input_shape *shapes;
  mb_input_range *ranges;
  mb_dim_value *dims;
  const char **keep_float;       /* into the document or keep_float_text */
  char *keep_float_text;         /* the comma-separated form, split in place */
  const mb_json_value *baseline; /* resolved once conversions are known */
} staged;

typedef mb_status (*key_fn)(staged *s, const char *key, const mb_json_value *v,
                            mb_error *err);

typedef enum key_kind { KEY_INT, KEY_DOUBLE, KEY_BOOL, KEY_CUSTOM } key_kind;

typedef struct config_key {
  const char *name;
  key_kind kind;
  size_t offset; /* of the int / double field for the plain kinds */
  double min;    /* smallest accepted value */
  bool min_exclusive;
  double max;
  const char *unit; /* " seconds" in messages, or "" */
  key_fn custom;
} config_key;

static mb_status key_error(const staged *s, const mb_json_value *v,
                           mb_error *err, const char *fmt, ...) MB_PRINTF(4, 5);
static mb_status key_error(const staged *s, const mb_json_value *v,
                           mb_error *err, const char *fmt, ...) {
  char msg[MB_ERROR_MESSAGE_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mb__error(err, MB_STATUS_INVALID_ARGUMENT, "%s:%d:%d: %s", s->path,
                   v->line, v->column, msg);
}

/* "string", "number 2.5", "boolean" for type errors. */
static const char *describe(const mb_json_value *v, char *buf, size_t size) {
  if (v->type == MB_JSON_NUMBER)
    snprintf(buf, size, "number %g", v->number);
  else
    snprintf(buf, size, "%s", mb__json_type_name(v->type));
  return buf;
}

static mb_status check_range(const staged *s, const config_key *k,
                             const mb_json_value *v, double x, mb_error *err) {
  bool low = k->min_exclusive ? !(x > k->min) : !(x >= k->min);
  if (low || x > k->max) {
    char range[96];
    if (k->max < 1e300)
      snprintf(range, sizeof range, "between %g and %g%s", k->min, k->max,
               k->unit);
    else
      snprintf(range, sizeof range, "%s %g%s",
               k->min_exclusive ? ">" : ">=", k->min, k->unit);
    return key_error(s, v, err, "key '%s' must be %s, got %g", k->name, range,
                     x);
  }
  return MB_STATUS_OK;
}

static mb_status set_plain(staged *s, const config_key *k,
                           const mb_json_value *v, mb_error *err) {
  char got[64];
  char *field = (char *)&s->config + k->offset;
  mb_status status;
  switch (k->kind) {
  case KEY_INT:
    if (v->type != MB_JSON_NUMBER || !v->is_integer)
      return key_error(s, v, err, "key '%s' must be an integer, got %s",
                       k->name, describe(v, got, sizeof got));
    if ((status = check_range(s, k, v, (double)v->integer, err)))
      return status;
    *(int *)(void *)field = (int)v->integer;
    return MB_STATUS_OK;
  case KEY_DOUBLE:
    if (v->type != MB_JSON_NUMBER)
      return key_error(s, v, err, "key '%s' must be a number, got %s", k->name,
                       describe(v, got, sizeof got));
    if ((status = check_range(s, k, v, v->number, err)))
      return status;
    *(double *)(void *)field = v->number;
    return MB_STATUS_OK;
  case KEY_BOOL:
    if (v->type != MB_JSON_BOOL)
      return key_error(s, v, err, "key '%s' must be true or false, got %s",
                       k->name, describe(v, got, sizeof got));
    *(int *)(void *)field = v->boolean ? 1 : 0;
    return MB_STATUS_OK;
  case KEY_CUSTOM:
    break;
  }
  return MB_STATUS_INTERNAL;
}

/* ---- keys that are not plain numbers ---- */

static mb_status set_device(staged *s, const char *key, const mb_json_value *v,
                            mb_error *err) {
  char got[64];
  if (v->type == MB_JSON_STRING)
    for (int d = 0; d < MB_DEVICE_COUNT; d++)
      if (strcmp(v->string, mb_device_name((mb_device)d)) == 0) {
        s->config.device = (mb_device)d;
        return MB_STATUS_OK;
      }
  return key_error(s, v, err,
                   "key '%s' must be \"cpu\", \"cuda\" or "
                   "\"auto\", got %s%s%s%s",
                   key, describe(v, got, sizeof got),
                   v->type == MB_JSON_STRING ? " '" : "",
                   v->type == MB_JSON_STRING ? v->string : "",
                   v->type == MB_JSON_STRING ? "'" : "");
}

static mb_status set_log_level(staged *s, const char *key,
                               const mb_json_value *v, mb_error *err) {
  static const char *const names[] = {"error", "warn", "info", "debug"};
  char got[64];
  if (v->type == MB_JSON_STRING)
    for (size_t i = 0; i < MB_ARRAY_COUNT(names); i++)
      if (strcmp(v->string, names[i]) == 0) {
        s->config.log_level = (int)i;
        return MB_STATUS_OK;
      }
  return key_error(s, v, err,
                   "key '%s' must be \"error\", \"warn\", \"info\" or "
                   "\"debug\", got %s",
                   key, describe(v, got, sizeof got));
}

static mb_status set_seed(staged *s, const char *key, const mb_json_value *v,
                          mb_error *err) {
  char got[64];
  if (v->type != MB_JSON_NUMBER || !v->is_integer)
    return key_error(s, v, err, "key '%s' must be an integer, got %s", key,
                     describe(v, got, sizeof got));
  if (v->integer < 0)
    return key_error(s, v, err, "key '%s' must be >= 0, got %lld", key,
                     (long long)v->integer);
  s->config.seed = (uint64_t)v->integer;
  return MB_STATUS_OK;
}

/* 7, 8, "7", "8", "mixed" or "auto" (what each conversion's runtime
 * picks here). */
static mb_status set_int8_weights(staged *s, const char *key,
                                  const mb_json_value *v, mb_error *err) {
  char got[64];
  int w = v->type == MB_JSON_STRING ? mb_int8_weights_from_name(v->string)
          : v->is_integer && v->integer == 7 ? MB_INT8_WEIGHTS_W7
          : v->is_integer && v->integer == 8 ? MB_INT8_WEIGHTS_W8
                                             : -1;
  if (w < 0)
    return key_error(s, v, err,
                     "key '%s' must be 7, 8, \"mixed\" or \"auto\", got %s",
                     key, describe(v, got, sizeof got));
  s->config.int8_weights = (mb_int8_weights)w;
  return MB_STATUS_OK;
}

mb_status mb__ci_target_parse(const char *text, double *share_out,
                              mb_error *err) {
  char *end = NULL;
  double v = text ? strtod(text, &end) : NAN;
  bool percent = end && *end == '%';
  if (end && percent)
    end++;
  if (!text || end == text || !end || *end || !isfinite(v) || v <= 0 ||
      v >= (percent ? 100 : 1))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "ci target '%s': expected a share of the median such as "
                     "2%% or 0.02 (above 0, below 100%%)",
                     text ? text : "");
  *share_out = percent ? v / 100 : v;
  return MB_STATUS_OK;
}

/* 0.02 or "2%". */
static mb_status set_ci_target(staged *s, const char *key,
                               const mb_json_value *v, mb_error *err) {
  char got[64], text[64];
  if (v->type == MB_JSON_NUMBER)
    snprintf(text, sizeof text, "%.17g", v->number);
  else if (v->type == MB_JSON_STRING && v->string_len < sizeof text)
    snprintf(text, sizeof text, "%s", v->string);
  else
    return key_error(s, v, err,
                     "key '%s' must be a share such as \"2%%\" "
                     "or 0.02, got %s",
                     key, describe(v, got, sizeof got));
  mb_error parse_err = {0};
  if (mb__ci_target_parse(text, &s->config.ci_target, &parse_err))
    return key_error(s, v, err, "key '%s': %s", key, parse_err.message);
  return MB_STATUS_OK;
}

/* Nodes int8 conversions leave in float32: an array of node names or the
 * CLI's comma-separated string. Whether the model has them is checked when
 * the model is open. */
static mb_status set_keep_float(staged *s, const char *key,
                                const mb_json_value *v, mb_error *err) {
  char got[64];
  size_t n = 0, max = 0;
  if (v->type == MB_JSON_STRING) {
    free(s->keep_float_text);
    if (!(s->keep_float_text = strdup(v->string)))
      return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory",
                       s->path);
    max = 1;
    for (const char *c = v->string; *c; c++)
      max += *c == ',';
  } else if (v->type == MB_JSON_ARRAY) {
    max = v->count;
  } else {
    return key_error(s, v, err,
                     "key '%s' must be an array of node names or a "
                     "comma-separated string, got %s",
                     key, describe(v, got, sizeof got));
  }
  const char **names = malloc(sizeof *names * (max ? max : 1));
  if (!names)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory",
                     s->path);
  if (v->type == MB_JSON_STRING) {
    char *save = NULL;
    for (char *t = strtok_r(s->keep_float_text, ",", &save); t;
         t = strtok_r(NULL, ",", &save))
      names[n++] = t;
  } else {
    for (size_t i = 0; i < v->count; i++) {
      const mb_json_value *item = &v->items[i];
      if (item->type != MB_JSON_STRING || item->string_len == 0 ||
          strlen(item->string) != item->string_len) {
        free(names);
        return key_error(s, item, err,
                         "key '%s': entry %zu must be a node name, got %s", key,
                         i, describe(item, got, sizeof got));
      }
      names[n++] = item->string;
    }
  }
  free(s->keep_float);
  s->keep_float = names;
  s->config.keep_float = names;
  s->config.n_keep_float = (int)n;
  return MB_STATUS_OK;
}

/* Strings the config keeps (paths): non-empty, no NUL inside. */
static mb_status get_path(staged *s, const char *key, const mb_json_value *v,
                          const char **out, mb_error *err) {
  char got[64];
  if (v->type != MB_JSON_STRING)
    return key_error(s, v, err, "key '%s' must be a string, got %s", key,
                     describe(v, got, sizeof got));
  if (v->string_len == 0 || strlen(v->string) != v->string_len)
    return key_error(s, v, err, "key '%s' must be a non-empty path", key);
  *out = v->string;
  return MB_STATUS_OK;
}

static mb_status set_inputs(staged *s, const char *key, const mb_json_value *v,
                            mb_error *err) {
  return get_path(s, key, v, &s->config.inputs_dir, err);
}

static mb_status set_log_dir(staged *s, const char *key, const mb_json_value *v,
                             mb_error *err) {
  return get_path(s, key, v, &s->config.log_dir, err);
}

/* One conversion given by name (string) or id (integer). */
static mb_status find_conversion(staged *s, const char *key,
                                 const mb_json_value *v, int *index_out,
                                 mb_error *err) {
  char got[64], id[32];
  mb_error find_err;
  const char *name = NULL;
  if (v->type == MB_JSON_STRING) {
    name = v->string;
  } else if (v->type == MB_JSON_NUMBER && v->is_integer) {
    snprintf(id, sizeof id, "%lld", (long long)v->integer);
    name = id;
  } else {
    return key_error(s, v, err,
                     "key '%s': a conversion is a name or an id, got %s", key,
                     describe(v, got, sizeof got));
  }
  if (mb_conversion_find(name, index_out, &find_err) != MB_STATUS_OK)
    return key_error(s, v, err, "key '%s': %s", key, find_err.message);
  return MB_STATUS_OK;
}

static mb_status set_conversions(staged *s, const char *key,
                                 const mb_json_value *v, mb_error *err) {
  int max = mb_conversion_count();
  int *list = malloc(sizeof *list * (size_t)(max > 0 ? max : 1));
  int count = 0;
  mb_error list_err;
  char got[64];
  mb_status status = MB_STATUS_OK;
  if (!list)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory",
                     s->path);
  if (v->type == MB_JSON_STRING) {
    /* The CLI's comma-separated form, for configs written from scripts. */
    if (mb_conversion_parse_list(v->string, list, max, &count, &list_err))
      status = key_error(s, v, err, "key '%s': %s", key, list_err.message);
  } else if (v->type == MB_JSON_ARRAY) {
    if (v->count == 0)
      status = key_error(s, v, err,
                         "key '%s' is empty (leave it out to run the default "
                         "set)",
                         key);
    for (size_t i = 0; status == MB_STATUS_OK && i < v->count; i++) {
      int index;
      status = find_conversion(s, key, &v->items[i], &index, err);
      for (int k = 0; status == MB_STATUS_OK && k < count; k++)
        if (list[k] == index)
          status =
              key_error(s, &v->items[i], err, "key '%s': %s is listed twice",
                        key, mb__conversion_def(index)->name);
      if (status == MB_STATUS_OK && count == max)
        status = key_error(s, &v->items[i], err,
                           "key '%s': more than %d entries", key, max);
      if (status == MB_STATUS_OK)
        list[count++] = index;
    }
  } else {
    status = key_error(s, v, err,
                       "key '%s' must be an array of conversion names or a "
                       "comma-separated string, got %s",
                       key, describe(v, got, sizeof got));
  }
  if (status != MB_STATUS_OK) {
    free(list);
    return status;
  }
  free(s->conversions);
  s->conversions = list;
  s->config.conversions = list;
  s->config.n_conversions = count;
  return MB_STATUS_OK;
}

static mb_status set_baseline(staged *s, const char *key,
                              const mb_json_value *v, mb_error *err) {
  int index;
  mb_status status = find_conversion(s, key, v, &index, err);
  if (status == MB_STATUS_OK)
    s->baseline = v; /* its position is known once "conversions" is read */
  return status;
}

static mb_status set_shapes(staged *s, const char *key, const mb_json_value *v,
                            mb_error *err) {
  char got[64];
  if (v->type != MB_JSON_OBJECT)
    return key_error(s, v, err,
                     "key '%s' must be an object such as {\"input\": [1, 3, "
                     "224, 224]}, got %s",
                     key, describe(v, got, sizeof got));
  mb_input_shape *shapes = calloc(v->count ? v->count : 1, sizeof *shapes);
  if (!shapes)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory",
                     s->path);
  for (size_t i = 0; i < v->count; i++) {
    const mb_json_member *m = &v->members[i];
    const mb_json_value *dims = &m->value;
    mb_input_shape *shape = &shapes[i];
    shape->name = m->key;
    if (dims->type != MB_JSON_ARRAY || dims->count > MB_MAX_RANK)
      goto bad;
    shape->rank = (int)dims->count;
    for (size_t d = 0; d < dims->count; d++) {
      const mb_json_value *dim = &dims->items[d];
      if (dim->type != MB_JSON_NUMBER || !dim->is_integer || dim->integer < 0)
        goto bad;
      shape->dims[d] = dim->integer;
    }
    continue;
  bad:
    free(shapes);
    return key_error(s, dims, err,
                     "key '%s': input '%s' must have an array of at most %d "
                     "non-negative integers",
                     key, m->key, MB_MAX_RANK);
  }
  free(s->shapes);
  s->shapes = shapes;
  s->config.shapes.shapes = shapes;
  s->config.shapes.n_shapes = (int)v->count;
  return MB_STATUS_OK;
}

static mb_status set_input_ranges(staged *s, const char *key,
                                  const mb_json_value *v, mb_error *err) {
  char got[64];
  if (v->type != MB_JSON_OBJECT)
    return key_error(s, v, err,
                     "key '%s' must be an object such as {\"ids\": [0, "
                     "30000]}, got %s",
                     key, describe(v, got, sizeof got));
  mb_input_range *ranges = calloc(v->count ? v->count : 1, sizeof *ranges);
  if (!ranges)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory",
                     s->path);
  for (size_t i = 0; i < v->count; i++) {
    const mb_json_member *m = &v->members[i];
    const mb_json_value *r = &m->value;
    if (r->type != MB_JSON_ARRAY || r->count != 2 ||
        r->items[0].type != MB_JSON_NUMBER ||
        r->items[1].type != MB_JSON_NUMBER ||
        !(r->items[0].number <= r->items[1].number)) {
      free(ranges);
      return key_error(s, r, err,
                       "key '%s': input '%s' must have [LO, HI] with LO <= "
                       "HI",
                       key, m->key);
    }
    /* "*" is the range of every input without one of its own. */
    ranges[i].name = strcmp(m->key, "*") == 0 ? NULL : m->key;
    ranges[i].lo = r->items[0].number;
    ranges[i].hi = r->items[1].number;
  }
  free(s->ranges);
  s->ranges = ranges;
  s->config.ranges = ranges;
  s->config.n_ranges = (int)v->count;
  return MB_STATUS_OK;
}

static mb_status set_scenario(staged *s, const char *key,
                              const mb_json_value *v, mb_error *err) {
  char got[64];
  mb_error parse_err;
  if (v->type != MB_JSON_STRING)
    return key_error(s, v, err, "key '%s' must be a string, got %s", key,
                     describe(v, got, sizeof got));
  if (mb_load_scenario_parse(v->string, &s->config.load.scenario, &parse_err) !=
      MB_STATUS_OK)
    return key_error(s, v, err, "key '%s': %s", key, parse_err.message);
  return MB_STATUS_OK;
}

static mb_status set_min_queries(staged *s, const char *key,
                                 const mb_json_value *v, mb_error *err) {
  char got[64];
  if (v->type != MB_JSON_NUMBER || !v->is_integer || v->integer < 1)
    return key_error(s, v, err, "key '%s' must be an integer >= 1, got %s", key,
                     describe(v, got, sizeof got));
  s->config.load.min_queries = v->integer;
  return MB_STATUS_OK;
}

/* "slo": {"p99": 20} (milliseconds) or the CLI's "p99=20ms". */
static mb_status set_slo(staged *s, const char *key, const mb_json_value *v,
                         mb_error *err) {
  char got[64];
  double percentile = 0, ms = 0;
  mb_error parse_err;
  if (v->type == MB_JSON_STRING) {
    if (mb__slo_parse(v->string, &percentile, &ms, &parse_err) != MB_STATUS_OK)
      return key_error(s, v, err, "key '%s': %s", key, parse_err.message);
  } else if (v->type == MB_JSON_OBJECT && v->count == 1 &&
             v->members[0].value.type == MB_JSON_NUMBER) {
    char text[96];
    snprintf(text, sizeof text, "%s=%.17gms", v->members[0].key,
             v->members[0].value.number);
    if (mb__slo_parse(text, &percentile, &ms, &parse_err) != MB_STATUS_OK)
      return key_error(s, v, err, "key '%s': %s", key, parse_err.message);
  } else {
    return key_error(
        s, v, err,
        "key '%s' must be {\"p99\": MILLISECONDS} or \"p99=20ms\", "
        "got %s",
        key, describe(v, got, sizeof got));
  }
  s->config.load.slo_percentile = percentile;
  s->config.load.slo_ms = ms;
  return MB_STATUS_OK;
}

/* "dims": {"seq": 128}: every symbolic dimension of that name. */
static mb_status set_dims(staged *s, const char *key, const mb_json_value *v,
                          mb_error *err) {
  char got[64];
  if (v->type != MB_JSON_OBJECT)
    return key_error(s, v, err,
                     "key '%s' must be an object such as {\"seq\": 128}, got "
                     "%s",
                     key, describe(v, got, sizeof got));
  mb_dim_value *dims = calloc(v->count ? v->count : 1, sizeof *dims);
  if (!dims)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory",
                     s->path);
  for (size_t i = 0; i < v->count; i++) {
    const mb_json_value *d = &v->members[i].value;
    if (d->type != MB_JSON_NUMBER || !d->is_integer || d->integer < 0) {
      free(dims);
      return key_error(s, d, err,
                       "key '%s': dimension '%s' must be a non-negative "
                       "integer",
                       key, v->members[i].key);
    }
    dims[i].name = v->members[i].key;
    dims[i].value = d->integer;
  }
  free(s->dims);
  s->dims = dims;
  s->config.shapes.dims = dims;
  s->config.shapes.n_dims = (int)v->count;
  return MB_STATUS_OK;
}

#define FIELD(f) offsetof(mb_bench_config, f)
#define NO_MAX 1e308

static const config_key keys[] = {
    {"batch_size", KEY_INT, FIELD(batch_size), 1, false, 1 << 30, "", NULL},
    {"n_samples", KEY_INT, FIELD(n_samples), 1, false, 1 << 20, "", NULL},
    {"device", KEY_CUSTOM, 0, 0, false, 0, "", set_device},
    {"allow_device_override", KEY_BOOL, FIELD(allow_device_override), 0, false,
     0, "", NULL},
    {"isolate", KEY_BOOL, FIELD(isolate), 0, false, 0, "", NULL},
    {"fail_fast", KEY_BOOL, FIELD(fail_fast), 0, false, 0, "", NULL},
    {"roofline", KEY_BOOL, FIELD(roofline), 0, false, 0, "", NULL},
    {"build_only", KEY_BOOL, FIELD(build_only), 0, false, 0, "", NULL},
    {"threads", KEY_INT, FIELD(threads), 1, false, 1024, "", NULL},
    {"warmup", KEY_INT, FIELD(warmup_iterations), 0, false, 1 << 30, "", NULL},
    {"warmup_time", KEY_DOUBLE, FIELD(warmup_seconds), 0, false, NO_MAX,
     " seconds", NULL},
    {"min_iterations", KEY_INT, FIELD(min_iterations), 1, false, 1 << 30, "",
     NULL},
    {"min_time", KEY_DOUBLE, FIELD(min_seconds), 0, false, NO_MAX, " seconds",
     NULL},
    {"max_time", KEY_DOUBLE, FIELD(max_seconds), 0, true, NO_MAX, " seconds",
     NULL},
    {"timeout", KEY_DOUBLE, FIELD(timeout_seconds), 0, true, NO_MAX, " seconds",
     NULL},
    {"ci_target", KEY_CUSTOM, 0, 0, false, 0, "", set_ci_target},
    {"fresh_inputs", KEY_BOOL, FIELD(fresh_inputs), 0, false, 0, "", NULL},
    {"cold_cache", KEY_BOOL, FIELD(cold_cache), 0, false, 0, "", NULL},
    {"seed", KEY_CUSTOM, 0, 0, false, 0, "", set_seed},
    {"conversions", KEY_CUSTOM, 0, 0, false, 0, "", set_conversions},
    {"baseline", KEY_CUSTOM, 0, 0, false, 0, "", set_baseline},
    {"shapes", KEY_CUSTOM, 0, 0, false, 0, "", set_shapes},
    {"dims", KEY_CUSTOM, 0, 0, false, 0, "", set_dims},
    {"input_ranges", KEY_CUSTOM, 0, 0, false, 0, "", set_input_ranges},
    {"inputs", KEY_CUSTOM, 0, 0, false, 0, "", set_inputs},
    {"int8_weights", KEY_CUSTOM, 0, 0, false, 0, "", set_int8_weights},
    {"keep_float", KEY_CUSTOM, 0, 0, false, 0, "", set_keep_float},
    {"rtol", KEY_DOUBLE, FIELD(rtol), 0, false, NO_MAX, "", NULL},
    {"atol", KEY_DOUBLE, FIELD(atol), 0, false, NO_MAX, "", NULL},
    {"log_dir", KEY_CUSTOM, 0, 0, false, 0, "", set_log_dir},
    {"log_level", KEY_CUSTOM, 0, 0, false, 0, "", set_log_level},
    {"scenario", KEY_CUSTOM, 0, 0, false, 0, "", set_scenario},
    {"qps", KEY_DOUBLE, FIELD(load.qps), 0, false, NO_MAX, "", NULL},
    {"concurrency", KEY_INT, FIELD(load.concurrency), 1, false,
     MB_LOAD_MAX_CONCURRENCY, "", NULL},
    {"min_duration", KEY_DOUBLE, FIELD(load.min_duration), 0, false, NO_MAX,
     " seconds", NULL},
    {"min_queries", KEY_CUSTOM, 0, 0, false, 0, "", set_min_queries},
    {"qps_tolerance", KEY_DOUBLE, FIELD(load.qps_tolerance), 0, false, 0.99, "",
     NULL},
    {"slo", KEY_CUSTOM, 0, 0, false, 0, "", set_slo},
    {"find_peak", KEY_BOOL, FIELD(load.find_peak), 0, false, 0, "", NULL},
    {"cold", KEY_BOOL, FIELD(cold), 0, false, 0, "", NULL},
    {"price_per_core_hour", KEY_DOUBLE, FIELD(price_per_core_hour), 0, false,
     NO_MAX, "", NULL},
};

static mb_status unknown_key(const staged *s, const mb_json_member *m,
                             mb_error *err) {
  const char *best = NULL;
  int best_distance = MB_MAX(2, (int)m->key_len / 3) + 1;
  for (size_t i = 0; i < MB_ARRAY_COUNT(keys); i++) {
    int d = mb__edit_distance(m->key, keys[i].name);
    if (d < best_distance) {
      best_distance = d;
      best = keys[i].name;
    }
  }
  if (best)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "%s:%d:%d: unknown key '%s' (did you mean %s?)", s->path,
                     m->line, m->column, m->key, best);
  return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                   "%s:%d:%d: unknown key '%s' (see 'modelbench bench "
                   "--help': keys are the long options with '_' for '-')",
                   s->path, m->line, m->column, m->key);
}

/* Turns the baseline's conversion into its position in the run list (the
 * file's or caller's conversions, else the default set in table order). */
static mb_status resolve_baseline(staged *s, mb_error *err) {
  int index;
  if (!s->baseline)
    return MB_STATUS_OK;
  mb_status status = find_conversion(s, "baseline", s->baseline, &index, err);
  if (status != MB_STATUS_OK)
    return status;
  int position = 0;
  if (s->config.n_conversions > 0) {
    for (int i = 0; i < s->config.n_conversions; i++, position++)
      if (s->config.conversions[i] == index) {
        s->config.baseline = position;
        return MB_STATUS_OK;
      }
  } else {
    for (int i = 0; i < mb_conversion_count(); i++) {
      if (!mb__conversion_def(i)->in_default_set)
        continue;
      if (i == index) {
        s->config.baseline = position;
        return MB_STATUS_OK;
      }
      position++;
    }
  }
  return key_error(s, s->baseline, err,
                   "key 'baseline': %s is not among the conversions run",
                   mb__conversion_def(index)->name);
}

/* Bytes a string needs in the storage block. */
static size_t string_size(const char *str) {
  return str ? strlen(str) + 1 : 0;
}

static char *pack_string(char **cursor, const char *str) {
  if (!str)
    return NULL;
  size_t n = strlen(str) + 1;
  char *dst = *cursor;
  memcpy(dst, str, n);
  *cursor += n;
  return dst;
}

/* Copies everything the staged config borrows from the document into one
 * block: structs first (they need the alignment malloc gives), then ints,
 * then characters. Only fields the file set are moved; others keep the
 * caller's pointers. */
static mb_status pack(staged *s, const mb_bench_config *original,
                      void **storage_out, mb_error *err) {
  mb_bench_config *c = &s->config;
  bool own_inputs = c->inputs_dir != original->inputs_dir;
  bool own_log_dir = c->log_dir != original->log_dir;
  size_t n_shapes = s->shapes ? (size_t)c->shapes.n_shapes : 0;
  size_t n_ranges = s->ranges ? (size_t)c->n_ranges : 0;
  size_t n_conv = s->conversions ? (size_t)c->n_conversions : 0;
  size_t n_dims = s->dims ? (size_t)c->shapes.n_dims : 0;
  size_t n_kept = s->keep_float ? (size_t)c->n_keep_float : 0;
  size_t bytes = n_kept * sizeof(const char *) +
                 n_shapes * sizeof(mb_input_shape) +
                 n_ranges * sizeof(mb_input_range) +
                 n_dims * sizeof(mb_dim_value) + n_conv * sizeof(int);
  for (size_t i = 0; i < n_dims; i++)
    bytes += string_size(s->dims[i].name);
  for (size_t i = 0; i < n_kept; i++)
    bytes += string_size(s->keep_float[i]);
  for (size_t i = 0; i < n_shapes; i++)
    bytes += string_size(s->shapes[i].name);
  for (size_t i = 0; i < n_ranges; i++)
    bytes += string_size(s->ranges[i].name);
  if (own_inputs)
    bytes += string_size(c->inputs_dir);
  if (own_log_dir)
    bytes += string_size(c->log_dir);
  *storage_out = NULL;
  if (bytes == 0)
    return MB_STATUS_OK;
  char *block = malloc(bytes), *cursor = block;
  if (!block)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory",
                     s->path);
  const char **kept = NULL;
  if (n_kept) {
    kept = (const char **)(void *)cursor;
    cursor += n_kept * sizeof *kept;
    c->keep_float = kept;
  }
  if (n_shapes) {
    mb_input_shape *shapes = (mb_input_shape *)(void *)cursor;
    memcpy(shapes, s->shapes, n_shapes * sizeof *shapes);
    cursor += n_shapes * sizeof *shapes;
    c->shapes.shapes = shapes;
  }
  if (n_ranges) {
    mb_input_range *ranges = (mb_input_range *)(void *)cursor;
    memcpy(ranges, s->ranges, n_ranges * sizeof *ranges);
    cursor += n_ranges * sizeof *ranges;
    c->ranges = ranges;
  }
  if (n_dims) {
    mb_dim_value *dims = (mb_dim_value *)(void *)cursor;
    memcpy(dims, s->dims, n_dims * sizeof *dims);
    cursor += n_dims * sizeof *dims;
    c->shapes.dims = dims;
  }
  if (n_conv) {
    int *conv = (int *)(void *)cursor;
    memcpy(conv, s->conversions, n_conv * sizeof *conv);
    cursor += n_conv * sizeof *conv;
    c->conversions = conv;
  }
  for (size_t i = 0; i < n_shapes; i++)
    ((mb_input_shape *)(void *)c->shapes.shapes)[i].name =
        pack_string(&cursor, s->shapes[i].name);
  for (size_t i = 0; i < n_ranges; i++)
    ((mb_input_range *)(void *)c->ranges)[i].name =
        pack_string(&cursor, s->ranges[i].name);
  for (size_t i = 0; i < n_dims; i++)
    ((mb_dim_value *)(void *)c->shapes.dims)[i].name =
        pack_string(&cursor, s->dims[i].name);
  for (size_t i = 0; i < n_kept; i++)
    kept[i] = pack_string(&cursor, s->keep_float[i]);
  if (own_inputs)
    c->inputs_dir = pack_string(&cursor, c->inputs_dir);
  if (own_log_dir)
    c->log_dir = pack_string(&cursor, c->log_dir);
  MB_ASSERT(cursor == block + bytes);
  *storage_out = block;
  return MB_STATUS_OK;
}

mb_status mb_bench_config_load_json(const char *path, mb_bench_config *config,
                                    void **storage_out, mb_error *err) {
  mb_json_doc *doc = NULL;
  staged s;
  memset(&s, 0, sizeof s);
  s.config = *config;
  s.path = path;
  mb_status status = mb__json_parse_file(path, &doc, err);
  if (status != MB_STATUS_OK) {
    /* A malformed file is the user's input, like an unknown key. */
    if (status == MB_STATUS_PARSE && err)
      err->status = MB_STATUS_INVALID_ARGUMENT;
    return status == MB_STATUS_PARSE ? MB_STATUS_INVALID_ARGUMENT : status;
  }
  const mb_json_value *root = &doc->root;
  if (root->type != MB_JSON_OBJECT) {
    status = key_error(&s, root, err,
                       "a config file holds one JSON object, "
                       "got %s",
                       mb__json_type_name(root->type));
    goto done;
  }
  for (size_t i = 0; i < root->count; i++) {
    const mb_json_member *m = &root->members[i];
    const config_key *k = NULL;
    for (size_t j = 0; j < MB_ARRAY_COUNT(keys) && !k; j++)
      if (strcmp(keys[j].name, m->key) == 0)
        k = &keys[j];
    if (!k)
      status = unknown_key(&s, m, err);
    else if (k->kind == KEY_CUSTOM)
      status = k->custom(&s, k->name, &m->value, err);
    else
      status = set_plain(&s, k, &m->value, err);
    if (status != MB_STATUS_OK)
      goto done;
  }
  if ((status = resolve_baseline(&s, err)) != MB_STATUS_OK)
    goto done;
  void *storage;
  if ((status = pack(&s, config, &storage, err)) != MB_STATUS_OK)
    goto done;
  *config = s.config;
  *storage_out = storage;

done:
  free(s.conversions);
  free(s.shapes);
  free(s.ranges);
  free(s.dims);
  free(s.keep_float);
  free(s.keep_float_text);
  mb__json_doc_free(doc);
  return status;
}
