/* mb-conformance: runs the ONNX backend test suite (Debian libonnx-testdata)
 * through the public API on the reference interpreter, or through a hybrid
 * runtime's adapter (--runtime xnnpack, onednn) via the internal runtime
 * interface.
 *
 *   mb-conformance DIR... [--runtime NAME] [--filter SUBSTR] [--min-pass N]
 *                         [--timeout S] [--jobs N] [--verbose] [--no-fork]
 *
 * DIR is the data root (with node/, pytorch-converted/, pytorch-operator/,
 * simple/), one of those category folders, or a single test folder holding
 * model.onnx and test_data_set_*.
 *
 * Tests run in forked worker children with a per-test timeout, so a crash
 * in one operator is reported as that test's failure (the worker is
 * replaced) and the run goes on. A worker reports back over a pipe, one
 * line per message:
 *   "O op1,op2,..."        the model's operator types (once loaded)
 *   "R P|F|S message"      the result: passed, failed or skipped
 * A test is SKIPPED when the model or a test data file uses something the
 * library reports as MB_STATUS_UNSUPPORTED at load/session creation time
 * (an operator it does not implement, a sequence/optional tensor); any other
 * error or an output beyond tolerance makes it FAILED. Outputs of random
 * operators, whose values ONNX leaves open, are checked for type, shape
 * and range only (the random_outputs table).
 *
 * With a hybrid runtime, each test data set is prepared for its own input
 * shapes (the engines compile for concrete shapes) with fallback on, so the
 * nodes the engine refuses run on the reference interpreter. A test is
 * SKIPPED when the reference interpreter lacks one of its operators (the
 * fallback needs them all), when mb_model_partition says no node runs on
 * the engine (the run would test only the reference), or when the run
 * refuses the data with MB_STATUS_UNSUPPORTED, as above; a mismatch or any
 * other error, an engine's refusal at prepare included, is FAILED. When the
 * runtime is not available here, the program says why and exits with
 * status 77 (ctest's SKIP_RETURN_CODE). */
#include "runtime/reference.h"
#include "runtime/runtime.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_RTOL 1e-3
#define DEFAULT_ATOL 1e-5
#define MESSAGE_SIZE 1024
#define OPS_SIZE 2048

static const char *const categories[] = {"node", "pytorch-converted",
                                         "pytorch-operator", "simple"};

/* Tests that legitimately need looser tolerances than the defaults, each
 * with the reason. Keep this short: a wrong kernel must fail, not be
 * excused here. Matched against the test folder name. */
static const struct tolerance_row {
  const char *test;
  double rtol, atol;
  const char *why;
} tolerances[] = {
    /* ONNX 1.12 generated the expected bfloat16 values by truncating the
     * float32 bits; we round to nearest even (as later ONNX versions
     * specify), which differs by one bfloat16 ulp (2^-8 relative). */
    {"test_cast_FLOAT_to_BFLOAT16", 8e-3, 1e-5, "truncation vs rounding"},
    {NULL, 0, 0, NULL}, /* end of table */
};

/* Tests whose expected outputs contradict their own model, skipped with
 * the reason (the unit test named there checks the case as intended).
 * Matched against the test folder name. */
static const struct broken_row {
  const char *test;
  const char *why;
} broken_tests[] = {
    {"test_adam_multiple",
     "the expected outputs use epsilon 0.01, which the Adam node of the "
     "model lacks (onnx/onnx#7749); test_ops_training runs it with epsilon "
     "set"},
    {NULL, NULL}, /* end of table */
};

/* Tests whose expected outputs were drawn from numpy's random generator:
 * ONNX leaves the values of random operators unspecified, so no
 * implementation reproduces them. These compare element type and shape,
 * and that every value lies in [lo, hi] (and is whole when `integral`).
 * Matched against the start of the test folder name. */
static const struct random_row {
  const char *prefix;
  double lo, hi;
  bool integral;
  const char *why;
} random_outputs[] = {
    {"test_bernoulli", 0.0, 1.0, true, "Bernoulli draws 0 or 1"},
    {NULL, 0, 0, false, NULL}, /* end of table */
};

typedef enum result_kind {
  PASSED = 0,
  FAILED,
  SKIPPED,
  KIND_COUNT
} result_kind;
static const char *const kind_names[KIND_COUNT] = {"PASSED", "FAILED",
                                                   "SKIPPED"};

/* Exit status when the runtime asked for is not available here. */
#define EXIT_UNAVAILABLE 77
#define MAX_MODEL_INPUTS 64

typedef struct options {
  const mb_runtime *runtime; /* NULL: the reference through the public API */
  const char *filter;
  long min_pass;
  int timeout_s;
  int jobs;
  bool verbose;
  bool no_fork;
} options;

typedef struct test {
  char *name; /* "node/test_abs" */
  char *dir;
} test;

typedef struct test_list {
  test *items;
  int count, cap;
} test_list;

/* Aggregates: skip reasons and per-op coverage. */
typedef struct counter {
  char *key;
  int counts[KIND_COUNT];
} counter;

typedef struct counter_list {
  counter *items;
  int count, cap;
} counter_list;

/* ---- small utilities ---- */

static void *xrealloc(void *p, size_t size) {
  void *q = realloc(p, size);
  if (!q) {
    fprintf(stderr, "mb-conformance: out of memory\n");
    exit(2);
  }
  return q;
}

static char *xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  return memcpy(xrealloc(NULL, n), s, n);
}

