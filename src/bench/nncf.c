/* NNCF as INT8_STATIC+OPENVINO's quantiser: finding it, and one run of
 * python/modelbench/nncf_quantize.py over a temporary folder (nncf.h). */
#include "bench/nncf.h"

#include "bench/data.h"
#include "core/spawn.h"

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MB_NNCF_PYTHON
#define MB_NNCF_PYTHON ""
#endif
#ifndef MB_NNCF_SCRIPT_BUILT
#define MB_NNCF_SCRIPT_BUILT ""
#endif
#ifndef MB_NNCF_SCRIPT_INSTALLED
#define MB_NNCF_SCRIPT_INSTALLED ""
#endif

static bool is_file(const char *path) {
  struct stat st;
  return path[0] && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* NNCF's version from nncf-<version>.dist-info in the site-packages of the
 * environment whose bin/ holds python (a venv, conda or a prefix). */
static bool nncf_version(const char *python, char *out, size_t size) {
  char pattern[PATH_MAX + 64];
  char bin[PATH_MAX];
  snprintf(bin, sizeof bin, "%s", python);
  char *slash = strrchr(bin, '/');
  if (!slash)
    return false;
  *slash = '\0';
  snprintf(pattern, sizeof pattern,
           "%s/../lib/python3*/site-packages/nncf-*.dist-info", bin);
  glob_t g;
  bool found = false;
  if (glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc > 0) {
    const char *name = strrchr(g.gl_pathv[g.gl_pathc - 1], '/') + 1;
    const char *v = name + strlen("nncf-");
    size_t n = strlen(v) - strlen(".dist-info");
    snprintf(out, size, "%.*s", (int)MB_MIN(n, size - 1), v);
    found = true;
  }
  globfree(&g);
  return found;
}

bool mb__nncf_find(mb_nncf_tool *tool, char *reason, size_t size) {
  memset(tool, 0, sizeof *tool);
  const char *python = getenv("MODELBENCH_NNCF_PYTHON");
  const char *from = "$MODELBENCH_NNCF_PYTHON";
  if (!python || !python[0]) {
    python = MB_NNCF_PYTHON;
    from = "the project's Python environment";
  }
  if (!is_file(python)) {
    snprintf(reason, size,
             "no Python with NNCF: %s (%s) is missing (scripts/python-venv.sh "
             "makes it; or set MODELBENCH_NNCF_PYTHON)",
             python[0] ? python : "none configured", from);
    return false;
  }
  if (!nncf_version(python, tool->version, sizeof tool->version)) {
    snprintf(reason, size, "%s has no NNCF in its site-packages", python);
    return false;
  }
  const char *script = getenv("MODELBENCH_NNCF_SCRIPT");
  if (!script || !is_file(script))
    script = is_file(MB_NNCF_SCRIPT_BUILT) ? MB_NNCF_SCRIPT_BUILT
                                           : MB_NNCF_SCRIPT_INSTALLED;
  if (!is_file(script)) {
    snprintf(reason, size, "nncf_quantize.py is not at %s or %s",
             MB_NNCF_SCRIPT_BUILT, MB_NNCF_SCRIPT_INSTALLED);
    return false;
  }
  snprintf(tool->python, sizeof tool->python, "%s", python);
  snprintf(tool->script, sizeof tool->script, "%s", script);
  return true;
}

/* Writes batches.json and b<i>_<k>.npy into dir. */
static mb_status write_batches(const char *dir, const mb_model *model,
                               const mb_tensor *const *const *batches,
                               int n_batches, mb_error *err) {
  int n_inputs = mb_model_input_count(model);
  char path[PATH_MAX];
  mb_status status = MB_STATUS_OK;
  for (int i = 0; i < n_batches && !status; i++)
    for (int k = 0; k < n_inputs && !status; k++)
      status = snprintf(path, sizeof path, "%s/b%d_%d.npy", dir, i, k) <
                       (int)sizeof path
                   ? mb__npy_save(path, batches[i][k], err)
                   : mb__error(err, MB_STATUS_IO, "%s: path too long", dir);
  if (status)
    return status;
  size_t cap = 64, len = 0;
  char *json = malloc(cap);
  if (!json)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  len = (size_t)snprintf(json, cap, "{\"inputs\": [");
  for (int k = 0; k < n_inputs && !status; k++) {
    mb_value_info info;
    if ((status = mb_model_input_info(model, k, &info, err)))
      break;
    /* Input names are ONNX identifiers: no quote or backslash to escape
     * in practice; one that has them is refused rather than mangled. */
    if (strpbrk(info.name, "\"\\")) {
      status = mb__error(err, MB_STATUS_UNSUPPORTED,
                         "input name '%s' has a quote or backslash", info.name);
      break;
    }
    size_t need = len + strlen(info.name) + 8;
    if (need > cap) {
      char *grown = realloc(json, need * 2);
      if (!grown) {
        status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
        break;
      }
      json = grown;
      cap = need * 2;
    }
    len += (size_t)snprintf(json + len, cap - len, "%s\"%s\"", k ? ", " : "",
                            info.name);
  }
  if (!status) {
    char tail[64];
    int n = snprintf(tail, sizeof tail, "], \"batches\": %d}\n", n_batches);
    char *grown = realloc(json, len + (size_t)n + 1);
    if (!grown) {
      status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    } else {
      json = grown;
      memcpy(json + len, tail, (size_t)n + 1);
      len += (size_t)n;
      status =
          snprintf(path, sizeof path, "%s/batches.json", dir) < (int)sizeof path
              ? mb__write_file(path, json, len, err)
              : mb__error(err, MB_STATUS_IO, "%s: path too long", dir);
    }
  }
  free(json);
  return status;
}

/* Removes the files this step wrote into dir, then dir. */
static void remove_folder(const char *dir) {
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    char path[PATH_MAX];
    while ((e = readdir(d)))
      if (e->d_name[0] != '.' && snprintf(path, sizeof path, "%s/%s", dir,
                                          e->d_name) < (int)sizeof path)
        unlink(path);
    closedir(d);
  }
  rmdir(dir);
}

