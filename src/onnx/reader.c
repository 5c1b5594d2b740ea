/* ONNX reader: parses a ModelProto once with protobuf-c, converts it into
 * the graph IR of core/ir.h, and frees the protobuf structs. */
#include "onnx/onnx_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct reader {
  mb_model *model;
  mb_external_data ext;
  mb_error *err;
} reader;

static mb_status convert_graph(reader *r, const Onnx__GraphProto *gp,
                               mb_graph *g, int depth);

static const char *str_or_empty(const char *s) {
  return s ? s : "";
}

static mb_status oom(reader *r) {
  return mb__error(r->err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
}

/* Copies a protobuf string into the model's arena ("" for NULL). */
static const char *arena_str(reader *r, const char *s) {
  return mb__arena_strdup(r->model->arena, str_or_empty(s));
}

/* ---- types of graph inputs, outputs and value_info ---- */

typedef struct value_type {
  mb_value_type type;
  mb_dtype dtype;
  int rank;
  int64_t dims[MB_MAX_RANK];
  const char *params[MB_MAX_RANK];
} value_type;

static const char *const type_case_names[] = {
    [ONNX__TYPE_PROTO__VALUE__NOT_SET] = "undefined",
    [ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE] = "tensor",
    [ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE] = "sequence",
    [ONNX__TYPE_PROTO__VALUE_MAP_TYPE] = "map",
    [ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE] = "sparse tensor",
    [ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE] = "optional",
};

static const char *type_case_name(Onnx__TypeProto__ValueCase c) {
  if ((unsigned)c >= MB_ARRAY_COUNT(type_case_names) || !type_case_names[c])
    return "unknown";
  return type_case_names[c];
}

/* Reads a ValueInfoProto's type. A missing type or shape leaves dtype
 * UNDEFINED / rank -1; symbolic dims become -1 with their name. Sequences
 * and optionals of tensors are read as their element tensor type plus
 * vt->type; other types fail with MB_STATUS_UNSUPPORTED. `what` is "graph
 * input", "graph output" or "value_info". */
static mb_status read_value_type(reader *r, const Onnx__ValueInfoProto *vi,
                                 const char *what, value_type *vt) {
  const Onnx__TypeProto *tp = vi->type;
  const char *name = str_or_empty(vi->name);
  memset(vt, 0, sizeof *vt);
  vt->type = MB_VALUE_TYPE_TENSOR;
  vt->dtype = MB_DTYPE_UNDEFINED;
  vt->rank = -1;
  if (!tp || tp->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET)
    return MB_STATUS_OK;
  /* optional(sequence(tensor)), optional(tensor), sequence(tensor): unwrap
   * to the tensor type and remember the wrappers. */
  const Onnx__TypeProto *inner = tp;
  bool optional = false, sequence = false;
  if (inner->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE &&
      inner->optional_type && inner->optional_type->elem_type) {
    optional = true;
    inner = inner->optional_type->elem_type;
  }
  if (inner->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE &&
      inner->sequence_type && inner->sequence_type->elem_type) {
    sequence = true;
    inner = inner->sequence_type->elem_type;
  }
  if (inner->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
      !inner->tensor_type)
    return mb__error(r->err, MB_STATUS_UNSUPPORTED,
                     "%s '%s' has type %s%s%s; only tensors, sequences of "
                     "tensors and optionals of those are supported",
                     what, name, type_case_name(tp->value_case),
                     inner != tp ? " of " : "",
                     inner != tp ? type_case_name(inner->value_case) : "");
  vt->type = optional
                 ? (sequence ? MB_VALUE_TYPE_OPTIONAL_SEQUENCE
                             : MB_VALUE_TYPE_OPTIONAL_TENSOR)
                 : (sequence ? MB_VALUE_TYPE_SEQUENCE : MB_VALUE_TYPE_TENSOR);
  const Onnx__TypeProto__Tensor *tt = inner->tensor_type;
  if (tt->has_elem_type) {
    if (tt->elem_type < 0 || tt->elem_type >= MB_DTYPE_COUNT)
      return mb__error(r->err, MB_STATUS_UNSUPPORTED,
                       "%s '%s' has element type %d, which is not supported",
                       what, name, (int)tt->elem_type);
    vt->dtype = (mb_dtype)tt->elem_type;
  }
  if (!tt->shape)
    return MB_STATUS_OK;
  if (tt->shape->n_dim > MB_MAX_RANK)
    return mb__error(r->err, MB_STATUS_UNSUPPORTED,
                     "%s '%s' has rank %zu; at most %d is supported", what,
                     name, tt->shape->n_dim, MB_MAX_RANK);
  vt->rank = (int)tt->shape->n_dim;
  for (int i = 0; i < vt->rank; i++) {
    const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
    vt->dims[i] = -1;
    vt->params[i] = NULL;
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
        d->dim_value >= 0)
      vt->dims[i] = d->dim_value;
    else if (d->value_case ==
                 ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
             d->dim_param && d->dim_param[0])
      vt->params[i] = d->dim_param;
  }
  return MB_STATUS_OK;
}