static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int compare_strings(const void *a, const void *b) {
  return mb__natural_compare(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of subfolders of dir starting with prefix. */
static int list_subdirs(const char *dir, const char *prefix, char ***out) {
  DIR *d = opendir(dir);
  char **names = NULL;
  int count = 0;
  char path[PATH_MAX];
  *out = NULL;
  if (!d)
    return -1;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.' || strncmp(e->d_name, prefix, strlen(prefix)))
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (!is_dir(path))
      continue;
    names = xrealloc(names, sizeof *names * (size_t)(count + 1));
    names[count++] = xstrdup(e->d_name);
  }
  closedir(d);
  if (count > 1)
    qsort(names, (size_t)count, sizeof *names, compare_strings);
  *out = names;
  return count;
}

static void free_names(char **names, int count) {
  for (int i = 0; i < count; i++)
    free(names[i]);
  free(names);
}

/* ---- test discovery ---- */

static void add_test(test_list *list, const char *name, const char *dir,
                     const options *o) {
  if (o->filter && !strstr(name, o->filter))
    return;
  if (list->count == list->cap) {
    list->cap = list->cap ? list->cap * 2 : 256;
    list->items =
        xrealloc(list->items, sizeof *list->items * (size_t)list->cap);
  }
  list->items[list->count].name = xstrdup(name);
  list->items[list->count].dir = xstrdup(dir);
  list->count++;
}

static const char *base_name(const char *path) {
  size_t n = strlen(path);
  while (n > 1 && path[n - 1] == '/')
    n--;
  const char *p = path + n;
  while (p > path && p[-1] != '/')
    p--;
  return p;
}

/* Adds every test folder (one with model.onnx) below category dir `dir`. */
static void add_category(test_list *list, const char *dir, const char *label,
                         const options *o) {
  char **names;
  int n = list_subdirs(dir, "", &names);
  char path[PATH_MAX], name[PATH_MAX];
  for (int i = 0; i < n; i++) {
    snprintf(path, sizeof path, "%s/%s/model.onnx", dir, names[i]);
    if (!is_file(path))
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    snprintf(name, sizeof name, "%s/%s", label, names[i]);
    add_test(list, name, path, o);
  }
  free_names(names, n > 0 ? n : 0);
}

static int add_dir(test_list *list, const char *dir, const options *o) {
  char path[PATH_MAX], label[PATH_MAX];
  if (!is_dir(dir)) {
    fprintf(stderr, "mb-conformance: %s: not a directory\n", dir);
    return -1;
  }
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  if (is_file(path)) {
    add_test(list, base_name(dir), dir, o);
    return 0;
  }
  bool found = false;
  for (size_t i = 0; i < MB_ARRAY_COUNT(categories); i++) {
    snprintf(path, sizeof path, "%s/%s", dir, categories[i]);
    if (is_dir(path)) {
      add_category(list, path, categories[i], o);
      found = true;
    }
  }
  if (!found) {
    snprintf(label, sizeof label, "%s", base_name(dir));
    add_category(list, dir, label, o);
  }
  return 0;
}

/* ---- the child: runs one test ---- */

typedef struct child_result {
  result_kind kind;
  char message[MESSAGE_SIZE];
} child_result;

static void set_result(child_result *r, result_kind kind, const char *fmt, ...)
    MB_PRINTF(3, 4);
static void set_result(child_result *r, result_kind kind, const char *fmt,
                       ...) {
  va_list ap;
  va_start(ap, fmt);
  r->kind = kind;
  vsnprintf(r->message, sizeof r->message, fmt, ap);
  va_end(ap);
}

/* Messages name files by their full path; strip the test folder so skip
 * reasons aggregate across tests. */
static const char *strip_dir(const char *message, const char *dir) {
  size_t n = strlen(dir);
  if (strncmp(message, dir, n) == 0 && message[n] == '/')
    return message + n + 1;
  return message;
}

static void tolerance_for(const char *dir, double *rtol, double *atol) {
  const char *name = base_name(dir);
  *rtol = DEFAULT_RTOL;
  *atol = DEFAULT_ATOL;
  for (size_t i = 0; tolerances[i].test; i++)
    if (strcmp(name, tolerances[i].test) == 0) {
      *rtol = tolerances[i].rtol;
      *atol = tolerances[i].atol;
    }
}

static const char *broken_reason(const char *dir) {
  const char *name = base_name(dir);
  for (size_t i = 0; broken_tests[i].test; i++)
    if (strcmp(name, broken_tests[i].test) == 0)
      return broken_tests[i].why;
  return NULL;
}

static const struct random_row *random_row_for(const char *dir) {
  const char *name = base_name(dir);
  for (size_t i = 0; random_outputs[i].prefix; i++)
    if (strncmp(name, random_outputs[i].prefix,
                strlen(random_outputs[i].prefix)) == 0)
      return &random_outputs[i];
  return NULL;
}

/* The check of a random_outputs row: 0 when every value is in range, else
 * the index of the first one that is not, plus one. */
static int64_t random_out_of_range(const mb_tensor *t,
                                   const struct random_row *row) {
  for (int64_t i = 0; i < t->numel; i++) {
    double v = mb__tensor_get_f64(t, i);
    if (!(v >= row->lo && v <= row->hi) || (row->integral && v != floor(v)))
      return i + 1;
  }
  return 0;
}

/* "Conv,Relu,com.microsoft:Gelu" of the main graph, deduplicated. */
static void model_ops(const mb_model *model, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  const mb_graph *g = model->graph;
  for (int i = 0; i < g->n_nodes; i++) {
    const mb_node *n = &g->nodes[i];
    char op[256];
    bool custom = n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx");
    snprintf(op, sizeof op, "%s%s%s", custom ? n->domain : "",
             custom ? ":" : "", n->op_type);
    bool seen = false;
    for (int j = 0; j < i && !seen; j++) {
      const mb_node *m = &g->nodes[j];
      bool custom_m = m->domain && m->domain[0] && strcmp(m->domain, "ai.onnx");
      char other[256];
      snprintf(other, sizeof other, "%s%s%s", custom_m ? m->domain : "",
               custom_m ? ":" : "", m->op_type);
      seen = strcmp(op, other) == 0;
    }
    if (seen)
      continue;
    int w = snprintf(buf + used, size - used, "%s%s", used ? "," : "", op);
    if (w < 0 || (size_t)w >= size - used)
      break;
    used += (size_t)w;
  }
}

/* Loads DIR/prefix_N.pb for N = 0.. while they exist. */
static mb_status load_set(const char *dir, const char *prefix, mb_tensor ***out,
                          int *count_out, mb_error *err) {
  mb_tensor **tensors = NULL;
  int count = 0;
  char path[PATH_MAX];
  for (;;) {
    snprintf(path, sizeof path, "%s/%s_%d.pb", dir, prefix, count);
    if (!is_file(path))
      break;
    tensors = xrealloc(tensors, sizeof *tensors * (size_t)(count + 1));
    mb_status status = mb_tensor_load_pb(path, &tensors[count], err);
    if (status != MB_STATUS_OK) {
      for (int i = 0; i < count; i++)
        mb_tensor_free(tensors[i]);
      free(tensors);
      return status;
    }
    count++;
  }
  *out = tensors;
  *count_out = count;
  return MB_STATUS_OK;
}

static void free_set(mb_tensor **tensors, int count) {
  for (int i = 0; i < count; i++)
    mb_tensor_free(tensors[i]);
  free(tensors);
}

/* ONNX 1.12's test generator wrote bfloat16 tensors with data_type UINT16
 * (the same bits); read them as the bfloat16 the model declares. */
static void fix_bfloat16(mb_tensor *t, mb_dtype declared) {
  if (t->dtype == MB_DTYPE_UINT16 && declared == MB_DTYPE_BFLOAT16)
    t->dtype = MB_DTYPE_BFLOAT16;
}

static bool fits_declared(const mb_tensor *t, const mb_value_info *info) {
  if (info->dtype != MB_DTYPE_UNDEFINED && t->dtype != info->dtype)
    return false;
  if (info->rank < 0)
    return true;
  if (info->rank != t->rank)
    return false;
  for (int d = 0; d < info->rank; d++)
    if (info->dims[d] >= 0 && info->dims[d] != t->dims[d])
      return false;
  return true;
}

/* "[N,3,?]" for a declared shape. */
static const char *info_shape(const mb_value_info *info, char *buf,
                              size_t size) {
  if (info->rank < 0) {
    snprintf(buf, size, "(any shape)");
    return buf;
  }
  int64_t dims[MB_MAX_RANK];
  for (int d = 0; d < info->rank; d++)
    dims[d] = info->dims[d];
  return mb__shape_str(info->rank, dims, buf, size);
}

/* Runs the model through hybrid runtime rt, prepared for the shapes of
 * these inputs, into actual[] (mb_model_output_count slots). Sets *skip,
 * with the reason in err, when the test is a skip: mb_model_partition finds
 * no node the engine runs, or the run refuses the data with
 * MB_STATUS_UNSUPPORTED as the reference does. A refusal at prepare is an
 * error: the engine has accepted the nodes it is given. */
static mb_status run_hybrid(const mb_runtime *rt, const mb_model *model,
                            mb_tensor **inputs, int n_in, mb_tensor **actual,
                            bool *skip, mb_error *err) {
  mb_input_shape shapes[MAX_MODEL_INPUTS];
  mb_partition *p = NULL;
  void *session = NULL;
  mb_status status;
  *skip = false;
  if (n_in > MAX_MODEL_INPUTS) {
    *skip = true;
    return mb__error(err, MB_STATUS_UNSUPPORTED, "more than %d inputs",
                     MAX_MODEL_INPUTS);
  }
  for (int i = 0; i < n_in; i++) {
    mb_value_info info;
    if ((status = mb_model_input_info(model, i, &info, err)))
      return status;
    shapes[i].name = info.name;
    shapes[i].rank = inputs[i]->rank;
    memcpy(shapes[i].dims, inputs[i]->dims, sizeof shapes[i].dims);
  }
  mb_shape_spec spec = {0, n_in, shapes};
  if ((status = mb_model_partition(model, rt->name, MB_PRECISION_FP32, &spec,
                                   &p, err)))
    return mb__error_prefix(err, status, "partition");
  if (p->n_native_nodes == 0) {
    *skip = true;
    if (p->n_unsupported)
      mb__error(err, MB_STATUS_UNSUPPORTED, "no node runs on %s: %s", rt->name,
                p->unsupported[0]);
    else
      mb__error(err, MB_STATUS_UNSUPPORTED,
                "no node runs on %s: every node is a constant", rt->name);
    mb_partition_free(p);
    return MB_STATUS_UNSUPPORTED;
  }
  mb_partition_free(p);
  /* A model without inputs still has its (empty) example inputs: NULL
   * would mean none were given. */
  static const mb_tensor *const no_inputs[1] = {NULL};
  mb_runtime_options rt_options = {
      .threads = 1,
      .precision = MB_PRECISION_FP32,
      .example_inputs = n_in ? (const mb_tensor *const *)inputs : no_inputs,
  };
  if ((status = rt->prepare(model, NULL, 0, &rt_options, &session, err)))
    return mb__error_prefix(err, status, "prepare");
  status = rt->run(session, (const mb_tensor *const *)inputs, err);
  if (status) {
    *skip = status == MB_STATUS_UNSUPPORTED;
    mb__error_prefix(err, status, "run");
  } else if ((status = rt->fetch_outputs(session, actual, err)))
    mb__error_prefix(err, status, "fetch_outputs");
  rt->release(session);
  return status;
}

/* ---- models with sequence or optional inputs and outputs ---- */

/* True when a graph input or output is not a plain tensor: such a model
 * goes through the interpreter's value interface (the public API takes
 * tensors only). */
static bool has_value_io(const mb_model *model) {
  const mb_graph *g = model->graph;
  for (int i = 0; i < g->n_inputs; i++)
    if (g->values[g->inputs[i]].type != MB_VALUE_TYPE_TENSOR)
      return true;
  for (int i = 0; i < g->n_outputs; i++)
    if (g->values[g->outputs[i]].type != MB_VALUE_TYPE_TENSOR)
      return true;
  return false;
}

/* A value read from a test file: its tensor or its sequence record. */
typedef struct file_value {
  mb_tensor *tensor;
  mb__sequence seq;
} file_value;

static void file_values_free(file_value *v, int n) {
  for (int i = 0; v && i < n; i++) {
    mb_tensor_free(v[i].tensor);
    mb__sequence_free(&v[i].seq);
  }
  free(v);
}

/* Loads DIR/prefix_N.pb for the n declared values (graph indices). */
static mb_status load_values(const char *dir, const char *prefix,
                             const mb_graph *g, const int *values, int n,
                             file_value **out, mb_error *err) {
  char path[PATH_MAX];
  file_value *v = calloc((size_t)n + 1, sizeof *v);
  if (!v)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; i < n; i++) {
    snprintf(path, sizeof path, "%s/%s_%d.pb", dir, prefix, i);
    mb_status status = mb__value_load_pb(path, (int)g->values[values[i]].type,
                                         &v[i].tensor, &v[i].seq, err);
    if (status) {
      file_values_free(v, n);
      return status;
    }
  }
  *out = v;
  return MB_STATUS_OK;
}

