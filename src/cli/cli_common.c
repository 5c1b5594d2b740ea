/* Helpers shared by the command files: messages, option values, test data
 * folders, formatting. */
#include "cli/cli_common.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

void mb__cli_error(const char *subject, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fflush(stdout); /* keep stdout and stderr in order when both are piped */
  /* Messages name models, nodes and paths: their control characters are
   * escaped (core/text.c), so an error is one line whatever a name holds. */
  fputs("modelbench: ", stderr);
  if (subject) {
    mb__term_put(stderr, subject);
    fputs(": ", stderr);
  }
  mb__term_put(stderr, msg);
  fputc('\n', stderr);
}

int mb__cli_fail(const char *subject, const mb_error *err) {
  const char *msg =
      err->message[0] ? err->message : mb_status_string(err->status);
  size_t n = subject ? strlen(subject) : 0;
  fflush(stdout);
  if (subject && strncmp(msg, subject, n) == 0 && msg[n] == ':')
    mb__cli_error(NULL, "%s", msg);
  else
    mb__cli_error(subject, "%s", msg);
  return MB_EXIT_FAILURE;
}

int mb__cli_usage_error(const char *cmd, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fflush(stdout);
  fprintf(stderr, "modelbench %s: ", cmd);
  mb__term_put(stderr, msg);
  fprintf(stderr, " (see 'modelbench %s --help')\n", cmd);
  return MB_EXIT_USAGE;
}

int mb__cli_bad_option(const char *cmd, int c, char **argv) {
  const char *opt = optind > 0 ? argv[optind - 1] : "?";
  if (c == ':')
    return mb__cli_usage_error(cmd, "option '%s' requires an argument", opt);
  if (optopt && optopt != '?' && strncmp(opt, "--", 2) != 0)
    return mb__cli_usage_error(cmd, "unknown option '-%c'", optopt);
  return mb__cli_usage_error(cmd, "unknown option '%s'", opt);
}

bool mb__cli_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out) {
  char *end;
  if (!s || !*s || isspace((unsigned char)*s))
    return false;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end || v < min || v > max)
    return false;
  *out = v;
  return true;
}

bool mb__cli_parse_double(const char *s, double *out) {
  char *end;
  if (!s || !*s || isspace((unsigned char)*s))
    return false;
  errno = 0;
  double v = strtod(s, &end);
  /* ERANGE: an overflow (then infinite, refused below) or an underflow to
   * a subnormal or zero, which is still the number written. */
  if ((errno && errno != ERANGE) || *end || !isfinite(v))
    return false;
  *out = v;
  return true;
}

int mb__cli_add_shape(mb_cli_shapes *shapes, const char *cmd, char *arg) {
  char *eq = strrchr(arg, '=');
  if (!eq || eq == arg)
    return mb__cli_usage_error(cmd, "--shape '%s': expected NAME=D0,D1,...",
                               arg);
  mb_input_shape s;
  memset(&s, 0, sizeof s);
  /* Dims are parsed before the name is cut off so messages show the whole
   * argument. An empty list ("x=") is a scalar. */
  const char *p = eq + 1;
  while (*p) {
    char dim[32];
    size_t len = strcspn(p, ",");
    int64_t v;
    if (s.rank == MB_MAX_RANK)
      return mb__cli_usage_error(cmd, "--shape '%s': more than %d dims", arg,
                                 MB_MAX_RANK);
    if (len == 0 || len >= sizeof dim)
      return mb__cli_usage_error(cmd, "--shape '%s': bad dim list", arg);
    memcpy(dim, p, len);
    dim[len] = '\0';
    if (!mb__cli_parse_i64(dim, 0, INT64_MAX, &v))
      return mb__cli_usage_error(
          cmd, "--shape '%s': dim '%s' is not a non-negative integer", arg,
          dim);
    s.dims[s.rank++] = v;
    p += len;
    if (*p == ',' && p[1] == '\0')
      return mb__cli_usage_error(cmd, "--shape '%s': bad dim list", arg);
    if (*p == ',')
      p++;
  }
  *eq = '\0';
  s.name = arg;
  for (int i = 0; i < shapes->n; i++)
    if (strcmp(shapes->shapes[i].name, s.name) == 0)
      return mb__cli_usage_error(cmd, "--shape %s given twice", s.name);
  if (shapes->n == shapes->cap) {
    int cap = shapes->cap ? shapes->cap * 2 : 4;
    mb_input_shape *grown =
        realloc(shapes->shapes, sizeof *grown * (size_t)cap);
    if (!grown) {
      mb__cli_error(NULL, "out of memory");
      return MB_EXIT_FAILURE;
    }
    shapes->shapes = grown;
    shapes->cap = cap;
  }
  shapes->shapes[shapes->n++] = s;
  shapes->spec.shapes = shapes->shapes;
  shapes->spec.n_shapes = shapes->n;
  return MB_EXIT_OK;
}