/* ---- sparse tensors ---- */

/* Converts a SparseTensorProto (COO: values [NNZ], indices [NNZ] linear or
 * [NNZ, rank] coordinates) into a dense tensor. */
static mb_status sparse_to_dense(reader *r, const Onnx__SparseTensorProto *sp,
                                 const char *label, mb_tensor **tensor_out) {
  mb_tensor *values = NULL, *indices = NULL, *dense = NULL;
  mb_status status;
  char sub_label[360]; /* label plus " (indices)" */
  int64_t dims[MB_MAX_RANK];
  if (!sp->values || !sp->indices)
    return mb__error(r->err, MB_STATUS_PARSE,
                     "%s: sparse tensor without values or indices", label);
  if (sp->n_dims > MB_MAX_RANK)
    return mb__error(r->err, MB_STATUS_UNSUPPORTED,
                     "%s: rank %zu is above the supported maximum %d", label,
                     sp->n_dims, MB_MAX_RANK);
  int rank = (int)sp->n_dims;
  for (int i = 0; i < rank; i++)
    dims[i] = sp->dims[i];
  snprintf(sub_label, sizeof sub_label, "%s (values)", label);
  status =
      mb__tensor_from_proto(sp->values, sub_label, &r->ext, &values, r->err);
  if (status)
    goto done;
  snprintf(sub_label, sizeof sub_label, "%s (indices)", label);
  status =
      mb__tensor_from_proto(sp->indices, sub_label, &r->ext, &indices, r->err);
  if (status)
    goto done;
  if (indices->dtype != MB_DTYPE_INT64) {
    status = mb__error(r->err, MB_STATUS_UNSUPPORTED,
                       "%s: sparse indices of type %s are not supported "
                       "(only int64)",
                       label, mb_dtype_name(indices->dtype));
    goto done;
  }
  int64_t nnz = values->rank == 1 ? values->dims[0] : -1;
  bool linear = indices->rank == 1 && indices->dims[0] == nnz;
  bool coords =
      indices->rank == 2 && indices->dims[0] == nnz && indices->dims[1] == rank;
  if (nnz < 0 || (!linear && !coords)) {
    status = mb__error(r->err, MB_STATUS_UNSUPPORTED,
                       "%s: sparse layout (values rank %d, indices rank %d) "
                       "is not supported",
                       label, values->rank, indices->rank);
    goto done;
  }
  status = mb_tensor_create(values->dtype, rank, dims, &dense, r->err);
  if (status) {
    mb__error_prefix(r->err, status, "%s", label);
    goto done;
  }
  size_t elem = mb_dtype_size(values->dtype);
  const unsigned char *src = values->data;
  unsigned char *dst = dense->data;
  for (int64_t k = 0; k < nnz; k++) {
    int64_t index = 0;
    if (linear) {
      memcpy(&index, (const unsigned char *)indices->data + 8 * k, 8);
    } else {
      for (int d = 0; d < rank; d++) {
        int64_t c;
        memcpy(&c, (const unsigned char *)indices->data + 8 * (k * rank + d),
               8);
        if (c < 0 || c >= dims[d]) {
          index = -1;
          break;
        }
        index = index * dims[d] + c;
      }
    }
    if (index < 0 || index >= dense->numel) {
      status = mb__error(r->err, MB_STATUS_PARSE,
                         "%s: sparse index %lld is out of range", label,
                         (long long)k);
      goto done;
    }
    memcpy(dst + (size_t)index * elem, src + (size_t)k * elem, elem);
  }
  *tensor_out = dense;
  dense = NULL;
done:
  mb_tensor_free(values);
  mb_tensor_free(indices);
  mb_tensor_free(dense);
  return status;
}

/* ---- attributes ---- */

/* IR version 1 attributes carry no type: infer it from the field set. */
static mb_attr_type infer_attr_type(const Onnx__AttributeProto *ap) {
  if (ap->has_f)
    return MB_ATTR_FLOAT;
  if (ap->has_i)
    return MB_ATTR_INT;
  if (ap->has_s)
    return MB_ATTR_STRING;
  if (ap->t)
    return MB_ATTR_TENSOR;
  if (ap->g)
    return MB_ATTR_GRAPH;
  if (ap->sparse_tensor)
    return MB_ATTR_SPARSE_TENSOR;
  if (ap->tp)
    return MB_ATTR_TYPE_PROTO;
  if (ap->n_floats)
    return MB_ATTR_FLOATS;
  if (ap->n_ints)
    return MB_ATTR_INTS;
  if (ap->n_strings)
    return MB_ATTR_STRINGS;
  if (ap->n_tensors)
    return MB_ATTR_TENSORS;
  if (ap->n_graphs)
    return MB_ATTR_GRAPHS;
  if (ap->n_sparse_tensors)
    return MB_ATTR_SPARSE_TENSORS;
  if (ap->n_type_protos)
    return MB_ATTR_TYPE_PROTOS;
  return MB_ATTR_UNDEFINED;
}