/* Compares one actual tensor with the expected one; 0 when equal. */
static int compare_tensor(const mb_tensor *got, const mb_tensor *want,
                          double rtol, double atol, char *why, size_t size) {
  mb_compare_result c;
  mb_error err = {0};
  char a[128], b[128];
  if (mb_tensor_compare(got, want, rtol, atol, &c, &err) != MB_STATUS_OK) {
    snprintf(why, size, "compare: %.400s", err.message);
    return 1;
  }
  if (!c.shape_match) {
    snprintf(why, size, "is %s %s, expected %s %s", mb_dtype_name(got->dtype),
             mb__shape_str(got->rank, got->dims, a, sizeof a),
             mb_dtype_name(want->dtype),
             mb__shape_str(want->rank, want->dims, b, sizeof b));
    return 1;
  }
  if (c.n_bad) {
    snprintf(why, size, "%lld of %lld elements beyond tolerance",
             (long long)c.n_bad, (long long)want->numel);
    return 1;
  }
  return 0;
}

static void run_set_values(const char *test_dir, const char *set,
                           const mb_model *model, mb_session *session,
                           const mb_runtime *runtime, child_result *r) {
  const mb_graph *g = model->graph;
  char dir[PATH_MAX], why[768];
  file_value *inputs = NULL, *expected = NULL;
  mb_op_value *bound = NULL;
  double rtol, atol;
  mb_error err = {0};
  if (runtime) {
    set_result(r, SKIPPED,
               "sequence or optional graph inputs/outputs run on the "
               "reference interpreter only");
    return;
  }
  snprintf(dir, sizeof dir, "%s/%s", test_dir, set);
  tolerance_for(test_dir, &rtol, &atol);
  mb_status status =
      load_values(dir, "input", g, g->inputs, g->n_inputs, &inputs, &err);
  if (status == MB_STATUS_OK)
    status = load_values(dir, "output", g, g->outputs, g->n_outputs, &expected,
                         &err);
  if (status) {
    set_result(r, status == MB_STATUS_UNSUPPORTED ? SKIPPED : FAILED,
               "test data: %s", strip_dir(err.message, test_dir));
    goto done;
  }
  bound = calloc((size_t)g->n_inputs + 1, sizeof *bound);
  for (int i = 0; bound && i < g->n_inputs; i++) {
    bound[i].tensor = inputs[i].tensor;
    bound[i].seq = &inputs[i].seq;
  }
  if (!bound || (status = mb__session_run_values(session, bound, &err))) {
    set_result(r, FAILED, "%s: run: %s", set,
               bound ? err.message : "out of memory");
    goto done;
  }
  for (int i = 0; i < g->n_outputs; i++) {
    const char *name = g->values[g->outputs[i]].name;
    mb_op_value got = mb__session_output_value(session, i);
    mb__kind got_kind = got.seq->kind, want_kind = expected[i].seq.kind;
    if (got_kind != want_kind) {
      set_result(r, FAILED, "%s: output '%s' is a %s, expected a %s", set, name,
                 mb__kind_name(got_kind), mb__kind_name(want_kind));
      goto done;
    }
    if (got_kind == MB__KIND_TENSOR &&
        compare_tensor(got.tensor, expected[i].tensor, rtol, atol, why,
                       sizeof why)) {
      set_result(r, FAILED, "%s: output '%s' %s", set, name, why);
      goto done;
    }
    if (got_kind != MB__KIND_SEQUENCE)
      continue;
    if (got.seq->count != expected[i].seq.count) {
      set_result(r, FAILED, "%s: output '%s' holds %d tensors, expected %d",
                 set, name, got.seq->count, expected[i].seq.count);
      goto done;
    }
    for (int k = 0; k < got.seq->count; k++)
      if (compare_tensor(got.seq->items[k], expected[i].seq.items[k], rtol,
                         atol, why, sizeof why)) {
        set_result(r, FAILED, "%s: output '%s', tensor %d %s", set, name, k,
                   why);
        goto done;
      }
  }
done:
  free(bound);
  file_values_free(inputs, g->n_inputs);
  file_values_free(expected, g->n_outputs);
}

