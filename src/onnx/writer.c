/* ONNX writer: IR -> protobuf-c structs -> file. The protobuf structs borrow
 * names and tensor data from the model and live in a scratch arena; large
 * tensors go to an external data file. Both files are written to a
 * temporary name and renamed into place, so readers never see half a model.
 */
#include "onnx/onnx_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* Protobuf messages may not exceed 2 GiB; beyond this much tensor data the
 * writer moves tensors out even when the caller asked for none. */
#define MB_INLINE_LIMIT (((size_t)1 << 31) - ((size_t)64 << 20))
/* Tensors at least this large go out in that automatic mode (the threshold
 * onnx.save_model uses). */
#define MB_AUTO_EXTERNAL_THRESHOLD 1024
#define MB_EXTERNAL_ALIGNMENT 64

typedef struct external_tensor {
  const mb_tensor *tensor;
  uint64_t offset;
} external_tensor;

typedef struct writer {
  mb_arena *arena; /* every protobuf struct, array and string we build */
  mb_error *err;
  size_t threshold; /* 0: everything inline */
  const char *location;
  external_tensor *ext;
  int n_ext, cap_ext;
  uint64_t ext_size;
  /* TYPE_PROTO attributes unpacked from their stored bytes; freed at end. */
  Onnx__TypeProto **types;
  int n_types, cap_types;
} writer;

static mb_status convert_graph(writer *w, const mb_graph *g, bool main_graph,
                               Onnx__GraphProto **out);

