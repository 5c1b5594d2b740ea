/* Serving questions on the command line: the options bench and load share
 * (--sweep, --dim, --slo) and load's own (--scenario, --qps, --concurrency,
 * --min-duration, --min-queries, --qps-tolerance, --find-peak), and the
 * sweep's points.
 *
 * A sweep is the product of its axes, the first axis varying slowest:
 * `--sweep batch=1,4 --sweep threads=1,2` runs batch=1 threads=1, batch=1
 * threads=2, batch=4 threads=1, batch=4 threads=2. Each point is a run of
 * its own (one report per point), so builds are cached per point by their
 * usual keys (shapes are part of them). */
#include "cli/cli_common.h"

#include "bench/bench.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>

/* Axes of one sweep at most (keys are few; dims are named). */
#define MB_CLI_MAX_AXES 16

/* The sweep keys: what each sets, and whether only load takes it. */
static const struct {
  const char *key;
  mb_cli_axis_kind kind;
  bool load_only;
  bool integer;
} axis_keys[] = {
    {"batch", MB_CLI_AXIS_BATCH, false, true},
    {"threads", MB_CLI_AXIS_THREADS, false, true},
    {"concurrency", MB_CLI_AXIS_CONCURRENCY, true, true},
    {"qps", MB_CLI_AXIS_QPS, true, false},
};

static const char *const option_names[MB_CLI_SERVE_COUNT] = {
    [MB_CLI_SERVE_SWEEP] = "--sweep",
    [MB_CLI_SERVE_DIM] = "--dim",
    [MB_CLI_SERVE_SLO] = "--slo",
    [MB_CLI_SERVE_SCENARIO] = "--scenario",
    [MB_CLI_SERVE_QPS] = "--qps",
    [MB_CLI_SERVE_CONCURRENCY] = "--concurrency",
    [MB_CLI_SERVE_MIN_DURATION] = "--min-duration",
    [MB_CLI_SERVE_MIN_QUERIES] = "--min-queries",
    [MB_CLI_SERVE_QPS_TOLERANCE] = "--qps-tolerance",
    [MB_CLI_SERVE_FIND_PEAK] = "--find-peak",
};

static int out_of_memory(void) {
  mb__cli_error(NULL, "out of memory");
  return MB_EXIT_FAILURE;
}