int mb__cli_set_batch(mb_cli_shapes *shapes, const char *cmd, const char *arg) {
  int64_t v;
  if (!mb__cli_parse_i64(arg, 1, INT64_MAX, &v))
    return mb__cli_usage_error(
        cmd, "--batch-size '%s': expected a positive integer", arg);
  shapes->spec.batch_size = v;
  return MB_EXIT_OK;
}

void mb__cli_shapes_free(mb_cli_shapes *shapes) {
  free(shapes->shapes);
  memset(shapes, 0, sizeof *shapes);
}

int mb__cli_shape_error(const char *model_path, const mb_error *err) {
  mb__cli_fail(model_path, err);
  return MB_EXIT_USAGE;
}

int mb__cli_load_model(const char *path, mb_model **model_out) {
  mb_error err;
  memset(&err, 0, sizeof err);
  if (mb__cli_is_dir(path)) {
    mb__cli_error(path, "is a directory, expected an .onnx model file");
    return MB_EXIT_FAILURE;
  }
  if (mb_model_load(path, model_out, &err) != MB_STATUS_OK)
    return mb__cli_fail(path, &err);
  return MB_EXIT_OK;
}

int mb__cli_load_pb_set(const char *dir, const char *prefix,
                        mb_tensor ***tensors_out, int *count_out,
                        mb_status *status_out) {
  mb_tensor **tensors = NULL;
  int count = 0;
  char path[PATH_MAX];
  if (status_out)
    *status_out = MB_STATUS_OK;
  for (;;) {
    snprintf(path, sizeof path, "%s/%s_%d.pb", dir, prefix, count);
    if (!mb__cli_file_exists(path))
      break;
    mb_tensor **grown = realloc(tensors, sizeof *grown * (size_t)(count + 1));
    if (!grown) {
      mb__cli_error(NULL, "out of memory");
      if (status_out)
        *status_out = MB_STATUS_OUT_OF_MEMORY;
      goto fail;
    }
    tensors = grown;
    mb_error err;
    memset(&err, 0, sizeof err);
    mb_status status = mb_tensor_load_pb(path, &tensors[count], &err);
    if (status != MB_STATUS_OK) {
      if (status_out)
        *status_out = status;
      mb__cli_fail(path, &err);
      goto fail;
    }
    count++;
  }
  *tensors_out = tensors;
  *count_out = count;
  return MB_EXIT_OK;

fail:
  mb__cli_free_tensors(tensors, count);
  return MB_EXIT_FAILURE;
}

void mb__cli_free_tensors(mb_tensor **tensors, int count) {
  for (int i = 0; tensors && i < count; i++)
    mb_tensor_free(tensors[i]);
  free(tensors);
}

int mb__cli_check_input(const mb_model *model, int index, const mb_tensor *t,
                        const char *file) {
  mb_value_info info;
  mb_error err;
  char want[160], got[160];
  if (mb_model_input_info(model, index, &info, &err) != MB_STATUS_OK)
    return mb__cli_fail(file, &err);
  if (info.dtype != MB_DTYPE_UNDEFINED && t->dtype != info.dtype) {
    mb__cli_error(file, "tensor has type %s but model input '%s' is %s",
                  mb_dtype_name(t->dtype), info.name,
                  mb_dtype_name(info.dtype));
    return MB_EXIT_FAILURE;
  }
  bool ok = info.rank < 0 || info.rank == t->rank;
  for (int d = 0; ok && info.rank >= 0 && d < info.rank; d++)
    if (info.dims[d] >= 0 && info.dims[d] != t->dims[d])
      ok = false;
  if (!ok) {
    mb__cli_error(file, "tensor has shape %s but model input '%s' is %s",
                  mb__shape_str(t->rank, t->dims, got, sizeof got), info.name,
                  mb__cli_info_shape(&info, want, sizeof want));
    return MB_EXIT_FAILURE;
  }
  return MB_EXIT_OK;
}

const char *mb__cli_info_shape(const mb_value_info *info, char *buf,
                               size_t size) {
  size_t used = 0;
  if (info->rank < 0) {
    snprintf(buf, size, "(unknown rank)");
    return buf;
  }
  used += (size_t)snprintf(buf, size, "[");
  for (int d = 0; d < info->rank && used < size; d++) {
    const char *sep = d ? "," : "";
    int w;
    if (info->dims[d] >= 0)
      w = snprintf(buf + used, size - used, "%s%lld", sep,
                   (long long)info->dims[d]);
    else
      w = snprintf(buf + used, size - used, "%s%s", sep,
                   info->dim_params[d] ? info->dim_params[d] : "?");
    if (w < 0)
      break;
    used += (size_t)w;
  }
  if (used < size)
    snprintf(buf + used, size - used, "]");
  return buf;
}