/* The "quantize_nodes" number in the helper's last output line. */
static int quantize_nodes_of(const char *text) {
  char line[512];
  mb__exec_last_line(text, line, sizeof line);
  const char *p = strstr(line, "\"quantize_nodes\":");
  return p ? atoi(p + strlen("\"quantize_nodes\":")) : -1;
}

mb_status mb__nncf_quantize(const mb_nncf_tool *tool, mb_model **model,
                            const mb_tensor *const *const *batches,
                            int n_batches, mb_int8_weights weights,
                            const char *const *ignored, int n_ignored,
                            double timeout_s, int *quantize_nodes,
                            mb_error *err) {
  if (weights == MB_INT8_WEIGHTS_MIXED)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "NNCF has no mixed int8 form (7-bit or 8-bit weights)");
  const char *tmp = getenv("TMPDIR");
  char dir[PATH_MAX], in[PATH_MAX], out[PATH_MAX], calib[PATH_MAX];
  char *text = NULL, **argv = NULL;
  void *bytes = NULL;
  size_t size = 0;
  mb_model *result = NULL;
  if (n_ignored < 0 || (n_ignored > 0 && !ignored))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "nncf: %d ignored nodes without their names", n_ignored);
  snprintf(dir, sizeof dir, "%s/modelbench-nncf-XXXXXX",
           tmp && tmp[0] ? tmp : "/tmp");
  if (!mkdtemp(dir))
    return mb__error(err, MB_STATUS_IO, "nncf: cannot make a folder in %s: %s",
                     tmp && tmp[0] ? tmp : "/tmp", strerror(errno));
  mb_status status = MB_STATUS_OK;
  if (snprintf(in, sizeof in, "%s/model.onnx", dir) >= (int)sizeof in ||
      snprintf(out, sizeof out, "%s/quantized.onnx", dir) >= (int)sizeof out ||
      snprintf(calib, sizeof calib, "%s", dir) >= (int)sizeof calib)
    status = mb__error(err, MB_STATUS_IO, "%s: path too long", dir);
  if (!status)
    status = mb_model_save(*model, in, NULL, err);
  if (!status)
    status = write_batches(dir, *model, batches, n_batches, err);
  if (status)
    goto done;
  /* The fixed arguments, then "--ignore NAME" per node kept in float. */
  char *fixed[] = {(char *)tool->python,
                   (char *)tool->script,
                   "--model",
                   in,
                   "--calibration",
                   calib,
                   "--out",
                   out,
                   "--overflow-fix",
                   weights == MB_INT8_WEIGHTS_W7 ? "enable" : "disable"};
  size_t n_fixed = MB_ARRAY_COUNT(fixed), n_args = 0;
  if (!(argv = malloc(sizeof *argv * (n_fixed + 2 * (size_t)n_ignored + 1)))) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "nncf: arguments");
    goto done;
  }
  for (size_t i = 0; i < n_fixed; i++)
    argv[n_args++] = fixed[i];
  for (int i = 0; i < n_ignored; i++) {
    argv[n_args++] = "--ignore";
    argv[n_args++] = (char *)ignored[i];
  }
  argv[n_args] = NULL;
  int exit_code = -1;
  if ((status = mb__exec_capture(argv, timeout_s, &exit_code, &text, err)))
    goto done;
  if (exit_code != 0) {
    char line[512];
    mb__exec_last_line(text, line, sizeof line);
    status = mb__error(err,
                       exit_code == 3   ? MB_STATUS_UNAVAILABLE
                       : exit_code == 2 ? MB_STATUS_INVALID_ARGUMENT
                                        : MB_STATUS_UNSUPPORTED,
                       "NNCF %s (%s): %s", tool->version, tool->python,
                       line[0] ? line : "failed without a message");
    goto done;
  }
  /* From memory: the model must not point into the folder removed below. */
  if ((status = mb__read_file(out, &bytes, &size, err)) ||
      (status = mb_model_load_memory(bytes, size, NULL, &result, err))) {
    mb__error_prefix(err, status, "NNCF's model");
    goto done;
  }
  *quantize_nodes = quantize_nodes_of(text);
  mb_model_free(*model);
  *model = result;
  result = NULL;
done:
  free(argv);
  free(text);
  free(bytes);
  mb_model_free(result);
  remove_folder(dir);
  return status;
}
