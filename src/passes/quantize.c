/* INT8 quantisation passes (see quantize.h): dynamic MatMulInteger chains,
 * static QDQ from calibrated ranges, and the quantisation parameters they
 * share. Calibration itself is in calibrate.c.
 *
 * Both passes follow onnxruntime.quantization closely, because the point is
 * that ONNX Runtime's CPU provider recognises the result and runs it on its
 * integer kernels: the node patterns, the input order of each node and the
 * conventions for scales (symmetric int8 weights over [-127, 127], uint8
 * activations with a zero point, int32 biases with scale x_scale * w_scale)
 * are the ones its graph transformers match. */
#include "passes/quantize.h"

#include "analysis/json.h"
#include "core/json_parse.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>

/* ------------------------------------------------------------------------ */
/* Names                                                                     */
/* ------------------------------------------------------------------------ */

static const char *const calibration_names[] = {
#define MB_X(name, str) str,
    MB_QUANT_CALIBRATION_LIST(MB_X)
#undef MB_X
};
_Static_assert(MB_ARRAY_COUNT(calibration_names) == MB_QUANT_CALIBRATION_COUNT,
               "one name per calibration method");

static const char *const activations_names[] = {
#define MB_X(name, str) str,
    MB_QUANT_ACTIVATIONS_LIST(MB_X)
#undef MB_X
};
_Static_assert(MB_ARRAY_COUNT(activations_names) == MB_QUANT_ACTIVATIONS_COUNT,
               "one name per activation type");

static const char *const kind_names[] = {
#define MB_X(name, str) str,
    MB_QUANT_KIND_LIST(MB_X)
#undef MB_X
};
_Static_assert(MB_ARRAY_COUNT(kind_names) == MB_QUANT_KIND_COUNT,
               "one name per parameter kind");

const char *mb__quant_calibration_name(mb_quant_calibration calibration) {
  return (unsigned)calibration < MB_QUANT_CALIBRATION_COUNT
             ? calibration_names[calibration]
             : "invalid";
}

const char *mb__quant_activations_name(mb_quant_activations activations) {
  return (unsigned)activations < MB_QUANT_ACTIVATIONS_COUNT
             ? activations_names[activations]
             : "invalid";
}

const char *mb__quant_kind_name(mb_quant_kind kind) {
  return (unsigned)kind < MB_QUANT_KIND_COUNT ? kind_names[kind] : "invalid";
}

/* ------------------------------------------------------------------------ */
/* Scales and parameters                                                     */
/* ------------------------------------------------------------------------ */

void mb__quant_scale_zero_point(double rmin, double rmax, mb_dtype dtype,
                                float *scale_out, int32_t *zero_point_out) {
  if (!isfinite(rmin) || !isfinite(rmax) || rmin > rmax)
    rmin = rmax = 0.0;
  rmin = MB_MIN(rmin, 0.0);
  rmax = MB_MAX(rmax, 0.0);
  double scale;
  int32_t zero_point = 0;
  if (dtype == MB_DTYPE_UINT8) {
    scale = (rmax - rmin) / 255.0;
    if (scale >= FLT_MIN) {
      double zp = nearbyint(-rmin / scale);
      zero_point = (int32_t)(zp < 0 ? 0 : zp > 255 ? 255 : zp);
    }
  } else {
    scale = MB_MAX(-rmin, rmax) / 127.0;
  }
  /* A range of zeros (or denormals) would divide by zero in Q nodes. */
  if (!(scale >= FLT_MIN) || scale > FLT_MAX) {
    scale = 1.0;
    zero_point = 0;
  }
  *scale_out = (float)scale;
  *zero_point_out = zero_point;
}

static mb_dtype activation_dtype(mb_quant_activations a) {
  return a == MB_QUANT_ACTIVATIONS_UINT8 ? MB_DTYPE_UINT8 : MB_DTYPE_INT8;
}

mb_quant_param *mb__quant_params_find(const mb_quant_params *params,
                                      const char *name) {
  for (int i = 0; params && i < params->count; i++)
    if (strcmp(params->tensors[i].name, name) == 0)
      return &params->tensors[i];
  return NULL;
}

static void param_clear(mb_quant_param *p) {
  free(p->name);
  free(p->scales);
  free(p->zero_points);
  memset(p, 0, sizeof *p);
}

void mb__quant_params_free(mb_quant_params *params) {
  if (!params)
    return;
  for (int i = 0; i < params->count; i++)
    param_clear(&params->tensors[i]);
  free(params->tensors);
  free(params);
}

/* Sets p's channel count, reallocating its arrays (contents zeroed). */
static mb_status param_set_channels(mb_quant_param *p, int64_t channels,
                                    mb_error *err) {
  if (p->channels != channels || !p->scales) {
    free(p->scales);
    free(p->zero_points);
    p->scales = calloc((size_t)channels, sizeof *p->scales);
    p->zero_points = calloc((size_t)channels, sizeof *p->zero_points);
    p->channels = channels;
    if (!p->scales || !p->zero_points)
      return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                       "cannot allocate quantisation parameters");
  } else {
    memset(p->scales, 0, sizeof *p->scales * (size_t)channels);
    memset(p->zero_points, 0, sizeof *p->zero_points * (size_t)channels);
  }
  return MB_STATUS_OK;
}

int mb__quant_params_add(mb_quant_params *params, const char *name,
                         mb_quant_kind kind, mb_error *err) {
  mb_quant_param *p = mb__quant_params_find(params, name);
  if (p)
    return (int)(p - params->tensors);
  if (params->count == params->capacity) {
    int cap = params->capacity ? params->capacity * 2 : 64;
    mb_quant_param *grown =
        realloc(params->tensors, sizeof *grown * (size_t)cap);
    if (!grown) {
      mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                "cannot grow quantisation parameters");
      return -1;
    }
    params->tensors = grown;
    params->capacity = cap;
  }
  p = &params->tensors[params->count];
  memset(p, 0, sizeof *p);
  p->kind = kind;
  p->axis = -1;
  if (!(p->name = mb__strdup(name)) ||
      param_set_channels(p, 1, err) != MB_STATUS_OK) {
    param_clear(p);
    mb__error(err, MB_STATUS_OUT_OF_MEMORY,
              "cannot allocate quantisation parameters");
    return -1;
  }
  return params->count++;
}

mb_status mb__quant_params_write_json(const mb_quant_params *params,
                                      const char *path, mb_error *err) {
  if (!params || !path)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "quantisation parameters: no %s",
                     params ? "path" : "parameters");
  size_t len = strlen(path) + sizeof ".tmp";
  char *tmp = malloc(len);
  if (!tmp)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
  snprintf(tmp, len, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) {
    mb_status status = mb__error(err, MB_STATUS_IO, "%s: cannot create: %s",
                                 tmp, strerror(errno));
    free(tmp);
    return status;
  }
  mb_json j;
  mb__json_init(&j, f, true);
  mb__json_object_begin(&j);
  mb__json_kv_string(&j, "format", "modelbench-quant-params");
  mb__json_kv_int(&j, "version", 1);
  mb__json_kv_string(&j, "calibration",
                     mb__quant_calibration_name(params->calibration));
  if (params->calibration == MB_QUANT_CALIBRATION_PERCENTILE)
    mb__json_kv_double(&j, "percentile", params->percentile);
  mb__json_kv_string(&j, "activations",
                     mb__quant_activations_name(params->activations));
  mb__json_kv_int(&j, "samples", params->samples);
  mb__json_key(&j, "tensors");
  mb__json_array_begin(&j);
  for (int i = 0; i < params->count; i++) {
    const mb_quant_param *p = &params->tensors[i];
    mb__json_object_begin(&j);
    mb__json_kv_string(&j, "name", p->name);
    mb__json_kv_string(&j, "kind", mb__quant_kind_name(p->kind));
    mb__json_kv_string(&j, "dtype", mb_dtype_name(p->dtype));
    mb__json_kv_double(&j, "min", p->min);
    mb__json_kv_double(&j, "max", p->max);
    if (p->kind == MB_QUANT_KIND_ACTIVATION)
      mb__json_kv_int(&j, "count", p->count);
    mb__json_kv_int(&j, "axis", p->axis);
    mb__json_key(&j, "scales");
    mb__json_array_begin(&j);
    for (int64_t c = 0; c < p->channels; c++)
      mb__json_double(&j, p->scales[c]);
    mb__json_array_end(&j);
    mb__json_key(&j, "zero_points");
    mb__json_array_begin(&j);
    for (int64_t c = 0; c < p->channels; c++)
      mb__json_int(&j, p->zero_points[c]);
    mb__json_array_end(&j);
    mb__json_kv_bool(&j, "applied", p->applied != 0);
    mb__json_object_end(&j);
  }
  mb__json_array_end(&j);
  mb__json_object_end(&j);
  fputc('\n', f);
  bool failed = ferror(f) != 0;
  failed |= fclose(f) != 0;
  mb_status status = MB_STATUS_OK;
  if (failed)
    status = mb__error(err, MB_STATUS_IO, "%s: write failed: %s", tmp,
                       strerror(errno));
  else if (rename(tmp, path) != 0)
    status = mb__error(err, MB_STATUS_IO, "%s: cannot rename %s: %s", path, tmp,
                       strerror(errno));
  if (status)
    remove(tmp);
  free(tmp);
  return status;
}

