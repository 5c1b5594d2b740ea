/* Host builds: the public face of the build cache for artifacts a host
 * program makes itself (the Python front's ONNX export of a PyTorch
 * module). They sit beside the conversions' builds, keyed the same way:
 * the model's sha256 (here the module's code and weights), the input
 * signature, what is built and its options, the tool and its version.
 * A host module is no file, so there is no model path to watch: such
 * builds are never judged orphaned, only failed or of another version. */
#include "cache/build_cache.h"
#include "core/cache_dir.h"

#include <limits.h>
#include <stdlib.h>

struct mb_host_build {
  mb_build *build;
};

mb_status mb_host_build_open(const char *cache_dir,
                             const mb_host_build_key *key, int rebuild,
                             mb_host_build **build_out, mb_error *err) {
  char dir[PATH_MAX];
  if (!key || !build_out || !key->model_sha256 || !key->artifact)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "mb_host_build_open: key (with model_sha256 and "
                     "artifact) and build_out are required");
  mb_status status = mb__cache_dir(cache_dir, dir, sizeof dir, err);
  if (status)
    return status;
  mb_build_key k = {
      .model_path = NULL,
      .model_name = key->model_name,
      .source_script = key->source_script,
      .source_class = key->source_script ? key->model_name : NULL,
      .source_hash = key->source_script ? key->source_hash : NULL,
      .model_sha256 = key->model_sha256,
      .inputs = key->inputs,
      .conversion = key->artifact,
      .steps = key->artifact,
      .options = key->options,
      .runtime = key->tool,
      .runtime_version = key->tool_version,
      .machine = "",
  };
  mb_host_build *b = calloc(1, sizeof *b);
  if (!b)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  status = mb__build_open(dir, &k,
                          rebuild ? MB_REBUILD_ALWAYS : MB_REBUILD_IF_NEEDED,
                          &b->build, err);
  if (status) {
    free(b);
    return status;
  }
  if (mb__build_hit(b->build))
    mb__build_mark_hit(b->build, NULL);
  *build_out = b;
  return MB_STATUS_OK;
}

int mb_host_build_hit(const mb_host_build *build) {
  return build && mb__build_hit(build->build);
}

const char *mb_host_build_folder(const mb_host_build *build) {
  return build ? mb__build_folder(build->build) : NULL;
}

const char *mb_host_build_id(const mb_host_build *build) {
  return build ? mb__build_id(build->build) : NULL;
}

mb_status mb_host_build_finish(mb_host_build *build, const char *artifact_name,
                               const char *error, double build_ms,
                               mb_error *err) {
  if (!build)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "mb_host_build_finish: no build");
  mb_status status = MB_STATUS_OK;
  if (!error && artifact_name &&
      (status = mb__build_add_artifact(build->build, artifact_name, err)))
    error = err ? err->message : "bad artifact";
  mb__build_stage(build->build, "export", build_ms, NULL);
  mb_status finished = mb__build_finish(
      build->build, error ? MB_STATUS_UNSUPPORTED : 0, error, build_ms, err);
  return status ? status : finished;
}

void mb_host_build_close(mb_host_build *build) {
  if (!build)
    return;
  mb__build_close(build->build);
  free(build);
}
