/* Structural mutation of ONNX models for the model-run fuzz targets: the
 * bytes are parsed as a ModelProto (protobuf-c, as src/onnx/ reads it),
 * one to three edits are made where kernels meet their edge cases
 * (attribute values, declared shapes and element types, initializer dims,
 * types and data sizes, opsets, node wiring and op types), and the result
 * is written back. Byte-level mutation alone mostly breaks the protobuf
 * framing; these edits keep a model that loads and reaches the kernels.
 *
 * protobuf-c frees what it unpacked by walking the structs, so every edit
 * is undoable: the bytes it overwrites are saved and put back, and what
 * it allocated is freed, before the message is released. */
#include "targets.h"

#include "onnx.pb-c.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MAX_UNDO 64
#define MAX_NAMES 512

typedef struct undo_entry {
  void *addr;
  size_t len;
  unsigned char saved[64];
} undo_entry;

typedef struct mutator {
  uint64_t rng;
  Onnx__ModelProto *model;
  Onnx__GraphProto *graph;
  undo_entry undo[MAX_UNDO];
  int n_undo;
  void *allocs[MAX_UNDO];
  int n_allocs;
  /* Every value name of the main graph (inputs, initializers, node
   * outputs), borrowed from the message. */
  char *names[MAX_NAMES];
  int n_names;
} mutator;

static uint64_t next(mutator *m) {
  m->rng ^= m->rng << 13;
  m->rng ^= m->rng >> 7;
  m->rng ^= m->rng << 17;
  return m->rng;
}

static size_t pick(mutator *m, size_t n) {
  return n ? next(m) % n : 0;
}

/* Saves len bytes at addr for the undo, then copies value over them. */
static bool set_bytes(mutator *m, void *addr, const void *value, size_t len) {
  if (m->n_undo == MAX_UNDO || len > sizeof m->undo[0].saved)
    return false;
  undo_entry *u = &m->undo[m->n_undo++];
  u->addr = addr;
  u->len = len;
  memcpy(u->saved, addr, len);
  memmove(addr, value, len);
  return true;
}

#define SET(m, field, value)                                                   \
  do {                                                                         \
    __typeof__(field) v_ = (value);                                            \
    set_bytes(m, &(field), &v_, sizeof v_);                                    \
  } while (0)

static void *alloc(mutator *m, size_t size) {
  if (m->n_allocs == MAX_UNDO)
    return NULL;
  void *p = calloc(1, size ? size : 1);
  if (p)
    m->allocs[m->n_allocs++] = p;
  return p;
}

static void undo_all(mutator *m) {
  while (m->n_undo > 0) {
    undo_entry *u = &m->undo[--m->n_undo];
    memcpy(u->addr, u->saved, u->len);
  }
  while (m->n_allocs > 0)
    free(m->allocs[--m->n_allocs]);
}

/* Small, boundary and odd values: where kernels' index arithmetic breaks. */
static int64_t interesting_int(mutator *m) {
  static const int64_t values[] = {
      0,   1,     2,      3,  4, 7, -1,      -2,        -3,        16,       64,
      255, 65536, -65536, 32, 5, 6, 1 << 20, INT32_MAX, INT64_MAX, INT64_MIN};
  if (next(m) % 4 == 0)
    return (int64_t)(next(m) % 9) - 4;
  return values[pick(m, sizeof values / sizeof values[0])];
}

static float interesting_float(mutator *m) {
  static const float values[] = {0.0f, 1.0f,     -1.0f,     0.5f,
                                 2.0f, 1e-9f,    1e30f,     -1e30f,
                                 NAN,  INFINITY, -INFINITY, 3.0f};
  return values[pick(m, sizeof values / sizeof values[0])];
}

static Onnx__NodeProto *random_node(mutator *m) {
  Onnx__GraphProto *g = m->graph;
  return g->n_node ? g->node[pick(m, g->n_node)] : NULL;
}

static Onnx__AttributeProto *random_attribute(mutator *m) {
  Onnx__NodeProto *n = random_node(m);
  return n && n->n_attribute ? n->attribute[pick(m, n->n_attribute)] : NULL;
}

/* Grows an array of element size `elem` by one slot copied from slot
 * `from`: the new array is ours, the message's old one is put back by the
 * undo. */
static bool grow_array(mutator *m, void **array, size_t *count, size_t elem,
                       size_t from) {
  if (*count > 4096)
    return false;
  unsigned char *bigger = alloc(m, (*count + 1) * elem);
  if (!bigger)
    return false;
  if (*count)
    memcpy(bigger, *array, *count * elem);
  memcpy(bigger + *count * elem,
         *count ? (unsigned char *)*array + from * elem : bigger, elem);
  SET(m, *array, (void *)bigger);
  SET(m, *count, *count + 1);
  return true;
}

