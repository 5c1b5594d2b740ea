/* to_fp16: float32 weights and activations become float16, the way
 * onnxconverter-common's float16 converter does it with keep_io_types:
 *
 *  - graph inputs and outputs keep float32; Casts convert at the boundary
 *    (a graph output computed in float16 is renamed "<name>_fp16" and a
 *    Cast writes the original name);
 *  - nodes whose op type is on the block list (numerically sensitive ones
 *    by default, see MB_PASS_FP16_BLOCK_DEFAULT) stay float32, with Casts
 *    on the float16 values they read and after the float32 values they
 *    write where a float16 node reads them;
 *  - nodes that cannot run in float16 at all stay float32 too: other
 *    domains, nodes with subgraphs, ops whose float type is fixed by the
 *    spec or an attribute (Range, NonMaxSuppression, the quantisation and
 *    random ops, ...), and nodes touching a value of unknown type;
 *  - integer, bool and shape tensors are untouched, and so are input slots
 *    the spec requires in float32 (Resize's roi and scales);
 *  - a float32 initializer read only by float16 nodes is converted in
 *    place; one read in both precisions is kept and gets a float16 copy;
 *    one read only by float32 nodes stays as it is. Values beyond the
 *    float16 range are clamped to +-65504 (infinities stay).
 *
 * Value types come from the reference interpreter's shape inference (for
 * the given input shapes, unknown dims taken as 1), falling back to the
 * types the model declares. One Cast per value and precision is shared by
 * all its readers. Models importing ai.onnx opset < 6 are refused (Cast-1
 * names types with strings, which neither runtime runs in float16). */
#include "passes/edit.h"
#include "runtime/reference.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>

/* Ops that stay float32 whatever the block list says. */
static const char *const always_fp32[] = {
    /* float type fixed by an attribute we do not rewrite */
    "EyeLike", "RandomNormal", "RandomUniform", "RandomNormalLike",
    "RandomUniformLike", "Bernoulli", "Multinomial", "HannWindow",
    "HammingWindow", "BlackmanWindow", "MelWeightMatrix", "TfIdfVectorizer",
    /* no float16 in the op's type constraints (at the opsets in use) */
    "Range", "NonMaxSuppression", "Celu", "CumSum", "IsInf",
    /* quantisation: scales are float32 */
    "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear",
    "QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger",
    /* function ops ONNX Runtime expands with float32 constants */
    "MeanVarianceNormalization",
    /* sequences */
    "SequenceConstruct", "SequenceInsert", "SequenceAt", "SequenceEmpty",
    "SplitToSequence", "ConcatFromSequence"};

/* Input and output slots that stay float32 on a float16 node. */
typedef struct fixed_slot {
  const char *op_type;
  bool output;
  int slot;
} fixed_slot;

static const fixed_slot fp32_slots[] = {
    {"Resize", false, 1},            /* roi (opset 11+), scales (opset 10) */
    {"Resize", false, 2},            /* scales: tensor(float) only */
    {"Upsample", false, 1},          /* scales */
    {"LayerNormalization", true, 1}, /* Mean: stash type */
    {"LayerNormalization", true, 2}, /* InvStdDev */
};

/* Ops that make float values out of non-float inputs, whose attribute we
 * rewrite to float16. */
static const char *const typed_by_attr[] = {"Cast", "Constant",
                                            "ConstantOfShape"};

static bool in_list(const char *const *list, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(list[i], name) == 0)
      return true;
  return false;
}

/* ONNX Runtime's CPU kernels lack float16 for these forms. */
static bool fp16_unsupported(const mb_node *n) {
  bool scatter = strcmp(n->op_type, "ScatterND") == 0 ||
                 strcmp(n->op_type, "ScatterElements") == 0;
  return scatter &&
         strcmp(mb__node_attr_string(n, "reduction", "none"), "none") != 0;
}

