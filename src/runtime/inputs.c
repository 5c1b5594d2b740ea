/* Input shape resolution and deterministic generated inputs.
 *
 * Generated data must be identical on every machine for a given seed, so it
 * comes from our own PRNG (splitmix64) and never from rand(). */
#include "ops/op.h"

#include <stdlib.h>

/* Appends "'a', 'b'" (the input names) to buf for error messages. */
static void list_input_names(const mb_model *model, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  int n = mb_model_input_count(model);
  for (int i = 0; i < n && used < size; i++) {
    mb_value_info info;
    if (mb_model_input_info(model, i, &info, NULL) != MB_STATUS_OK)
      continue;
    int w =
        snprintf(buf + used, size - used, "%s'%s'", i ? ", " : "", info.name);
    if (w < 0)
      break;
    used += (size_t)w;
  }
  if (n == 0)
    snprintf(buf, size, "(none)");
}

static mb_status check_shape_size(const mb_input_shape *s, mb_dtype dtype,
                                  mb_error *err) {
  char shape[160];
  for (int d = 0; d < s->rank; d++)
    if (s->dims[d] < 0)
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "input '%s': dim %d of shape %s is negative", s->name, d,
                       mb__shape_str(s->rank, s->dims, shape, sizeof shape));
  int64_t numel;
  size_t bytes;
  size_t elem = mb_dtype_size(dtype) ? mb_dtype_size(dtype) : 1;
  if (!mb__numel(s->rank, s->dims, &numel) ||
      !mb__mul_size((size_t)numel, elem, &bytes) || bytes > MB_MAX_TENSOR_BYTES)
    return mb__error(err, MB_STATUS_OVERFLOW,
                     "input '%s': shape %s is too large", s->name,
                     mb__shape_str(s->rank, s->dims, shape, sizeof shape));
  return MB_STATUS_OK;
}

static const mb_input_shape *find_override(const mb_shape_spec *spec,
                                           const char *name) {
  for (int i = 0; spec && i < spec->n_shapes; i++)
    if (spec->shapes[i].name && strcmp(spec->shapes[i].name, name) == 0)
      return &spec->shapes[i];
  return NULL;
}

/* The --dim value of symbolic dimension `param`, or NULL. */
static const mb_dim_value *find_dim(const mb_shape_spec *spec,
                                    const char *param) {
  for (int i = 0; spec && param && param[0] && i < spec->n_dims; i++)
    if (spec->dims[i].name && strcmp(spec->dims[i].name, param) == 0)
      return &spec->dims[i];
  return NULL;
}

/* Appends "'a', 'b'" (the symbolic dims of every input) to buf. */
static void list_dim_names(const mb_model *model, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  int n = mb_model_input_count(model);
  for (int i = 0; i < n && used < size; i++) {
    mb_value_info info;
    if (mb_model_input_info(model, i, &info, NULL) != MB_STATUS_OK)
      continue;
    for (int d = 0; d < info.rank && used < size; d++) {
      const char *param = info.dim_params[d];
      if (!param || !param[0] || strstr(buf, param))
        continue;
      int w =
          snprintf(buf + used, size - used, "%s'%s'", used ? ", " : "", param);
      if (w < 0)
        return;
      used += (size_t)w;
    }
  }
  if (!buf[0])
    snprintf(buf, size, "none");
}