/* Releases what a partly converted attribute owns. */
static void attr_release(mb_attr *a) {
  mb_tensor_free(a->t);
  mb__graph_free(a->g);
  for (int64_t k = 0; a->tensors && k < a->n; k++)
    mb_tensor_free(a->tensors[k]);
  for (int64_t k = 0; a->graphs && k < a->n; k++)
    mb__graph_free(a->graphs[k]);
  memset(a, 0, sizeof *a);
}

static mb_status convert_subgraph(reader *r, const Onnx__GraphProto *gp,
                                  mb_graph *parent, int depth,
                                  mb_graph **graph_out) {
  if (!gp)
    return mb__error(r->err, MB_STATUS_PARSE, "graph attribute has no graph");
  if (depth >= MB_ONNX_MAX_GRAPH_DEPTH)
    return mb__error(r->err, MB_STATUS_UNSUPPORTED,
                     "subgraphs are nested more than %d deep",
                     MB_ONNX_MAX_GRAPH_DEPTH);
  mb_graph *g = mb__graph_create(r->model, parent);
  if (!g)
    return oom(r);
  mb_status status = convert_graph(r, gp, g, depth + 1);
  if (status) {
    mb__graph_free(g);
    return status;
  }
  *graph_out = g;
  return MB_STATUS_OK;
}

/* Fills `a` from `ap`; on failure `a` may own partial results, which the
 * caller releases with attr_release. */
static mb_status convert_attr_value(reader *r, const Onnx__AttributeProto *ap,
                                    mb_graph *g, int depth, const char *label,
                                    mb_attr *a) {
  mb_arena *arena = r->model->arena;
  char tlabel[340]; /* label plus ", tensor N" */
  mb_status status = MB_STATUS_OK;
  snprintf(tlabel, sizeof tlabel, "%s, tensor", label);
  switch (a->type) {
  case MB_ATTR_UNDEFINED:
    return MB_STATUS_OK; /* a function attribute reference */
  case MB_ATTR_FLOAT:
    a->f = ap->f;
    return MB_STATUS_OK;
  case MB_ATTR_INT:
    a->i = ap->i;
    return MB_STATUS_OK;
  case MB_ATTR_STRING:
    a->s_len = ap->s.len;
    a->s = mb__arena_strndup(arena, (const char *)ap->s.data, ap->s.len);
    return a->s ? MB_STATUS_OK : oom(r);
  case MB_ATTR_TENSOR:
    if (!ap->t)
      return mb__error(r->err, MB_STATUS_PARSE, "%s: tensor is missing", label);
    return mb__tensor_from_proto(ap->t, tlabel, &r->ext, &a->t, r->err);
  case MB_ATTR_SPARSE_TENSOR:
    /* Kept as a dense tensor; the writer turns it back into COO. */
    if (!ap->sparse_tensor)
      return mb__error(r->err, MB_STATUS_PARSE, "%s: tensor is missing", label);
    return sparse_to_dense(r, ap->sparse_tensor, tlabel, &a->t);
  case MB_ATTR_GRAPH:
    status = convert_subgraph(r, ap->g, g, depth, &a->g);
    break;
  case MB_ATTR_TYPE_PROTO: {
    /* The IR has no type model; keep the serialized TypeProto in s/s_len so
     * the writer can restore it unchanged. */
    if (!ap->tp)
      return mb__error(r->err, MB_STATUS_PARSE, "%s: type is missing", label);
    size_t size = onnx__type_proto__get_packed_size(ap->tp);
    char *bytes = mb__arena_alloc(arena, size + 1);
    if (!bytes)
      return oom(r);
    onnx__type_proto__pack(ap->tp, (uint8_t *)bytes);
    a->s = bytes;
    a->s_len = size;
    return MB_STATUS_OK;
  }
  case MB_ATTR_FLOATS:
    a->n = (int64_t)ap->n_floats;
    a->floats = mb__arena_alloc(arena, sizeof(float) * ap->n_floats);
    if (!a->floats)
      return oom(r);
    if (ap->n_floats)
      memcpy(a->floats, ap->floats, sizeof(float) * ap->n_floats);
    return MB_STATUS_OK;
  case MB_ATTR_INTS:
    a->n = (int64_t)ap->n_ints;
    a->ints = mb__arena_alloc(arena, sizeof(int64_t) * ap->n_ints);
    if (!a->ints)
      return oom(r);
    if (ap->n_ints)
      memcpy(a->ints, ap->ints, sizeof(int64_t) * ap->n_ints);
    return MB_STATUS_OK;
  case MB_ATTR_STRINGS:
    a->n = (int64_t)ap->n_strings;
    a->strings = mb__arena_alloc(arena, sizeof(char *) * ap->n_strings);
    if (!a->strings)
      return oom(r);
    for (size_t k = 0; k < ap->n_strings; k++)
      if (!(a->strings[k] = mb__arena_strndup(
                arena, (const char *)ap->strings[k].data, ap->strings[k].len)))
        return oom(r);
    return MB_STATUS_OK;
  case MB_ATTR_TENSORS:
    a->tensors = mb__arena_alloc(arena, sizeof(mb_tensor *) * ap->n_tensors);
    if (!a->tensors)
      return oom(r);
    for (size_t k = 0; k < ap->n_tensors && !status; k++) {
      snprintf(tlabel, sizeof tlabel, "%s, tensor %zu", label, k);
      status = mb__tensor_from_proto(ap->tensors[k], tlabel, &r->ext,
                                     &a->tensors[k], r->err);
      if (!status)
        a->n = (int64_t)k + 1;
    }
    return status;
  case MB_ATTR_GRAPHS:
    a->graphs = mb__arena_alloc(arena, sizeof(mb_graph *) * ap->n_graphs);
    if (!a->graphs)
      return oom(r);
    for (size_t k = 0; k < ap->n_graphs && !status; k++) {
      status = convert_subgraph(r, ap->graphs[k], g, depth, &a->graphs[k]);
      if (!status)
        a->n = (int64_t)k + 1;
    }
    break;
  default:
    /* SPARSE_TENSORS and TYPE_PROTOS: no standard operator uses them. */
    return mb__error(r->err, MB_STATUS_UNSUPPORTED,
                     "%s: attribute type %s is not supported", label,
                     mb__attr_type_name(a->type));
  }
  if (status)
    mb__error_prefix(r->err, status, "%s", label);
  return status;
}

