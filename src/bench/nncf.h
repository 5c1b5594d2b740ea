/* NNCF, the quantiser of INT8_STATIC+OPENVINO (the conversion step
 * `quantize_nncf`, build.c).
 *
 * NNCF is Python: the build writes the model and the calibration batches
 * every int8 conversion calibrates on to a temporary folder, runs
 * python/modelbench/nncf_quantize.py with the Python that has NNCF (the
 * project's virtual environment, scripts/python-venv.sh) and reads back the
 * QDQ model it writes. Where that Python or NNCF is missing, the step falls
 * back to modelbench's own calibration (quantize_static) and says so in the
 * build summary: the conversion still runs.
 *
 * Where they are found (the first that exists):
 *   Python  $MODELBENCH_NNCF_PYTHON, else the venv's python3 this build
 *           was configured with (MB_NNCF_PYTHON)
 *   script  $MODELBENCH_NNCF_SCRIPT, else the source tree's, else the
 *           installed package's
 *   NNCF    nncf-<version>.dist-info in that Python's site-packages (read,
 *           not imported: finding it costs no Python start)
 */
#ifndef MB_BENCH_NNCF_H
#define MB_BENCH_NNCF_H

#include "core/internal.h"

#include <limits.h>

typedef struct mb_nncf_tool {
  char python[PATH_MAX];
  char script[PATH_MAX];
  char version[32]; /* NNCF's, from its dist-info folder */
} mb_nncf_tool;

/* Finds NNCF: true with *tool filled, else false with why (one sentence)
 * in reason. */
bool mb__nncf_find(mb_nncf_tool *tool, char *reason, size_t size);

/* Quantises *model with NNCF on the calibration batches (n_batches x the
 * model's inputs, in input order) and replaces *model with the result (the
 * old one is freed; on failure *model is untouched). weights: the int8
 * form, MB_INT8_WEIGHTS_W7 (NNCF's overflow fix on every layer) or W8 (no
 * overflow fix); NNCF has no mixed form. ignored: n_ignored node names NNCF
 * leaves in float (its ignored scope: --keep-float), borrowed. timeout_s
 * bounds the Python run (<= 0: none). *quantize_nodes: QuantizeLinear
 * nodes NNCF placed. Fails with NNCF's own message. */
mb_status mb__nncf_quantize(const mb_nncf_tool *tool, mb_model **model,
                            const mb_tensor *const *const *batches,
                            int n_batches, mb_int8_weights weights,
                            const char *const *ignored, int n_ignored,
                            double timeout_s, int *quantize_nodes,
                            mb_error *err);

#endif /* MB_BENCH_NNCF_H */