/* Removes slot i of an array of pointers by moving the last one into it. */
static void drop_slot(mutator *m, void **array, size_t *count, size_t i) {
  if (*count == 0)
    return;
  if (i != *count - 1)
    SET(m, array[i], array[*count - 1]);
  SET(m, *count, *count - 1);
}

static bool mutate_attribute_value(mutator *m) {
  Onnx__AttributeProto *a = random_attribute(m);
  if (!a)
    return false;
  if (a->n_ints && next(m) % 2) {
    size_t i = pick(m, a->n_ints);
    switch (next(m) % 4) {
    case 0:
      SET(m, a->n_ints, a->n_ints - 1); /* one value fewer */
      return true;
    case 1:
      return grow_array(m, (void **)&a->ints, &a->n_ints, sizeof *a->ints, i);
    default:
      SET(m, a->ints[i], interesting_int(m));
      return true;
    }
  }
  if (a->n_floats && next(m) % 2) {
    SET(m, a->floats[pick(m, a->n_floats)], interesting_float(m));
    return true;
  }
  if (a->has_i) {
    SET(m, a->i, interesting_int(m));
    return true;
  }
  if (a->has_f) {
    SET(m, a->f, interesting_float(m));
    return true;
  }
  if (a->has_s) {
    static const char *const words[] = {"",           "NOTSET",
                                        "SAME_UPPER", "SAME_LOWER",
                                        "VALID",      "linear",
                                        "nearest",    "cubic",
                                        "constant",   "reflect",
                                        "edge",       "half_pixel",
                                        "floor",      "round_prefer_ceil",
                                        "DCR",        "CRD",
                                        "tanh",       "none",
                                        "sum",        "mean",
                                        "ij,jk->ik",  "...i,i->...",
                                        "bilinear",   "CUBIC"};
    const char *w = words[pick(m, sizeof words / sizeof words[0])];
    ProtobufCBinaryData s = {strlen(w), (uint8_t *)w};
    SET(m, a->s, s);
    return true;
  }
  /* A tensor attribute (Constant, ConstantOfShape): its dims. */
  if (a->t && a->t->n_dims) {
    SET(m, a->t->dims[pick(m, a->t->n_dims)], interesting_int(m));
    return true;
  }
  return false;
}

static bool mutate_attribute_set(mutator *m) {
  Onnx__NodeProto *n = random_node(m);
  if (!n || !n->n_attribute)
    return false;
  size_t i = pick(m, n->n_attribute);
  if (next(m) % 3 == 0) {
    /* The attribute says it is of another type than it holds. */
    SET(m, n->attribute[i]->type,
        (Onnx__AttributeProto__AttributeType)(next(m) % 15));
    SET(m, n->attribute[i]->has_type, 1);
    return true;
  }
  drop_slot(m, (void **)n->attribute, &n->n_attribute, i);
  return true;
}