static mb_status convert_attr(reader *r, const Onnx__AttributeProto *ap,
                              mb_graph *g, int node_index, int depth) {
  mb_attr a;
  char node_label[160], label[300];
  const mb_node *node = &g->nodes[node_index];
  mb_status status;
  memset(&a, 0, sizeof a);
  mb__node_label(node, node_label, sizeof node_label);
  if (!ap->name || !ap->name[0])
    return mb__error(r->err, MB_STATUS_PARSE, "%s: attribute without a name",
                     node_label);
  snprintf(label, sizeof label, "%s, attribute '%s'", node_label, ap->name);
  if (mb__node_attr(node, ap->name))
    return mb__error(r->err, MB_STATUS_PARSE, "%s: appears twice", label);
  a.type = ap->has_type &&
                   ap->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED
               ? (mb_attr_type)ap->type
               : infer_attr_type(ap);
  a.name = arena_str(r, ap->name);
  if (!a.name)
    return oom(r);
  if (ap->ref_attr_name && ap->ref_attr_name[0] &&
      !(a.ref_attr_name = arena_str(r, ap->ref_attr_name)))
    return oom(r);
  status = convert_attr_value(r, ap, g, depth, label, &a);
  if (!status)
    status = mb__node_add_attr(g, node_index, &a, r->err);
  if (status)
    attr_release(&a);
  return status;
}

/* ---- graphs ---- */

static mb_status convert_initializers(reader *r, const Onnx__GraphProto *gp,
                                      mb_graph *g) {
  char label[300];
  mb_status status;
  for (size_t i = 0; i < gp->n_initializer; i++) {
    const Onnx__TensorProto *tp = gp->initializer[i];
    mb_tensor *t = NULL;
    if (!tp->name || !tp->name[0])
      return mb__error(r->err, MB_STATUS_PARSE, "initializer %zu has no name",
                       i);
    snprintf(label, sizeof label, "initializer '%s'", tp->name);
    status = mb__tensor_from_proto(tp, label, &r->ext, &t, r->err);
    if (status)
      return status;
    if (mb__graph_add_initializer(g, tp->name, t, r->err) < 0)
      return r->err->status;
  }
  for (size_t i = 0; i < gp->n_sparse_initializer; i++) {
    const Onnx__SparseTensorProto *sp = gp->sparse_initializer[i];
    const char *name = sp->values ? sp->values->name : NULL;
    mb_tensor *t = NULL;
    if (!name || !name[0])
      return mb__error(r->err, MB_STATUS_PARSE,
                       "sparse initializer %zu has no name", i);
    snprintf(label, sizeof label, "sparse initializer '%s'", name);
    status = sparse_to_dense(r, sp, label, &t);
    if (status)
      return status;
    free(t->name);
    t->name = NULL;
    if (mb__graph_add_initializer(g, name, t, r->err) < 0)
      return r->err->status;
  }
  return MB_STATUS_OK;
}