/* Runs one test_data_set folder; leaves r untouched when it passes.
 * runtime: NULL for the reference interpreter's session. */
static void run_set(const char *test_dir, const char *set,
                    const mb_model *model, mb_session *session,
                    const mb_runtime *runtime, child_result *r) {
  char dir[PATH_MAX];
  mb_tensor **inputs = NULL, **expected = NULL, **actual = NULL;
  int n_in = 0, n_out = 0;
  int model_in = mb_model_input_count(model);
  int model_out = mb_model_output_count(model);
  double rtol, atol;
  mb_error err;
  memset(&err, 0, sizeof err);
  snprintf(dir, sizeof dir, "%s/%s", test_dir, set);
  tolerance_for(test_dir, &rtol, &atol);

  mb_status status = load_set(dir, "input", &inputs, &n_in, &err);
  if (status == MB_STATUS_OK)
    status = load_set(dir, "output", &expected, &n_out, &err);
  if (status != MB_STATUS_OK) {
    set_result(r, status == MB_STATUS_UNSUPPORTED ? SKIPPED : FAILED,
               "test data: %s", strip_dir(err.message, test_dir));
    goto done;
  }
  if (n_in != model_in || n_out != model_out) {
    set_result(r, FAILED, "%s has %d inputs and %d outputs, model %d and %d",
               set, n_in, n_out, model_in, model_out);
    goto done;
  }
  for (int i = 0; i < n_in; i++) {
    mb_value_info info;
    char got[128], want[128];
    if (mb_model_input_info(model, i, &info, NULL) != MB_STATUS_OK)
      continue;
    fix_bfloat16(inputs[i], info.dtype);
    /* A few tests feed data that contradicts the model's own declaration
     * (test_castlike_*: 'like' is [1], declared [3,4]); the test is broken,
     * not the runtime. */
    if (!fits_declared(inputs[i], &info)) {
      set_result(
          r, SKIPPED,
          "test data contradicts the model: input %d is %s %s, "
          "declared %s %s",
          i, mb_dtype_name(inputs[i]->dtype),
          mb__shape_str(inputs[i]->rank, inputs[i]->dims, got, sizeof got),
          mb_dtype_name(info.dtype), info_shape(&info, want, sizeof want));
      goto done;
    }
  }
  for (int i = 0; i < n_out; i++) {
    mb_value_info info;
    if (mb_model_output_info(model, i, &info, NULL) == MB_STATUS_OK)
      fix_bfloat16(expected[i], info.dtype);
  }
  actual = calloc((size_t)(n_out > 0 ? n_out : 1), sizeof *actual);
  if (!actual) {
    set_result(r, FAILED, "out of memory");
    goto done;
  }
  bool skip = false;
  if (runtime)
    status = run_hybrid(runtime, model, inputs, n_in, actual, &skip, &err);
  else
    status = mb_session_run(session, n_in, (const mb_tensor *const *)inputs,
                            n_out, actual, &err);
  if (skip) {
    set_result(r, SKIPPED, "%s", err.message);
    goto done;
  }
  if (status == MB_STATUS_UNSUPPORTED && !runtime) {
    /* Some limits show only with the data (training-mode Dropout with a
     * random ratio); an honest refusal is a skip, never a wrong result. */
    set_result(r, SKIPPED, "run: %s", err.message);
    goto done;
  }
  if (status != MB_STATUS_OK) {
    set_result(r, FAILED, "%s: run: %s: %s", set, mb_status_string(status),
               err.message);
    goto done;
  }
  for (int i = 0; i < n_out; i++) {
    mb_compare_result c;
    mb_value_info info;
    char got[128], want[128];
    const char *name = "?";
    if (mb_model_output_info(model, i, &info, NULL) == MB_STATUS_OK)
      name = info.name;
    const struct random_row *random = random_row_for(test_dir);
    if (random) {
      c.shape_match = actual[i]->dtype == expected[i]->dtype &&
                      actual[i]->rank == expected[i]->rank &&
                      !memcmp(actual[i]->dims, expected[i]->dims,
                              sizeof(int64_t) * (size_t)actual[i]->rank);
      int64_t bad = c.shape_match ? random_out_of_range(actual[i], random) : 0;
      if (bad) {
        set_result(r, FAILED,
                   "%s: output '%s': element %lld = %g is outside "
                   "[%g, %g] (%s)",
                   set, name, (long long)(bad - 1),
                   mb__tensor_get_f64(actual[i], bad - 1), random->lo,
                   random->hi, random->why);
        goto done;
      }
      if (c.shape_match)
        continue;
    } else {
      status = mb_tensor_compare(actual[i], expected[i], rtol, atol, &c, &err);
    }
    if (status != MB_STATUS_OK) {
      set_result(r, FAILED, "%s: output '%s': compare: %s", set, name,
                 err.message);
      goto done;
    }
    if (!c.shape_match) {
      set_result(
          r, FAILED, "%s: output '%s' is %s %s, expected %s %s", set, name,
          mb_dtype_name(actual[i]->dtype),
          mb__shape_str(actual[i]->rank, actual[i]->dims, got, sizeof got),
          mb_dtype_name(expected[i]->dtype),
          mb__shape_str(expected[i]->rank, expected[i]->dims, want,
                        sizeof want));
      goto done;
    }
    if (c.n_bad) {
      set_result(r, FAILED,
                 "%s: output '%s': %lld of %lld elements beyond tolerance "
                 "(max abs err %.3g, max rel err %.3g, rtol %g, atol %g)",
                 set, name, (long long)c.n_bad, (long long)expected[i]->numel,
                 c.max_abs_err, c.max_rel_err, rtol, atol);
      goto done;
    }
  }

done:
  if (actual)
    for (int i = 0; i < n_out; i++)
      mb_tensor_free(actual[i]);
  free(actual);
  free_set(inputs, n_in);
  free_set(expected, n_out);
}

