/* Where one conversion's time goes compared with another's, from two
 * profiles (mb_profile: per segment and per node): `modelbench explain`.
 * Pure functions of the profiles, so the CLI can feed them from two
 * profiling passes or from two saved `profile --json` files, and the tests
 * from hand-made profiles.
 *
 * Every profile entry is mapped to an ONNX op type where it can be (ORT's
 * kernels such as FusedConv or QLinearConv are Conv; oneDNN primitives
 * carry the op of the nodes they run), work the runtime or the quantisation
 * inserted (reorder, quantize, dequantize, copy) gets rows of its own,
 * engine segments without per-node times a row per runtime, and what no
 * entry covers (total minus attributed) the "runtime overhead" row: the
 * rows of each side sum to its total, so their differences sum to the
 * total difference. */
#ifndef MB_REPORT_EXPLAIN_H
#define MB_REPORT_EXPLAIN_H

#include "core/internal.h"
#include "core/json_write.h"

/* X(NAME, "name in JSON") */
#define MB_EXPLAIN_KIND_LIST(X)                                                \
  X(OP, "op")             /* an ONNX op type */                                \
  X(INSERTED, "inserted") /* reorder, quantize, dequantize, copy */            \
  X(SEGMENT, "segment")   /* engine segments timed as a whole */               \
  X(OVERHEAD, "overhead") /* the total minus every other row */

typedef enum mb_explain_kind {
#define MB_X(name, str) MB_EXPLAIN_##name,
  MB_EXPLAIN_KIND_LIST(MB_X)
#undef MB_X
      MB_EXPLAIN_KIND_COUNT
} mb_explain_kind;

const char *mb__explain_kind_name(mb_explain_kind kind);

typedef struct mb_explain_row {
  char op_type[64]; /* "Conv", "reorder", "xnnpack segments", ... */
  mb_explain_kind kind;
  double ms[2];   /* per inference, side A and side B */
  int entries[2]; /* profile entries (nodes, primitives, events) summed */
  /* Of ms: time on the reference interpreter inside a hybrid conversion
   * (nodes the engine did not take). */
  double fallback_ms[2];
  double difference_ms; /* ms[1] - ms[0] */
  double share;         /* difference_ms over the total difference */
  /* The runtime-specific names folded into op_type ("FusedConv"), comma
   * separated; "" when none. */
  char variants[128];
} mb_explain_row;

typedef struct mb_explain_side {
  char conversion[64];
  double total_ms;     /* per inference, whole model */
  double fallback_ms;  /* on the reference inside a hybrid conversion */
  double inserted_ms;  /* rows of kind INSERTED */
  double overhead_ms;  /* the OVERHEAD row */
  int segments;        /* as the profile lists them */
  int engine_segments; /* of segments: not on the reference */
  int reference_segments;
  bool hybrid;     /* engine and reference segments both present */
  char engine[32]; /* the first runtime other than the reference, or "" */
  char note[256];  /* the profile's note */
} mb_explain_side;

/* One ONNX node matched by name across the two profiles (oneDNN names a
 * fused group by its first node, ORT by its own node names, so a node of
 * one side may have no counterpart: its time there is 0). Entries without
 * a name (inserted steps) are left out. */
typedef struct mb_explain_node {
  char name[128];
  char op_type[64]; /* as in the rows */
  double ms[2];
  double difference_ms; /* ms[1] - ms[0] */
} mb_explain_node;

typedef struct mb_explain {
  mb_explain_side side[2]; /* A, B */
  double speedup;          /* A's total over B's: > 1 when B is faster */
  double difference_ms;    /* B's total minus A's */
  int n_rows;
  mb_explain_row *rows; /* by share of the difference, largest first */
  int n_nodes;
  mb_explain_node *nodes; /* largest absolute difference first */
  char verdict[640];      /* one line: ratio, main contributor, fallback */
} mb_explain;

/* Compares profile b with profile a (both borrowed; their totals must be
 * positive). Fills *out (release with mb__explain_clear). Fails with
 * MB_STATUS_INVALID_ARGUMENT naming the profile whose total is not
 * positive, or MB_STATUS_OUT_OF_MEMORY. */
mb_status mb__explain_profiles(const mb_profile *a, const mb_profile *b,
                               mb_explain *out, mb_error *err);
void mb__explain_clear(mb_explain *e);

/* The verdict line, the sides, the table per op type with a total row,
 * the fallbacks, inserted work and segment boundaries, then the top_nodes
 * nodes whose times differ most (0: all). out: a FILE*. model: printed
 * when not NULL. */
void mb__explain_print(const mb_explain *e, const char *model, int top_nodes,
                       void *out);
/* The same as one JSON object (docs/json-schema.md, "explain"). model may
 * be NULL (written as null). */
void mb__explain_write_json(const mb_explain *e, const char *model, mb_json *j);

/* Reads a profile written by `modelbench profile --json` back. path:
 * borrowed. *profile_out: release with mb_profile_free. model: receives
 * the JSON's "model" ("" when absent), may be NULL. Fails with
 * MB_STATUS_IO or MB_STATUS_PARSE naming the file and the field at fault. */
mb_status mb__profile_load_json(const char *path, mb_profile **profile_out,
                                char *model, size_t model_size, mb_error *err);

#endif /* MB_REPORT_EXPLAIN_H */
