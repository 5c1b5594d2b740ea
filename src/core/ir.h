/* modelbench's graph IR. The ONNX reader converts a ModelProto into this
 * once; everything above (interpreter, passes, runtimes, writer) works on it
 * and never on protobuf structs.
 *
 * Memory: a graph owns its node and value arrays (malloc, grown by the
 * builder functions) and its initializer tensors; names, attributes and
 * other metadata live in the model's arena and are freed with the model.
 * Values are referred to by index, so growing the arrays never invalidates
 * a reference held as an index (pointers into the arrays may move). */
#ifndef MB_CORE_IR_H
#define MB_CORE_IR_H

#include "core/internal.h"

/* X(NAME, onnx_id) for AttributeProto.AttributeType */
#define MB_ATTR_TYPE_LIST(X)                                                   \
  X(UNDEFINED, 0)                                                              \
  X(FLOAT, 1)                                                                  \
  X(INT, 2)                                                                    \
  X(STRING, 3)                                                                 \
  X(TENSOR, 4)                                                                 \
  X(GRAPH, 5)                                                                  \
  X(SPARSE_TENSOR, 11)                                                         \
  X(TYPE_PROTO, 13)                                                            \
  X(FLOATS, 6)                                                                 \
  X(INTS, 7)                                                                   \
  X(STRINGS, 8)                                                                \
  X(TENSORS, 9)                                                                \
  X(GRAPHS, 10)                                                                \
  X(SPARSE_TENSORS, 12)                                                        \
  X(TYPE_PROTOS, 14)

typedef enum mb_attr_type {
#define MB_X(name, id) MB_ATTR_##name = id,
  MB_ATTR_TYPE_LIST(MB_X)
#undef MB_X
} mb_attr_type;
const char *mb__attr_type_name(mb_attr_type type);

struct mb_graph;

typedef struct mb_attr {
  const char *name;
  mb_attr_type type;
  float f;
  int64_t i;
  const char *s; /* bytes, NUL-terminated for convenience; length in s_len */
  size_t s_len;
  mb_tensor *t;              /* owned by the attribute (freed with the model) */
  struct mb_graph *g;        /* owned */
  int64_t n;                 /* element count of the list below */
  float *floats;             /* arena */
  int64_t *ints;             /* arena */
  const char **strings;      /* arena */
  mb_tensor **tensors;       /* each owned */
  struct mb_graph **graphs;  /* each owned */
  const char *ref_attr_name; /* function attribute reference, or NULL */
} mb_attr;

/* One dimension of a value's static shape. */
typedef struct mb_dim {
  int64_t value;     /* >= 0 known; -1 unknown */
  const char *param; /* symbolic name (arena) or NULL */
} mb_dim;

typedef enum mb_value_kind {
  MB_VALUE_INTERMEDIATE = 0,
  MB_VALUE_INPUT,       /* graph input fed by the user */
  MB_VALUE_INITIALIZER, /* constant tensor (may also be a graph input) */
} mb_value_kind;

/* What a value holds (its ONNX TypeProto). Most values are tensors; a
 * sequence holds any number of tensors of one element type, an optional
 * holds one tensor or sequence, or nothing. dtype, rank and dims of an
 * mb_value describe the tensor, or the (element) tensors of the others. */
typedef enum mb_value_type {
  MB_VALUE_TYPE_TENSOR = 0,
  MB_VALUE_TYPE_SEQUENCE,
  MB_VALUE_TYPE_OPTIONAL_TENSOR,
  MB_VALUE_TYPE_OPTIONAL_SEQUENCE,
} mb_value_type;

typedef struct mb_value {
  const char *name; /* arena; unique within the graph; "" never used */
  mb_value_kind kind;
  mb_value_type type; /* TENSOR unless declared otherwise */
  mb_dtype dtype;     /* UNDEFINED when not declared */
  int rank;           /* -1 when the shape is not declared */
  mb_dim dims[MB_MAX_RANK];
  mb_tensor *initializer; /* owned; data of an initializer, else NULL */
  int producer;           /* node index or -1 */
  int is_output;          /* listed in graph outputs */
  const char *doc;        /* arena or NULL */
} mb_value;

typedef struct mb_node {
  const char *name;    /* arena; may be "" */
  const char *op_type; /* arena */
  const char *domain;  /* arena; "" for the default ai.onnx domain */
  int n_inputs;
  int *inputs; /* arena; value index, -1 for an omitted optional input */
  int n_outputs;
  int *outputs; /* arena; value index, -1 for an omitted optional output */
  int n_attrs;
  mb_attr *attrs; /* arena */
  const char *doc;
} mb_node;

typedef struct mb_graph {
  const char *name;
  const char *doc;
  int n_nodes, cap_nodes;
  mb_node *nodes; /* malloc; topologically sorted after load */
  int n_values, cap_values;
  mb_value *values; /* malloc */
  int n_inputs;
  int *inputs; /* malloc; value indices of graph inputs, in order (includes
                  initializers only when the model lists them as inputs and
                  they have no initializer: see mb__graph_user_inputs) */
  int n_outputs;
  int *outputs; /* malloc; value indices of graph outputs, in order */
  /* name -> value index hash (open addressing), malloc */
  int *hash;
  int hash_cap;
  struct mb_model *model;  /* owner, for the arena */
  struct mb_graph *parent; /* enclosing graph for subgraphs, else NULL */
} mb_graph;

