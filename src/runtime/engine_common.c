/* What the native engines (xnnpack/, onednn/) both do, written once: the
 * constant data of a value, the node checks every engine starts from
 * (float32 inputs and outputs of static shape, constant scalars and
 * integer lists, window attributes), where a value is read inside a
 * segment (the bookkeeping of fused groups), how calibration entries map
 * onto an engine's int8 parameters, and the shape check of run()'s
 * tensors. Declared in engine.h. */
#include "runtime/engine.h"

#include "runtime/quant_params.h"

#include <math.h>
#include <stdarg.h>

/* ---- values ---- */

static bool is_default_domain(const mb_node *n) {
  return !n->domain[0] || strcmp(n->domain, "ai.onnx") == 0;
}

const mb_tensor *mb__engine_constant(const mb_engine_graph *eg, int v) {
  for (int depth = 0; v >= 0 && eg->constants && depth < 16; depth++) {
    if (eg->constants[v])
      return eg->constants[v];
    int p = eg->graph->values[v].producer;
    if (p < 0)
      return NULL;
    const mb_node *n = &eg->graph->nodes[p];
    if (strcmp(n->op_type, "Identity") != 0 || !is_default_domain(n) ||
        n->n_inputs != 1)
      return NULL;
    v = n->inputs[0];
  }
  return NULL;
}

bool mb__engine_value_shape(const mb_engine_graph *eg, int v, int *rank,
                            int64_t *dims, mb_dtype *dtype) {
  const mb_tensor *k = mb__engine_constant(eg, v);
  if (k) {
    *rank = k->rank;
    memcpy(dims, k->dims, (size_t)k->rank * sizeof *dims);
    if (dtype)
      *dtype = k->dtype;
    return true;
  }
  const mb_shape_info *s = &eg->shapes[v];
  if (!s->known)
    return false;
  *rank = s->rank;
  memcpy(dims, s->dims, (size_t)s->rank * sizeof *dims);
  if (dtype)
    *dtype = s->dtype;
  return true;
}

int64_t mb__engine_numel(int rank, const int64_t *dims) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++)
    n *= dims[i];
  return n;
}

bool mb__engine_node_folded(const mb_engine_graph *eg, const mb_node *n) {
  bool any = false;
  for (int i = 0; i < n->n_outputs; i++) {
    if (n->outputs[i] < 0)
      continue;
    if (!mb__engine_constant(eg, n->outputs[i]))
      return false;
    any = true;
  }
  return any;
}

/* ---- checks ---- */

int mb__engine_reject(mb_engine_check *c, const char *fmt, ...) {
  if (c->reason && c->size) {
    int k = snprintf(c->reason, c->size, "%s: ", c->n->op_type);
    if (k >= 0 && (size_t)k < c->size) {
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(c->reason + k, c->size - (size_t)k, fmt, ap);
      va_end(ap);
    }
  }
  return 0;
}

static const char *engine_label(const mb_engine_check *c) {
  return c->limits ? c->limits->label : "this engine";
}

static int max_rank(const mb_engine_check *c) {
  return c->limits ? c->limits->max_rank : MB_MAX_RANK;
}

int mb__engine_check_float_input(mb_engine_check *c, int i,
                                 int must_be_constant) {
  int v = mb__engine_input(c->n, i), rank;
  int64_t dims[MB_MAX_RANK];
  mb_dtype dt;
  if (v < 0)
    return mb__engine_reject(c, "input %d is missing", i);
  const mb_tensor *k = mb__engine_constant(c->eg, v);
  if (!mb__engine_value_shape(c->eg, v, &rank, dims, &dt))
    return mb__engine_reject(c, "input %d has no static shape", i);
  if (dt != MB_DTYPE_FLOAT)
    return mb__engine_reject(c, "input %d is %s (only float32 runs on %s)", i,
                             mb_dtype_name(dt), engine_label(c));
  if (rank > max_rank(c))
    return mb__engine_reject(c, "input %d has rank %d (%s allows %d)", i, rank,
                             engine_label(c), max_rank(c));
  if (mb__engine_numel(rank, dims) <= 0)
    return mb__engine_reject(c, "input %d is empty", i);
  if (must_be_constant > 0 && !k)
    return mb__engine_reject(c, "input %d is not a constant", i);
  if (must_be_constant < 0 && k)
    return mb__engine_reject(
        c, "input %d is a constant (expected an activation)", i);
  return 1;
}