/* Runs one test; `ops` receives the operator list once the model loads
 * (the parent learns it even if the test later crashes). */
static void run_test(const test *t, const options *o, child_result *r,
                     void (*send_ops)(const char *ops, void *user),
                     void *user) {
  char path[PATH_MAX], ops[OPS_SIZE];
  mb_model *model = NULL;
  mb_session *session = NULL;
  char **sets = NULL;
  int n_sets = 0;
  mb_error err;
  memset(&err, 0, sizeof err);
  set_result(r, PASSED, "ok");

  snprintf(path, sizeof path, "%s/model.onnx", t->dir);
  mb_status status = mb_model_load(path, &model, &err);
  if (status != MB_STATUS_OK) {
    set_result(r, status == MB_STATUS_UNSUPPORTED ? SKIPPED : FAILED,
               "load: %s", strip_dir(err.message, t->dir));
    goto done;
  }
  model_ops(model, ops, sizeof ops);
  send_ops(ops, user);
  const char *broken = broken_reason(t->dir);
  if (broken) {
    set_result(r, SKIPPED, "broken test data: %s", broken);
    goto done;
  }
  status = mb_session_create(model, NULL, &session, &err);
  if (status != MB_STATUS_OK) {
    if (status == MB_STATUS_UNSUPPORTED) {
      char list[512];
      if (mb_model_unsupported_ops(model, list, sizeof list) > 0)
        set_result(r, SKIPPED, "unsupported operator: %s", list);
      else
        set_result(r, SKIPPED, "%s", err.message);
    } else {
      set_result(r, FAILED, "session: %s: %s", mb_status_string(status),
                 err.message);
    }
    goto done;
  }
  n_sets = list_subdirs(t->dir, "test_data_set_", &sets);
  if (n_sets <= 0) {
    set_result(r, FAILED, "no test_data_set_* folders");
    n_sets = 0;
    goto done;
  }
  for (int i = 0; i < n_sets && r->kind == PASSED; i++)
    (has_value_io(model) ? run_set_values : run_set)(t->dir, sets[i], model,
                                                     session, o->runtime, r);

done:
  free_names(sets, n_sets);
  mb_session_free(session);
  mb_model_free(model);
}