/* The tensor type of a graph input, output or value_info entry. */
static Onnx__TypeProto__Tensor *random_tensor_type(mutator *m) {
  Onnx__GraphProto *g = m->graph;
  size_t total = g->n_input + g->n_output + g->n_value_info;
  if (!total)
    return NULL;
  size_t i = pick(m, total);
  Onnx__ValueInfoProto *v = i < g->n_input ? g->input[i]
                            : i < g->n_input + g->n_output
                                ? g->output[i - g->n_input]
                                : g->value_info[i - g->n_input - g->n_output];
  if (!v->type || v->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
    return NULL;
  return v->type->tensor_type;
}

static bool mutate_declared_shape(mutator *m) {
  Onnx__TypeProto__Tensor *t = random_tensor_type(m);
  if (!t || !t->shape)
    return false;
  Onnx__TensorShapeProto *s = t->shape;
  switch (next(m) % 6) {
  case 0:
    if (!s->n_dim)
      return false;
    SET(m, s->n_dim, s->n_dim - 1);
    return true;
  case 1: {
    /* One dim more, a copy of the dims' first (or a fresh dim 1). */
    Onnx__TensorShapeProto__Dimension *d = alloc(m, sizeof *d);
    if (!d)
      return false;
    onnx__tensor_shape_proto__dimension__init(d);
    d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    d->dim_value = 1 + (int64_t)(next(m) % 3);
    if (!grow_array(m, (void **)&s->dim, &s->n_dim, sizeof *s->dim, 0))
      return false;
    s->dim[s->n_dim - 1] = d; /* our array: no undo needed */
    return true;
  }
  case 2: {
    if (!s->n_dim)
      return false;
    /* A symbolic dim where a number was: the batch size fills it. */
    Onnx__TensorShapeProto__Dimension *d = s->dim[pick(m, s->n_dim)];
    Onnx__TensorShapeProto__Dimension copy = *d;
    copy.value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
    copy.dim_param = (char *)"N";
    return set_bytes(m, d, &copy, sizeof copy);
  }
  default: {
    if (!s->n_dim)
      return false;
    Onnx__TensorShapeProto__Dimension *d = s->dim[pick(m, s->n_dim)];
    Onnx__TensorShapeProto__Dimension copy = *d;
    copy.value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    int64_t v = interesting_int(m);
    copy.dim_value = v > 64 || v < -1 ? (int64_t)(next(m) % 8) : v;
    return set_bytes(m, d, &copy, sizeof copy);
  }
  }
}

/* ONNX element types 1..16 plus two out of range. */
static int32_t random_elem_type(mutator *m) {
  return next(m) % 8 == 0 ? (int32_t)(next(m) % 2 ? 0 : 99)
                          : (int32_t)(1 + next(m) % 16);
}

static bool mutate_elem_type(mutator *m) {
  Onnx__TypeProto__Tensor *t = random_tensor_type(m);
  if (!t)
    return false;
  SET(m, t->elem_type, random_elem_type(m));
  SET(m, t->has_elem_type, 1);
  return true;
}

static bool mutate_initializer(mutator *m) {
  Onnx__GraphProto *g = m->graph;
  if (!g->n_initializer)
    return false;
  Onnx__TensorProto *t = g->initializer[pick(m, g->n_initializer)];
  switch (next(m) % 5) {
  case 0:
    SET(m, t->data_type, random_elem_type(m));
    SET(m, t->has_data_type, 1);
    return true;
  case 1:
    if (!t->n_dims)
      return false;
    SET(m, t->dims[pick(m, t->n_dims)], interesting_int(m));
    return true;
  case 2:
    if (!t->n_dims)
      return false;
    SET(m, t->n_dims, t->n_dims - 1);
    return true;
  case 3:
    /* Less data than the dims say (or more, from a bigger dim). */
    if (t->has_raw_data && t->raw_data.len) {
      SET(m, t->raw_data.len, pick(m, t->raw_data.len));
      return true;
    }
    if (t->n_float_data) {
      SET(m, t->n_float_data, pick(m, t->n_float_data));
      return true;
    }
    if (t->n_int64_data) {
      SET(m, t->n_int64_data, pick(m, t->n_int64_data));
      return true;
    }
    if (t->n_int32_data) {
      SET(m, t->n_int32_data, pick(m, t->n_int32_data));
      return true;
    }
    return false;
  default:
    /* A value inside: shapes, axes and indices are initializers too. */
    if (t->has_raw_data && t->raw_data.len >= 8 &&
        (t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64)) {
      size_t i = pick(m, t->raw_data.len / 8);
      int64_t v = interesting_int(m);
      return set_bytes(m, t->raw_data.data + 8 * i, &v, 8);
    }
    if (t->n_int64_data) {
      SET(m, t->int64_data[pick(m, t->n_int64_data)], interesting_int(m));
      return true;
    }
    if (t->n_float_data) {
      SET(m, t->float_data[pick(m, t->n_float_data)], interesting_float(m));
      return true;
    }
    return false;
  }
}

static bool mutate_opset(mutator *m) {
  Onnx__ModelProto *model = m->model;
  if (!model->n_opset_import)
    return false;
  static const int64_t versions[] = {1,  5,  6,  7,  8,  9,  10,  11,
                                     12, 13, 14, 15, 16, 17, 18,  19,
                                     20, 21, 22, 23, 0,  -1, 1000};
  Onnx__OperatorSetIdProto *o =
      model->opset_import[pick(m, model->n_opset_import)];
  SET(m, o->version, versions[pick(m, sizeof versions / sizeof versions[0])]);
  SET(m, o->has_version, 1);
  return true;
}

static void collect_names(mutator *m) {
  Onnx__GraphProto *g = m->graph;
  m->n_names = 0;
  for (size_t i = 0; i < g->n_input && m->n_names < MAX_NAMES; i++)
    m->names[m->n_names++] = g->input[i]->name;
  for (size_t i = 0; i < g->n_initializer && m->n_names < MAX_NAMES; i++)
    m->names[m->n_names++] = g->initializer[i]->name;
  for (size_t i = 0; i < g->n_node; i++)
    for (size_t j = 0; j < g->node[i]->n_output && m->n_names < MAX_NAMES; j++)
      m->names[m->n_names++] = g->node[i]->output[j];
}

static char *random_name(mutator *m) {
  static char empty[] = "";
  if (!m->n_names || next(m) % 8 == 0)
    return empty; /* an omitted optional input */
  char *name = m->names[pick(m, (size_t)m->n_names)];
  return name ? name : empty;
}

static bool mutate_wiring(mutator *m) {
  Onnx__NodeProto *n = random_node(m);
  if (!n)
    return false;
  switch (next(m) % 5) {
  case 0:
    if (!n->n_input)
      return false;
    SET(m, n->n_input, n->n_input - 1);
    return true;
  case 1:
    if (!grow_array(m, (void **)&n->input, &n->n_input, sizeof *n->input, 0))
      return false;
    n->input[n->n_input - 1] = random_name(m);
    return true;
  case 2:
    /* An output renamed to a name something else produces or reads. */
    if (!n->n_output)
      return false;
    SET(m, n->output[pick(m, n->n_output)], random_name(m));
    return true;
  default:
    if (!n->n_input)
      return false;
    SET(m, n->input[pick(m, n->n_input)], random_name(m));
    return true;
  }
}

static bool mutate_nodes(mutator *m) {
  Onnx__GraphProto *g = m->graph;
  Onnx__NodeProto *n = random_node(m);
  if (!n)
    return false;
  switch (next(m) % 3) {
  case 0: {
    /* Another operator on the same wiring and attributes. */
    static char *const ops[] = {"Add",
                                "Mul",
                                "MatMul",
                                "Gemm",
                                "Conv",
                                "ConvTranspose",
                                "Relu",
                                "Reshape",
                                "Transpose",
                                "Concat",
                                "Slice",
                                "Gather",
                                "Softmax",
                                "MaxPool",
                                "AveragePool",
                                "Expand",
                                "Tile",
                                "Pad",
                                "Resize",
                                "ReduceMean",
                                "Split",
                                "Squeeze",
                                "Unsqueeze",
                                "Cast",
                                "Where",
                                "LayerNormalization",
                                "BatchNormalization",
                                "Einsum",
                                "TopK",
                                "GatherND",
                                "ScatterND",
                                "DepthToSpace",
                                "CumSum",
                                "Range",
                                "OneHot",
                                "QuantizeLinear",
                                "DequantizeLinear",
                                "LSTM",
                                "If"};
    char *op = next(m) % 2 ? ops[pick(m, sizeof ops / sizeof ops[0])]
                           : g->node[pick(m, g->n_node)]->op_type;
    SET(m, n->op_type, op);
    return true;
  }
  case 1: {
    if (g->n_node < 2)
      return false;
    size_t a = pick(m, g->n_node), b = pick(m, g->n_node);
    Onnx__NodeProto *na = g->node[a], *nb = g->node[b];
    SET(m, g->node[a], nb);
    SET(m, g->node[b], na);
    return true;
  }
  default:
    drop_slot(m, (void **)g->node, &g->n_node, pick(m, g->n_node));
    return true;
  }
}

typedef bool (*mutation_fn)(mutator *m);

static const mutation_fn mutations[] = {
    mutate_attribute_value, mutate_attribute_value, mutate_attribute_set,
    mutate_declared_shape,  mutate_declared_shape,  mutate_elem_type,
    mutate_initializer,     mutate_initializer,     mutate_opset,
    mutate_wiring,          mutate_wiring,          mutate_nodes};

size_t mb__fuzz_mutate_model(uint8_t *data, size_t size, size_t max_size,
                             unsigned seed) {
  Onnx__ModelProto *model = onnx__model_proto__unpack(NULL, size, data);
  if (!model)
    return 0;
  size_t out = 0;
  mutator *m = calloc(1, sizeof *m);
  if (!m || !model->graph)
    goto done;
  m->model = model;
  m->graph = model->graph;
  m->rng = 0x9E3779B97F4A7C15ull ^ ((uint64_t)seed << 1 | 1);
  collect_names(m);
  int edits = 1 + (int)(next(m) % 3), made = 0;
  for (int tries = 0; made < edits && tries < 16; tries++)
    made += mutations[pick(m, sizeof mutations / sizeof mutations[0])](m);
  if (made) {
    size_t packed = onnx__model_proto__get_packed_size(model);
    uint8_t *buf = packed <= max_size ? malloc(packed ? packed : 1) : NULL;
    if (buf) {
      out = onnx__model_proto__pack(model, buf);
      memcpy(data, buf, out);
      free(buf);
    }
  }
  undo_all(m);
done:
  free(m);
  onnx__model_proto__free_unpacked(model, NULL);
  return out;
}