static bool fp32_slot(const mb_node *n, bool output, int slot) {
  for (size_t i = 0; i < MB_ARRAY_COUNT(fp32_slots); i++)
    if (fp32_slots[i].output == output && fp32_slots[i].slot == slot &&
        strcmp(fp32_slots[i].op_type, n->op_type) == 0)
      return true;
  return false;
}

/* ---- the block list ---- */

#define MB_FP16_MAX_BLOCK 128

typedef struct block_list {
  int n;
  char names[MB_FP16_MAX_BLOCK][64];
} block_list;

static bool block_has(const block_list *b, const char *name) {
  for (int i = 0; i < b->n; i++)
    if (strcmp(b->names[i], name) == 0)
      return true;
  return false;
}

static mb_status block_edit(block_list *b, const char *name, bool add,
                            mb_error *err) {
  if (!name[0])
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "fp16 block list: empty op type after '+' or '-'");
  for (const char *p = name; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != '_')
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "fp16 block list: '%s' is not an op type", name);
  if (add) {
    if (block_has(b, name))
      return MB_STATUS_OK;
    if (b->n == MB_FP16_MAX_BLOCK)
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "fp16 block list: more than %d op types",
                       MB_FP16_MAX_BLOCK);
    snprintf(b->names[b->n++], sizeof b->names[0], "%s", name);
    return MB_STATUS_OK;
  }
  for (int i = 0; i < b->n; i++)
    if (strcmp(b->names[i], name) == 0) {
      memmove(&b->names[i], &b->names[i + 1],
              sizeof b->names[0] * (size_t)(b->n - i - 1));
      b->n--;
      break;
    }
  return MB_STATUS_OK;
}

/* Applies a comma list of names, "+name" and "-name" to b. */
static mb_status block_apply(block_list *b, const char *spec, mb_error *err) {
  const char *p = spec;
  while (*p) {
    char token[64];
    size_t len = 0;
    while (*p == ',' || isspace((unsigned char)*p))
      p++;
    if (!*p)
      break;
    while (*p && *p != ',' && !isspace((unsigned char)*p)) {
      if (len + 1 >= sizeof token)
        return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                         "fp16 block list: op type too long in '%s'", spec);
      token[len++] = *p++;
    }
    token[len] = '\0';
    bool remove = token[0] == '-';
    const char *name = token[0] == '+' || token[0] == '-' ? token + 1 : token;
    mb_status status = block_edit(b, name, !remove, err);
    if (status)
      return status;
  }
  return MB_STATUS_OK;
}

static mb_status block_parse(const char *spec, block_list *b, mb_error *err) {
  b->n = 0;
  while (spec && isspace((unsigned char)*spec))
    spec++;
  if (spec && strcmp(spec, "none") == 0)
    return MB_STATUS_OK;
  /* A list that starts with a plain name replaces the default. */
  if (!spec || !spec[0] || spec[0] == '+' || spec[0] == '-') {
    mb_status status = block_apply(b, MB_PASS_FP16_BLOCK_DEFAULT, err);
    if (status)
      return status;
  }
  return spec ? block_apply(b, spec, err) : MB_STATUS_OK;
}

/* ---- conversion ---- */

static uint16_t to_half(float f) {
  if (isfinite(f))
    f = f > 65504.0f ? 65504.0f : f < -65504.0f ? -65504.0f : f;
  return mb__f32_to_f16(f);
}

/* A float16 copy of float32 tensor t (name not copied). */
static mb_tensor *half_copy(const mb_tensor *t) {
  mb_tensor *h = NULL;
  if (mb_tensor_create(MB_DTYPE_FLOAT16, t->rank, t->dims, &h, NULL))
    return NULL;
  const float *src = t->data;
  uint16_t *dst = h->data;
  for (int64_t i = 0; i < t->numel; i++)
    dst[i] = to_half(src[i]);
  return h;
}