/* ---- the parent: fork, collect, aggregate ---- */

static void write_all(int fd, const char *s) {
  size_t n = strlen(s);
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return;
    s += w;
    n -= (size_t)w;
  }
}

static void one_line(char *s) {
  for (; *s; s++)
    if (*s == '\n' || *s == '\r')
      *s = ' ';
}

static void send_ops_fd(const char *ops, void *user) {
  char line[OPS_SIZE + 4];
  snprintf(line, sizeof line, "O %s", ops);
  one_line(line);
  strcat(line, "\n");
  write_all(*(int *)user, line);
}

static void send_ops_local(const char *ops, void *user) {
  snprintf(user, OPS_SIZE, "%s", ops);
}

/* ---- workers ----
 * Forking per test is slow (OpenBLAS re-creates its thread pool after every
 * fork, and under ASan each exit runs a full leak scan), so each worker
 * child runs tests one after another as the parent hands them out. A
 * worker that crashes or overruns the timeout is killed and replaced; the
 * test it was running is FAILED. */

typedef struct outcome {
  child_result r;
  char ops[OPS_SIZE];
} outcome;

typedef struct worker {
  pid_t pid; /* 0: not running */
  int cmd_fd, res_fd;
  int test; /* index being run, -1 when idle */
  double started;
  char buf[OPS_SIZE + MESSAGE_SIZE + 64];
  size_t used;
} worker;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The child side: reads test indices, one per line, until EOF. */
static void worker_main(const test_list *tests, const options *o, int cmd_fd,
                        int res_fd) {
  FILE *in = fdopen(cmd_fd, "r");
  char line[32], result[MESSAGE_SIZE + 8];
  while (in && fgets(line, sizeof line, in)) {
    int i = atoi(line);
    if (i < 0 || i >= tests->count)
      break;
    child_result cr;
    run_test(&tests->items[i], o, &cr, send_ops_fd, &res_fd);
    snprintf(result, sizeof result, "R %c %s", kind_names[cr.kind][0],
             cr.message);
    one_line(result);
    strcat(result, "\n");
    write_all(res_fd, result);
  }
  if (in)
    fclose(in);
  close(res_fd);
  /* exit, not _exit: in ASan builds LeakSanitizer checks the worker. */
  exit(0);
}

static bool worker_start(worker *w, worker *all, int n_workers,
                         const test_list *tests, const options *o) {
  int cmd[2], res[2];
  if (pipe(cmd) != 0)
    return false;
  if (pipe(res) != 0) {
    close(cmd[0]);
    close(cmd[1]);
    return false;
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    close(cmd[0]), close(cmd[1]), close(res[0]), close(res[1]);
    return false;
  }
  if (pid == 0) {
    /* Other workers' pipe ends must not stay open here, or they would never
     * see EOF. */
    for (int i = 0; i < n_workers; i++)
      if (all[i].pid > 0) {
        close(all[i].cmd_fd);
        close(all[i].res_fd);
      }
    close(cmd[1]);
    close(res[0]);
    worker_main(tests, o, cmd[0], res[1]);
  }
  close(cmd[0]);
  close(res[1]);
  w->pid = pid;
  w->cmd_fd = cmd[1];
  w->res_fd = res[0];
  w->test = -1;
  w->used = 0;
  return true;
}

/* Ends a worker (killing it first when asked) and returns its wait status. */
static int worker_stop(worker *w, bool kill_it) {
  int wstatus = 0;
  if (kill_it)
    kill(w->pid, SIGKILL);
  close(w->cmd_fd);
  close(w->res_fd);
  while (waitpid(w->pid, &wstatus, 0) < 0 && errno == EINTR)
    ;
  w->pid = 0;
  w->test = -1;
  return wstatus;
}

/* Parses complete lines from the worker; returns the number of results. */
static int worker_parse(worker *w, outcome *out) {
  int results = 0;
  char *line = w->buf, *end;
  while (w->test >= 0 &&
         (end = memchr(line, '\n', w->used - (size_t)(line - w->buf)))) {
    *end = '\0';
    outcome *x = &out[w->test];
    if (line[0] == 'O' && line[1] == ' ') {
      snprintf(x->ops, sizeof x->ops, "%s", line + 2);
    } else if (line[0] == 'R' && line[1] == ' ' && line[2] && line[3] == ' ') {
      result_kind kind = line[2] == 'P'   ? PASSED
                         : line[2] == 'S' ? SKIPPED
                                          : FAILED;
      set_result(&x->r, kind, "%s", line + 4);
      w->test = -1;
      results++;
    }
    line = end + 1;
  }
  size_t rest = w->used - (size_t)(line - w->buf);
  memmove(w->buf, line, rest);
  w->used = rest;
  return results;
}