const char *mb__cli_si(double v, char *buf, size_t size) {
  static const char *const prefixes[] = {"", " K", " M", " G", " T", " P"};
  size_t i = 0;
  double a = fabs(v);
  while (a >= 1000 && i + 1 < MB_ARRAY_COUNT(prefixes)) {
    a /= 1000;
    v /= 1000;
    i++;
  }
  if (i == 0)
    snprintf(buf, size, "%.0f", v);
  else
    snprintf(buf, size, "%.3g%s", v, prefixes[i]);
  return buf;
}

const char *mb__cli_text(const char *s) {
  static char bufs[8][MB_TERM_TEXT_SIZE];
  static unsigned next;
  if (!s)
    return "-";
  if (!mb__term_needs_escape(s))
    return s;
  char *buf = bufs[next++ % MB_ARRAY_COUNT(bufs)];
  return mb__term_text(s, buf, MB_TERM_TEXT_SIZE);
}

const char *mb__cli_bytes(double v, char *buf, size_t size) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  size_t i = 0;
  while (v >= 1024 && i + 1 < MB_ARRAY_COUNT(units)) {
    v /= 1024;
    i++;
  }
  if (i == 0)
    snprintf(buf, size, "%.0f B", v);
  else
    snprintf(buf, size, "%.1f %s", v, units[i]);
  return buf;
}

static int compare_names(const void *a, const void *b) {
  return mb__natural_compare(*(char *const *)a, *(char *const *)b);
}

int mb__cli_list_subdirs(const char *dir, const char *prefix,
                         char ***names_out) {
  DIR *d = opendir(dir);
  char **names = NULL;
  int count = 0, cap = 0;
  char path[PATH_MAX];
  *names_out = NULL;
  if (!d)
    return -1;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.' || strncmp(e->d_name, prefix, strlen(prefix)))
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (!mb__cli_is_dir(path))
      continue;
    if (count == cap) {
      cap = cap ? cap * 2 : 16;
      char **grown = realloc(names, sizeof *grown * (size_t)cap);
      if (!grown)
        goto oom;
      names = grown;
    }
    names[count] = mb__strdup(e->d_name);
    if (!names[count])
      goto oom;
    count++;
  }
  closedir(d);
  if (count > 1)
    qsort(names, (size_t)count, sizeof *names, compare_names);
  *names_out = names;
  return count;

oom:
  closedir(d);
  mb__cli_free_names(names, count);
  errno = ENOMEM;
  return -1;
}

void mb__cli_free_names(char **names, int count) {
  for (int i = 0; names && i < count; i++)
    free(names[i]);
  free(names);
}

bool mb__cli_is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool mb__cli_file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

double mb__cli_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int mb__cli_add_range(const char *cmd, const char *flag, char *arg,
                      mb_input_range **ranges, int *n_ranges) {
  mb_input_range r = {NULL, 0, 0};
  char *values = arg;
  char *eq = strrchr(arg, '=');
  if (eq) {
    *eq = '\0';
    r.name = arg;
    values = eq + 1;
  }
  char *colon = strchr(values, ':');
  if (colon)
    *colon = '\0';
  if (!colon || !mb__cli_parse_double(values, &r.lo) ||
      !mb__cli_parse_double(colon + 1, &r.hi) || r.lo > r.hi)
    return mb__cli_usage_error(cmd, "%s: expected [NAME=]LO:HI with LO <= HI",
                               flag);
  mb_input_range *grown =
      realloc(*ranges, sizeof *grown * (size_t)(*n_ranges + 1));
  if (!grown) {
    mb__cli_error(NULL, "out of memory");
    return MB_EXIT_FAILURE;
  }
  *ranges = grown;
  (*ranges)[(*n_ranges)++] = r;
  return MB_EXIT_OK;
}

static int profile_int(const char *cmd, const char *flag, const char *arg,
                       int64_t min, int64_t max, int *out) {
  int64_t v;
  if (!mb__cli_parse_i64(arg, min, max, &v))
    return mb__cli_usage_error(cmd,
                               "%s: '%s' is not an integer in [%lld, %lld]",
                               flag, arg, (long long)min, (long long)max);
  *out = (int)v;
  return MB_EXIT_OK;
}