typedef struct mb_opset {
  const char *domain; /* "" for ai.onnx */
  int64_t version;
} mb_opset;

typedef struct mb_metadata_prop {
  const char *key, *value;
} mb_metadata_prop;

struct mb_model {
  mb_arena *arena;
  int64_t ir_version;
  const char *producer_name, *producer_version, *domain, *doc;
  int64_t model_version;
  int n_opsets;
  mb_opset *opsets; /* arena */
  int n_metadata;
  mb_metadata_prop *metadata; /* arena */
  mb_graph *graph;            /* owned */
  char sha256_hex[65];
  const char *path;     /* arena, may be NULL (loaded from memory) */
  const char *base_dir; /* arena, where external data is resolved */
  /* The external data files it was read from, relative to base_dir, in
   * the order first referenced (arena); what must travel with the model
   * to another machine. */
  int n_external_files;
  const char **external_files;
};

/* ---- construction (used by the reader, the model generator and passes) */
mb_model *mb__model_create(void); /* NULL on OOM; has an empty graph */
/* Sets (or adds) the opset version for a domain. */
mb_status mb__model_set_opset(mb_model *m, const char *domain, int64_t version,
                              mb_error *err);
/* The model's opset version for `domain` ("" or "ai.onnx" mean the default
 * domain), or 0 when not imported. */
int64_t mb__model_opset(const mb_model *m, const char *domain);

mb_graph *mb__graph_create(mb_model *m, mb_graph *parent); /* NULL on OOM */
void mb__graph_free(mb_graph *g);

/* Index of the value named `name`, or -1. */
int mb__graph_find_value(const mb_graph *g, const char *name);
/* Index of the value named `name`, creating an intermediate value when it
 * does not exist. Returns -1 on OOM (err set). */
int mb__graph_value(mb_graph *g, const char *name, mb_error *err);
/* Adds a constant: creates (or reuses) value `name` as an initializer that
 * takes ownership of `tensor` (also on failure). Returns index or -1. */
int mb__graph_add_initializer(mb_graph *g, const char *name, mb_tensor *tensor,
                              mb_error *err);
/* Declares a graph input / output with dtype and shape (dims may be NULL
 * when rank < 0; dim value < 0 with params[i] for symbolic). */
int mb__graph_add_input(mb_graph *g, const char *name, mb_dtype dtype, int rank,
                        const int64_t *dims, const char *const *params,
                        mb_error *err);
int mb__graph_add_output(mb_graph *g, const char *name, mb_dtype dtype,
                         int rank, const int64_t *dims,
                         const char *const *params, mb_error *err);
/* Appends a node. inputs/outputs: names, "" or NULL for omitted optional
 * ones; values are created as needed. Returns the node index or -1. */
int mb__graph_add_node(mb_graph *g, const char *op_type, const char *domain,
                       const char *name, int n_inputs,
                       const char *const *inputs, int n_outputs,
                       const char *const *outputs, mb_error *err);
/* Attribute setters on node `node_index` (copies everything). */
mb_status mb__node_set_int(mb_graph *g, int node_index, const char *name,
                           int64_t v, mb_error *err);
mb_status mb__node_set_float(mb_graph *g, int node_index, const char *name,
                             float v, mb_error *err);
mb_status mb__node_set_string(mb_graph *g, int node_index, const char *name,
                              const char *v, mb_error *err);
mb_status mb__node_set_ints(mb_graph *g, int node_index, const char *name,
                            int n, const int64_t *v, mb_error *err);
mb_status mb__node_set_floats(mb_graph *g, int node_index, const char *name,
                              int n, const float *v, mb_error *err);
/* Takes ownership of tensor (also on failure). */
mb_status mb__node_set_tensor(mb_graph *g, int node_index, const char *name,
                              mb_tensor *tensor, mb_error *err);
/* Appends a pre-built attribute (its pointers must already belong to the
 * model's arena / be owned as documented in mb_attr). */
mb_status mb__node_add_attr(mb_graph *g, int node_index, const mb_attr *attr,
                            mb_error *err);

/* Sorts nodes topologically and sets value producers. Fails with
 * MB_STATUS_PARSE naming the node when an input is never produced (and is
 * not a graph input, initializer or outer-scope value) or on a cycle. */
mb_status mb__graph_finalize(mb_graph *g, mb_error *err);

/* ---- queries ---- */
const mb_attr *mb__node_attr(const mb_node *n, const char *name);
/* Attribute getters with defaults; type mismatches return the default. */
int64_t mb__node_attr_int(const mb_node *n, const char *name, int64_t def);
float mb__node_attr_float(const mb_node *n, const char *name, float def);
const char *mb__node_attr_string(const mb_node *n, const char *name,
                                 const char *def);
/* Returns the list length (or -1 when absent) and sets *values_out. */
int64_t mb__node_attr_ints(const mb_node *n, const char *name,
                           const int64_t **values_out);
int64_t mb__node_attr_floats(const mb_node *n, const char *name,
                             const float **values_out);
/* "Conv 'conv1'" style label for messages, into buf. */
const char *mb__node_label(const mb_node *n, char *buf, size_t size);

/* Total number of parameters / bytes of initializers (recursing into
 * subgraphs). */
void mb__graph_param_stats(const mb_graph *g, int64_t *count_out,
                           int64_t *bytes_out);

#endif /* MB_CORE_IR_H */