int mb__engine_check_outputs(mb_engine_check *c) {
  int v = mb__engine_output(c->n, 0);
  if (v < 0)
    return mb__engine_reject(c, "output 0 is missing");
  const mb_shape_info *s = &c->eg->shapes[v];
  if (!s->known)
    return mb__engine_reject(c, "output has no static shape");
  if (s->dtype != MB_DTYPE_FLOAT)
    return mb__engine_reject(c, "output is %s (only float32 runs on %s)",
                             mb_dtype_name(s->dtype), engine_label(c));
  if (s->rank > max_rank(c))
    return mb__engine_reject(c, "output has rank %d (%s allows %d)", s->rank,
                             engine_label(c), max_rank(c));
  if (mb__engine_numel(s->rank, s->dims) <= 0)
    return mb__engine_reject(c, "output is empty");
  for (int i = 1; i < c->n->n_outputs; i++)
    if (c->n->outputs[i] >= 0)
      return mb__engine_reject(c, "optional output %d is not supported", i);
  return 1;
}

int mb__engine_scalar_input(mb_engine_check *c, int i, float def, float *out) {
  int v = mb__engine_input(c->n, i);
  *out = def;
  if (v < 0)
    return 1;
  const mb_tensor *k = mb__engine_constant(c->eg, v);
  if (!k)
    return mb__engine_reject(c, "input %d is not a constant", i);
  if (k->numel != 1 || k->dtype != MB_DTYPE_FLOAT)
    return mb__engine_reject(c, "input %d is not a float32 scalar", i);
  *out = ((const float *)k->data)[0];
  return 1;
}

int64_t mb__engine_int_input(mb_engine_check *c, int i, int64_t *out,
                             int64_t max) {
  int v = mb__engine_input(c->n, i);
  const mb_tensor *k = v >= 0 ? mb__engine_constant(c->eg, v) : NULL;
  if (!k) {
    mb__engine_reject(c, "input %d is not a constant", i);
    return -1;
  }
  if (k->dtype != MB_DTYPE_INT64 && k->dtype != MB_DTYPE_INT32) {
    mb__engine_reject(c, "input %d is %s, expected int64", i,
                      mb_dtype_name(k->dtype));
    return -1;
  }
  if (k->numel > max) {
    mb__engine_reject(c, "input %d has %lld values", i, (long long)k->numel);
    return -1;
  }
  for (int64_t j = 0; j < k->numel; j++)
    out[j] = mb__tensor_get_i64(k, j);
  return k->numel;
}

bool mb__engine_attr_ints(const mb_node *n, const char *name, int count,
                          int64_t def, int64_t min, int64_t *out) {
  const int64_t *v;
  int64_t k = mb__node_attr_ints(n, name, &v);
  if (k < 0) {
    for (int i = 0; i < count; i++)
      out[i] = def;
    return true;
  }
  if (k != count)
    return false;
  for (int i = 0; i < count; i++) {
    if (v[i] < min || v[i] > ((int64_t)1 << 24))
      return false;
    out[i] = v[i];
  }
  return true;
}

int mb__engine_auto_pad(mb_engine_check *c, mb_auto_pad *out) {
  static const char *const names[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER",
                                      "VALID"};
  const char *ap = mb__node_attr_string(c->n, "auto_pad", "NOTSET");
  for (int i = 0; i < (int)MB_ARRAY_COUNT(names); i++) {
    if (strcmp(ap, names[i]) == 0) {
      *out = (mb_auto_pad)i;
      return 1;
    }
  }
  return mb__engine_reject(c, "auto_pad '%s' is not supported", ap);
}

/* ---- where values are read (fused groups) ---- */

int mb__segment_readers(const mb_segment_desc *d, int v, int *pos, int max) {
  int count = 0;
  for (int p = 0; p < d->n_nodes; p++) {
    const mb_node *n = &d->eg->graph->nodes[d->nodes[p]];
    for (int j = 0; j < n->n_inputs; j++) {
      if (n->inputs[j] == v) {
        if (pos && count < max)
          pos[count] = p;
        count++;
        break;
      }
    }
  }
  return count;
}