static mb_status oom(writer *w) {
  return mb__error(w->err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
}

#define NEW(w, type) ((type *)mb__arena_alloc((w)->arena, sizeof(type)))
#define NEW_ARRAY(w, type, n)                                                  \
  ((type *)mb__arena_alloc((w)->arena, sizeof(type) * (size_t)(n)))

/* protobuf-c wants char *; the packer never writes through it. */
static char *pb_str(const char *s) {
  return s && s[0] ? (char *)s : NULL;
}

/* ---- tensors ---- */

static mb_status add_external(writer *w, const mb_tensor *t, uint64_t *off) {
  if (w->n_ext == w->cap_ext) {
    int cap = w->cap_ext ? w->cap_ext * 2 : 16;
    external_tensor *grown = realloc(w->ext, sizeof *grown * (size_t)cap);
    if (!grown)
      return oom(w);
    w->ext = grown;
    w->cap_ext = cap;
  }
  uint64_t offset = (w->ext_size + MB_EXTERNAL_ALIGNMENT - 1) /
                    MB_EXTERNAL_ALIGNMENT * MB_EXTERNAL_ALIGNMENT;
  w->ext[w->n_ext].tensor = t;
  w->ext[w->n_ext].offset = offset;
  w->n_ext++;
  w->ext_size = offset + t->nbytes;
  *off = offset;
  return MB_STATUS_OK;
}

static Onnx__StringStringEntryProto *kv_entry(writer *w, const char *key,
                                              const char *value) {
  Onnx__StringStringEntryProto *kv = NEW(w, Onnx__StringStringEntryProto);
  if (!kv)
    return NULL;
  onnx__string_string_entry_proto__init(kv);
  kv->key = (char *)key;
  kv->value = mb__arena_strdup(w->arena, value);
  return kv->value ? kv : NULL;
}

static mb_status convert_tensor(writer *w, const mb_tensor *t, const char *name,
                                Onnx__TensorProto **out) {
  Onnx__TensorProto *tp = NEW(w, Onnx__TensorProto);
  char number[32];
  uint64_t offset = 0;
  if (!tp)
    return oom(w);
  onnx__tensor_proto__init(tp);
  mb_status status = mb__tensor_to_proto(t, name, tp, w->err);
  if (status)
    return status;
  if (w->threshold && t->nbytes >= w->threshold) {
    if ((status = add_external(w, t, &offset)))
      return status;
    tp->has_raw_data = 0;
    tp->raw_data.len = 0;
    tp->raw_data.data = NULL;
    tp->has_data_location = 1;
    tp->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    tp->n_external_data = 3;
    tp->external_data = NEW_ARRAY(w, Onnx__StringStringEntryProto *, 3);
    if (!tp->external_data)
      return oom(w);
    tp->external_data[0] = kv_entry(w, "location", w->location);
    snprintf(number, sizeof number, "%llu", (unsigned long long)offset);
    tp->external_data[1] = kv_entry(w, "offset", number);
    snprintf(number, sizeof number, "%zu", t->nbytes);
    tp->external_data[2] = kv_entry(w, "length", number);
    if (!tp->external_data[0] || !tp->external_data[1] || !tp->external_data[2])
      return oom(w);
  }
  *out = tp;
  return MB_STATUS_OK;
}

/* Dense -> COO with linear int64 indices, for SPARSE_TENSOR attributes
 * (the reader keeps them dense). Non-zero means "any bit set", so -0.0
 * survives the round trip. */
static mb_status convert_sparse(writer *w, const mb_tensor *t,
                                Onnx__SparseTensorProto **out) {
  Onnx__SparseTensorProto *sp = NEW(w, Onnx__SparseTensorProto);
  mb_tensor *values = NEW(w, mb_tensor), *indices = NEW(w, mb_tensor);
  size_t elem = mb_dtype_size(t->dtype);
  int64_t nnz = 0;
  mb_status status;
  if (!sp || !values || !indices)
    return oom(w);
  onnx__sparse_tensor_proto__init(sp);
  const unsigned char *src = t->data;
  for (int64_t i = 0; i < t->numel; i++)
    for (size_t b = 0; b < elem; b++)
      if (src[(size_t)i * elem + b]) {
        nnz++;
        break;
      }
  /* Arena-backed tensors: the proto borrows them until the file is out. */
  values->dtype = t->dtype;
  values->rank = 1;
  values->dims[0] = nnz;
  values->numel = nnz;
  values->nbytes = (size_t)nnz * elem;
  values->data = mb__arena_alloc(w->arena, values->nbytes);
  indices->dtype = MB_DTYPE_INT64;
  indices->rank = 1;
  indices->dims[0] = nnz;
  indices->numel = nnz;
  indices->nbytes = (size_t)nnz * sizeof(int64_t);
  indices->data = mb__arena_alloc(w->arena, indices->nbytes);
  if (!values->data || !indices->data)
    return oom(w);
  int64_t k = 0;
  for (int64_t i = 0; i < t->numel; i++) {
    const unsigned char *e = src + (size_t)i * elem;
    for (size_t b = 0; b < elem; b++)
      if (e[b]) {
        memcpy((unsigned char *)values->data + (size_t)k * elem, e, elem);
        memcpy((unsigned char *)indices->data + (size_t)k * 8, &i, 8);
        k++;
        break;
      }
  }
  if ((status = convert_tensor(w, values, t->name, &sp->values)) ||
      (status = convert_tensor(w, indices, NULL, &sp->indices)))
    return status;
  sp->n_dims = (size_t)t->rank;
  sp->dims = (int64_t *)t->dims;
  *out = sp;
  return MB_STATUS_OK;
}

/* ---- attributes ---- */

static mb_status convert_type_proto(writer *w, const mb_attr *a,
                                    Onnx__TypeProto **out) {
  Onnx__TypeProto *tp = onnx__type_proto__unpack(
      NULL, a->s_len, (const uint8_t *)(a->s ? a->s : ""));
  if (!tp)
    return mb__error(w->err, MB_STATUS_INTERNAL,
                     "attribute '%s': stored TypeProto does not parse",
                     a->name);
  if (w->n_types == w->cap_types) {
    int cap = w->cap_types ? w->cap_types * 2 : 4;
    Onnx__TypeProto **grown = realloc(w->types, sizeof *grown * (size_t)cap);
    if (!grown) {
      onnx__type_proto__free_unpacked(tp, NULL);
      return oom(w);
    }
    w->types = grown;
    w->cap_types = cap;
  }
  w->types[w->n_types++] = tp;
  *out = tp;
  return MB_STATUS_OK;
}

static mb_status convert_attr(writer *w, const mb_attr *a,
                              Onnx__AttributeProto **out) {
  Onnx__AttributeProto *ap = NEW(w, Onnx__AttributeProto);
  mb_status status = MB_STATUS_OK;
  if (!ap)
    return oom(w);
  onnx__attribute_proto__init(ap);
  ap->name = (char *)a->name;
  ap->ref_attr_name = pb_str(a->ref_attr_name);
  ap->has_type = 1;
  ap->type = (Onnx__AttributeProto__AttributeType)a->type;
  switch (a->type) {
  case MB_ATTR_UNDEFINED:
    break;
  case MB_ATTR_FLOAT:
    ap->has_f = 1;
    ap->f = a->f;
    break;
  case MB_ATTR_INT:
    ap->has_i = 1;
    ap->i = a->i;
    break;
  case MB_ATTR_STRING:
    ap->has_s = 1;
    ap->s.len = a->s_len;
    ap->s.data = (uint8_t *)(a->s ? a->s : "");
    break;
  case MB_ATTR_TENSOR:
  case MB_ATTR_SPARSE_TENSOR:
    if (!a->t)
      return mb__error(w->err, MB_STATUS_INVALID_ARGUMENT,
                       "attribute '%s' has no tensor", a->name);
    status = a->type == MB_ATTR_TENSOR
                 ? convert_tensor(w, a->t, a->t->name, &ap->t)
                 : convert_sparse(w, a->t, &ap->sparse_tensor);
    break;
  case MB_ATTR_GRAPH:
    if (!a->g)
      return mb__error(w->err, MB_STATUS_INVALID_ARGUMENT,
                       "attribute '%s' has no graph", a->name);
    status = convert_graph(w, a->g, false, &ap->g);
    break;
  case MB_ATTR_TYPE_PROTO:
    status = convert_type_proto(w, a, &ap->tp);
    break;
  case MB_ATTR_FLOATS:
    ap->n_floats = (size_t)a->n;
    ap->floats = a->floats;
    break;
  case MB_ATTR_INTS:
    ap->n_ints = (size_t)a->n;
    ap->ints = a->ints;
    break;
  case MB_ATTR_STRINGS:
    ap->n_strings = (size_t)a->n;
    ap->strings = NEW_ARRAY(w, ProtobufCBinaryData, a->n);
    if (!ap->strings)
      return oom(w);
    for (int64_t k = 0; k < a->n; k++) {
      ap->strings[k].len = strlen(a->strings[k]);
      ap->strings[k].data = (uint8_t *)a->strings[k];
    }
    break;
  case MB_ATTR_TENSORS:
    ap->n_tensors = (size_t)a->n;
    ap->tensors = NEW_ARRAY(w, Onnx__TensorProto *, a->n);
    if (!ap->tensors)
      return oom(w);
    for (int64_t k = 0; k < a->n && !status; k++)
      status = convert_tensor(w, a->tensors[k], a->tensors[k]->name,
                              &ap->tensors[k]);
    break;
  case MB_ATTR_GRAPHS:
    ap->n_graphs = (size_t)a->n;
    ap->graphs = NEW_ARRAY(w, Onnx__GraphProto *, a->n);
    if (!ap->graphs)
      return oom(w);
    for (int64_t k = 0; k < a->n && !status; k++)
      status = convert_graph(w, a->graphs[k], false, &ap->graphs[k]);
    break;
  default:
    return mb__error(w->err, MB_STATUS_UNSUPPORTED,
                     "attribute '%s': type %s cannot be written", a->name,
                     mb__attr_type_name(a->type));
  }
  if (status)
    return mb__error_prefix(w->err, status, "attribute '%s'", a->name);
  *out = ap;
  return MB_STATUS_OK;
}

/* ---- graphs ---- */

/* A ValueInfoProto with the value's declared type; no type at all when
 * neither element type nor shape is known. */
static mb_status convert_value_info(writer *w, const mb_value *v,
                                    Onnx__ValueInfoProto **out) {
  Onnx__ValueInfoProto *vi = NEW(w, Onnx__ValueInfoProto);
  if (!vi)
    return oom(w);
  onnx__value_info_proto__init(vi);
  vi->name = (char *)v->name;
  vi->doc_string = pb_str(v->doc);
  if (v->dtype != MB_DTYPE_UNDEFINED || v->rank >= 0 ||
      v->type != MB_VALUE_TYPE_TENSOR) {
    Onnx__TypeProto *tp = NEW(w, Onnx__TypeProto);
    Onnx__TypeProto__Tensor *tt = NEW(w, Onnx__TypeProto__Tensor);
    if (!tp || !tt)
      return oom(w);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    if (v->dtype != MB_DTYPE_UNDEFINED) {
      tt->has_elem_type = 1;
      tt->elem_type = (int32_t)v->dtype;
    }
    if (v->rank >= 0) {
      Onnx__TensorShapeProto *shape = NEW(w, Onnx__TensorShapeProto);
      Onnx__TensorShapeProto__Dimension *dims =
          NEW_ARRAY(w, Onnx__TensorShapeProto__Dimension, v->rank);
      Onnx__TensorShapeProto__Dimension **dim_ptrs =
          NEW_ARRAY(w, Onnx__TensorShapeProto__Dimension *, v->rank);
      if (!shape || !dims || !dim_ptrs)
        return oom(w);
      onnx__tensor_shape_proto__init(shape);
      shape->n_dim = (size_t)v->rank;
      shape->dim = dim_ptrs;
      for (int i = 0; i < v->rank; i++) {
        Onnx__TensorShapeProto__Dimension *d = &dims[i];
        onnx__tensor_shape_proto__dimension__init(d);
        if (v->dims[i].value >= 0) {
          d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
          d->dim_value = v->dims[i].value;
        } else if (v->dims[i].param && v->dims[i].param[0]) {
          d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
          d->dim_param = (char *)v->dims[i].param;
        }
        dim_ptrs[i] = d;
      }
      tt->shape = shape;
    }
    /* Sequences and optionals wrap the tensor type. */
    bool sequence = v->type == MB_VALUE_TYPE_SEQUENCE ||
                    v->type == MB_VALUE_TYPE_OPTIONAL_SEQUENCE;
    bool optional = v->type == MB_VALUE_TYPE_OPTIONAL_TENSOR ||
                    v->type == MB_VALUE_TYPE_OPTIONAL_SEQUENCE;
    if (sequence) {
      Onnx__TypeProto *outer = NEW(w, Onnx__TypeProto);
      Onnx__TypeProto__Sequence *seq = NEW(w, Onnx__TypeProto__Sequence);
      if (!outer || !seq)
        return oom(w);
      onnx__type_proto__init(outer);
      onnx__type_proto__sequence__init(seq);
      seq->elem_type = tp;
      outer->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
      outer->sequence_type = seq;
      tp = outer;
    }
    if (optional) {
      Onnx__TypeProto *outer = NEW(w, Onnx__TypeProto);
      Onnx__TypeProto__Optional *opt = NEW(w, Onnx__TypeProto__Optional);
      if (!outer || !opt)
        return oom(w);
      onnx__type_proto__init(outer);
      onnx__type_proto__optional__init(opt);
      opt->elem_type = tp;
      outer->value_case = ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
      outer->optional_type = opt;
      tp = outer;
    }
    vi->type = tp;
  }
  *out = vi;
  return MB_STATUS_OK;
}

static const char *value_name(const mb_graph *g, int index) {
  return index >= 0 ? g->values[index].name : "";
}

static mb_status convert_node(writer *w, const mb_graph *g, const mb_node *n,
                              Onnx__NodeProto **out) {
  Onnx__NodeProto *np = NEW(w, Onnx__NodeProto);
  char label[160];
  if (!np)
    return oom(w);
  onnx__node_proto__init(np);
  np->name = pb_str(n->name);
  np->op_type = (char *)n->op_type;
  np->domain = pb_str(n->domain);
  np->doc_string = pb_str(n->doc);
  np->n_input = (size_t)n->n_inputs;
  np->input = NEW_ARRAY(w, char *, n->n_inputs);
  np->n_output = (size_t)n->n_outputs;
  np->output = NEW_ARRAY(w, char *, n->n_outputs);
  np->n_attribute = (size_t)n->n_attrs;
  np->attribute = NEW_ARRAY(w, Onnx__AttributeProto *, n->n_attrs);
  if (!np->input || !np->output || !np->attribute)
    return oom(w);
  for (int i = 0; i < n->n_inputs; i++)
    np->input[i] = (char *)value_name(g, n->inputs[i]);
  for (int i = 0; i < n->n_outputs; i++)
    np->output[i] = (char *)value_name(g, n->outputs[i]);
  for (int i = 0; i < n->n_attrs; i++) {
    mb_status status = convert_attr(w, &n->attrs[i], &np->attribute[i]);
    if (status)
      return mb__error_prefix(w->err, status, "%s",
                              mb__node_label(n, label, sizeof label));
  }
  *out = np;
  return MB_STATUS_OK;
}

static mb_status convert_graph(writer *w, const mb_graph *g, bool main_graph,
                               Onnx__GraphProto **out) {
  Onnx__GraphProto *gp = NEW(w, Onnx__GraphProto);
  int n_init = 0, n_info = 0;
  mb_status status;
  if (!gp)
    return oom(w);
  onnx__graph_proto__init(gp);
  /* onnx.checker requires every graph to be named. */
  gp->name = g->name && g->name[0] ? (char *)g->name
             : main_graph          ? "main_graph"
                                   : "subgraph";
  gp->doc_string = pb_str(g->doc);
  for (int i = 0; i < g->n_values; i++) {
    const mb_value *v = &g->values[i];
    if (v->initializer)
      n_init++;
    else if (v->kind == MB_VALUE_INTERMEDIATE && !v->is_output &&
             (v->dtype != MB_DTYPE_UNDEFINED || v->rank >= 0))
      n_info++;
  }
  /* IR < 4 requires every initializer to be listed as a graph input too. */
  bool inits_as_inputs = main_graph && g->model->ir_version < 4;
  gp->n_node = (size_t)g->n_nodes;
  gp->node = NEW_ARRAY(w, Onnx__NodeProto *, g->n_nodes);
  gp->initializer = NEW_ARRAY(w, Onnx__TensorProto *, n_init);
  gp->input = NEW_ARRAY(w, Onnx__ValueInfoProto *,
                        g->n_inputs + (inits_as_inputs ? n_init : 0));
  gp->n_output = (size_t)g->n_outputs;
  gp->output = NEW_ARRAY(w, Onnx__ValueInfoProto *, g->n_outputs);
  gp->value_info = NEW_ARRAY(w, Onnx__ValueInfoProto *, n_info);
  if (!gp->node || !gp->initializer || !gp->input || !gp->output ||
      !gp->value_info)
    return oom(w);
  for (int i = 0; i < g->n_inputs; i++)
    if ((status = convert_value_info(w, &g->values[g->inputs[i]],
                                     &gp->input[gp->n_input++])))
      return status;
  for (int i = 0; i < g->n_outputs; i++)
    if ((status =
             convert_value_info(w, &g->values[g->outputs[i]], &gp->output[i])))
      return status;
  for (int i = 0; i < g->n_values; i++) {
    const mb_value *v = &g->values[i];
    if (v->initializer) {
      if ((status = convert_tensor(w, v->initializer, v->name,
                                   &gp->initializer[gp->n_initializer++])))
        return mb__error_prefix(w->err, status, "initializer '%s'", v->name);
      if (inits_as_inputs &&
          (status = convert_value_info(w, v, &gp->input[gp->n_input++])))
        return status;
    } else if (v->kind == MB_VALUE_INTERMEDIATE && !v->is_output &&
               (v->dtype != MB_DTYPE_UNDEFINED || v->rank >= 0)) {
      if ((status =
               convert_value_info(w, v, &gp->value_info[gp->n_value_info++])))
        return status;
    }
  }
  for (int i = 0; i < g->n_nodes; i++)
    if ((status = convert_node(w, g, &g->nodes[i], &gp->node[i])))
      return status;
  *out = gp;
  return MB_STATUS_OK;
}

static mb_status convert_model(writer *w, const mb_model *m,
                               Onnx__ModelProto *mp) {
  onnx__model_proto__init(mp);
  mp->has_ir_version = 1;
  mp->ir_version = m->ir_version > 0 ? m->ir_version : 8;
  mp->producer_name = pb_str(m->producer_name);
  mp->producer_version = pb_str(m->producer_version);
  mp->domain = pb_str(m->domain);
  mp->doc_string = pb_str(m->doc);
  if (m->model_version) {
    mp->has_model_version = 1;
    mp->model_version = m->model_version;
  }
  mp->n_opset_import = (size_t)m->n_opsets;
  mp->opset_import = NEW_ARRAY(w, Onnx__OperatorSetIdProto *, m->n_opsets);
  Onnx__OperatorSetIdProto *ops =
      NEW_ARRAY(w, Onnx__OperatorSetIdProto, m->n_opsets);
  mp->n_metadata_props = (size_t)m->n_metadata;
  mp->metadata_props =
      NEW_ARRAY(w, Onnx__StringStringEntryProto *, m->n_metadata);
  Onnx__StringStringEntryProto *props =
      NEW_ARRAY(w, Onnx__StringStringEntryProto, m->n_metadata);
  if (!mp->opset_import || !ops || !mp->metadata_props || !props)
    return oom(w);
  for (int i = 0; i < m->n_opsets; i++) {
    onnx__operator_set_id_proto__init(&ops[i]);
    /* The default domain is written as "", as onnx itself does. */
    ops[i].domain = (char *)(m->opsets[i].domain ? m->opsets[i].domain : "");
    ops[i].has_version = 1;
    ops[i].version = m->opsets[i].version;
    mp->opset_import[i] = &ops[i];
  }
  for (int i = 0; i < m->n_metadata; i++) {
    onnx__string_string_entry_proto__init(&props[i]);
    props[i].key = (char *)m->metadata[i].key;
    props[i].value = (char *)m->metadata[i].value;
    mp->metadata_props[i] = &props[i];
  }
  return convert_graph(w, m->graph, true, &mp->graph);
}

/* ---- sizes, for the automatic move to external data ---- */

static size_t graph_tensor_bytes(const mb_graph *g) {
  size_t total = 0;
  for (int i = 0; i < g->n_values; i++)
    if (g->values[i].initializer)
      total += g->values[i].initializer->nbytes;
  for (int i = 0; i < g->n_nodes; i++)
    for (int j = 0; j < g->nodes[i].n_attrs; j++) {
      const mb_attr *a = &g->nodes[i].attrs[j];
      if (a->t)
        total += a->t->nbytes;
      if (a->g)
        total += graph_tensor_bytes(a->g);
      for (int64_t k = 0; a->type == MB_ATTR_TENSORS && k < a->n; k++)
        total += a->tensors[k]->nbytes;
      for (int64_t k = 0; a->type == MB_ATTR_GRAPHS && k < a->n; k++)
        total += graph_tensor_bytes(a->graphs[k]);
    }
  return total;
}

/* ---- files ---- */

/* A ProtobufCBuffer that streams packed bytes into a FILE, so a large model
 * is never held in memory twice. */
typedef struct file_buffer {
  ProtobufCBuffer base;
  FILE *f;
  bool failed;
} file_buffer;

static void file_buffer_append(ProtobufCBuffer *buffer, size_t len,
                               const uint8_t *data) {
  file_buffer *fb = (file_buffer *)buffer;
  if (!fb->failed && len && fwrite(data, 1, len, fb->f) != len)
    fb->failed = true;
}

typedef mb_status (*write_fn)(FILE *f, void *user, mb_error *err);

/* Writes `path` through write_fn into a temporary file in the same folder,
 * then renames it into place. */
static mb_status write_atomic(const char *path, write_fn fn, void *user,
                              mb_error *err) {
  size_t len = strlen(path) + sizeof ".tmp-XXXXXX";
  char *tmp = malloc(len);
  FILE *f = NULL;
  int fd;
  mb_status status;
  if (!tmp)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
  snprintf(tmp, len, "%s.tmp-XXXXXX", path);
  fd = mkstemp(tmp);
  if (fd < 0) {
    status = mb__error(err, MB_STATUS_IO, "%s: cannot create: %s", path,
                       strerror(errno));
    free(tmp);
    return status;
  }
  fchmod(fd, 0644); /* mkstemp's 0600 is too strict for a model file */
  f = fdopen(fd, "wb");
  if (!f) {
    status = mb__error(err, MB_STATUS_IO, "%s: %s", path, strerror(errno));
    close(fd);
    goto fail;
  }
  status = fn(f, user, err);
  if (status) {
    fclose(f);
    goto fail;
  }
  /* No fsync: the rename alone keeps readers from seeing a partial file,
   * which is what matters here; surviving power loss is not a goal, and
   * fsync made saving many small models several times slower. */
  if (fflush(f) != 0) {
    status = mb__error(err, MB_STATUS_IO, "%s: write failed: %s", path,
                       strerror(errno));
    fclose(f);
    goto fail;
  }
  if (fclose(f) != 0) {
    status = mb__error(err, MB_STATUS_IO, "%s: write failed: %s", path,
                       strerror(errno));
    goto fail;
  }
  if (rename(tmp, path) != 0) {
    status = mb__error(err, MB_STATUS_IO, "%s: cannot rename %s: %s", path, tmp,
                       strerror(errno));
    goto fail;
  }
  free(tmp);
  return MB_STATUS_OK;
fail:
  unlink(tmp);
  free(tmp);
  return status;
}

typedef struct model_job {
  const Onnx__ModelProto *mp;
  const char *path;
} model_job;

static mb_status write_model_bytes(FILE *f, void *user, mb_error *err) {
  const model_job *job = user;
  file_buffer fb = {.base = {.append = file_buffer_append}, .f = f};
  onnx__model_proto__pack_to_buffer(job->mp, &fb.base);
  if (fb.failed)
    return mb__error(err, MB_STATUS_IO, "%s: write failed: %s", job->path,
                     strerror(errno));
  return MB_STATUS_OK;
}

typedef struct data_job {
  const writer *w;
  const char *path;
} data_job;

static mb_status write_external_bytes(FILE *f, void *user, mb_error *err) {
  const data_job *job = user;
  static const uint8_t zeros[MB_EXTERNAL_ALIGNMENT];
  uint64_t pos = 0;
  for (int i = 0; i < job->w->n_ext; i++) {
    const external_tensor *e = &job->w->ext[i];
    size_t pad = (size_t)(e->offset - pos);
    if ((pad && fwrite(zeros, 1, pad, f) != pad) ||
        (e->tensor->nbytes &&
         fwrite(e->tensor->data, 1, e->tensor->nbytes, f) != e->tensor->nbytes))
      return mb__error(err, MB_STATUS_IO, "%s: write failed: %s", job->path,
                       strerror(errno));
    pos = e->offset + e->tensor->nbytes;
  }
  return MB_STATUS_OK;
}

static const char *path_basename(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

mb_status mb_model_save(const mb_model *model, const char *path,
                        const mb_save_options *options, mb_error *err) {
  writer w = {.err = err};
  Onnx__ModelProto mp;
  char *location = NULL, *dir = NULL, *data_path = NULL;
  mb_status status;

  if (!model || !path || !path[0])
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "mb_model_save: model and path are required");
  w.arena = mb__arena_create();
  dir = mb__path_dirname(path);
  if (!w.arena || !dir) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    goto done;
  }
  w.threshold = options ? options->external_data_threshold : 0;
  if (!w.threshold && graph_tensor_bytes(model->graph) > MB_INLINE_LIMIT)
    w.threshold = MB_AUTO_EXTERNAL_THRESHOLD;
  if (options && options->external_data_name) {
    location = mb__strdup(options->external_data_name);
  } else {
    const char *base = path_basename(path);
    size_t len = strlen(base) + sizeof ".data";
    if ((location = malloc(len)))
      snprintf(location, len, "%s.data", base);
  }
  if (!location) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    goto done;
  }
  if (!mb__external_location_ok(location)) {
    status = mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "%s: external data name '%s' must be a relative path "
                       "inside the model's folder",
                       path, location);
    goto done;
  }
  w.location = location;
  status = convert_model(&w, model, &mp);
  if (status) {
    mb__error_prefix(err, status, "%s", path);
    goto done;
  }
  if (w.n_ext) {
    size_t len = strlen(dir) + 1 + strlen(location) + 1;
    if (!(data_path = malloc(len))) {
      status =
          mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
      goto done;
    }
    snprintf(data_path, len, "%s/%s", dir, location);
    /* Data first: a model file never references data that is not there. */
    data_job job = {.w = &w, .path = data_path};
    status = write_atomic(data_path, write_external_bytes, &job, err);
    if (status)
      goto done;
  }
  model_job job = {.mp = &mp, .path = path};
  status = write_atomic(path, write_model_bytes, &job, err);
done:
  for (int i = 0; i < w.n_types; i++)
    onnx__type_proto__free_unpacked(w.types[i], NULL);
  free(w.types);
  free(w.ext);
  mb__arena_free(w.arena);
  free(location);
  free(dir);
  free(data_path);
  return status;
}