static mb_status convert_io(reader *r, Onnx__ValueInfoProto *const *list,
                            size_t n, bool input, mb_graph *g) {
  const char *what = input ? "graph input" : "graph output";
  for (size_t i = 0; i < n; i++) {
    const Onnx__ValueInfoProto *vi = list[i];
    value_type vt;
    if (!vi->name || !vi->name[0])
      return mb__error(r->err, MB_STATUS_PARSE, "%s %zu has no name", what, i);
    int existing = mb__graph_find_value(g, vi->name);
    /* Inputs with an initializer are constants with a default (IR >= 4) or
     * the usual listing of weights (IR < 4): not fed by the user. */
    if (input && existing >= 0 && g->values[existing].initializer)
      continue;
    if (input && existing >= 0 && g->values[existing].kind == MB_VALUE_INPUT)
      return mb__error(r->err, MB_STATUS_PARSE,
                       "graph input '%s' is listed "
                       "twice",
                       vi->name);
    mb_status status = read_value_type(r, vi, what, &vt);
    if (status)
      return status;
    int idx = input ? mb__graph_add_input(g, vi->name, vt.dtype, vt.rank,
                                          vt.dims, vt.params, r->err)
                    : mb__graph_add_output(g, vi->name, vt.dtype, vt.rank,
                                           vt.dims, vt.params, r->err);
    if (idx < 0)
      return r->err->status;
    g->values[idx].type = vt.type;
    if (vi->doc_string && vi->doc_string[0] &&
        !(g->values[idx].doc = arena_str(r, vi->doc_string)))
      return oom(r);
  }
  return MB_STATUS_OK;
}

static mb_status convert_node(reader *r, const Onnx__NodeProto *np, mb_graph *g,
                              size_t position, int depth) {
  if (!np->op_type || !np->op_type[0])
    return mb__error(r->err, MB_STATUS_PARSE,
                     "node %zu ('%s') has an empty op_type", position,
                     str_or_empty(np->name));
  if (np->n_input > INT32_MAX || np->n_output > INT32_MAX)
    return mb__error(r->err, MB_STATUS_PARSE, "node %zu has too many inputs",
                     position);
  int idx =
      mb__graph_add_node(g, np->op_type, np->domain, np->name, (int)np->n_input,
                         (const char *const *)np->input, (int)np->n_output,
                         (const char *const *)np->output, r->err);
  if (idx < 0)
    return r->err->status;
  if (np->doc_string && np->doc_string[0] &&
      !(g->nodes[idx].doc = arena_str(r, np->doc_string)))
    return oom(r);
  for (size_t i = 0; i < np->n_attribute; i++) {
    mb_status status = convert_attr(r, np->attribute[i], g, idx, depth);
    if (status)
      return status;
  }
  return MB_STATUS_OK;
}

/* value_info declares types of intermediate values. Entries for names no
 * node uses, and non-tensor types, are skipped: they carry nothing we use. */
static mb_status apply_value_info(reader *r, const Onnx__GraphProto *gp,
                                  mb_graph *g) {
  for (size_t i = 0; i < gp->n_value_info; i++) {
    const Onnx__ValueInfoProto *vi = gp->value_info[i];
    value_type vt;
    int idx = mb__graph_find_value(g, vi->name);
    if (idx < 0 || g->values[idx].kind != MB_VALUE_INTERMEDIATE ||
        g->values[idx].is_output)
      continue;
    mb_status status = read_value_type(r, vi, "value_info", &vt);
    if (status == MB_STATUS_UNSUPPORTED) {
      /* Not an error for intermediates: leave them undeclared. */
      memset(r->err, 0, sizeof *r->err);
      continue;
    }
    if (status)
      return status;
    mb_value *v = &g->values[idx];
    v->type = vt.type;
    v->dtype = vt.dtype;
    v->rank = vt.rank;
    for (int d = 0; d < vt.rank; d++) {
      v->dims[d].value = vt.dims[d];
      v->dims[d].param = NULL;
      if (vt.params[d] && !(v->dims[d].param = arena_str(r, vt.params[d])))
        return oom(r);
    }
    if (vi->doc_string && vi->doc_string[0] &&
        !(v->doc = arena_str(r, vi->doc_string)))
      return oom(r);
  }
  return MB_STATUS_OK;
}