/* Resolves one input from its declared info. */
static mb_status resolve_one(const mb_value_info *info,
                             const mb_shape_spec *spec, mb_input_shape *out,
                             mb_error *err) {
  const mb_input_shape *o = find_override(spec, info->name);
  out->name = info->name;
  if (o) {
    if (o->rank < 0 || o->rank > MB_MAX_RANK)
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "--shape %s: rank %d is out of range (0..%d)",
                       info->name, o->rank, MB_MAX_RANK);
    if (info->rank >= 0 && o->rank != info->rank)
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "--shape %s: gives %d dims but input '%s' has rank %d",
                       info->name, o->rank, info->name, info->rank);
    out->rank = o->rank;
    memcpy(out->dims, o->dims, sizeof(int64_t) * (size_t)o->rank);
    return check_shape_size(out, info->dtype, err);
  }
  if (info->rank < 0)
    return mb__error(err, MB_STATUS_DYNAMIC,
                     "input '%s' has no declared shape: pass --shape "
                     "%s=D0,D1,...",
                     info->name, info->name);
  int64_t batch = spec && spec->batch_size > 0 ? spec->batch_size : 1;
  out->rank = info->rank;
  for (int d = 0; d < info->rank; d++) {
    const char *param = info->dim_params[d];
    const mb_dim_value *named = find_dim(spec, param);
    if (info->dims[d] >= 0) {
      out->dims[d] = info->dims[d];
    } else if (named) {
      out->dims[d] = named->value;
    } else if (d == 0) {
      out->dims[d] = batch;
    } else if (param && param[0]) {
      return mb__error(err, MB_STATUS_DYNAMIC,
                       "input '%s': dim %d ('%s') is symbolic: pass --dim "
                       "%s=N (every input's '%s') or --shape %s=D0,D1,...",
                       info->name, d, param, param, param, info->name);
    } else {
      return mb__error(err, MB_STATUS_DYNAMIC,
                       "input '%s': dim %d is dynamic: pass --shape "
                       "%s=D0,D1,...",
                       info->name, d, info->name);
    }
  }
  return check_shape_size(out, info->dtype, err);
}

mb_status mb_model_resolve_input_shapes(const mb_model *model,
                                        const mb_shape_spec *spec,
                                        mb_input_shape *shapes_out,
                                        mb_error *err) {
  int n = mb_model_input_count(model);
  /* An override naming no input is a typo; catch it before anything else so
   * the message lists what the user could have meant. */
  for (int s = 0; spec && s < spec->n_shapes; s++) {
    const char *name = spec->shapes[s].name ? spec->shapes[s].name : "";
    bool found = false;
    for (int i = 0; i < n && !found; i++) {
      mb_value_info info;
      if (mb_model_input_info(model, i, &info, NULL) == MB_STATUS_OK &&
          strcmp(info.name, name) == 0)
        found = true;
    }
    if (!found) {
      char names[384];
      list_input_names(model, names, sizeof names);
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "--shape %s: the model has no input '%s' (inputs: %s)",
                       name, name, names);
    }
  }
  /* So is a --dim naming no symbolic dimension. */
  for (int k = 0; spec && k < spec->n_dims; k++) {
    const char *name = spec->dims[k].name ? spec->dims[k].name : "";
    bool found = false;
    for (int i = 0; i < n && !found; i++) {
      mb_value_info info;
      if (mb_model_input_info(model, i, &info, NULL) != MB_STATUS_OK)
        continue;
      for (int d = 0; d < info.rank && !found; d++)
        found = info.dim_params[d] && strcmp(info.dim_params[d], name) == 0;
    }
    if (!found || spec->dims[k].value < 0) {
      char names[384];
      list_dim_names(model, names, sizeof names);
      return found ? mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                               "--dim %s=%lld: a dimension cannot be negative",
                               name, (long long)spec->dims[k].value)
                   : mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                               "--dim %s: no input has a symbolic dimension "
                               "'%s' (symbolic dimensions: %s)",
                               name, name, names);
    }
  }
  for (int i = 0; i < n; i++) {
    mb_value_info info;
    mb_status status = mb_model_input_info(model, i, &info, err);
    if (status != MB_STATUS_OK)
      return status;
    status = resolve_one(&info, spec, &shapes_out[i], err);
    if (status != MB_STATUS_OK)
      return status;
  }
  return MB_STATUS_OK;
}

/* ---- generation ---- */

static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* FNV-1a, so that each input's stream depends on its name, not on the
 * position of other inputs. */
static uint64_t hash_name(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++)
    h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
  return h;
}

static const mb_input_range *
find_range(int n_ranges, const mb_input_range *ranges, const char *name) {
  const mb_input_range *fallback = NULL;
  for (int i = 0; ranges && i < n_ranges; i++) {
    if (!ranges[i].name)
      fallback = &ranges[i];
    else if (strcmp(ranges[i].name, name) == 0)
      return &ranges[i];
  }
  return fallback;
}