/* The index of `name` in names[0..n), or -1. */
static int name_index(const char *const *names, int n, const char *name) {
  for (int i = 0; name && i < n; i++)
    if (strcmp(names[i], name) == 0)
      return i;
  return -1;
}

/* A member of `o` of type `type`, or NULL with err set (naming path). */
static const mb_json_value *member(const mb_json_value *o, const char *key,
                                   mb_json_type type, const char *path,
                                   mb_error *err) {
  const mb_json_value *v = mb__json_find(o, key);
  if (!v || v->type != type) {
    mb__error(err, MB_STATUS_PARSE, "%s:%d:%d: \"%s\" must be a %s", path,
              o->line, o->column, key, mb__json_type_name(type));
    return NULL;
  }
  return v;
}

static mb_status read_tensor(const mb_json_value *o, mb_quant_params *params,
                             const char *path, mb_error *err) {
  const mb_json_value *name = member(o, "name", MB_JSON_STRING, path, err);
  const mb_json_value *kind =
      name ? member(o, "kind", MB_JSON_STRING, path, err) : NULL;
  const mb_json_value *dtype =
      kind ? member(o, "dtype", MB_JSON_STRING, path, err) : NULL;
  const mb_json_value *scales =
      dtype ? member(o, "scales", MB_JSON_ARRAY, path, err) : NULL;
  const mb_json_value *zps =
      scales ? member(o, "zero_points", MB_JSON_ARRAY, path, err) : NULL;
  if (!zps)
    return err->status;
  int k = name_index(kind_names, MB_QUANT_KIND_COUNT, kind->string);
  mb_dtype dt = mb_dtype_from_name(dtype->string);
  if (k < 0 ||
      (dt != MB_DTYPE_UINT8 && dt != MB_DTYPE_INT8 && dt != MB_DTYPE_INT32) ||
      scales->count == 0 || scales->count != zps->count ||
      scales->count > (size_t)INT32_MAX)
    return mb__error(err, MB_STATUS_PARSE,
                     "%s:%d:%d: tensor \"%s\": bad kind, dtype or scales", path,
                     o->line, o->column, name->string);
  int i = mb__quant_params_add(params, name->string, (mb_quant_kind)k, err);
  if (i < 0)
    return err->status;
  mb_quant_param *p = &params->tensors[i];
  mb_status status = param_set_channels(p, (int64_t)scales->count, err);
  if (status)
    return status;
  p->kind = (mb_quant_kind)k;
  p->dtype = dt;
  const mb_json_value *v;
  p->min = (v = mb__json_find(o, "min")) && v->type == MB_JSON_NUMBER
               ? v->number
               : 0.0;
  p->max = (v = mb__json_find(o, "max")) && v->type == MB_JSON_NUMBER
               ? v->number
               : 0.0;
  p->count = (v = mb__json_find(o, "count")) && v->is_integer ? v->integer : 0;
  p->axis =
      (v = mb__json_find(o, "axis")) && v->is_integer ? (int)v->integer : -1;
  p->applied = (v = mb__json_find(o, "applied")) && v->type == MB_JSON_BOOL &&
               v->boolean;
  for (size_t c = 0; c < scales->count; c++) {
    const mb_json_value *s = &scales->items[c], *z = &zps->items[c];
    if (s->type != MB_JSON_NUMBER || !(s->number > 0) || !z->is_integer ||
        z->integer < INT32_MIN || z->integer > INT32_MAX)
      return mb__error(err, MB_STATUS_PARSE,
                       "%s:%d:%d: tensor \"%s\": scales must be positive "
                       "numbers and zero points integers",
                       path, s->line, s->column, name->string);
    p->scales[c] = (float)s->number;
    p->zero_points[c] = (int32_t)z->integer;
  }
  return MB_STATUS_OK;
}

mb_status mb__quant_params_read_json(const char *path,
                                     mb_quant_params **params_out,
                                     mb_error *err) {
  mb_json_doc *doc = NULL;
  mb_quant_params *params = NULL;
  const mb_json_value *root, *v;
  mb_status status;
  *params_out = NULL;
  if ((status = mb__json_parse_file(path, &doc, err)))
    return status;
  root = &doc->root;
  if (!(v = mb__json_find(root, "format")) || v->type != MB_JSON_STRING ||
      strcmp(v->string, "modelbench-quant-params") != 0 ||
      !(v = mb__json_find(root, "version")) || !v->is_integer ||
      v->integer != 1) {
    status = mb__error(err, MB_STATUS_PARSE,
                       "%s: not modelbench quantisation parameters "
                       "(format \"modelbench-quant-params\", version 1)",
                       path);
    goto done;
  }
  if (!(params = calloc(1, sizeof *params))) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    goto done;
  }
  v = mb__json_find(root, "calibration");
  int i = name_index(calibration_names, MB_QUANT_CALIBRATION_COUNT,
                     v && v->type == MB_JSON_STRING ? v->string : NULL);
  params->calibration =
      i < 0 ? MB_QUANT_CALIBRATION_MINMAX : (mb_quant_calibration)i;
  v = mb__json_find(root, "percentile");
  params->percentile = v && v->type == MB_JSON_NUMBER ? v->number : 0.0;
  v = mb__json_find(root, "activations");
  i = name_index(activations_names, MB_QUANT_ACTIVATIONS_COUNT,
                 v && v->type == MB_JSON_STRING ? v->string : NULL);
  params->activations =
      i < 0 ? MB_QUANT_ACTIVATIONS_UINT8 : (mb_quant_activations)i;
  v = mb__json_find(root, "samples");
  params->samples = v && v->is_integer ? (int)v->integer : 0;
  const mb_json_value *tensors =
      member(root, "tensors", MB_JSON_ARRAY, path, err);
  if (!tensors) {
    status = err->status;
    goto done;
  }
  for (size_t t = 0; t < tensors->count && !status; t++) {
    if (tensors->items[t].type != MB_JSON_OBJECT)
      status = mb__error(err, MB_STATUS_PARSE,
                         "%s:%d:%d: each tensor must be an object", path,
                         tensors->items[t].line, tensors->items[t].column);
    else
      status = read_tensor(&tensors->items[t], params, path, err);
  }
done:
  mb__json_doc_free(doc);
  if (status)
    mb__quant_params_free(params);
  else
    *params_out = params;
  return status;
}

/* ------------------------------------------------------------------------ */
/* Options                                                                   */
/* ------------------------------------------------------------------------ */

mb_status mb__quant_options_resolve(const mb_quant_options *in,
                                    mb_quant_options *out, mb_error *err) {
  static const mb_quant_options defaults = {0};
  *out = in ? *in : defaults;
  if ((unsigned)out->calibration >= MB_QUANT_CALIBRATION_COUNT)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "quantisation: unknown calibration method %d",
                     (int)out->calibration);
  if ((unsigned)out->activations >= MB_QUANT_ACTIVATIONS_COUNT)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "quantisation: unknown activation type %d",
                     (int)out->activations);
  if (out->percentile == 0.0)
    out->percentile = MB_QUANT_PERCENTILE_DEFAULT;
  if (!(out->percentile > 0.0 && out->percentile <= 100.0))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "quantisation: percentile %g is not in (0, 100]",
                     out->percentile);
  if (out->n_exclude < 0 || (out->n_exclude > 0 && !out->exclude))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "quantisation: %d excluded nodes but no list",
                     out->n_exclude);
  if (out->threads <= 0)
    out->threads = 1;
  return MB_STATUS_OK;
}

static bool excluded(const mb_quant_options *opt, const mb_node *n) {
  for (int i = 0; i < opt->n_exclude; i++)
    if (opt->exclude[i] && strcmp(opt->exclude[i], n->name) == 0)
      return true;
  return false;
}

/* ------------------------------------------------------------------------ */
/* Graph helpers                                                             */
/* ------------------------------------------------------------------------ */

/* The node producing value v in the main graph when it is a node of the
 * default domain named op_type, else NULL. */
static const mb_node *produced_by(const mb_graph *g, int v,
                                  const char *op_type) {
  if (v < 0 || g->values[v].producer < 0 ||
      g->values[v].kind != MB_VALUE_INTERMEDIATE ||
      g->values[v].producer >= g->n_nodes)
    return NULL;
  const mb_node *p = &g->nodes[g->values[v].producer];
  return strcmp(p->op_type, op_type) == 0 && !p->domain[0] ? p : NULL;
}