static mb_status convert_graph(reader *r, const Onnx__GraphProto *gp,
                               mb_graph *g, int depth) {
  mb_status status;
  g->name = arena_str(r, gp->name);
  g->doc = arena_str(r, gp->doc_string);
  if (!g->name || !g->doc)
    return oom(r);
  /* Initializers first, so inputs that name them are recognised. */
  if ((status = convert_initializers(r, gp, g)) ||
      (status = convert_io(r, gp->input, gp->n_input, true, g)) ||
      (status = convert_io(r, gp->output, gp->n_output, false, g)))
    return status;
  for (size_t i = 0; i < gp->n_node; i++)
    if ((status = convert_node(r, gp->node[i], g, i, depth)))
      return status;
  return apply_value_info(r, gp, g);
}

/* ---- nesting check before protobuf-c sees the bytes ---- */

/* The messages through which ONNX files can nest without bound. */
typedef enum scan_kind {
  SCAN_NONE = 0,
  SCAN_MODEL,
  SCAN_TRAINING,
  SCAN_FUNCTION,
  SCAN_GRAPH,
  SCAN_NODE,
  SCAN_ATTR,
  SCAN_VALUE_INFO,
  SCAN_TYPE,
  SCAN_TYPE_WRAPPER, /* TypeProto.Sequence / .Optional: elem_type = 1 */
  SCAN_TYPE_MAP,     /* TypeProto.Map: value_type = 2 */
} scan_kind;

/* Message-typed fields (onnx.proto numbers) that lead around a cycle. */
static const struct {
  scan_kind parent;
  uint32_t field;
  scan_kind child;
} k_nested_fields[] = {
    {SCAN_MODEL, 7, SCAN_GRAPH},       {SCAN_MODEL, 20, SCAN_TRAINING},
    {SCAN_MODEL, 25, SCAN_FUNCTION},   {SCAN_TRAINING, 1, SCAN_GRAPH},
    {SCAN_TRAINING, 2, SCAN_GRAPH},    {SCAN_FUNCTION, 7, SCAN_NODE},
    {SCAN_GRAPH, 1, SCAN_NODE},        {SCAN_GRAPH, 11, SCAN_VALUE_INFO},
    {SCAN_GRAPH, 12, SCAN_VALUE_INFO}, {SCAN_GRAPH, 13, SCAN_VALUE_INFO},
    {SCAN_NODE, 5, SCAN_ATTR},         {SCAN_ATTR, 6, SCAN_GRAPH},
    {SCAN_ATTR, 11, SCAN_GRAPH},       {SCAN_ATTR, 14, SCAN_TYPE},
    {SCAN_ATTR, 15, SCAN_TYPE},        {SCAN_VALUE_INFO, 2, SCAN_TYPE},
    {SCAN_TYPE, 4, SCAN_TYPE_WRAPPER}, {SCAN_TYPE, 5, SCAN_TYPE_MAP},
    {SCAN_TYPE, 9, SCAN_TYPE_WRAPPER}, {SCAN_TYPE_WRAPPER, 1, SCAN_TYPE},
    {SCAN_TYPE_MAP, 2, SCAN_TYPE},
};

static scan_kind nested_child(scan_kind parent, uint64_t field) {
  for (size_t i = 0; i < MB_ARRAY_COUNT(k_nested_fields); i++)
    if (k_nested_fields[i].parent == parent &&
        k_nested_fields[i].field == field)
      return k_nested_fields[i].child;
  return SCAN_NONE;
}

typedef enum nesting {
  NESTING_OK = 0,
  NESTING_GRAPHS_TOO_DEEP, /* more than MB_ONNX_MAX_GRAPH_DEPTH subgraphs */
  NESTING_TOO_DEEP,        /* more than MB_ONNX_MAX_NESTING messages */
} nesting;

/* Checks how deep messages nest. Malformed bytes end the scan with
 * NESTING_OK: reporting them is protobuf-c's job. Only the fields above are
 * entered, so tensor payloads are skipped unread. */
static nesting check_nesting(const uint8_t *p, const uint8_t *end,
                             scan_kind kind, int depth, int graph_depth) {
  if (kind == SCAN_GRAPH && ++graph_depth > MB_ONNX_MAX_GRAPH_DEPTH + 1)
    return NESTING_GRAPHS_TOO_DEEP;
  if (depth > MB_ONNX_MAX_NESTING)
    return NESTING_TOO_DEEP;
  while (p < end) {
    uint64_t key, value;
    if (!mb__pb_read_varint(&p, end, &key))
      return NESTING_OK;
    switch (key & 7) {
    case 0:
      if (!mb__pb_read_varint(&p, end, &value))
        return NESTING_OK;
      break;
    case 1:
    case 5: {
      size_t skip = (key & 7) == 1 ? 8 : 4;
      if ((size_t)(end - p) < skip)
        return NESTING_OK;
      p += skip;
      break;
    }
    case 2: {
      if (!mb__pb_read_varint(&p, end, &value) || value > (uint64_t)(end - p))
        return NESTING_OK;
      scan_kind child = nested_child(kind, key >> 3);
      nesting n =
          child ? check_nesting(p, p + value, child, depth + 1, graph_depth)
                : NESTING_OK;
      if (n)
        return n;
      p += value;
      break;
    }
    default:
      return NESTING_OK;
    }
  }
  return NESTING_OK;
}

