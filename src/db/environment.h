/* Two runs' environments side by side: what besides the code may explain a
 * change of speed (`modelbench compare`).
 *
 * A run's environment is its report's "environment" object
 * (docs/json-schema.md) flattened into entries: each fact under its key
 * ("governor", "smt", "kernel", "threads", "isa" with its words joined by
 * spaces), nested objects under "parent.child" ("libraries.onnxruntime"),
 * and each member of "variables" under its own name ("OMP_WAIT_POLICY").
 * A variable absent from one run was unset there and differs from any
 * value; a fact absent (or null) from one run was not recorded there (a
 * runtime that run did not use, an older report) and is not compared. */
#ifndef MB_DB_ENVIRONMENT_H
#define MB_DB_ENVIRONMENT_H

#include "core/internal.h"
#include "core/json_parse.h"

typedef struct mb_env_entry {
  const char *key;   /* "governor", "libraries.openblas", "OMP_NUM_THREADS" */
  const char *value; /* as recorded, never NULL */
  bool variable;     /* an environment variable: absent means unset */
} mb_env_entry;

typedef struct mb_env_difference {
  const char *key; /* borrowed from the entries */
  const char *a;   /* NULL: unset in A (variables only) */
  const char *b;   /* NULL: unset in B */
  bool variable;
} mb_env_difference;

/* Flattens an "environment" object into entries whose strings live in
 * arena. obj: borrowed; source names the document in errors (a value that
 * is neither a string, number, boolean, array of strings nor object fails
 * with MB_STATUS_PARSE naming its key). *entries_out: in arena. */
mb_status mb__environment_from_json(mb_arena *arena, const mb_json_value *obj,
                                    const char *source,
                                    mb_env_entry **entries_out, int *n_out,
                                    mb_error *err);

/* The entries that differ between A and B: variables first (by name, set
 * on either side), then facts recorded on both sides, in A's order. a, b:
 * borrowed, and the differences point into them. *out: malloc'd (NULL
 * when there is none), free() it. */
mb_status mb__environment_diff(const mb_env_entry *a, int na,
                               const mb_env_entry *b, int nb,
                               mb_env_difference **out, int *n_out,
                               mb_error *err);

#endif /* MB_DB_ENVIRONMENT_H */