/* The value holding the data of v when v is a constant: v itself for an
 * initializer or the output of a Constant node with a tensor `value`, or
 * what an Identity chain starting at v copies (exporters write shared
 * weights that way). -1 when v is no constant. */
static int constant_source(const mb_graph *g, int v) {
  for (int depth = 0; v >= 0 && depth < 64; depth++) {
    if (g->values[v].initializer)
      return v;
    const mb_node *p = produced_by(g, v, "Constant");
    if (p) {
      const mb_attr *a = mb__node_attr(p, "value");
      return a && a->type == MB_ATTR_TENSOR && a->t ? v : -1;
    }
    p = produced_by(g, v, "Identity");
    v = p && p->n_inputs == 1 ? p->inputs[0] : -1;
  }
  return -1;
}

/* The data of constant v (see constant_source), or NULL. */
static const mb_tensor *constant_of(const mb_graph *g, int v) {
  v = constant_source(g, v);
  if (v < 0)
    return NULL;
  if (g->values[v].initializer)
    return g->values[v].initializer;
  return mb__node_attr(&g->nodes[g->values[v].producer], "value")->t;
}

static bool is_float_constant(const mb_graph *g, int v) {
  const mb_tensor *t = constant_of(g, v);
  return t && t->dtype == MB_DTYPE_FLOAT && (t->numel == 0 || t->data);
}

static bool is_graph_output(const mb_graph *g, int v) {
  return v >= 0 && g->values[v].is_output;
}

static bool is_graph_input(const mb_graph *g, int v) {
  return v >= 0 && g->values[v].kind == MB_VALUE_INPUT;
}

/* Marks the values of g that subgraphs (at any depth) read by name. */
static void mark_subgraph_reads(const mb_graph *g, const mb_graph *sub,
                                bool *read) {
  for (int i = 0; i < sub->n_nodes; i++) {
    const mb_node *n = &sub->nodes[i];
    if (sub != g)
      for (int j = 0; j < n->n_inputs; j++) {
        int v = n->inputs[j] >= 0
                    ? mb__graph_find_value(g, sub->values[n->inputs[j]].name)
                    : -1;
        if (v >= 0)
          read[v] = true;
      }
    for (int a = 0; a < n->n_attrs; a++) {
      const mb_attr *attr = &n->attrs[a];
      if (attr->type == MB_ATTR_GRAPH && attr->g)
        mark_subgraph_reads(g, attr->g, read);
      for (int64_t k = 0; attr->type == MB_ATTR_GRAPHS && k < attr->n; k++)
        mark_subgraph_reads(g, attr->graphs[k], read);
    }
  }
}

/* uses[v]: node input slots of g reading v (nodes with skip[i] set are not
 * counted; skip may be NULL). sub_read[v]: a subgraph reads v by name. */
static void count_uses(const mb_graph *g, const bool *skip, int *uses,
                       bool *sub_read) {
  memset(uses, 0, sizeof *uses * (size_t)g->n_values);
  memset(sub_read, 0, sizeof *sub_read * (size_t)g->n_values);
  for (int i = 0; i < g->n_nodes; i++) {
    if (skip && skip[i])
      continue;
    for (int j = 0; j < g->nodes[i].n_inputs; j++)
      if (g->nodes[i].inputs[j] >= 0)
        uses[g->nodes[i].inputs[j]]++;
  }
  mark_subgraph_reads(g, g, sub_read);
}

static bool name_used(const mb_graph *g, const char *name) {
  if (mb__graph_find_value(g, name) >= 0)
    return true;
  for (int i = 0; i < g->n_nodes; i++)
    for (int a = 0; a < g->nodes[i].n_attrs; a++) {
      const mb_attr *attr = &g->nodes[i].attrs[a];
      if (attr->type == MB_ATTR_GRAPH && attr->g && name_used(attr->g, name))
        return true;
      for (int64_t k = 0; attr->type == MB_ATTR_GRAPHS && k < attr->n; k++)
        if (name_used(attr->graphs[k], name))
          return true;
    }
  return false;
}

/* A new value named base + suffix (+ "_2", "_3" ... until unused). Returns
 * its index or -1. */
static int new_value(mb_graph *g, const char *base, const char *suffix,
                     mb_error *err) {
  size_t len = strlen(base) + strlen(suffix) + 16;
  char *name = malloc(len);
  if (!name) {
    mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    return -1;
  }
  snprintf(name, len, "%s%s", base, suffix);
  for (int k = 2; name_used(g, name); k++)
    snprintf(name, len, "%s%s_%d", base, suffix, k);
  int v = mb__graph_value(g, name, err);
  free(name);
  return v;
}

/* A new initializer named base + suffix that takes `t` (also on failure).
 * Returns its index or -1. */
static int new_initializer(mb_graph *g, const char *base, const char *suffix,
                           mb_tensor *t, mb_error *err) {
  int v = new_value(g, base, suffix, err);
  if (v < 0) {
    mb_tensor_free(t);
    return -1;
  }
  /* g->values[v].name is in the arena: stable while the arrays grow. */
  return mb__graph_add_initializer(g, g->values[v].name, t, err);
}

/* Appends a node over value indices (-1: omitted). Returns its index. */
static int add_node(mb_graph *g, const char *op_type, const char *name,
                    int n_inputs, const int *inputs, int n_outputs,
                    const int *outputs, mb_error *err) {
  const char *in[8], *out[8];
  MB_ASSERT(n_inputs <= 8 && n_outputs <= 8);
  for (int i = 0; i < n_inputs; i++)
    in[i] = inputs[i] >= 0 ? g->values[inputs[i]].name : "";
  for (int i = 0; i < n_outputs; i++)
    out[i] = outputs[i] >= 0 ? g->values[outputs[i]].name : "";
  return mb__graph_add_node(g, op_type, "", name, n_inputs, in, n_outputs, out,
                            err);
}

/* Sets float attribute `name` of node i, adding it when absent. */
static mb_status set_float_attr(mb_graph *g, int i, const char *name, float v,
                                mb_error *err) {
  mb_node *n = &g->nodes[i];
  for (int a = 0; a < n->n_attrs; a++)
    if (strcmp(n->attrs[a].name, name) == 0) {
      n->attrs[a].type = MB_ATTR_FLOAT;
      n->attrs[a].f = v;
      return MB_STATUS_OK;
    }
  return mb__node_set_float(g, i, name, v, err);
}

static void free_node_attrs(mb_node *n) {
  for (int a = 0; a < n->n_attrs; a++) {
    mb_attr *attr = &n->attrs[a];
    mb_tensor_free(attr->t);
    attr->t = NULL;
    if (attr->g)
      mb__graph_free(attr->g);
    attr->g = NULL;
    for (int64_t k = 0; attr->type == MB_ATTR_TENSORS && k < attr->n; k++)
      mb_tensor_free(attr->tensors[k]);
    for (int64_t k = 0; attr->type == MB_ATTR_GRAPHS && k < attr->n; k++)
      mb__graph_free(attr->graphs[k]);
    attr->n = 0;
  }
}

/* Removes the nodes marked in `remove` (the first n_marked nodes may be
 * marked; later ones are kept), then the Constant nodes nobody reads, then
 * drops initializers nobody reads and clears the declared type of values
 * nothing produces or reads, so that the writer emits none of them. Value
 * producers are left for mb__graph_finalize. */
