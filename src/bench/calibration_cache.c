/* Calibrations kept across builds. A static int8 build's calibration (the
 * float model run on the reference interpreter over the calibration
 * batches, mb__calibrate) is most of its cost: 7 s of ResNet-18's 7.5 s
 * build on a 2-core EPYC, once for each of INT8_STATIC+ORT_CPU, +XNNPACK
 * and +ONEDNN, again for every --keep-float variant tune measures and for
 * tune's estimator, though all of them calibrate the same optimised model
 * on the same batches. The ranges are kept under
 * <cache>/calibration/<key>.json (mb__quant_params_write_json's format),
 * the key the sha256 of everything the ranges depend on: the source
 * model's sha256, the passes run before the calibration, every batch's
 * dtype, dims and bytes, the calibration method and percentile, the
 * activations' type, and modelbench's version (a new version may
 * calibrate differently). What only the quantisation that follows reads
 * (the int8 form, the nodes kept in float) is not in it. */
#include "bench/bench.h"
#include "bench/bench_internal.h"
#include "core/cache_dir.h"
#include "core/files.h"
#include "passes/quantize.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#define CALIBRATION_FOLDER MB_CALIBRATION_CACHE_SUBDIR

static void hash_str(mb_sha256 *ctx, const char *s) {
  mb__sha256_update(ctx, s ? s : "", strlen(s ? s : "") + 1);
}

/* The entry's path for these inputs, or false when the cache cannot be
 * used (no cache folder). */
static bool entry_path(const char *cache_override, const mb_model *source,
                       const char *passes_before,
                       const mb_tensor *const *const *batches, int n_batches,
                       int n_inputs, const mb_quant_options *qo, char *path,
                       size_t size) {
  char root[PATH_MAX], hex[65];
  mb_error ignored;
  if (mb__cache_dir(cache_override, root, sizeof root, &ignored))
    return false;
  mb_sha256 ctx;
  uint8_t digest[32];
  mb__sha256_init(&ctx);
  hash_str(&ctx, "modelbench calibration 1");
  hash_str(&ctx, MB_VERSION_STRING);
  hash_str(&ctx, mb_model_sha256(source));
  hash_str(&ctx, passes_before);
  int32_t head[3] = {n_batches, n_inputs, (int32_t)qo->calibration};
  mb__sha256_update(&ctx, head, sizeof head);
  int32_t activations = (int32_t)qo->activations;
  mb__sha256_update(&ctx, &activations, sizeof activations);
  double percentile =
      qo->calibration == MB_QUANT_CALIBRATION_PERCENTILE ? qo->percentile : 0.0;
  mb__sha256_update(&ctx, &percentile, sizeof percentile);
  for (int b = 0; b < n_batches; b++)
    for (int i = 0; i < n_inputs; i++) {
      const mb_tensor *t = batches[b][i];
      int32_t form[2] = {(int32_t)t->dtype, (int32_t)t->rank};
      mb__sha256_update(&ctx, form, sizeof form);
      mb__sha256_update(&ctx, t->dims, sizeof *t->dims * (size_t)t->rank);
      mb__sha256_update(&ctx, t->data, t->nbytes);
    }
  mb__sha256_final(&ctx, digest);
  mb__sha256_hex(digest, hex);
  return snprintf(path, size, "%s/%s/%s.json", root, CALIBRATION_FOLDER, hex) <
         (int)size;
}

mb_status mb__calibrate_cached(const mb_bench_config *config,
                               const mb_model *source,
                               const char *passes_before, const mb_model *model,
                               const mb_tensor *const *const *batches,
                               int n_batches, int n_inputs,
                               const mb_quant_options *opt,
                               mb_quant_params **params_out, bool *hit_out,
                               mb_error *err) {
  mb_quant_options qo;
  char path[PATH_MAX + 96];
  *hit_out = false;
  *params_out = NULL;
  mb_status status = mb__quant_options_resolve(opt, &qo, err);
  if (status)
    return status;
  bool cached = config && config->build_cache && n_batches > 0 &&
                entry_path(config->cache_dir, source, passes_before, batches,
                           n_batches, n_inputs, &qo, path, sizeof path);
  struct stat st;
  /* A regular file only: never a link out of the cache. */
  if (cached && lstat(path, &st) == 0 && S_ISREG(st.st_mode)) {
    mb_error ignored;
    mb_quant_params *params = NULL;
    /* A damaged entry is calibrated again (and rewritten). */
    if (mb__quant_params_read_json(path, &params, &ignored) == MB_STATUS_OK &&
        params->calibration == qo.calibration &&
        params->activations == qo.activations && params->samples == n_batches) {
      params->weights = qo.weights; /* as mb__calibrate records it */
      *params_out = params;
      *hit_out = true;
      return MB_STATUS_OK;
    }
    mb__quant_params_free(params);
  }
  if ((status = mb__calibrate(model, batches, n_batches, &qo, params_out, err)))
    return status;
  if (cached) {
    /* The folder under the private cache root; a failure to keep the entry
     * costs the next build a calibration, nothing else. */
    char *slash = strrchr(path, '/');
    *slash = '\0';
    mkdir(path, mb__private_dir_mode());
    *slash = '/';
    /* The writer goes through <path>.tmp: whatever sits there (a link
     * planted in the folder) is removed, not written through. */
    char tmp[sizeof path + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    unlink(tmp);
    mb_error ignored;
    if (mb__quant_params_write_json(*params_out, path, &ignored) ==
        MB_STATUS_OK)
      chmod(path, mb__private_file_mode());
  }
  return MB_STATUS_OK;
}