int mb__segment_position(const mb_segment_desc *d, int node) {
  for (int p = 0; p < d->n_nodes; p++)
    if (d->nodes[p] == node)
      return p;
  return -1;
}

/* ---- int8 parameters ---- */

const mb_quant_param *mb__engine_quant_activation(const mb_engine_graph *eg,
                                                  const mb_quant_params *quant,
                                                  int v) {
  if (!quant || v < 0)
    return NULL;
  const mb_quant_param *p =
      mb__quant_params_find(quant, eg->graph->values[v].name);
  if (!p || p->kind != MB_QUANT_KIND_ACTIVATION || p->channels != 1 ||
      !p->scales || !p->zero_points ||
      (p->dtype != MB_DTYPE_UINT8 && p->dtype != MB_DTYPE_INT8) ||
      !(p->scales[0] > 0))
    return NULL;
  return p;
}

const mb_quant_param *mb__engine_quant_weight(const mb_engine_graph *eg,
                                              const mb_quant_params *quant,
                                              int v, int axis,
                                              int64_t channels) {
  const mb_graph *g = eg->graph;
  const mb_quant_param *p = NULL;
  /* Under the weight's own name or, through Identity nodes, its source's
   * (the static quantiser names it after the source). */
  for (int depth = 0; quant && v >= 0 && depth < 16 && !p; depth++) {
    const mb_quant_param *e = mb__quant_params_find(quant, g->values[v].name);
    if (e && e->kind == MB_QUANT_KIND_WEIGHT) {
      p = e;
      break;
    }
    int producer = g->values[v].producer;
    if (producer < 0)
      return NULL;
    const mb_node *n = &g->nodes[producer];
    if (strcmp(n->op_type, "Identity") != 0 || !is_default_domain(n) ||
        n->n_inputs != 1)
      return NULL;
    v = n->inputs[0];
  }
  if (!p || p->dtype != MB_DTYPE_INT8 || !p->scales || p->channels < 1 ||
      (p->channels != 1 && (p->channels != channels || p->axis != axis)))
    return NULL;
  for (int64_t c = 0; c < p->channels; c++)
    if (!(p->scales[c] > 0) || (p->zero_points && p->zero_points[c] != 0))
      return NULL;
  return p;
}

float mb__engine_weight_scale(const mb_quant_param *w, int64_t channel) {
  return w->channels == 1 ? w->scales[0] : w->scales[channel];
}

int8_t mb__engine_quantize_weight(float w, float scale) {
  float q = nearbyintf(w / scale);
  return (int8_t)(q != q ? 0 : q < -127.0f ? -127 : q > 127.0f ? 127 : q);
}

/* ---- run() ---- */

mb_status mb__engine_check_tensor(const char *engine, mb_dtype dtype, int rank,
                                  const int64_t *dims, size_t nbytes,
                                  const mb_tensor *t, const char *what,
                                  int index, mb_error *err) {
  if (!t || t->dtype != dtype || t->rank != rank ||
      memcmp(t->dims, dims, (size_t)rank * sizeof *dims) != 0 ||
      t->nbytes != nbytes || (nbytes && !t->data)) {
    char want[96];
    return mb__error(err, MB_STATUS_SHAPE,
                     "%s: segment %s %d is not a %s tensor of shape %s", engine,
                     what, index, mb_dtype_name(dtype),
                     mb__shape_str(rank, dims, want, sizeof want));
  }
  return MB_STATUS_OK;
}

/* ---- the CPU ---- */

int mb__engine_cpu_has(const char *const *flags, int n) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[8192];
  int found = -1;
  if (!f)
    return -1;
  while (found < 1 && fgets(line, sizeof line, f)) {
    /* x86 names them "flags", Arm "Features". */
    size_t skip = strncmp(line, "flags", 5) == 0      ? 5
                  : strncmp(line, "Features", 8) == 0 ? 8
                                                      : 0;
    if (!skip)
      continue;
    found = 0;
    for (char *tok = strtok(line + skip, " \t\n:"); tok && !found;
         tok = strtok(NULL, " \t\n:"))
      for (int i = 0; i < n; i++)
        found |= strcmp(tok, flags[i]) == 0;
    break;
  }
  fclose(f);
  return found;
}