/* "--sweep KEY=V1,V2,...": one axis. */
static int add_axis(mb_cli_serving *s, const char *cmd, char *arg) {
  char *eq = strchr(arg, '=');
  mb_cli_axis axis = {0};
  bool integer = true, load_only = false, found = false;
  if (!eq || eq == arg || !eq[1])
    return mb__cli_usage_error(cmd,
                               "--sweep '%s': expected KEY=V1,V2,... with KEY "
                               "batch, threads, dim:NAME%s",
                               arg, s->load ? ", concurrency or qps" : "");
  *eq = '\0';
  if (strncmp(arg, "dim:", 4) == 0 && arg[4]) {
    axis.kind = MB_CLI_AXIS_DIM;
    axis.dim = arg + 4;
    found = true;
  }
  for (size_t i = 0; !found && i < MB_ARRAY_COUNT(axis_keys); i++)
    if (strcmp(arg, axis_keys[i].key) == 0) {
      axis.kind = axis_keys[i].kind;
      integer = axis_keys[i].integer;
      load_only = axis_keys[i].load_only;
      found = true;
    }
  if (!found)
    return mb__cli_usage_error(cmd,
                               "--sweep %s: unknown key (batch, threads, "
                               "dim:NAME%s)",
                               arg, s->load ? ", concurrency, qps" : "");
  if (load_only && !s->load)
    return mb__cli_usage_error(cmd,
                               "--sweep %s: a load setting; sweep it with "
                               "'modelbench load'",
                               arg);
  if (s->n_axes == MB_CLI_MAX_AXES)
    return mb__cli_usage_error(cmd, "--sweep: at most %d axes",
                               MB_CLI_MAX_AXES);
  for (int a = 0; a < s->n_axes; a++)
    if (s->axes[a].kind == axis.kind &&
        (axis.kind != MB_CLI_AXIS_DIM || strcmp(s->axes[a].dim, axis.dim) == 0))
      return mb__cli_usage_error(cmd, "--sweep %s is given twice", arg);
  int n = 1;
  for (const char *p = eq + 1; *p; p++)
    n += *p == ',';
  if (!(axis.values = calloc((size_t)n, sizeof *axis.values)))
    return out_of_memory();
  char *save = NULL;
  for (char *tok = strtok_r(eq + 1, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    int64_t iv;
    double dv;
    bool ok = integer
                  ? mb__cli_parse_i64(tok, 1, INT_MAX, &iv)
                  : mb__cli_parse_double(tok, &dv) && dv > 0 && isfinite(dv);
    if (axis.kind == MB_CLI_AXIS_CONCURRENCY && ok &&
        iv > MB_LOAD_MAX_CONCURRENCY)
      ok = false;
    if (!ok) {
      free(axis.values);
      return mb__cli_usage_error(cmd, "--sweep %s: '%s' is not %s", arg, tok,
                                 integer ? "a positive integer in range"
                                         : "a number > 0");
    }
    axis.values[axis.n++] = integer ? (double)iv : dv;
  }
  if (axis.n == 0) {
    free(axis.values);
    return mb__cli_usage_error(cmd, "--sweep %s: no values", arg);
  }
  mb_cli_axis *grown =
      realloc(s->axes, sizeof *grown * (size_t)(s->n_axes + 1));
  if (!grown) {
    free(axis.values);
    return out_of_memory();
  }
  s->axes = grown;
  s->axes[s->n_axes++] = axis;
  return MB_EXIT_OK;
}

/* "--dim NAME=V". */
static int add_dim(mb_cli_serving *s, const char *cmd, char *arg) {
  char *eq = strchr(arg, '=');
  int64_t v;
  if (!eq || eq == arg || !mb__cli_parse_i64(eq + 1, 0, INT64_MAX, &v))
    return mb__cli_usage_error(
        cmd, "--dim '%s': expected NAME=N (a symbolic dimension's size)", arg);
  *eq = '\0';
  for (int i = 0; i < s->n_dims; i++)
    if (strcmp(s->dims[i].name, arg) == 0) {
      s->dims[i].value = v; /* the last one wins */
      return MB_EXIT_OK;
    }
  mb_dim_value *grown =
      realloc(s->dims, sizeof *grown * (size_t)(s->n_dims + 1));
  if (!grown)
    return out_of_memory();
  s->dims = grown;
  s->dims[s->n_dims++] = (mb_dim_value){arg, v};
  return MB_EXIT_OK;
}

static int parse_number(const char *cmd, const char *opt, const char *arg,
                        double min, bool exclusive, double max, double *out) {
  double v;
  if (!mb__cli_parse_double(arg, &v) || (exclusive ? v <= min : v < min) ||
      v > max)
    return mb__cli_usage_error(cmd, "%s '%s': expected a number %s %g%s", opt,
                               arg, exclusive ? ">" : ">=", min,
                               max < 1e300 ? " and below 1" : "");
  *out = v;
  return MB_EXIT_OK;
}

int mb__cli_serving_option(mb_cli_serving *s, const char *cmd, int which,
                           char *arg, mb_bench_config *config) {
  mb_load_config *l = &config->load;
  mb_error err;
  int64_t v;
  if (which >= MB_CLI_SERVE_SCENARIO && !s->load) {
    s->load_only = option_names[which];
    return MB_EXIT_OK; /* reported by mb__cli_serving_check */
  }
  switch (which) {
  case MB_CLI_SERVE_SWEEP:
    return add_axis(s, cmd, arg);
  case MB_CLI_SERVE_DIM:
    return add_dim(s, cmd, arg);
  case MB_CLI_SERVE_SLO:
    if (mb__slo_parse(arg, &l->slo_percentile, &l->slo_ms, &err))
      return mb__cli_usage_error(cmd, "--slo: %s", err.message);
    return MB_EXIT_OK;
  case MB_CLI_SERVE_SCENARIO:
    if (mb_load_scenario_parse(arg, &l->scenario, &err) ||
        l->scenario == MB_LOAD_NONE)
      return mb__cli_usage_error(cmd,
                                 "--scenario '%s': expected single-stream, "
                                 "server or offline",
                                 arg);
    return MB_EXIT_OK;
  case MB_CLI_SERVE_QPS:
    return parse_number(cmd, "--qps", arg, 0, true, 1e300, &l->qps);
  case MB_CLI_SERVE_CONCURRENCY:
    if (!mb__cli_parse_i64(arg, 1, MB_LOAD_MAX_CONCURRENCY, &v))
      return mb__cli_usage_error(cmd,
                                 "--concurrency '%s': expected an integer in "
                                 "1..%d",
                                 arg, MB_LOAD_MAX_CONCURRENCY);
    l->concurrency = (int)v;
    return MB_EXIT_OK;
  case MB_CLI_SERVE_MIN_DURATION:
    return parse_number(cmd, "--min-duration", arg, 0, false, 1e300,
                        &l->min_duration);
  case MB_CLI_SERVE_MIN_QUERIES:
    if (!mb__cli_parse_i64(arg, 1, INT64_MAX / 2, &v))
      return mb__cli_usage_error(cmd,
                                 "--min-queries '%s': expected a positive "
                                 "integer",
                                 arg);
    l->min_queries = v;
    return MB_EXIT_OK;
  case MB_CLI_SERVE_QPS_TOLERANCE:
    return parse_number(cmd, "--qps-tolerance", arg, 0, false, 0.999999999,
                        &l->qps_tolerance);
  case MB_CLI_SERVE_FIND_PEAK:
    l->find_peak = 1;
    return MB_EXIT_OK;
  default:
    return MB_EXIT_USAGE;
  }
}

static bool has_axis(const mb_cli_serving *s, mb_cli_axis_kind kind) {
  for (int a = 0; a < s->n_axes; a++)
    if (s->axes[a].kind == kind)
      return true;
  return false;
}

int mb__cli_serving_check(mb_cli_serving *s, const char *cmd,
                          const mb_bench_config *config) {
  const mb_load_config *l = &config->load;
  /* A config file's dims, unless --dim gave the same name. */
  for (int i = 0; i < config->shapes.n_dims && config->shapes.dims; i++) {
    const mb_dim_value *d = &config->shapes.dims[i];
    bool given = false;
    for (int k = 0; k < s->n_dims; k++)
      given |= strcmp(s->dims[k].name, d->name) == 0;
    if (given)
      continue;
    mb_dim_value *grown =
        realloc(s->dims, sizeof *grown * (size_t)(s->n_dims + 1));
    if (!grown)
      return out_of_memory();
    s->dims = grown;
    s->dims[s->n_dims++] = *d;
  }
  if (!s->load && l->scenario != MB_LOAD_NONE)
    return mb__cli_usage_error(cmd, "the config file's scenario is a load "
                                    "setting: run 'modelbench load'");
  if (s->load_only)
    return mb__cli_usage_error(cmd,
                               "%s is an option of 'modelbench load' (the "
                               "load scenarios)",
                               s->load_only);
  if (config->inputs_dir && has_axis(s, MB_CLI_AXIS_BATCH))
    return mb__cli_usage_error(cmd, "--sweep batch applies to generated "
                                    "inputs, not --inputs (their batch is "
                                    "the data's)");
  if (l->find_peak && has_axis(s, MB_CLI_AXIS_QPS))
    return mb__cli_usage_error(cmd, "--sweep qps and --find-peak both choose "
                                    "the QPS: give one of them");
  if (s->load && l->scenario != MB_LOAD_SERVER &&
      (has_axis(s, MB_CLI_AXIS_QPS) || l->find_peak))
    return mb__cli_usage_error(cmd, "--find-peak and --sweep qps need "
                                    "--scenario server");
  if (s->load && l->scenario == MB_LOAD_SERVER && !l->find_peak &&
      !(l->qps > 0) && !has_axis(s, MB_CLI_AXIS_QPS))
    return mb__cli_usage_error(cmd, "--scenario server needs --qps (the mean "
                                    "arrival rate), --sweep qps=... or "
                                    "--find-peak with --slo");
  if (l->find_peak && l->slo_percentile <= 0)
    return mb__cli_usage_error(cmd, "--find-peak searches the highest QPS "
                                    "within an SLO: give --slo p99=20ms");
  if (s->load && l->scenario == MB_LOAD_SINGLE_STREAM &&
      (l->concurrency > 1 || has_axis(s, MB_CLI_AXIS_CONCURRENCY)))
    return mb__cli_usage_error(cmd, "single-stream issues one query at a "
                                    "time: --concurrency applies to server "
                                    "and offline");
  int points = mb__cli_sweep_count(s);
  if (points > 4096)
    return mb__cli_usage_error(cmd,
                               "--sweep: %d points is too many (4096 at "
                               "most)",
                               points);
  return MB_EXIT_OK;
}

int mb__cli_sweep_count(const mb_cli_serving *s) {
  int64_t n = 1;
  for (int a = 0; a < s->n_axes && n <= INT_MAX; a++)
    n *= s->axes[a].n;
  return n > INT_MAX ? INT_MAX : (int)n;
}

static const char *axis_name(const mb_cli_axis *axis) {
  if (axis->kind == MB_CLI_AXIS_DIM)
    return axis->dim;
  for (size_t i = 0; i < MB_ARRAY_COUNT(axis_keys); i++)
    if (axis_keys[i].kind == axis->kind)
      return axis_keys[i].key;
  return "?";
}

int mb__cli_sweep_apply(mb_cli_serving *s, int point, mb_bench_config *config) {
  int n_dims = s->n_dims;
  for (int a = 0; a < s->n_axes; a++)
    n_dims += s->axes[a].kind == MB_CLI_AXIS_DIM;
  free(s->point_dims);
  s->point_dims = NULL;
  if (n_dims > 0 &&
      !(s->point_dims = calloc((size_t)n_dims, sizeof *s->point_dims)))
    return out_of_memory();
  int used = s->n_dims;
  if (s->n_dims)
    memcpy(s->point_dims, s->dims, sizeof *s->dims * (size_t)s->n_dims);
  s->label[0] = '\0';
  size_t len = 0;
  /* Mixed radix, the last axis varying fastest. */
  int rest = point;
  int index[MB_CLI_MAX_AXES] = {0};
  for (int a = s->n_axes - 1; a >= 0; a--) {
    index[a] = rest % s->axes[a].n;
    rest /= s->axes[a].n;
  }
  for (int a = 0; a < s->n_axes; a++) {
    const mb_cli_axis *axis = &s->axes[a];
    double v = axis->values[index[a]];
    switch (axis->kind) {
    case MB_CLI_AXIS_BATCH:
      config->batch_size = (int)v;
      break;
    case MB_CLI_AXIS_THREADS:
      config->threads = (int)v;
      break;
    case MB_CLI_AXIS_CONCURRENCY:
      config->load.concurrency = (int)v;
      break;
    case MB_CLI_AXIS_QPS:
      config->load.qps = v;
      break;
    case MB_CLI_AXIS_DIM: {
      int k = 0;
      while (k < used && strcmp(s->point_dims[k].name, axis->dim) != 0)
        k++;
      s->point_dims[k] = (mb_dim_value){axis->dim, (int64_t)v};
      if (k == used)
        used++;
      break;
    }
    }
    int w = snprintf(s->label + len, sizeof s->label - len, "%s%s=%g",
                     a ? " " : "", axis_name(axis), v);
    if (w > 0 && (size_t)w < sizeof s->label - len)
      len += (size_t)w;
  }
  config->shapes.dims = used ? s->point_dims : NULL;
  config->shapes.n_dims = used;
  config->sweep_point = s->n_axes > 0 ? s->label : NULL;
  return MB_EXIT_OK;
}

void mb__cli_serving_free(mb_cli_serving *s) {
  for (int a = 0; a < s->n_axes; a++)
    free(s->axes[a].values);
  free(s->axes);
  free(s->dims);
  free(s->point_dims);
  memset(s, 0, sizeof *s);
}