static void describe_death(child_result *r, int wstatus, const char *what) {
  if (WIFSIGNALED(wstatus))
    set_result(r, FAILED, "%s (signal %d, %s)", what, WTERMSIG(wstatus),
               strsignal(WTERMSIG(wstatus)));
  else
    set_result(r, FAILED, "%s (exit status %d)", what,
               WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
}

/* Runs every test on o->jobs workers; fills out[] in test order. Returns the
 * number of workers that exited badly after their last test (a leak report
 * in ASan builds), each printed as a failure. */
/* Forked workers inherit run_all's arrays and exit from inside it; keeping
 * them reachable from file scope stops LeakSanitizer from reporting them as
 * leaks of every worker. */
static void *volatile run_all_arrays[3]; /* volatile: the stores must stay */

static int run_all(const test_list *tests, const options *o, outcome *out) {
  int n_workers = o->jobs, next = 0, remaining = tests->count, bad_exits = 0;
  worker *workers = calloc((size_t)n_workers, sizeof *workers);
  struct pollfd *fds = calloc((size_t)n_workers, sizeof *fds);
  int *polled = calloc((size_t)n_workers, sizeof *polled);
  run_all_arrays[0] = workers;
  run_all_arrays[1] = fds;
  run_all_arrays[2] = polled;
  if (!workers || !fds || !polled) {
    fprintf(stderr, "mb-conformance: out of memory\n");
    exit(2);
  }
  for (int i = 0; i < n_workers; i++)
    workers[i].test = -1;
  while (remaining > 0) {
    int n_polled = 0;
    double deadline = 1e300, t = now_s();
    for (int i = 0; i < n_workers; i++) {
      worker *w = &workers[i];
      if (w->test < 0 && next < tests->count) {
        if (w->pid == 0 && !worker_start(w, workers, n_workers, tests, o)) {
          fprintf(stderr, "mb-conformance: cannot start a worker: %s\n",
                  strerror(errno));
          exit(2);
        }
        char cmd[32];
        snprintf(cmd, sizeof cmd, "%d\n", next);
        w->test = next;
        w->started = t;
        w->used = 0;
        out[next].ops[0] = '\0';
        next++;
        write_all(w->cmd_fd, cmd); /* a dead worker shows as EOF below */
      }
      if (w->test >= 0) {
        fds[n_polled] = (struct pollfd){w->res_fd, POLLIN, 0};
        polled[n_polled++] = i;
        deadline = MB_MIN(deadline, w->started + o->timeout_s);
      }
    }
    int wait_ms = (int)MB_MAX(0.0, (deadline - t) * 1000) + 1;
    int pr = poll(fds, (nfds_t)n_polled, wait_ms);
    if (pr < 0 && errno != EINTR) {
      fprintf(stderr, "mb-conformance: poll: %s\n", strerror(errno));
      exit(2);
    }
    t = now_s();
    for (int k = 0; k < n_polled; k++) {
      worker *w = &workers[polled[k]];
      if (pr > 0 && fds[k].revents) {
        ssize_t n =
            read(w->res_fd, w->buf + w->used, sizeof w->buf - 1 - w->used);
        if (n > 0) {
          w->used += (size_t)n;
          remaining -= worker_parse(w, out);
          if (w->used == sizeof w->buf - 1)
            w->used = 0; /* an overlong line: drop it */
          continue;
        }
        if (n < 0 && errno == EINTR)
          continue;
        int current = w->test;
        int wstatus = worker_stop(w, false);
        describe_death(&out[current].r, wstatus, "crashed");
        remaining--;
      } else if (t >= w->started + o->timeout_s) {
        int current = w->test;
        worker_stop(w, true);
        set_result(&out[current].r, FAILED, "timed out after %d s",
                   o->timeout_s);
        remaining--;
      }
    }
  }
  for (int i = 0; i < n_workers; i++) {
    if (workers[i].pid == 0)
      continue;
    int wstatus = worker_stop(&workers[i], false);
    if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
      child_result r;
      describe_death(&r, wstatus,
                     "a worker failed after its last test, "
                     "see the sanitizer report above");
      printf("FAILED  (worker): %s\n", r.message);
      bad_exits++;
    }
  }
  free(workers);
  free(fds);
  free(polled);
  return bad_exits;
}

static counter *counter_get(counter_list *list, const char *key) {
  for (int i = 0; i < list->count; i++)
    if (strcmp(list->items[i].key, key) == 0)
      return &list->items[i];
  if (list->count == list->cap) {
    list->cap = list->cap ? list->cap * 2 : 64;
    list->items =
        xrealloc(list->items, sizeof *list->items * (size_t)list->cap);
  }
  counter *c = &list->items[list->count++];
  memset(c, 0, sizeof *c);
  c->key = xstrdup(key);
  return c;
}

static void counters_free(counter_list *list) {
  for (int i = 0; i < list->count; i++)
    free(list->items[i].key);
  free(list->items);
}

/* Aggregates a skip reason: a list of unsupported operators counts under
 * each operator, and quoted names ('x') are elided so that the same cause
 * in different tests lands on one line. */
static void count_skip_reason(counter_list *reasons, const char *message) {
  static const char ops_prefix[] = "unsupported operator: ";
  char key[MESSAGE_SIZE];
  if (strncmp(message, ops_prefix, sizeof ops_prefix - 1) == 0) {
    const char *p = message + sizeof ops_prefix - 1;
    while (*p) {
      size_t len = strcspn(p, ",");
      snprintf(key, sizeof key, "%s%.*s", ops_prefix, (int)len, p);
      counter_get(reasons, key)->counts[SKIPPED]++;
      p += len;
      while (*p == ',' || *p == ' ')
        p++;
    }
    return;
  }
  size_t used = 0;
  bool quoted = false;
  for (const char *p = message; *p && used + 2 < sizeof key; p++) {
    if (*p == '\'') {
      if (!quoted) {
        key[used++] = '\'';
        key[used++] = '*';
      } else {
        key[used++] = '\'';
      }
      quoted = !quoted;
      continue;
    }
    if (!quoted)
      key[used++] = *p;
  }
  key[used] = '\0';
  counter_get(reasons, key)->counts[SKIPPED]++;
}

static int compare_by_skips(const void *pa, const void *pb) {
  const counter *a = pa, *b = pb;
  if (a->counts[SKIPPED] != b->counts[SKIPPED])
    return b->counts[SKIPPED] - a->counts[SKIPPED];
  return strcmp(a->key, b->key);
}

static int compare_by_key(const void *pa, const void *pb) {
  return strcmp(((const counter *)pa)->key, ((const counter *)pb)->key);
}

static void usage(FILE *out) {
  fprintf(out,
          "Usage: mb-conformance DIR... [--runtime NAME] [--filter SUBSTR]\n"
          "                     [--min-pass N] [--timeout SECONDS] [--jobs N]\n"
          "                     [--verbose] [--no-fork]\n"
          "DIR: the libonnx-testdata data root, a category folder (node/...)\n"
          "or one test folder. --runtime: reference (the default), or a\n"
          "hybrid runtime (xnnpack, onednn) to run the models through.\n"
          "Exit status 1 when a test fails or fewer than --min-pass tests\n"
          "pass, 2 on a usage error, %d when the runtime is not available.\n",
          EXIT_UNAVAILABLE);
}

