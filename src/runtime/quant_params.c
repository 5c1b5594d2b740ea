/* Quantisation parameters (see quant_params.h): names, scales and zero
 * points, the parameter set and its JSON file. */
#include "runtime/quant_params.h"

#include "core/json_parse.h"
#include "core/json_write.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

int mb__quant_weight_qmax(mb_int8_weights weights, bool signed_input) {
  return weights == MB_INT8_WEIGHTS_W7 ||
                 (weights == MB_INT8_WEIGHTS_MIXED && signed_input)
             ? 64
             : 127;
}

mb_dtype mb__qz_activation_dtype(mb_quant_activations a) {
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
mb_status mb__qz_param_set_channels(mb_quant_param *p, int64_t channels,
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
      mb__qz_param_set_channels(p, 1, err) != MB_STATUS_OK) {
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
  mb__json_kv_string(&j, "int8_weights",
                     mb_int8_weights_name(params->weights > MB_INT8_WEIGHTS_AUTO
                                              ? params->weights
                                              : MB_INT8_WEIGHTS_W8));
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
  mb_status status = mb__qz_param_set_channels(p, (int64_t)scales->count, err);
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
  /* Files from before the int8 form have 8-bit weights. */
  v = mb__json_find(root, "int8_weights");
  i = v && v->type == MB_JSON_STRING ? mb_int8_weights_from_name(v->string)
                                     : -1;
  if (v && i <= MB_INT8_WEIGHTS_AUTO) {
    status = mb__error(err, MB_STATUS_PARSE,
                       "%s:%d:%d: \"int8_weights\" must be \"8\", \"7\" or "
                       "\"mixed\"",
                       path, v->line, v->column);
    goto done;
  }
  params->weights = v ? (mb_int8_weights)i : MB_INT8_WEIGHTS_W8;
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