typedef struct fp16_pass {
  mb_model *model;
  mb_graph *g;
  mb_error *err;
  int n_values, n_nodes; /* before the pass: the arrays below */
  mb_dtype *dtype;       /* per value */
  bool *converted;       /* per node: runs in float16 */
  bool *home16;          /* per float32 value: computed/stored in float16 */
  int *home;             /* per value: the value holding that version */
  int *alt;              /* per value: the other precision, -1 until made */
  bool *want16, *want32; /* per value: what its readers need */
  bool *sub_read;        /* per value */
  int casts, inits_converted, inits_copied, blocked;
  int64_t bytes_before, bytes_after;
} fp16_pass;

static bool is_f32(const fp16_pass *c, int v) {
  return v >= 0 && v < c->n_values && c->dtype[v] == MB_DTYPE_FLOAT;
}

static bool is_float(mb_dtype dt) {
  return dt == MB_DTYPE_FLOAT || dt == MB_DTYPE_FLOAT16 ||
         dt == MB_DTYPE_BFLOAT16 || dt == MB_DTYPE_DOUBLE;
}

/* Value types: inference for concrete shapes, else the declared types. */
static mb_status infer_types(fp16_pass *c, const mb_pass_options *opt) {
  const mb_graph *g = c->g;
  mb_tensor *inputs = calloc((size_t)g->n_inputs + 1, sizeof *inputs);
  const mb_tensor **ptrs = calloc((size_t)g->n_inputs + 1, sizeof *ptrs);
  mb_shape_info *shapes = calloc((size_t)g->n_values + 1, sizeof *shapes);
  mb_status status = MB_STATUS_OK;
  mb_error local = {0};
  bool inferred = false;
  if (!inputs || !ptrs || !shapes) {
    status = mb__error(c->err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (int i = 0; i < g->n_inputs; i++)
    ptrs[i] = &inputs[i];
  if (!mb__edit_input_shapes(c->model, opt, false, inputs, &local) &&
      !mb__infer_shapes(c->model, ptrs, shapes, &local))
    inferred = true;
  else
    mb__log(MB_LOG_DEBUG, "to_fp16: using declared types: %s", local.message);
  for (int v = 0; v < g->n_values; v++) {
    const mb_value *val = &g->values[v];
    c->dtype[v] = val->initializer              ? val->initializer->dtype
                  : inferred && shapes[v].known ? shapes[v].dtype
                                                : val->dtype;
  }
done:
  free(inputs);
  free(ptrs);
  free(shapes);
  return status;
}

/* Decides which nodes run in float16; counts those that touch float32
 * values and stay there. */
static void classify(fp16_pass *c, const block_list *block) {
  const mb_graph *g = c->g;
  for (int i = 0; i < g->n_nodes; i++) {
    const mb_node *n = &g->nodes[i];
    bool ok = !n->domain[0] && !mb__edit_has_subgraph(n) &&
              !block_has(block, n->op_type) &&
              !in_list(always_fp32, MB_ARRAY_COUNT(always_fp32), n->op_type) &&
              !fp16_unsupported(n);
    bool float_in = false, f32_in = false, f32_out = false;
    for (int j = 0; j < n->n_inputs; j++) {
      int v = n->inputs[j];
      if (v < 0)
        continue;
      ok &= c->dtype[v] != MB_DTYPE_UNDEFINED;
      float_in |= is_float(c->dtype[v]);
      f32_in |= c->dtype[v] == MB_DTYPE_FLOAT && !fp32_slot(n, false, j);
    }
    for (int j = 0; j < n->n_outputs; j++) {
      int v = n->outputs[j];
      if (v < 0)
        continue;
      ok &= c->dtype[v] != MB_DTYPE_UNDEFINED;
      f32_out |= c->dtype[v] == MB_DTYPE_FLOAT && !fp32_slot(n, true, j);
    }
    /* Float outputs from non-float inputs: only where an attribute sets
     * the type and we rewrite it. */
    if (f32_out && !float_in &&
        !in_list(typed_by_attr, MB_ARRAY_COUNT(typed_by_attr), n->op_type))
      ok = false;
    c->converted[i] = ok && (f32_in || f32_out);
    c->blocked += !ok && (f32_in || f32_out);
  }
}

/* What each float32 value's readers need. */
static void collect_wants(fp16_pass *c) {
  const mb_graph *g = c->g;
  for (int i = 0; i < g->n_nodes; i++) {
    const mb_node *n = &g->nodes[i];
    for (int j = 0; j < n->n_inputs; j++) {
      int v = n->inputs[j];
      if (!is_f32(c, v))
        continue;
      if (c->converted[i] && !fp32_slot(n, false, j))
        c->want16[v] = true;
      else
        c->want32[v] = true;
    }
  }
  for (int i = 0; i < g->n_outputs; i++)
    c->want32[g->outputs[i]] = true;
  for (int v = 0; v < c->n_values; v++)
    if (c->sub_read[v])
      c->want32[v] = true;
}

/* A new value like v (same shape) of dtype dt, named v + suffix. */
static int new_value_like(fp16_pass *c, int v, const char *suffix,
                          mb_dtype dt) {
  int nv = mb__edit_new_value(c->g, c->g->values[v].name, suffix, c->err);
  if (nv < 0)
    return -1;
  mb_value *dst = &c->g->values[nv];
  const mb_value *src = &c->g->values[v];
  dst->dtype = dt;
  dst->rank = src->rank;
  memcpy(dst->dims, src->dims, sizeof dst->dims);
  return nv;
}

/* Appends Cast(from) -> to. */
static mb_status add_cast(fp16_pass *c, int from, int to, mb_dtype dt) {
  const char *in = c->g->values[from].name, *out = c->g->values[to].name;
  int node = mb__graph_add_node(c->g, "Cast", "", out, 1, &in, 1, &out, c->err);
  if (node < 0)
    return c->err ? c->err->status : MB_STATUS_OUT_OF_MEMORY;
  c->casts++;
  return mb__node_set_int(c->g, node, "to", dt, c->err);
}

/* The version of float32 value v in the precision it is not stored in. */
static int alt_version(fp16_pass *c, int v) {
  if (c->alt[v] >= 0)
    return c->alt[v];
  mb_graph *g = c->g;
  if (g->values[v].initializer) {
    /* Read in both precisions: keep float32, add a float16 copy. */
    mb_tensor *h = half_copy(g->values[v].initializer);
    if (!h) {
      mb__error(c->err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
      return -1;
    }
    int nv = mb__edit_new_value(g, g->values[v].name, "_fp16", c->err);
    if (nv < 0) {
      mb_tensor_free(h);
      return -1;
    }
    c->bytes_after += (int64_t)h->nbytes;
    if (mb__edit_set_initializer(g, nv, h, c->err))
      return -1;
    c->inits_copied++;
    return c->alt[v] = nv;
  }
  bool to16 = !c->home16[v];
  mb_dtype dt = to16 ? MB_DTYPE_FLOAT16 : MB_DTYPE_FLOAT;
  int nv = new_value_like(c, v, to16 ? "_fp16" : "_fp32", dt);
  if (nv < 0 || add_cast(c, c->home[v], nv, dt))
    return -1;
  return c->alt[v] = nv;
}

/* Where float32 values live: converts initializers read only in float16,
 * retypes values computed in float16, and renames those whose float32
 * name must survive (graph outputs, subgraph reads). */
static mb_status place_values(fp16_pass *c) {
  mb_graph *g = c->g;
  for (int v = 0; v < c->n_values; v++) {
    c->home[v] = v;
    c->alt[v] = -1;
    if (!is_f32(c, v))
      continue;
    mb_value *val = &g->values[v];
    if (val->initializer) {
      c->bytes_before += (int64_t)val->initializer->nbytes;
      c->bytes_after += (int64_t)val->initializer->nbytes;
      if (!c->want16[v] || c->want32[v])
        continue;
      mb_tensor *h = half_copy(val->initializer);
      if (!h)
        return mb__error(c->err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
      c->bytes_after += (int64_t)h->nbytes - (int64_t)val->initializer->nbytes;
      mb_status status = mb__edit_set_initializer(g, v, h, c->err);
      if (status)
        return status;
      c->home16[v] = true;
      c->inits_converted++;
      continue;
    }
    int p = val->producer;
    if (p < 0 || !c->converted[p])
      continue;
    const mb_node *n = &g->nodes[p];
    int slot = 0;
    while (slot < n->n_outputs && n->outputs[slot] != v)
      slot++;
    if (fp32_slot(n, true, slot))
      continue;
    c->home16[v] = true;
    if (!val->is_output && !c->sub_read[v]) {
      val->dtype = MB_DTYPE_FLOAT16;
      continue;
    }
    /* The producer writes "<v>_fp16"; a Cast writes v in float32. */
    int nv = new_value_like(c, v, "_fp16", MB_DTYPE_FLOAT16);
    if (nv < 0)
      return c->err ? c->err->status : MB_STATUS_OUT_OF_MEMORY;
    g->nodes[p].outputs[slot] = nv;
    c->home[v] = nv;
    c->alt[v] = v;
    mb_status status = add_cast(c, nv, v, MB_DTYPE_FLOAT);
    if (status)
      return status;
  }
  return MB_STATUS_OK;
}

/* Rewrites the attributes that fix a float16 node's output type. */
static mb_status retype_attrs(fp16_pass *c, int i) {
  mb_graph *g = c->g;
  mb_node *n = &g->nodes[i];
  if (n->n_outputs < 1 || !is_f32(c, n->outputs[0]) || strcmp(n->domain, ""))
    return MB_STATUS_OK;
  if (strcmp(n->op_type, "Cast") == 0) {
    for (int j = 0; j < n->n_attrs; j++)
      if (strcmp(n->attrs[j].name, "to") == 0 &&
          n->attrs[j].type == MB_ATTR_INT)
        n->attrs[j].i = MB_DTYPE_FLOAT16;
    return MB_STATUS_OK;
  }
  bool constant = strcmp(n->op_type, "Constant") == 0;
  if (!constant && strcmp(n->op_type, "ConstantOfShape") != 0)
    return MB_STATUS_OK;
  for (int j = 0; j < n->n_attrs; j++) {
    mb_attr *a = &n->attrs[j];
    mb_tensor *h = NULL;
    if ((a->type == MB_ATTR_TENSOR || a->type == MB_ATTR_SPARSE_TENSOR) &&
        a->t && a->t->dtype == MB_DTYPE_FLOAT) {
      h = half_copy(a->t);
    } else if (constant && a->type == MB_ATTR_FLOAT) {
      mb_tensor one = {.dtype = MB_DTYPE_FLOAT, .numel = 1, .data = &a->f};
      h = half_copy(&one);
    } else if (constant && a->type == MB_ATTR_FLOATS) {
      mb_tensor list = {.dtype = MB_DTYPE_FLOAT,
                        .rank = 1,
                        .numel = a->n,
                        .dims = {a->n},
                        .data = a->floats};
      h = half_copy(&list);
    } else {
      continue;
    }
    if (!h)
      return mb__error(c->err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    mb_tensor_free(a->t);
    a->t = h;
    if (a->type != MB_ATTR_SPARSE_TENSOR)
      a->type = MB_ATTR_TENSOR;
    a->name = "value";
    return MB_STATUS_OK;
  }
  if (!constant) {
    /* ConstantOfShape's default value is a float32 zero. */
    int64_t one = 1;
    mb_tensor *zero = NULL;
    if (mb_tensor_create(MB_DTYPE_FLOAT16, 1, &one, &zero, c->err))
      return c->err ? c->err->status : MB_STATUS_OUT_OF_MEMORY;
    return mb__node_set_tensor(g, i, "value", zero, c->err);
  }
  return MB_STATUS_OK;
}

static mb_status to_fp16(mb_model *model, const mb_pass_options *opt,
                         mb_pass_stats *stats, mb_error *err) {
  mb_graph *g = model->graph;
  mb_pass_record *rec = mb__pass_record(stats);
  block_list *block = malloc(sizeof *block);
  fp16_pass c = {.model = model, .g = g, .err = err};
  mb_status status;
  int n_values = g->n_values, n_nodes = g->n_nodes;
  c.n_values = n_values;
  c.n_nodes = n_nodes;
  c.dtype = calloc((size_t)n_values + 1, sizeof *c.dtype);
  c.converted = calloc((size_t)n_nodes + 1, sizeof *c.converted);
  c.home16 = calloc((size_t)n_values + 1, sizeof *c.home16);
  c.home = calloc((size_t)n_values + 1, sizeof *c.home);
  c.alt = calloc((size_t)n_values + 1, sizeof *c.alt);
  c.want16 = calloc((size_t)n_values + 1, sizeof *c.want16);
  c.want32 = calloc((size_t)n_values + 1, sizeof *c.want32);
  c.sub_read = calloc((size_t)n_values + 1, sizeof *c.sub_read);
  int *uses = calloc((size_t)n_values + 1, sizeof *uses);
  /* Cast-1 names types with strings, and neither the reference nor ONNX
   * Runtime (which inserts Casts of its own) runs such models in float16. */
  if (mb__model_opset(model, "") < 6) {
    status = mb__error(err, MB_STATUS_UNSUPPORTED,
                       "needs ai.onnx opset 6 or later, the model imports "
                       "opset %lld",
                       (long long)mb__model_opset(model, ""));
    goto done;
  }
  if (!block || !c.dtype || !c.converted || !c.home16 || !c.home || !c.alt ||
      !c.want16 || !c.want32 || !c.sub_read || !uses) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  if ((status = block_parse(opt->fp16_block, block, err)) ||
      (status = infer_types(&c, opt)))
    goto done;
  mb__edit_count_uses(g, uses, c.sub_read);
  classify(&c, block);
  collect_wants(&c);
  /* Attributes first: place_values renames outputs. */
  for (int i = 0; i < n_nodes; i++)
    if (c.converted[i] && (status = retype_attrs(&c, i)))
      goto done;
  if ((status = place_values(&c)))
    goto done;
  /* Readers get the version they need; new Casts (appended after
   * n_nodes) already read the right one. */
  for (int i = 0; i < n_nodes; i++) {
    for (int j = 0; j < g->nodes[i].n_inputs; j++) {
      int v = g->nodes[i].inputs[j];
      if (!is_f32(&c, v))
        continue;
      bool want16 = c.converted[i] && !fp32_slot(&g->nodes[i], false, j);
      int use = want16 == c.home16[v] ? c.home[v] : alt_version(&c, v);
      if (use < 0) {
        status = err ? err->status : MB_STATUS_OUT_OF_MEMORY;
        goto done;
      }
      g->nodes[i].inputs[j] = use;
    }
  }
  int converted = 0;
  for (int i = 0; i < n_nodes; i++)
    converted += c.converted[i];
  rec->changed = converted;
  snprintf(rec->detail, sizeof rec->detail,
           "%d nodes in float16, %d kept in float32, %d Casts inserted, %d "
           "initializers converted and %d copied (%lld -> %lld bytes)",
           converted, c.blocked, c.casts, c.inits_converted, c.inits_copied,
           (long long)c.bytes_before, (long long)c.bytes_after);
done:
  free(block);
  free(c.dtype);
  free(c.converted);
  free(c.home16);
  free(c.home);
  free(c.alt);
  free(c.want16);
  free(c.want32);
  free(c.sub_read);
  free(uses);
  return status;
}

const mb_pass mb__pass_to_fp16 = {
    "to_fp16",
    "float32 weights and activations to float16 with float32 graph inputs "
    "and outputs; blocked ops stay float32 behind Casts; counts nodes "
    "converted",
    to_fp16,
};
