/* What the files of `modelbench tune` share (tune.c: the search;
 * tune_estimate.c: per-node sensitivity on the reference interpreter;
 * tune_log.c: the search log). Private to src/bench/. */
#ifndef MB_BENCH_TUNE_INTERNAL_H
#define MB_BENCH_TUNE_INTERNAL_H

#include "bench/bench.h"
#include "bench/bench_internal.h"

/* The int8 model of one quantisation form (static or dynamic, its int8
 * weights), made again cheaply for any set of nodes kept in float: the
 * float model is optimised and (static) calibrated once, as bench's build
 * does, and each estimate quantises a copy and runs it on the reference
 * interpreter over the evaluation samples, against the float model's
 * outputs. An estimate, not the engine's accuracy: the engines' own int8
 * kernels round and saturate differently, which is why tune measures the
 * configuration it settles on on its engine. */
typedef struct mb_tune_estimator mb_tune_estimator;

/* model_path, config: borrowed, must outlive the estimator (config's
 * inputs, calibration, seed and threads are used). def: the int8
 * conversion whose form is estimated. */
mb_status mb__tune_estimator_open(const char *model_path,
                                  const mb_bench_config *config,
                                  const mb_conversion_def *def,
                                  mb_tune_estimator **out, mb_error *err);
void mb__tune_estimator_close(mb_tune_estimator *est);
/* Whether est estimates the form def quantises to (the same steps kind and
 * int8 weights). */
bool mb__tune_estimator_matches(const mb_tune_estimator *est,
                                const mb_conversion_def *def,
                                mb_int8_weights weights);
/* The quantisable nodes (Conv, MatMul, Gemm with a name), in graph order,
 * and their FLOPs (< 0 unknown). */
int mb__tune_estimator_groups(const mb_tune_estimator *est);
const char *mb__tune_estimator_group(const mb_tune_estimator *est, int i);
/* The share of the model's FLOPs the quantisable nodes not in keep hold
 * (what runs in int8), 0..1; < 0 when the FLOPs are unknown. */
double mb__tune_estimator_int8_share(const mb_tune_estimator *est, int n_keep,
                                     const char *const *keep);
/* The int8 model with the nodes of keep in float: max over outputs and
 * the first max_samples evaluation samples (all of them when <= 0) of 1 -
 * cosine against the float model, and the min cosine. */
mb_status mb__tune_estimate(mb_tune_estimator *est, int max_samples, int n_keep,
                            const char *const *keep, double *error_out,
                            double *cosine_out, mb_error *err);
/* Keeps the all-int8 model's values on the first n_samples evaluation
 * samples (at most 1 GiB; past it, nothing), so that later estimates on at
 * most that many samples run only the nodes their kept set changes and
 * what depends on them: the same results, a fraction of the work. */
mb_status mb__tune_estimator_cache(mb_tune_estimator *est, int n_samples,
                                   mb_error *err);
/* Off: every estimate runs its whole model (the kept values dropped). */
void mb__tune_estimator_set_reuse(mb_tune_estimator *est, bool on);
/* The nodes the last estimate ran; *nodes_out: its model's count. */
int mb__tune_estimator_last_run(const mb_tune_estimator *est, int *nodes_out);
/* How many evaluation samples the estimator holds. */
int mb__tune_estimator_samples(const mb_tune_estimator *est);

/* ---- the winner as a model (tune_artifact.c) ---- */

typedef struct mb_tune_artifact_args {
  const char *model_path;        /* the tuned model */
  const mb_bench_config *config; /* inputs and calibration, as measured */
  const mb_tune_result *result;  /* with a winner */
  /* The quantisable nodes the winner's int8 form has (its estimator's
   * groups); NULL: the model's Conv/MatMul/Gemm nodes. */
  int n_groups;
  const char *const *groups;
  const char *out_path;
} mb_tune_artifact_args;

/* Writes the winner's model to a->out_path atomically: what `modelbench
 * convert -c WINNER --keep-float KEPT` writes with a->config, plus the
 * metadata entry MB_TUNE_METADATA_KEY (bench/bench.h). Errors name the
 * path. */
mb_status mb__tune_write_artifact(const mb_tune_artifact_args *a,
                                  mb_error *err);

#endif