static mb_status remove_and_prune(mb_graph *g, const bool *remove, int n_marked,
                                  mb_error *err) {
  int *uses = calloc((size_t)g->n_values + 1, sizeof *uses);
  bool *sub_read = calloc((size_t)g->n_values + 1, sizeof *sub_read);
  bool *produced = calloc((size_t)g->n_values + 1, sizeof *produced);
  bool *dead = calloc((size_t)g->n_nodes + 1, sizeof *dead);
  if (!uses || !sub_read || !produced || !dead) {
    free(uses);
    free(sub_read);
    free(produced);
    free(dead);
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  for (int i = 0; i < n_marked && remove; i++)
    dead[i] = remove[i];
  /* Constant and Identity nodes whose outputs nobody reads any more (the
   * weights they carried were quantised), until none is left. */
  for (bool again = true; again;) {
    again = false;
    count_uses(g, dead, uses, sub_read);
    for (int i = 0; i < g->n_nodes; i++) {
      const mb_node *n = &g->nodes[i];
      if (dead[i] || n->domain[0] || n->n_outputs != 1 || n->outputs[0] < 0 ||
          (strcmp(n->op_type, "Constant") != 0 &&
           strcmp(n->op_type, "Identity") != 0))
        continue;
      int v = n->outputs[0];
      if (uses[v] == 0 && !sub_read[v] && !is_graph_output(g, v))
        dead[i] = again = true;
    }
  }
  int kept = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    if (dead[i]) {
      free_node_attrs(&g->nodes[i]);
      continue;
    }
    g->nodes[kept++] = g->nodes[i];
  }
  g->n_nodes = kept;
  count_uses(g, NULL, uses, sub_read);
  for (int i = 0; i < g->n_nodes; i++)
    for (int j = 0; j < g->nodes[i].n_outputs; j++)
      if (g->nodes[i].outputs[j] >= 0)
        produced[g->nodes[i].outputs[j]] = true;
  for (int v = 0; v < g->n_values; v++) {
    mb_value *val = &g->values[v];
    if (uses[v] || sub_read[v] || val->is_output || val->kind == MB_VALUE_INPUT)
      continue;
    if (val->initializer) {
      mb_tensor_free(val->initializer);
      val->initializer = NULL;
    } else if (produced[v] || val->kind != MB_VALUE_INTERMEDIATE) {
      continue;
    }
    val->producer = -1;
    val->dtype = MB_DTYPE_UNDEFINED;
    val->rank = -1;
  }
  free(uses);
  free(sub_read);
  free(produced);
  free(dead);
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* Weights                                                                   */
/* ------------------------------------------------------------------------ */

/* Symmetric int8 quantisation of float tensor w, one scale per index of
 * `axis` (or one for all when axis < 0), as ORT quantises weights: scale =
 * max|w| / 127, values rounded half to even and clamped to [-127, 127].
 * *q_out: a new int8 tensor of w's shape. scales_out: `channels` entries.
 * Also returns the data's min and max. */
static mb_status quantize_symmetric(const mb_tensor *w, int axis,
                                    mb_tensor **q_out, float *scales_out,
                                    double *min_out, double *max_out,
                                    mb_error *err) {
  int64_t channels = axis >= 0 ? w->dims[axis] : 1, inner = 1;
  for (int d = axis + 1; axis >= 0 && d < w->rank; d++)
    inner *= w->dims[d];
  const float *x = w->data;
  double lo = 0.0, hi = 0.0;
  for (int64_t c = 0; c < channels; c++)
    scales_out[c] = 0.0f;
  for (int64_t i = 0; i < w->numel; i++) {
    int64_t c = axis >= 0 ? (i / inner) % channels : 0;
    float a = fabsf(x[i]);
    if (isfinite(a) && a > scales_out[c])
      scales_out[c] = a; /* max |w| for now */
    if (isfinite(x[i])) {
      lo = MB_MIN(lo, (double)x[i]);
      hi = MB_MAX(hi, (double)x[i]);
    }
  }
  for (int64_t c = 0; c < channels; c++) {
    int32_t zp;
    mb__quant_scale_zero_point(-(double)scales_out[c], scales_out[c],
                               MB_DTYPE_INT8, &scales_out[c], &zp);
  }
  mb_tensor *q = NULL;
  mb_status status = mb_tensor_create(MB_DTYPE_INT8, w->rank, w->dims, &q, err);
  if (status)
    return status;
  int8_t *y = q->data;
  for (int64_t i = 0; i < w->numel; i++) {
    int64_t c = axis >= 0 ? (i / inner) % channels : 0;
    float v = nearbyintf(x[i] / scales_out[c]);
    y[i] = (int8_t)(v != v ? 0 : v < -127.0f ? -127 : v > 127.0f ? 127 : v);
  }
  *q_out = q;
  *min_out = lo;
  *max_out = hi;
  return MB_STATUS_OK;
}

/* A 1-D (channels > 1 or per_channel) or scalar tensor of `dtype` with
 * every element from values (float) or zero (values NULL). */
static mb_status small_tensor(mb_dtype dtype, int64_t channels,
                              bool per_channel, const float *values,
                              mb_tensor **out, mb_error *err) {
  int64_t dims[1] = {channels};
  mb_status status =
      mb_tensor_create(dtype, per_channel ? 1 : 0, dims, out, err);
  if (status)
    return status;
  for (int64_t c = 0; values && c < channels; c++)
    mb__tensor_set_f64(*out, c, values[c]);
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* Dynamic quantisation                                                      */
/* ------------------------------------------------------------------------ */

/* A quantised weight of the dynamic form, shared by the nodes that read
 * the same constant the same way (exporters share weights through
 * Identity nodes). */
typedef struct dyn_weight {
  int source; /* constant_source of the float weight */
  bool trans_b;
  float alpha;
  int q, scale, zero_point; /* initializers */
} dyn_weight;

typedef struct dyn_cache {
  int count, capacity;
  dyn_weight *items;
} dyn_cache;

/* The int8 [K, N] initializers for weight value b of a MatMul (or of a
 * Gemm with trans_b and alpha), one scale per column N unless
 * per_tensor_weights, alpha folded into the scales. */
static mb_status dynamic_weight(mb_graph *g, int b, bool trans_b, float alpha,
                                const mb_quant_options *opt, dyn_cache *cache,
                                mb_quant_stats *st, dyn_weight *out,
                                mb_error *err) {
  int source = constant_source(g, b);
  for (int i = 0; i < cache->count; i++)
    if (cache->items[i].source == source &&
        cache->items[i].trans_b == trans_b && cache->items[i].alpha == alpha) {
      *out = cache->items[i];
      return MB_STATUS_OK;
    }
  if (cache->count == cache->capacity) {
    int cap = cache->capacity ? cache->capacity * 2 : 16;
    dyn_weight *grown = realloc(cache->items, sizeof *grown * (size_t)cap);
    if (!grown)
      return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    cache->items = grown;
    cache->capacity = cap;
  }
  const mb_tensor *w = constant_of(g, b);
  bool per_channel = !opt->per_tensor_weights;
  int64_t k = trans_b ? w->dims[1] : w->dims[0];
  int64_t cols = trans_b ? w->dims[0] : w->dims[1];
  int64_t channels = per_channel ? cols : 1;
  mb_tensor *q = NULL, *scale = NULL, *zp = NULL;
  float *scales = malloc(sizeof(float) * (size_t)channels);
  double lo, hi;
  if (!scales)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  mb_status status = quantize_symmetric(w, per_channel ? (trans_b ? 0 : 1) : -1,
                                        &q, scales, &lo, &hi, err);
  if (!status && trans_b) {
    mb_tensor *t = NULL;
    int64_t dims[2] = {k, cols};
    status = mb_tensor_create(MB_DTYPE_INT8, 2, dims, &t, err);
    if (!status) {
      const int8_t *src = q->data;
      int8_t *dst = t->data;
      for (int64_t r = 0; r < cols; r++)
        for (int64_t col = 0; col < k; col++)
          dst[col * cols + r] = src[r * k + col];
    }
    mb_tensor_free(q);
    q = t;
  }
  for (int64_t ch = 0; ch < channels; ch++)
    scales[ch] *= alpha;
  if (!status)
    status = small_tensor(MB_DTYPE_FLOAT, channels, per_channel, scales, &scale,
                          err);
  if (!status)
    status = small_tensor(MB_DTYPE_INT8, channels, per_channel, NULL, &zp, err);
  free(scales);
  if (status) {
    mb_tensor_free(q);
    mb_tensor_free(scale);
    return status;
  }
  st->weight_bytes_before += (int64_t)w->nbytes;
  st->weight_bytes_after += (int64_t)(q->nbytes + scale->nbytes);
  st->weights_quantized++;
  const char *name = g->values[source].name;
  dyn_weight d = {source, trans_b, alpha, -1, -1, -1};
  d.q = new_initializer(g, name, "_quantized", q, err);
  if (d.q >= 0) {
    d.scale = new_initializer(g, name, "_scale", scale, err);
    scale = NULL;
  }
  if (d.scale >= 0) {
    d.zero_point = new_initializer(g, name, "_zero_point", zp, err);
    zp = NULL;
  }
  mb_tensor_free(scale);
  mb_tensor_free(zp);
  if (d.zero_point < 0)
    return err ? err->status : MB_STATUS_OUT_OF_MEMORY;
  cache->items[cache->count++] = d;
  *out = d;
  return MB_STATUS_OK;
}

/* Rewrites MatMul/Gemm node i into the DynamicQuantizeLinear ->
 * MatMulInteger -> Cast -> Mul chain. Returns MB_STATUS_OK with *done
 * false when the node's form is not supported. */
static mb_status dynamic_node(mb_graph *g, int i, const mb_quant_options *opt,
                              dyn_cache *cache, bool *remove,
                              mb_quant_stats *st, bool *done, mb_error *err) {
  const mb_node *n = &g->nodes[i];
  bool gemm = strcmp(n->op_type, "Gemm") == 0;
  int a = n->n_inputs > 0 ? n->inputs[0] : -1;
  int b = n->n_inputs > 1 ? n->inputs[1] : -1;
  int c = gemm && n->n_inputs > 2 ? n->inputs[2] : -1;
  int y = n->n_outputs > 0 ? n->outputs[0] : -1;
  const mb_tensor *w = constant_of(g, b);
  float alpha = gemm ? mb__node_attr_float(n, "alpha", 1.0f) : 1.0f;
  float beta = gemm ? mb__node_attr_float(n, "beta", 1.0f) : 1.0f;
  bool trans_b = gemm && mb__node_attr_int(n, "transB", 0) != 0;
  const mb_tensor *bias = constant_of(g, c);
  *done = false;
  if (a < 0 || y < 0 || !w || w->dtype != MB_DTYPE_FLOAT || w->rank != 2 ||
      w->numel == 0 || !w->data || constant_of(g, a) || n->n_outputs != 1 ||
      g->values[a].rank == 1)
    return MB_STATUS_OK;
  if (gemm && (mb__node_attr_int(n, "transA", 0) != 0 ||
               (c >= 0 && !bias && beta != 1.0f) ||
               (bias && bias->dtype != MB_DTYPE_FLOAT)))
    return MB_STATUS_OK;

  dyn_weight wd = {.q = -1, .scale = -1, .zero_point = -1};
  mb_status status =
      dynamic_weight(g, b, trans_b, alpha, opt, cache, st, &wd, err);
  if (status)
    return status;
  int cb = c; /* the bias operand: C, or beta * C */
  if (bias && beta != 1.0f) {
    mb_tensor *bias_t = NULL;
    if ((status = mb_tensor_clone(bias, &bias_t, err)))
      return status;
    for (int64_t e = 0; e < bias_t->numel; e++)
      ((float *)bias_t->data)[e] *= beta;
    cb = new_initializer(g, g->values[constant_source(g, c)].name, "_scaled",
                         bias_t, err);
    if (cb < 0)
      return err ? err->status : MB_STATUS_OUT_OF_MEMORY;
  }
  const char *aname = g->values[a].name, *yname = g->values[y].name;
  int aq = new_value(g, aname, "_quantized", err);
  int as = aq < 0 ? -1 : new_value(g, aname, "_scale", err);
  int az = as < 0 ? -1 : new_value(g, aname, "_zero_point", err);
  int mm = az < 0 ? -1 : new_value(g, yname, "_MatMulInteger", err);
  int cast = mm < 0 ? -1 : new_value(g, yname, "_cast", err);
  int sc = cast < 0 ? -1 : new_value(g, yname, "_scale", err);
  int pre = sc < 0 ? -1 : cb >= 0 ? new_value(g, yname, "_unbiased", err) : y;
  if (pre < 0)
    return err ? err->status : MB_STATUS_OUT_OF_MEMORY;
  /* Input orders as ORT's MatMulIntegerToFloat and DynamicQuantizeMatMul
   * fusions read them: Mul(A_scale, W_scale), Mul(cast, scale). */
  const int dql_out[3] = {aq, as, az}, mm_in[4] = {aq, wd.q, az, wd.zero_point};
  const int sc_in[2] = {as, wd.scale}, mul_in[2] = {cast, sc};
  const int add_in[2] = {pre, cb};
  int node;
  if (add_node(g, "DynamicQuantizeLinear", "", 1, &a, 3, dql_out, err) < 0 ||
      add_node(g, "MatMulInteger", "", 4, mm_in, 1, &mm, err) < 0 ||
      (node = add_node(g, "Cast", "", 1, &mm, 1, &cast, err)) < 0 ||
      mb__node_set_int(g, node, "to", MB_DTYPE_FLOAT, err) ||
      add_node(g, "Mul", "", 2, sc_in, 1, &sc, err) < 0 ||
      add_node(g, "Mul", "", 2, mul_in, 1, &pre, err) < 0 ||
      (cb >= 0 && add_node(g, "Add", "", 2, add_in, 1, &y, err) < 0))
    return err ? err->status : MB_STATUS_OUT_OF_MEMORY;
  remove[i] = true;
  st->activations_quantized++;
  *done = true;
  return MB_STATUS_OK;
}

/* ORT folds a bias Add into MatMulIntegerToFloat only when the bias is its
 * second input: swaps Add(bias, y) where y has no other reader. */
static void bias_second(mb_graph *g, int y, const int *uses) {
  if (y < 0 || uses[y] != 1 || is_graph_output(g, y))
    return;
  for (int i = 0; i < g->n_nodes; i++) {
    mb_node *n = &g->nodes[i];
    if (strcmp(n->op_type, "Add") != 0 || n->domain[0] || n->n_inputs != 2 ||
        n->inputs[1] != y || !constant_of(g, n->inputs[0]))
      continue;
    n->inputs[1] = n->inputs[0];
    n->inputs[0] = y;
    return;
  }
}

mb_status mb__quantize_dynamic(mb_model *model, const mb_quant_options *opt_in,
                               mb_quant_stats *stats, mb_error *err) {
  mb_quant_options opt;
  mb_quant_stats st = {0};
  mb_status status = mb__quant_options_resolve(opt_in, &opt, err);
  if (status)
    return status;
  mb_graph *g = model->graph;
  int64_t opset = mb__model_opset(model, "");
  if (opset < 11)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "dynamic quantisation needs opset >= 11 "
                     "(DynamicQuantizeLinear); the model imports opset %lld",
                     (long long)opset);
  int n_orig = g->n_nodes;
  dyn_cache cache = {0};
  bool *remove = calloc((size_t)n_orig + 1, sizeof *remove);
  int *outputs = calloc((size_t)n_orig + 1, sizeof *outputs);
  int *uses = NULL;
  bool *sub_read = NULL;
  if (!remove || !outputs) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (int i = 0; i < n_orig; i++) {
    const mb_node *n = &g->nodes[i];
    outputs[i] = -1;
    if (n->domain[0] ||
        (strcmp(n->op_type, "MatMul") != 0 && strcmp(n->op_type, "Gemm") != 0))
      continue;
    bool done = false;
    if (!excluded(&opt, n) &&
        (status = dynamic_node(g, i, &opt, &cache, remove, &st, &done, err))) {
      char label[160];
      mb__error_prefix(err, status, "dynamic quantisation of %s",
                       mb__node_label(&g->nodes[i], label, sizeof label));
      goto done;
    }
    if (!done) {
      st.nodes_skipped++;
      continue;
    }
    outputs[i] = g->nodes[i].outputs[0];
    st.nodes_quantized++;
    if (strcmp(g->nodes[i].op_type, "Gemm") == 0)
      st.gemm_quantized++;
    else
      st.matmul_quantized++;
  }
  if ((status = remove_and_prune(g, remove, n_orig, err)))
    goto done;
  if ((status = mb__graph_finalize(g, err))) {
    mb__error_prefix(err, status, "dynamic quantisation");
    goto done;
  }
  uses = calloc((size_t)g->n_values + 1, sizeof *uses);
  sub_read = calloc((size_t)g->n_values + 1, sizeof *sub_read);
  if (!uses || !sub_read) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  count_uses(g, NULL, uses, sub_read);
  for (int i = 0; i < n_orig; i++)
    bias_second(g, outputs[i], uses);
done:
  free(cache.items);
  free(remove);
  free(outputs);
  free(uses);
  free(sub_read);
  if (!status && stats)
    *stats = st;
  return status;
}

/* ------------------------------------------------------------------------ */
/* Static quantisation: the plan                                             */
/* ------------------------------------------------------------------------ */

/* How an op takes part in QDQ quantisation, after the fusions of ORT's CPU
 * provider (onnxruntime/core/optimizer/qdq_transformer). */
typedef enum op_kind {
  KIND_NONE = 0,
  KIND_CONV,       /* DQ x, DQ w, DQ int32 bias -> Conv -> Q: QLinearConv */
  KIND_MATMUL,     /* QLinearMatMul, or MatMulIntegerToFloat without Q */
  KIND_GEMM,       /* QGemm */
  KIND_BINARY,     /* QLinearAdd, QLinearMul */
  KIND_UNARY,      /* QLinearAveragePool, QLinearGlobalAveragePool ... */
  KIND_CONCAT,     /* QLinearConcat */
  KIND_KEEP_SCALE, /* runs on uint8 with the input's scale: Q/DQ dropped */
  KIND_ACTIVATION, /* Relu, Clip: absorbed by the Q node after their input */
} op_kind;

static const struct {
  const char *op_type;
  op_kind kind;
  int64_t min_opset; /* the first opset ORT has the integer form for */
} op_kinds[] = {
    {"Conv", KIND_CONV, 10},
    {"MatMul", KIND_MATMUL, 10},
    {"Gemm", KIND_GEMM, 10},
    {"Add", KIND_BINARY, 10},
    {"Mul", KIND_BINARY, 10},
    {"AveragePool", KIND_UNARY, 10},
    {"GlobalAveragePool", KIND_UNARY, 10},
    {"Sigmoid", KIND_UNARY, 10},
    {"LeakyRelu", KIND_UNARY, 10},
    {"Concat", KIND_CONCAT, 10},
    {"MaxPool", KIND_KEEP_SCALE, 12},
    {"Reshape", KIND_KEEP_SCALE, 10},
    {"Transpose", KIND_KEEP_SCALE, 10},
    {"Flatten", KIND_KEEP_SCALE, 10},
    {"Squeeze", KIND_KEEP_SCALE, 10},
    {"Unsqueeze", KIND_KEEP_SCALE, 10},
    {"Resize", KIND_KEEP_SCALE, 11},
    {"Gather", KIND_KEEP_SCALE, 10},
    {"Slice", KIND_KEEP_SCALE, 10},
    {"Relu", KIND_ACTIVATION, 10},
    {"Clip", KIND_ACTIVATION, 10},
};

static op_kind kind_of(const mb_node *n, int64_t opset) {
  if (n->domain[0])
    return KIND_NONE;
  for (size_t k = 0; k < MB_ARRAY_COUNT(op_kinds); k++)
    if (strcmp(op_kinds[k].op_type, n->op_type) == 0)
      return opset >= op_kinds[k].min_opset ? op_kinds[k].kind : KIND_NONE;
  return KIND_NONE;
}

/* Kinds whose fused form ends in a Q node of their own scale. */
static bool kind_has_own_output(op_kind kind) {
  return kind == KIND_CONV || kind == KIND_MATMUL || kind == KIND_GEMM ||
         kind == KIND_BINARY || kind == KIND_UNARY || kind == KIND_CONCAT;
}

typedef struct qctx {
  mb_graph *g;
  mb_quant_params *params;
  const mb_quant_options *opt;
  mb_quant_stats *st;
  mb_dtype act_dtype;
  bool per_channel; /* weights, where the opset allows (DQ axis: 13) */
  int n_orig;       /* nodes before the rewrite */
  int *param;       /* per value: index of its activation entry, or -1 */
  bool *qdq;        /* per value: gets a Q -> DQ pair */
  int *dq;          /* per value: the DQ output replacing it, or -1 */
  int *uses;        /* per value: node inputs reading it */
  bool *sub_read;   /* per value: read by a subgraph */
  op_kind *kind;    /* per node: the kind it is quantised as, or NONE */
  int *source;      /* per removed Relu/Clip: the node producing its input */
} qctx;

/* Value v can be a quantised activation: it has a range and is no
 * constant. */
static bool act_ok(const qctx *c, int v) {
  return v >= 0 && c->param[v] >= 0 && !constant_of(c->g, v);
}

static bool clip_removable(const mb_graph *g, const mb_node *n) {
  if (strcmp(n->op_type, "Relu") == 0)
    return true;
  if (n->n_inputs > 1 && n->inputs[1] >= 0) {
    const mb_tensor *lo = constant_of(g, n->inputs[1]);
    return lo && lo->numel == 1 && lo->data && mb__tensor_get_f64(lo, 0) <= 0;
  }
  return mb__node_attr_float(n, "min", -FLT_MAX) <= 0.0f;
}

/* Relu/Clip node i: absorbed by the Q node of its input's producer? */
static bool activation_removable(const qctx *c, int i) {
  const mb_graph *g = c->g;
  const mb_node *n = &g->nodes[i];
  if (c->act_dtype != MB_DTYPE_UINT8 || c->opt->keep_relu || n->n_inputs < 1 ||
      n->n_outputs != 1 || !clip_removable(g, n))
    return false;
  int x = n->inputs[0], y = n->outputs[0];
  if (x < 0 || y < 0 || c->param[y] < 0 || c->uses[x] != 1 || c->sub_read[x] ||
      c->sub_read[y] || c->uses[y] == 0 || is_graph_output(g, x) ||
      is_graph_output(g, y) || is_graph_input(g, x))
    return false;
  int p = g->values[x].producer;
  return p >= 0 && p < c->n_orig && kind_has_own_output(c->kind[p]) &&
         g->nodes[p].n_outputs >= 1 && g->nodes[p].outputs[0] == x;
}

/* Decides which nodes are quantised and which values get Q/DQ pairs. */
static void plan(qctx *c, int64_t opset) {
  mb_graph *g = c->g;
  for (int i = 0; i < c->n_orig; i++) {
    const mb_node *n = &g->nodes[i];
    op_kind kind = kind_of(n, opset);
    int in0 = n->n_inputs > 0 ? n->inputs[0] : -1;
    int in1 = n->n_inputs > 1 ? n->inputs[1] : -1;
    int out = n->n_outputs > 0 ? n->outputs[0] : -1;
    bool ok = false;
    if (kind == KIND_NONE)
      continue;
    bool weighted =
        kind == KIND_CONV || kind == KIND_MATMUL || kind == KIND_GEMM;
    if (excluded(c->opt, n)) {
      c->st->nodes_skipped += weighted;
      continue;
    }
    const mb_tensor *w = constant_of(g, in1);
    switch (kind) {
    case KIND_CONV:
      ok = act_ok(c, in0) && w && w->dtype == MB_DTYPE_FLOAT && w->rank >= 3 &&
           w->numel > 0 &&
           (n->n_inputs < 3 || n->inputs[2] < 0 ||
            (is_float_constant(g, n->inputs[2]) &&
             constant_of(g, n->inputs[2])->numel == w->dims[0]));
      break;
    case KIND_MATMUL:
    case KIND_GEMM:
      ok = act_ok(c, in0) &&
           ((w && w->dtype == MB_DTYPE_FLOAT && w->rank == 2 && w->numel > 0) ||
            act_ok(c, in1));
      break;
    case KIND_BINARY:
      ok = n->n_inputs == 2 && (act_ok(c, in0) || act_ok(c, in1)) &&
           (act_ok(c, in0) || is_float_constant(g, in0)) &&
           (act_ok(c, in1) || is_float_constant(g, in1));
      break;
    case KIND_UNARY:
      ok = act_ok(c, in0);
      break;
    case KIND_CONCAT:
      ok = n->n_inputs > 0;
      for (int j = 0; j < n->n_inputs; j++)
        ok &= act_ok(c, n->inputs[j]);
      break;
    case KIND_KEEP_SCALE:
      ok = in0 >= 0 && c->qdq[in0] && c->param[in0] >= 0 && out >= 0 &&
           n->n_outputs == 1;
      if (ok)
        c->param[out] = c->param[in0];
      break;
    case KIND_ACTIVATION:
      if (activation_removable(c, i)) {
        int p = g->values[in0].producer;
        c->source[i] = p;
        c->qdq[in0] = false;
        c->qdq[out] = true;
        c->kind[i] = KIND_ACTIVATION;
        c->st->nodes_removed++;
      }
      continue;
    case KIND_NONE:
      break;
    }
    if (!ok) {
      c->st->nodes_skipped += weighted;
      continue;
    }
    c->kind[i] = kind;
    c->st->nodes_quantized++;
    c->st->conv_quantized += kind == KIND_CONV;
    c->st->matmul_quantized += kind == KIND_MATMUL;
    c->st->gemm_quantized += kind == KIND_GEMM;
    /* Activation inputs get Q/DQ pairs; constants are quantised by
     * rewrite_node, and a Gemm's bias C never goes through a Q. */
    int n_act = kind == KIND_KEEP_SCALE ? 0 : weighted ? 2 : n->n_inputs;
    for (int j = 0; j < n_act && j < n->n_inputs; j++)
      if (act_ok(c, n->inputs[j]))
        c->qdq[n->inputs[j]] = true;
    /* Its output gets its own Q unless nothing reads it in the graph (a
     * graph output then stays exactly what the op computes). */
    if (out >= 0 && c->param[out] >= 0 && c->uses[out] > 0 &&
        !is_graph_output(g, out) && !c->sub_read[out])
      c->qdq[out] = true;
  }
}

/* ------------------------------------------------------------------------ */
/* Static quantisation: the rewrite                                          */
/* ------------------------------------------------------------------------ */

static const mb_quant_param *param_at(const qctx *c, int v) {
  return &c->params->tensors[c->param[v]];
}

/* Marks the entry of value v as applied with the parameters of `src`. */
static mb_status mark_applied(qctx *c, int v, int src, mb_error *err) {
  int e = mb__quant_params_add(c->params, c->g->values[v].name,
                               MB_QUANT_KIND_ACTIVATION, err);
  if (e < 0)
    return err ? err->status : MB_STATUS_OUT_OF_MEMORY;
  mb_quant_param *p = &c->params->tensors[e];
  const mb_quant_param *s = &c->params->tensors[src];
  if (p != s) {
    p->kind = MB_QUANT_KIND_ACTIVATION;
    p->dtype = s->dtype;
    p->min = s->min;
    p->max = s->max;
    p->axis = -1;
    p->scales[0] = s->scales[0];
    p->zero_points[0] = s->zero_points[0];
  }
  p->applied = 1;
  return MB_STATUS_OK;
}

/* Scalar scale and zero-point initializers for activation entry e. */
static mb_status scale_zp_inits(qctx *c, const char *base, int e, int *s_out,
                                int *z_out, mb_error *err) {
  const mb_quant_param *p = &c->params->tensors[e];
  float scale = p->scales[0], zpf = (float)p->zero_points[0];
  mb_tensor *s = NULL, *z = NULL;
  mb_status status = small_tensor(MB_DTYPE_FLOAT, 1, false, &scale, &s, err);
  if (!status)
    status = small_tensor(p->dtype, 1, false, &zpf, &z, err);
  if (status) {
    mb_tensor_free(s);
    return status;
  }
  *s_out = new_initializer(c->g, base, "_scale", s, err);
  *z_out = *s_out < 0 ? -1 : new_initializer(c->g, base, "_zero_point", z, err);
  if (*s_out < 0)
    mb_tensor_free(z);
  return *z_out < 0 ? (err ? err->status : MB_STATUS_OUT_OF_MEMORY)
                    : MB_STATUS_OK;
}

/* Q -> DQ after activation v; every original node reading v reads the DQ
 * output instead. */
static mb_status insert_qdq(qctx *c, int v, mb_error *err) {
  mb_graph *g = c->g;
  const char *name = g->values[v].name;
  int s, z;
  mb_status status = scale_zp_inits(c, name, c->param[v], &s, &z, err);
  if (status)
    return status;
  int q = new_value(g, name, "_QuantizeLinear_Output", err);
  int dq = q < 0 ? -1 : new_value(g, name, "_DequantizeLinear_Output", err);
  if (dq < 0)
    return err ? err->status : MB_STATUS_OUT_OF_MEMORY;
  for (int i = 0; i < c->n_orig; i++) {
    mb_node *n = &g->nodes[i];
    for (int j = 0; j < n->n_inputs; j++)
      if (n->inputs[j] == v)
        n->inputs[j] = dq;
  }
  const int q_in[3] = {v, s, z}, dq_in[3] = {q, s, z};
  if (add_node(g, "QuantizeLinear", "", 3, q_in, 1, &q, err) < 0 ||
      add_node(g, "DequantizeLinear", "", 3, dq_in, 1, &dq, err) < 0)
    return err ? err->status : MB_STATUS_OUT_OF_MEMORY;
  c->dq[v] = dq;
  c->st->activations_quantized++;
  return mark_applied(c, v, c->param[v], err);
}

/* DequantizeLinear of a quantised copy of constant v: int8 symmetric when
 * `weight` is set (per channel along axis >= 0), else per tensor in the
 * activation type over the data's range. Sets *dq_out and *entry_out (its
 * parameters, named after the constant's source). One DQ per (constant,
 * axis) is shared by the nodes reading it. */
static mb_status constant_dq(qctx *c, int v, int axis, bool weight, int *dq_out,
                             int *entry_out, mb_error *err) {
  mb_graph *g = c->g;
  const mb_tensor *w = constant_of(g, v);
  v = constant_source(g, v);
  const char *name = g->values[v].name;
  int e = mb__quant_params_add(c->params, name, MB_QUANT_KIND_WEIGHT, err);
  if (e < 0)
    return err ? err->status : MB_STATUS_OUT_OF_MEMORY;
  *entry_out = e;
  mb_quant_param *p = &c->params->tensors[e];
  if (p->applied && p->kind == MB_QUANT_KIND_WEIGHT && p->axis == axis &&
      c->dq[v] >= 0) {
    *dq_out = c->dq[v];
    return MB_STATUS_OK;
  }
  int64_t channels = axis >= 0 ? w->dims[axis] : 1;
  mb_tensor *q = NULL, *s = NULL, *z = NULL;
  mb_status status = param_set_channels(p, channels, err);
  if (status)
    return status;
  p->kind = MB_QUANT_KIND_WEIGHT;
  p->axis = axis;
  if (weight) {
    p->dtype = MB_DTYPE_INT8;
    status = quantize_symmetric(w, axis, &q, p->scales, &p->min, &p->max, err);
  } else {
    /* A constant operand of Add/Mul: quantised like an activation. */
    const float *x = w->data;
    double lo = 0.0, hi = 0.0;
    for (int64_t i = 0; i < w->numel; i++)
      if (isfinite(x[i])) {
        lo = MB_MIN(lo, (double)x[i]);
        hi = MB_MAX(hi, (double)x[i]);
      }
    p->dtype = c->act_dtype;
    p->min = lo;
    p->max = hi;
    mb__quant_scale_zero_point(lo, hi, p->dtype, &p->scales[0],
                               &p->zero_points[0]);
    status = mb_tensor_create(p->dtype, w->rank, w->dims, &q, err);
    int32_t qmin = p->dtype == MB_DTYPE_UINT8 ? 0 : -127;
    int32_t qmax = p->dtype == MB_DTYPE_UINT8 ? 255 : 127;
    for (int64_t i = 0; !status && i < w->numel; i++) {
      float r = nearbyintf(x[i] / p->scales[0]) + (float)p->zero_points[0];
      int32_t iv = r != r            ? p->zero_points[0]
                   : r < (float)qmin ? qmin
                   : r > (float)qmax ? qmax
                                     : (int32_t)r;
      mb__tensor_set_f64(q, i, iv);
    }
  }
  float *zps = NULL;
  if (!status && !(zps = calloc((size_t)channels, sizeof *zps)))
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  for (int64_t ch = 0; !status && ch < channels; ch++)
    zps[ch] = (float)p->zero_points[ch];
  if (!status)
    status =
        small_tensor(MB_DTYPE_FLOAT, channels, axis >= 0, p->scales, &s, err);
  if (!status)
    status = small_tensor(p->dtype, channels, axis >= 0, zps, &z, err);
  free(zps);
  if (status) {
    mb_tensor_free(q);
    mb_tensor_free(s);
    return status;
  }
  c->st->weight_bytes_before += (int64_t)w->nbytes;
  c->st->weight_bytes_after += (int64_t)(q->nbytes + s->nbytes);
  int qv = new_initializer(g, name, "_quantized", q, err), sv = -1, zv = -1;
  if (qv >= 0) {
    sv = new_initializer(g, name, "_scale", s, err);
    s = NULL;
  }
  if (sv >= 0) {
    zv = new_initializer(g, name, "_zero_point", z, err);
    z = NULL;
  }
  int dq = zv < 0 ? -1 : new_value(g, name, "_DequantizeLinear_Output", err);
  const int dq_in[3] = {qv, sv, zv};
  int node =
      dq < 0 ? -1 : add_node(g, "DequantizeLinear", "", 3, dq_in, 1, &dq, err);
  mb_tensor_free(s);
  mb_tensor_free(z);
  if (node < 0 || (axis >= 0 && mb__node_set_int(g, node, "axis", axis, err)))
    return err ? err->status : MB_STATUS_OUT_OF_MEMORY;
  p->applied = 1;
  c->dq[v] = dq;
  c->st->weights_quantized++;
  *dq_out = dq;
  return MB_STATUS_OK;
}

/* int32 bias with scale x_scale * w_scale[channel] (ORT's convention). */
static mb_status bias_dq(qctx *c, int v, int x, int w_entry, int *dq_out,
                         mb_error *err) {
  mb_graph *g = c->g;
  const mb_tensor *b = constant_of(g, v);
  const char *name = g->values[constant_source(g, v)].name;
  float x_scale = param_at(c, x)->scales[0];
  int e = mb__quant_params_add(c->params, name, MB_QUANT_KIND_BIAS, err);
  if (e < 0)
    return err ? err->status : MB_STATUS_OUT_OF_MEMORY;
  const mb_quant_param *wp = &c->params->tensors[w_entry];
  mb_quant_param *p = &c->params->tensors[e];
  bool per_channel = wp->axis >= 0;
  int64_t channels = per_channel ? b->numel : 1;
  mb_status status = param_set_channels(p, channels, err);
  wp = &c->params->tensors[w_entry];
  if (status)
    return status;
  p->kind = MB_QUANT_KIND_BIAS;
  p->dtype = MB_DTYPE_INT32;
  p->axis = per_channel ? 0 : -1;
  p->min = p->max = 0.0;
  for (int64_t ch = 0; ch < channels; ch++)
    p->scales[ch] = x_scale * wp->scales[per_channel ? ch : 0];
  int64_t dims[1] = {b->numel};
  mb_tensor *q = NULL, *s = NULL;
  status = mb_tensor_create(MB_DTYPE_INT32, 1, dims, &q, err);
  const float *src = b->data;
  for (int64_t i = 0; !status && i < b->numel; i++) {
    double r = nearbyint((double)src[i] / p->scales[per_channel ? i : 0]);
    ((int32_t *)q->data)[i] = (int32_t)(r != r          ? 0
                                        : r < INT32_MIN ? INT32_MIN
                                        : r > INT32_MAX ? INT32_MAX
                                                        : r);
    p->min = MB_MIN(p->min, (double)src[i]);
    p->max = MB_MAX(p->max, (double)src[i]);
  }
  if (!status)
    status =
        small_tensor(MB_DTYPE_FLOAT, channels, per_channel, p->scales, &s, err);
  if (status) {
    mb_tensor_free(q);
    return status;
  }
  c->st->weight_bytes_before += (int64_t)b->nbytes;
  c->st->weight_bytes_after += (int64_t)(q->nbytes + s->nbytes);
  int qv = new_initializer(g, name, "_quantized", q, err), sv = -1;
  if (qv >= 0) {
    sv = new_initializer(g, name, "_scale", s, err);
    s = NULL;
  }
  int dq = sv < 0 ? -1 : new_value(g, name, "_DequantizeLinear_Output", err);
  const int dq_in[2] = {qv, sv};
  int node =
      dq < 0 ? -1 : add_node(g, "DequantizeLinear", "", 2, dq_in, 1, &dq, err);
  mb_tensor_free(s);
  if (node < 0 || (per_channel && mb__node_set_int(g, node, "axis", 0, err)))
    return err ? err->status : MB_STATUS_OUT_OF_MEMORY;
  p->applied = 1;
  c->st->weights_quantized++;
  *dq_out = dq;
  return MB_STATUS_OK;
}

/* Weights, biases and constant operands of quantised node i. */
static mb_status rewrite_node(qctx *c, int i, mb_error *err) {
  mb_graph *g = c->g;
  op_kind kind = c->kind[i];
  mb_node *n = &g->nodes[i];
  int x = n->inputs[0], wv = n->n_inputs > 1 ? n->inputs[1] : -1;
  int bv = n->n_inputs > 2 ? n->inputs[2] : -1;
  int dq, entry;
  mb_status status;
  if (kind == KIND_BINARY) {
    for (int j = 0; j < 2; j++) {
      int v = g->nodes[i].inputs[j];
      if (!is_float_constant(g, v))
        continue;
      if ((status = constant_dq(c, v, -1, false, &dq, &entry, err)))
        return status;
      g->nodes[i].inputs[j] = dq;
    }
    return MB_STATUS_OK;
  }
  if (kind != KIND_CONV && kind != KIND_MATMUL && kind != KIND_GEMM)
    return MB_STATUS_OK;
  const mb_tensor *w = constant_of(g, wv);
  if (!w)
    return MB_STATUS_OK; /* MatMul of two activations */
  bool trans_b = kind == KIND_GEMM && mb__node_attr_int(n, "transB", 0) != 0;
  int axis = !c->per_channel ? -1 : kind == KIND_CONV ? 0 : trans_b ? 0 : 1;
  if ((status = constant_dq(c, wv, axis, true, &dq, &entry, err)))
    return status;
  g->nodes[i].inputs[1] = dq;
  if (bv < 0 || c->opt->float_bias)
    return MB_STATUS_OK;
  const mb_tensor *b = constant_of(g, bv);
  int64_t cols = kind == KIND_CONV ? w->dims[0]
                 : trans_b         ? w->dims[0]
                                   : w->dims[1];
  if (kind == KIND_GEMM &&
      (mb__node_attr_float(&g->nodes[i], "beta", 1.0f) != 1.0f || !b ||
       b->dtype != MB_DTYPE_FLOAT || b->rank != 1 || b->numel != cols))
    return MB_STATUS_OK; /* the bias stays float, QGemm is not formed */
  if ((status = bias_dq(c, bv, x, entry, &dq, err)))
    return status;
  g->nodes[i].inputs[2] = dq;
  /* ORT's Gemm selector reads beta without a default. */
  if (kind == KIND_GEMM)
    return set_float_attr(g, i, "beta", 1.0f, err);
  return MB_STATUS_OK;
}

static void qctx_free(qctx *c) {
  free(c->param);
  free(c->qdq);
  free(c->dq);
  free(c->uses);
  free(c->sub_read);
  free(c->kind);
  free(c->source);
}

mb_status mb__quantize_static(mb_model *model, mb_quant_params *params,
                              const mb_quant_options *opt_in,
                              mb_quant_stats *stats, mb_error *err) {
  mb_quant_options opt;
  mb_quant_stats st = {0};
  mb_status status = mb__quant_options_resolve(opt_in, &opt, err);
  if (status)
    return status;
  if (!params)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "static quantisation needs calibration parameters");
  int64_t opset = mb__model_opset(model, "");
  if (opset < 10)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "static quantisation needs opset >= 10 (QuantizeLinear); "
                     "the model imports opset %lld",
                     (long long)opset);
  mb_graph *g = model->graph;
  qctx c = {.g = g, .params = params, .opt = &opt, .st = &st};
  c.act_dtype = activation_dtype(opt.activations);
  c.per_channel = !opt.per_tensor_weights && opset >= 13;
  c.n_orig = g->n_nodes;
  size_t nv = (size_t)g->n_values + 1, nn = (size_t)g->n_nodes + 1;
  c.param = malloc(sizeof *c.param * nv);
  c.qdq = calloc(nv, sizeof *c.qdq);
  c.dq = malloc(sizeof *c.dq * nv);
  c.uses = calloc(nv, sizeof *c.uses);
  c.sub_read = calloc(nv, sizeof *c.sub_read);
  c.kind = calloc(nn, sizeof *c.kind);
  c.source = malloc(sizeof *c.source * nn);
  if (!c.param || !c.qdq || !c.dq || !c.uses || !c.sub_read || !c.kind ||
      !c.source) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  /* Activation scales for the requested type, from the calibrated ranges. */
  params->activations = opt.activations;
  for (int e = 0; e < params->count; e++) {
    mb_quant_param *p = &params->tensors[e];
    p->applied = 0;
    if (p->kind != MB_QUANT_KIND_ACTIVATION || p->channels != 1)
      continue;
    p->dtype = c.act_dtype;
    mb__quant_scale_zero_point(p->min, p->max, p->dtype, &p->scales[0],
                               &p->zero_points[0]);
  }
  for (int v = 0; v < g->n_values; v++) {
    const mb_quant_param *p = mb__quant_params_find(params, g->values[v].name);
    c.param[v] = p && p->kind == MB_QUANT_KIND_ACTIVATION && p->channels == 1
                     ? (int)(p - params->tensors)
                     : -1;
    c.dq[v] = -1;
  }
  for (int i = 0; i < c.n_orig; i++)
    c.source[i] = -1;
  count_uses(g, NULL, c.uses, c.sub_read);
  plan(&c, opset);

  /* Removed Relu/Clip: their input's producer writes their output. */
  for (int i = 0; i < c.n_orig; i++)
    if (c.source[i] >= 0)
      g->nodes[c.source[i]].outputs[0] = g->nodes[i].outputs[0];
  /* Constants first, while node inputs still name the original values;
   * then the activations (the rewrite adds values past n_values). */
  int n_values = g->n_values;
  for (int i = 0; i < c.n_orig && !status; i++) {
    if (c.kind[i] == KIND_NONE || c.kind[i] == KIND_ACTIVATION)
      continue;
    if ((status = rewrite_node(&c, i, err))) {
      char label[160];
      mb__error_prefix(err, status, "static quantisation of %s",
                       mb__node_label(&g->nodes[i], label, sizeof label));
    }
  }
  for (int v = 0; v < n_values && !status; v++)
    if (c.qdq[v])
      status = insert_qdq(&c, v, err);
  /* Removed nodes: the Relu/Clip nodes absorbed by a Q. */
  bool *remove = NULL;
  if (!status && !(remove = calloc((size_t)c.n_orig + 1, sizeof *remove)))
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; !status && i < c.n_orig; i++)
    remove[i] = c.source[i] >= 0;
  if (!status)
    status = remove_and_prune(g, remove, c.n_orig, err);
  free(remove);
  if (!status && (status = mb__graph_finalize(g, err)))
    mb__error_prefix(err, status, "static quantisation");
done:
  qctx_free(&c);
  if (!status && stats)
    *stats = st;
  return status;
}