static mb_status fill(mb_tensor *t, const char *name, uint64_t seed,
                      const mb_input_range *range, mb_error *err) {
  uint64_t state = seed ^ hash_name(name);
  if (t->dtype == MB_DTYPE_BOOL) {
    uint8_t *p = t->data;
    for (int64_t i = 0; i < t->numel; i++)
      p[i] = (uint8_t)(splitmix64(&state) >> 63);
    return MB_STATUS_OK;
  }
  if (mb__dtype_is_float(t->dtype)) {
    double lo = range ? range->lo : -1.0, hi = range ? range->hi : 1.0;
    if (!(lo <= hi) || !(hi - lo < 1e300))
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "input '%s': invalid range %g:%g", name, lo, hi);
    for (int64_t i = 0; i < t->numel; i++) {
      /* 53 random bits give a double in [0, 1) exactly representable. */
      double u = (double)(splitmix64(&state) >> 11) * 0x1.0p-53;
      double v = lo + u * (hi - lo);
      if (v >= hi && hi > lo) /* rounding in lo + u*(hi-lo) */
        v = lo;
      mb__tensor_set_f64(t, i, v);
    }
    return MB_STATUS_OK;
  }
  if (mb__dtype_is_int(t->dtype)) {
    double lo = range ? range->lo : 0.0, hi = range ? range->hi : 99.0;
    if (!(lo <= hi) || lo < -9007199254740992.0 || hi > 9007199254740992.0)
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "input '%s': invalid integer range %g:%g", name, lo, hi);
    int64_t ilo = (int64_t)lo, ihi = (int64_t)hi;
    uint64_t span = (uint64_t)(ihi - ilo) + 1;
    for (int64_t i = 0; i < t->numel; i++) {
      uint64_t r = splitmix64(&state) % span;
      mb__tensor_set_f64(t, i, (double)(ilo + (int64_t)r));
    }
    return MB_STATUS_OK;
  }
  return mb__error(err, MB_STATUS_UNSUPPORTED,
                   "input '%s': cannot generate data of type %s", name,
                   mb_dtype_name(t->dtype));
}

mb_status mb_inputs_generate(const mb_model *model, const mb_shape_spec *spec,
                             uint64_t seed, int n_ranges,
                             const mb_input_range *ranges,
                             mb_tensor **inputs_out, mb_error *err) {
  int n = mb_model_input_count(model);
  mb_status status = MB_STATUS_OK;
  mb_input_shape *shapes = calloc((size_t)(n > 0 ? n : 1), sizeof *shapes);
  if (!shapes)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; i < n; i++)
    inputs_out[i] = NULL;
  status = mb_model_resolve_input_shapes(model, spec, shapes, err);
  if (status != MB_STATUS_OK)
    goto fail;
  for (int i = 0; i < n; i++) {
    mb_value_info info;
    status = mb_model_input_info(model, i, &info, err);
    if (status != MB_STATUS_OK)
      goto fail;
    if (info.dtype == MB_DTYPE_UNDEFINED || mb_dtype_size(info.dtype) == 0) {
      status = mb__error(err, MB_STATUS_UNSUPPORTED,
                         "input '%s': cannot generate data of type %s",
                         info.name, mb_dtype_name(info.dtype));
      goto fail;
    }
    status = mb_tensor_create(info.dtype, shapes[i].rank, shapes[i].dims,
                              &inputs_out[i], err);
    if (status != MB_STATUS_OK)
      goto fail;
    inputs_out[i]->name = mb__strdup(info.name);
    if (!inputs_out[i]->name) {
      status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
      goto fail;
    }
    status = fill(inputs_out[i], info.name, seed,
                  find_range(n_ranges, ranges, info.name), err);
    if (status != MB_STATUS_OK)
      goto fail;
  }
  free(shapes);
  return MB_STATUS_OK;

fail:
  for (int i = 0; i < n; i++) {
    mb_tensor_free(inputs_out[i]);
    inputs_out[i] = NULL;
  }
  free(shapes);
  return status;
}