/* ---- model ---- */

static mb_status convert_model(reader *r, const Onnx__ModelProto *mp) {
  mb_model *m = r->model;
  mb_status status;
  if (mp->has_ir_version)
    m->ir_version = mp->ir_version;
  m->model_version = mp->has_model_version ? mp->model_version : 0;
  m->producer_name = arena_str(r, mp->producer_name);
  m->producer_version = arena_str(r, mp->producer_version);
  m->domain = arena_str(r, mp->domain);
  m->doc = arena_str(r, mp->doc_string);
  if (!m->producer_name || !m->producer_version || !m->domain || !m->doc)
    return oom(r);
  for (size_t i = 0; i < mp->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto *op = mp->opset_import[i];
    status = mb__model_set_opset(m, op->domain,
                                 op->has_version ? op->version : 0, r->err);
    if (status)
      return status;
  }
  /* Before IR version 3 there were no opset imports: opset 1 is implied. */
  if (mp->n_opset_import == 0 &&
      (status = mb__model_set_opset(m, "", 1, r->err)))
    return status;
  if (mp->n_metadata_props) {
    m->metadata = mb__arena_alloc(m->arena, sizeof(mb_metadata_prop) *
                                                mp->n_metadata_props);
    if (!m->metadata)
      return oom(r);
    for (size_t i = 0; i < mp->n_metadata_props; i++) {
      mb_metadata_prop *p = &m->metadata[m->n_metadata++];
      p->key = arena_str(r, mp->metadata_props[i]->key);
      p->value = arena_str(r, mp->metadata_props[i]->value);
      if (!p->key || !p->value)
        return oom(r);
    }
  }
  if (mp->n_functions)
    mb__log(MB_LOG_INFO,
            "model has %zu local functions; they are not kept (nodes that "
            "call them are reported as unsupported operators)",
            mp->n_functions);
  status = convert_graph(r, mp->graph, m->graph, 0);
  if (status)
    return status;
  return mb__graph_finalize(m->graph, r->err);
}