int mb__cli_profile_option(const char *cmd, int which, char *arg,
                           mb_cli_profile_args *args) {
  mb_bench_config *config = args->config;
  int seed = 0, rc;
  switch (which) {
  case MB_CLI_PROF_ITERATIONS:
    return profile_int(cmd, "--iterations", arg, 1, 1000000,
                       &config->min_iterations);
  case MB_CLI_PROF_WARMUP:
    return profile_int(cmd, "--warmup", arg, 0, 1000000,
                       &config->warmup_iterations);
  case MB_CLI_PROF_THREADS:
    return profile_int(cmd, "--threads", arg, 1, 1024, &config->threads);
  case MB_CLI_PROF_BATCH:
    return mb__cli_set_batch(args->shapes, cmd, arg);
  case MB_CLI_PROF_SHAPE:
    return mb__cli_add_shape(args->shapes, cmd, arg);
  case MB_CLI_PROF_SEED:
    if ((rc = profile_int(cmd, "--seed", arg, 0, INT32_MAX, &seed)))
      return rc;
    config->seed = (uint64_t)seed;
    return MB_EXIT_OK;
  case MB_CLI_PROF_TIMEOUT:
    if (!mb__cli_parse_double(arg, &config->timeout_seconds) ||
        !(config->timeout_seconds > 0))
      return mb__cli_usage_error(
          cmd, "--timeout: '%s' is not a positive number of seconds", arg);
    return MB_EXIT_OK;
  case MB_CLI_PROF_NO_ISOLATE:
    config->isolate = 0;
    return MB_EXIT_OK;
  case MB_CLI_PROF_INPUTS:
    config->inputs_dir = arg;
    return MB_EXIT_OK;
  case MB_CLI_PROF_KEEP_FLOAT:
    return mb__cli_add_keep_float(args->keep_float, cmd, arg);
  default:
    return MB_EXIT_USAGE;
  }
}

void mb__cli_profile_finish(mb_cli_profile_args *args) {
  args->config->keep_float = args->keep_float->names;
  args->config->n_keep_float = args->keep_float->n;
  args->config->shapes = args->shapes->spec;
  if (args->shapes->spec.batch_size > 0)
    args->config->batch_size = (int)args->shapes->spec.batch_size;
}

int mb__cli_add_keep_float(mb_cli_keep_float *list, const char *cmd,
                           const char *arg) {
  char *copy = strdup(arg), **texts = NULL;
  const char **names = NULL;
  int n = 1;
  for (const char *c = arg; *c; c++)
    n += *c == ',';
  if (copy)
    texts = realloc(list->texts, sizeof *texts * (size_t)(list->n_texts + 1));
  if (texts) {
    list->texts = texts;
    names = realloc(list->names, sizeof *names * (size_t)(list->n + n));
  }
  if (!names) {
    free(copy);
    mb__cli_error(NULL, "out of memory");
    return MB_EXIT_FAILURE;
  }
  list->names = names;
  list->texts[list->n_texts++] = copy;
  char *save = NULL;
  int before = list->n;
  for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
    list->names[list->n++] = t;
  if (list->n == before)
    return mb__cli_usage_error(cmd, "--keep-float: expected NODE[,NODE...]");
  return MB_EXIT_OK;
}

void mb__cli_keep_float_free(mb_cli_keep_float *list) {
  free(list->names);
  mb__cli_free_names(list->texts, list->n_texts);
  memset(list, 0, sizeof *list);
}

int mb__cli_calibration_option(const char *cmd, int which, const char *arg,
                               mb_bench_config *config) {
  static const char *const methods[] = {"minmax", "percentile"};
  int64_t v;
  switch (which) {
  case MB_CLI_CALIB_SAMPLES:
    if (!mb__cli_parse_i64(arg, 1, 100000, &v))
      return mb__cli_usage_error(cmd,
                                 "--calibration-samples '%s': expected an "
                                 "integer in 1..100000",
                                 arg);
    config->calibration_samples = (int)v;
    return MB_EXIT_OK;
  case MB_CLI_CALIB_INPUTS:
    config->calibration_dir = arg;
    return MB_EXIT_OK;
  case MB_CLI_CALIB_METHOD:
    for (int i = 0; i < (int)MB_ARRAY_COUNT(methods); i++)
      if (strcmp(arg, methods[i]) == 0) {
        config->calibration_method = i;
        return MB_EXIT_OK;
      }
    return mb__cli_usage_error(cmd,
                               "--calibration-method '%s': expected minmax "
                               "or percentile",
                               arg);
  case MB_CLI_CALIB_WEIGHTS:
    if (mb_int8_weights_from_name(arg) >= 0) {
      config->int8_weights = (mb_int8_weights)mb_int8_weights_from_name(arg);
      return MB_EXIT_OK;
    }
    return mb__cli_usage_error(
        cmd, "--int8-weights '%s': expected 7, 8, mixed or auto", arg);
  default:
    return MB_EXIT_USAGE;
  }
}