static bool parse_long(const char *s, long min, long max, long *out) {
  char *end;
  errno = 0;
  long v = s && *s ? strtol(s, &end, 10) : 0;
  if (!s || !*s || errno || *end || v < min || v > max)
    return false;
  *out = v;
  return true;
}

int main(int argc, char **argv) {
  options o = {NULL, NULL, 0, 60, 1, false, false};
  const char *runtime = "reference";
  test_list tests = {NULL, 0, 0};
  counter_list reasons = {NULL, 0, 0}, ops = {NULL, 0, 0};
  int totals[KIND_COUNT] = {0, 0, 0};
  int n_dirs = 0, rc = 0;
  long v;
  const char **dirs = calloc((size_t)argc, sizeof *dirs);
  if (!dirs)
    return 2;

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *next = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--runtime") == 0 && next) {
      runtime = next;
      i++;
    } else if (strcmp(a, "--filter") == 0 && next) {
      o.filter = next;
      i++;
    } else if (strcmp(a, "--min-pass") == 0 &&
               parse_long(next, 0, 1000000, &v)) {
      o.min_pass = v;
      i++;
    } else if (strcmp(a, "--timeout") == 0 && parse_long(next, 1, 86400, &v)) {
      o.timeout_s = (int)v;
      i++;
    } else if ((strcmp(a, "--jobs") == 0 || strcmp(a, "-j") == 0) &&
               parse_long(next, 1, 256, &v)) {
      o.jobs = (int)v;
      i++;
    } else if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0) {
      o.verbose = true;
    } else if (strcmp(a, "--no-fork") == 0) {
      o.no_fork = true;
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      free(dirs);
      return 0;
    } else if (a[0] == '-') {
      fprintf(stderr, "mb-conformance: bad option or missing value: %s\n", a);
      usage(stderr);
      free(dirs);
      return 2;
    } else {
      dirs[n_dirs++] = a;
    }
  }
  if (n_dirs == 0) {
    usage(stderr);
    free(dirs);
    return 2;
  }
  if (strcmp(runtime, "reference") != 0) {
    /* Probed before any worker forks: the probes start no thread pools. */
    const mb_runtime *rt = mb__runtime_find(runtime);
    mb_runtime_info info = {.name = runtime};
    if (!rt || !rt->hybrid) {
      fprintf(stderr,
              "mb-conformance: --runtime %s: not the reference or a hybrid "
              "runtime\n",
              runtime);
      free(dirs);
      return 2;
    }
    rt->probe(&info);
    if (!info.available) {
      printf("mb-conformance: %s is not available here: %s\n", runtime,
             info.reason);
      free(dirs);
      return EXIT_UNAVAILABLE;
    }
    o.runtime = rt;
  }
  for (int i = 0; i < n_dirs; i++)
    if (add_dir(&tests, dirs[i], &o) != 0)
      rc = 2;
  free(dirs);
  if (rc)
    goto done;

  outcome *out =
      calloc((size_t)(tests.count > 0 ? tests.count : 1), sizeof *out);
  if (!out) {
    fprintf(stderr, "mb-conformance: out of memory\n");
    rc = 2;
    goto done;
  }
  signal(SIGPIPE, SIG_IGN); /* a dead worker must not kill the parent */
  if (o.no_fork) {
    for (int i = 0; i < tests.count; i++)
      run_test(&tests.items[i], &o, &out[i].r, send_ops_local, out[i].ops);
  } else {
    totals[FAILED] += run_all(&tests, &o, out);
  }
  for (int i = 0; i < tests.count; i++) {
    const test *t = &tests.items[i];
    const child_result *r = &out[i].r;
    totals[r->kind]++;
    if (r->kind == FAILED)
      printf("FAILED  %s: %s\n", t->name, r->message);
    else if (o.verbose)
      printf("%-7s %s%s%s\n", kind_names[r->kind], t->name,
             r->kind == SKIPPED ? ": " : "",
             r->kind == SKIPPED ? r->message : "");
    if (r->kind == SKIPPED)
      count_skip_reason(&reasons, r->message);
    /* Coverage: every op type of the model gets the test's result. */
    char *save = NULL;
    bool any = false;
    for (char *op = strtok_r(out[i].ops, ",", &save); op;
         op = strtok_r(NULL, ",", &save)) {
      counter_get(&ops, op)->counts[r->kind]++;
      any = true;
    }
    if (!any)
      counter_get(&ops, "(model did not load)")->counts[r->kind]++;
  }
  free(out);

  if (ops.count) {
    qsort(ops.items, (size_t)ops.count, sizeof *ops.items, compare_by_key);
    printf("\nper-operator coverage (tests using the op):\n");
    printf("  %-32s %6s %6s %7s\n", "op_type", "passed", "failed", "skipped");
    for (int i = 0; i < ops.count; i++)
      printf("  %-32s %6d %6d %7d\n", ops.items[i].key,
             ops.items[i].counts[PASSED], ops.items[i].counts[FAILED],
             ops.items[i].counts[SKIPPED]);
  }
  if (reasons.count) {
    qsort(reasons.items, (size_t)reasons.count, sizeof *reasons.items,
          compare_by_skips);
    printf("\nskipped, by reason (a test lacking several operators counts "
           "under each; --verbose lists every test):\n");
    for (int i = 0; i < reasons.count; i++)
      printf("  %4d  %s\n", reasons.items[i].counts[SKIPPED],
             reasons.items[i].key);
  }
  printf("\n%d passed, %d failed, %d skipped (%s)\n", totals[PASSED],
         totals[FAILED], totals[SKIPPED], runtime);
  if (totals[FAILED] > 0 || totals[PASSED] < o.min_pass) {
    if (totals[PASSED] < o.min_pass)
      fprintf(stderr, "mb-conformance: %d passed, fewer than --min-pass %ld\n",
              totals[PASSED], o.min_pass);
    rc = 1;
  }

done:
  for (int i = 0; i < tests.count; i++) {
    free(tests.items[i].name);
    free(tests.items[i].dir);
  }
  free(tests.items);
  counters_free(&reasons);
  counters_free(&ops);
  return rc;
}