/* Parses and converts `bytes`; label names the source in messages. */
static mb_status load_bytes(const void *bytes, size_t size,
                            const char *base_dir, const char *label,
                            const char *path, mb_model **model_out,
                            mb_error *err) {
  /* A local record, so statuses are right even when the caller passes no
   * err; copied out at the end. */
  mb_error local;
  reader r = {.err = &local};
  Onnx__ModelProto *mp = NULL;
  mb_sha256 sha;
  uint8_t digest[32];
  mb_status status;

  memset(&local, 0, sizeof local);
  if (size == 0)
    return mb__error(err, MB_STATUS_PARSE,
                     "%s: not a valid ONNX model (empty file)", label);
  switch (
      check_nesting(bytes, (const uint8_t *)bytes + size, SCAN_MODEL, 0, 0)) {
  case NESTING_OK:
    break;
  case NESTING_GRAPHS_TOO_DEEP:
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "%s: subgraphs are nested more than %d deep", label,
                     MB_ONNX_MAX_GRAPH_DEPTH);
  case NESTING_TOO_DEEP:
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "%s: types or graphs are nested more than %d messages "
                     "deep",
                     label, MB_ONNX_MAX_NESTING);
  }
  mp = onnx__model_proto__unpack(NULL, size, bytes);
  if (!mp) {
    /* Files people pass by mistake: say what they are. */
    const unsigned char *b = bytes;
    const char *what = size >= 4 && memcmp(b, "PK\x03\x04", 4) == 0
                           ? " (it is a zip archive: a TorchScript file? "
                             "`bench` runs those under TORCHSCRIPT)"
                       : size >= 1 && b[0] == '{'
                           ? " (it is JSON: a model manifest? `bench` reads "
                             "those, docs/model-manifest.md)"
                           : "";
    return mb__error(err, MB_STATUS_PARSE,
                     "%s: not a valid ONNX model (protobuf parse failed)%s",
                     label, what);
  }
  if (!mp->graph) {
    status = mb__error(&local, MB_STATUS_PARSE,
                       "%s: not a valid ONNX model (no graph)", label);
    goto done;
  }
  r.model = mb__model_create();
  if (!r.model) {
    status =
        mb__error(&local, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory", label);
    goto done;
  }
  mb__sha256_init(&sha);
  mb__sha256_update(&sha, bytes, size);
  r.ext.base_dir = base_dir;
  r.ext.hash = &sha;
  if ((path && !(r.model->path = mb__arena_strdup(r.model->arena, path))) ||
      (base_dir &&
       !(r.model->base_dir = mb__arena_strdup(r.model->arena, base_dir)))) {
    status =
        mb__error(&local, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory", label);
    goto done;
  }
  status = convert_model(&r, mp);
  if (status) {
    if (local.status == MB_STATUS_OK)
      local.status = status;
    mb__error_prefix(&local, status, "%s", label);
    goto done;
  }
  if (r.ext.n_files > 0 &&
      !(r.model->external_files = mb__arena_alloc(
            r.model->arena, sizeof(char *) * (size_t)r.ext.n_files))) {
    status =
        mb__error(&local, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory", label);
    goto done;
  }
  for (int i = 0; i < r.ext.n_files; i++)
    if (!(r.model->external_files[r.model->n_external_files++] =
              mb__arena_strdup(r.model->arena, r.ext.files[i].location))) {
      status = mb__error(&local, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory",
                         label);
      goto done;
    }
  mb__sha256_final(&sha, digest);
  mb__sha256_hex(digest, r.model->sha256_hex);
  *model_out = r.model;
  r.model = NULL;
done:
  if (status && err)
    *err = local;
  mb__external_data_close(&r.ext);
  mb_model_free(r.model);
  onnx__model_proto__free_unpacked(mp, NULL);
  return status;
}

mb_status mb_model_load_memory(const void *bytes, size_t size,
                               const char *base_dir, mb_model **model_out,
                               mb_error *err) {
  if ((!bytes && size) || !model_out)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "mb_model_load_memory: bytes and model_out are required");
  return load_bytes(bytes, size, base_dir, "(memory)", NULL, model_out, err);
}

mb_status mb_model_load(const char *path, mb_model **model_out, mb_error *err) {
  struct stat st;
  void *map = NULL;
  char *dir = NULL;
  int fd;
  mb_status status;
  if (!path || !model_out)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "mb_model_load: path and model_out are required");
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return mb__error(err, MB_STATUS_IO, "%s: %s", path, strerror(errno));
  if (fstat(fd, &st) != 0) {
    status = mb__error(err, MB_STATUS_IO, "%s: %s", path, strerror(errno));
    goto done;
  }
  if (S_ISDIR(st.st_mode)) {
    status =
        mb__error(err, MB_STATUS_IO, "%s: is a directory, not a model", path);
    goto done;
  }
  if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > SIZE_MAX) {
    status = mb__error(err, MB_STATUS_IO, "%s: not a regular file", path);
    goto done;
  }
  dir = mb__path_dirname(path);
  if (!dir) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    goto done;
  }
  if (st.st_size > 0) {
    /* Mapped: models can be gigabytes, and protobuf-c copies what it keeps. */
    map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      map = NULL;
      status = mb__error(err, MB_STATUS_IO, "%s: cannot map: %s", path,
                         strerror(errno));
      goto done;
    }
  }
  status = load_bytes(map, (size_t)st.st_size, dir, path, path, model_out, err);
done:
  if (map)
    munmap(map, (size_t)st.st_size);
  free(dir);
  close(fd);
  return status;
}

void mb_model_free(mb_model *model) {
  if (!model)
    return;
  mb__graph_free(model->graph);
  mb__arena_free(model->arena);
  free(model);
}

/* ---- graph input / output queries ---- */

int mb_model_input_count(const mb_model *model) {
  return model ? model->graph->n_inputs : 0;
}

int mb_model_output_count(const mb_model *model) {
  return model ? model->graph->n_outputs : 0;
}

static mb_status value_info_of(const mb_model *model, int index, bool input,
                               mb_value_info *info_out, mb_error *err) {
  const mb_graph *g = model ? model->graph : NULL;
  int n = !g ? 0 : input ? g->n_inputs : g->n_outputs;
  if (!info_out || index < 0 || index >= n)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "%s index %d is out of range (the model has %d)",
                     input ? "input" : "output", index, n);
  const mb_value *v = &g->values[input ? g->inputs[index] : g->outputs[index]];
  mb_value_info info;
  memset(&info, 0, sizeof info);
  info.name = v->name;
  info.dtype = v->dtype;
  info.rank = v->rank;
  for (int i = 0; i < v->rank && i < MB_MAX_RANK; i++) {
    info.dims[i] = v->dims[i].value;
    info.dim_params[i] = v->dims[i].param;
  }
  *info_out = info;
  return MB_STATUS_OK;
}

mb_status mb_model_input_info(const mb_model *model, int index,
                              mb_value_info *info_out, mb_error *err) {
  return value_info_of(model, index, true, info_out, err);
}

mb_status mb_model_output_info(const mb_model *model, int index,
                               mb_value_info *info_out, mb_error *err) {
  return value_info_of(model, index, false, info_out, err);
}
