/* The conversion registry: the built-in table below plus rows registered at
 * run time (tests). Ids are stable and never reused, so scripts can refer to
 * a conversion by number across releases; ranges leave room for the
 * conversions later issues add:
 *     1-9    reference interpreter
 *    10-19   ONNX Runtime CPU (2-5 predate this scheme and keep their ids)
 *    20-29   ONNX Runtime CUDA
 *    30-49   XNNPACK, oneDNN
 *    50-59   libtorch (TorchScript files)
 *    60-99   PyTorch in the Python front (EAGER, JIT_*, ...; runtime
 *   200-399  "pytorch", a host runtime: src/runtime/host.c), one file
 *            each in python/modelbench/conversions/options/ (catalog.py
 *            checks the ranges)
 *   100-119  OpenVINO (ONNX models, through its C API)
 *  1000-     registered at run time (tests) */
#include "conversions/conversion.h"
#include "runtime/engine.h"
#include "runtime/nvml.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- availability checks beyond the runtime's probe ---- */

#define MB_X(eng, prec)                                                        \
  static int check_##eng##_##prec(char *reason, size_t size) {                 \
    return mb__engine_##eng.supports_precision(MB_PRECISION_##prec, reason,    \
                                               size);                          \
  }
MB_X(xnnpack, FP16)
MB_X(xnnpack, INT8)
MB_X(onednn, BF16)
MB_X(onednn, INT8)
#undef MB_X

/* Native bf16 on the CPU, whatever library computes it (OpenVINO's CPU
 * plugin otherwise falls back to fp32 without saying so). */
static int check_cpu_BF16(char *reason, size_t size) {
  static const char *const bf16_flags[] = {"avx512_bf16", "amx_bf16"};
  if (mb__engine_cpu_has(bf16_flags, 2) > 0)
    return 1;
  snprintf(reason, size,
           "the CPU flags lack avx512_bf16 and amx_bf16: no "
           "native bf16 here");
  return 0;
}

/* ---- the table ---- */

/* The fp32 and bf16 OpenVINO rows' model: as given, less the Dropouts
 * that are identities and Identity nodes (Constant nodes made
 * initializers first, so that constant inputs are seen). */
#define OPENVINO_CLEANUP                                                       \
  "constant_to_initializer,remove_identity,eliminate_dead"

static const mb_conversion_def builtin[] = {
    {
        .id = 1,
        .name = "REFERENCE",
        .runtime = "reference",
        .precision = MB_PRECISION_FP32,
        .opt_level = MB_GRAPH_OPT_DISABLED,
        .in_default_set = 1,
        .description =
            "modelbench's reference interpreter, the accuracy baseline",
        .tier = 1,
    },
    {
        .id = 2,
        .name = "ORT_CPU",
        .runtime = "onnxruntime",
        .precision = MB_PRECISION_FP32,
        .opt_level = MB_GRAPH_OPT_ALL,
        .in_default_set = 1,
        .description = "ONNX Runtime, CPU execution provider, all graph "
                       "optimisations",
        .tier = 1,
    },
    {
        .id = 3,
        .name = "ORT_CPU_NO_OPT",
        .runtime = "onnxruntime",
        .precision = MB_PRECISION_FP32,
        .opt_level = MB_GRAPH_OPT_DISABLED,
        .in_default_set = 1,
        .description = "ONNX Runtime, CPU execution provider, graph "
                       "optimisations disabled",
        .tier = 3,
    },
    {
        .id = 4,
        .name = "ORT_CPU_BASIC",
        .runtime = "onnxruntime",
        .precision = MB_PRECISION_FP32,
        .opt_level = MB_GRAPH_OPT_BASIC,
        .description = "ONNX Runtime, CPU execution provider, basic graph "
                       "optimisations",
        .tier = 3,
    },
    {
        .id = 5,
        .name = "ORT_CPU_EXTENDED",
        .runtime = "onnxruntime",
        .precision = MB_PRECISION_FP32,
        .opt_level = MB_GRAPH_OPT_EXTENDED,
        .description = "ONNX Runtime, CPU execution provider, extended graph "
                       "optimisations",
        .tier = 3,
    },
    {
        .id = 6,
        .name = "OPTIMIZE+REFERENCE",
        .runtime = "reference",
        .precision = MB_PRECISION_FP32,
        .opt_level = MB_GRAPH_OPT_DISABLED,
        .description =
            "our graph passes (constant folding, Identity/dead-node removal, "
            "BatchNormalization folding, shape simplification), then the "
            "reference interpreter",
        .tier = 3,
        .steps = "optimize",
    },
    {
        .id = 10,
        .name = "FP16+ORT_CPU",
        .runtime = "onnxruntime",
        .precision = MB_PRECISION_FP16,
        .opt_level = MB_GRAPH_OPT_ALL,
        .description =
            "weights and activations in float16 (sensitive ops kept float32), "
            "float32 inputs and outputs, on ONNX Runtime",
        .tier = 3,
        .steps = "optimize,to_fp16",
    },
    {
        .id = 12,
        .name = "ONNX+DYNAMO_EXPORT",
        .runtime = "onnxruntime",
        .precision = MB_PRECISION_FP32,
        .opt_level = MB_GRAPH_OPT_ALL,
        .description = "ONNX Runtime (CPU, all graph optimisations) on the "
                       "module's torch.onnx.export(dynamo=True) export, beside "
                       "ORT_CPU on its TorchScript-based one (PyTorch 2.x)",
        .tier = 3,
        .format = MB_MODEL_FORMAT_ONNX_DYNAMO,
    },
    {
        .id = 11,
        .name = "FP16+REFERENCE",
        .runtime = "reference",
        .precision = MB_PRECISION_FP16,
        .opt_level = MB_GRAPH_OPT_DISABLED,
        .description = "the FP16 model on the reference interpreter (its "
                       "accuracy without ORT)",
        .tier = 3,
        .steps = "optimize,to_fp16",
    },
    {
        .id = 20,
        .name = "INT8_DYNAMIC+ORT_CPU",
        .runtime = "onnxruntime",
        .precision = MB_PRECISION_INT8,
        .opt_level = MB_GRAPH_OPT_ALL,
        .description =
            "MatMul/Gemm weights int8 per channel, activations quantised at "
            "run time (DynamicQuantizeLinear + MatMulInteger), on ONNX Runtime",
        .tier = 3,
        .steps = "optimize,quantize_dynamic",
    },
    {
        .id = 21,
        .name = "INT8_STATIC+ORT_CPU",
        .runtime = "onnxruntime",
        .precision = MB_PRECISION_INT8,
        .opt_level = MB_GRAPH_OPT_ALL,
        .description =
            "QDQ int8 from calibration (uint8 activations per tensor, int8 "
            "weights per channel), on ONNX Runtime's int8 kernels",
        .tier = 2,
        .steps = "optimize,quantize_static",
    },
    {
        .id = 22,
        .name = "INT8_STATIC+REFERENCE",
        .runtime = "reference",
        .precision = MB_PRECISION_INT8,
        .opt_level = MB_GRAPH_OPT_DISABLED,
        .description = "the INT8_STATIC model on the reference interpreter "
                       "(its accuracy without ORT)",
        .tier = 3,
        .steps = "optimize,quantize_static",
    },
    {
        .id = 30,
        .name = "XNNPACK",
        .runtime = "xnnpack",
        .precision = MB_PRECISION_FP32,
        .opt_level = MB_GRAPH_OPT_DISABLED,
        .description = "XNNPACK subgraphs (NHWC), other nodes on the "
                       "reference interpreter",
        .tier = 2,
    },
    {
        .id = 31,
        .name = "FP16+XNNPACK",
        .runtime = "xnnpack",
        .precision = MB_PRECISION_FP16,
        .opt_level = MB_GRAPH_OPT_DISABLED,
        .description =
            "XNNPACK forced to fp16 inference, fp32 inputs and outputs",
        .check = check_xnnpack_FP16,
        .tier = 2,
    },
    {
        .id = 32,
        .name = "INT8_STATIC+XNNPACK",
        .runtime = "xnnpack",
        .precision = MB_PRECISION_INT8,
        .opt_level = MB_GRAPH_OPT_DISABLED,
        .description = "XNNPACK qs8: Conv/Gemm/MatMul in int8 (per-channel "
                       "weights) with INT8_STATIC's calibrated parameters, "
                       "other nodes fp32",
        .check = check_xnnpack_INT8,
        .tier = 2,
        .steps = "optimize,quant_params",
    },
    {
        .id = 40,
        .name = "ONEDNN",
        .runtime = "onednn",
        .precision = MB_PRECISION_FP32,
        .opt_level = MB_GRAPH_OPT_DISABLED,
        .description = "oneDNN primitives in blocked layouts with fused "
                       "post-ops, other nodes on the reference interpreter",
        .tier = 2,
    },
    {
        .id = 41,
        .name = "BF16+ONEDNN",
        .runtime = "onednn",
        .precision = MB_PRECISION_BF16,
        .opt_level = MB_GRAPH_OPT_DISABLED,
        .description = "oneDNN computing in bf16 (AVX-512 BF16 or AMX), fp32 "
                       "inputs and outputs",
        .check = check_onednn_BF16,
        .tier = 2,
    },
    {
        .id = 42,
        .name = "INT8_STATIC+ONEDNN",
        .runtime = "onednn",
        .precision = MB_PRECISION_INT8,
        .opt_level = MB_GRAPH_OPT_DISABLED,
        .description =
            "oneDNN int8 (VNNI/AMX where present): Conv/Gemm/MatMul on uint8 "
            "activations and int8 per-channel weights with INT8_STATIC's "
            "calibrated parameters, fp32 between them",
        .check = check_onednn_INT8,
        .tier = 2,
        .steps = "optimize,quant_params",
    },
    {
        .id = 100,
        .name = "OPENVINO",
        .runtime = "openvino",
        .precision = MB_PRECISION_FP32,
        .opt_level = MB_GRAPH_OPT_ALL,
        .description = "OpenVINO's CPU plugin (its own graph transformations "
                       "and kernels) in fp32, inputs fixed to the run's shapes",
        .tier = 2,
        /* OpenVINO's ONNX frontend refuses any Dropout in training mode,
         * even of ratio 0, as torch.onnx.export writes Swin-T's attention
         * dropout (Constant nodes for both): such identities go first. */
        .steps = OPENVINO_CLEANUP,
    },
    {
        .id = 101,
        .name = "BF16+OPENVINO",
        .runtime = "openvino",
        .precision = MB_PRECISION_BF16,
        .opt_level = MB_GRAPH_OPT_ALL,
        .description = "OpenVINO's CPU plugin with bf16 as the inference "
                       "precision (AVX-512 BF16 or AMX), fp32 inputs and "
                       "outputs",
        .check = check_cpu_BF16,
        .tier = 3,
        .steps = OPENVINO_CLEANUP,
    },
    {
        .id = 102,
        .name = "INT8_STATIC+OPENVINO",
        .runtime = "openvino",
        .precision = MB_PRECISION_INT8,
        .opt_level = MB_GRAPH_OPT_ALL,
        .description =
            "NNCF's post-training quantisation for OpenVINO's CPU plugin "
            "(same calibration data as every int8 conversion; modelbench's "
            "own where NNCF is missing, said in the build summary), its QDQ "
            "model run by OpenVINO, whose low-precision transformations turn "
            "the quantised parts into int8 kernels",
        .tier = 2,
        .steps = "optimize,quantize_nncf",
    },
    {
        .id = 50,
        .name = "TORCHSCRIPT",
        .runtime = "libtorch",
        .precision = MB_PRECISION_FP32,
        .opt_level = MB_GRAPH_OPT_DISABLED,
        .in_default_set = 1,
        .description =
            "the TorchScript file on libtorch as a C++ program runs it: "
            "torch::jit::load, eval(), forward() under torch::InferenceMode",
        .tier = 2,
        .format = MB_MODEL_FORMAT_TORCHSCRIPT,
        /* On CUDA through the PyTorch 2.x wheel's libtorch (libtorch.c). */
        .devices = (1u << MB_DEVICE_CPU) | (1u << MB_DEVICE_CUDA),
    },
    {
        .id = 51,
        .name = "EXPORT+AOT_INDUCTOR",
        .runtime = "aoti",
        .precision = MB_PRECISION_FP32,
        .opt_level = MB_GRAPH_OPT_DISABLED,
        .description =
            "the module's torch.export program compiled ahead of time by "
            "AOTInductor (aoti_compile_and_package), the package run from C "
            "by libtorch's AOTIModelPackageLoader: no Python in the loop "
            "(PyTorch 2.x)",
        .tier = 2,
        .format = MB_MODEL_FORMAT_AOTI,
        /* The package runs on the device it was compiled for: the Python
         * front compiles it for the run's device. */
        .devices = (1u << MB_DEVICE_CPU) | (1u << MB_DEVICE_CUDA),
    },
/* PyTorch's own deployment paths, on the module itself, one Python file
 * each (python/modelbench/conversions/options/, rows generated from them
 * at build time by catalog.py). EAGER is the baseline of a PyTorch model:
 * speed-ups and accuracy are relative to it (the model manifest names it
 * as the reference). */
#include "pytorch_conversions.inc"

};

#define MB_MAX_EXTRA_CONVERSIONS 32
static const mb_conversion_def *extra[MB_MAX_EXTRA_CONVERSIONS];
static int n_extra;

int mb_conversion_count(void) {
  return (int)MB_ARRAY_COUNT(builtin) + n_extra;
}

const mb_conversion_def *mb__conversion_def(int index) {
  if (index < 0)
    return NULL;
  if (index < (int)MB_ARRAY_COUNT(builtin))
    return &builtin[index];
  index -= (int)MB_ARRAY_COUNT(builtin);
  return index < n_extra ? extra[index] : NULL;
}

/* Names are UPPER_CASE words joined by '_', steps joined by '+'. */
static bool valid_name(const char *name) {
  if (!name || !isupper((unsigned char)name[0]))
    return false;
  for (const char *p = name; *p; p++) {
    bool word = isupper((unsigned char)*p) || isdigit((unsigned char)*p);
    bool sep = *p == '_' || *p == '+';
    if (!word && !(sep && p[1] && p[1] != '_' && p[1] != '+'))
      return false;
  }
  return true;
}

int mb__conversion_register(const mb_conversion_def *def, mb_error *err) {
  if (!def || !valid_name(def->name) || !def->runtime || def->id <= 0) {
    mb__error(err, MB_STATUS_INVALID_ARGUMENT,
              "conversion '%s': needs a positive id, an UPPER_CASE name and a "
              "runtime",
              def && def->name ? def->name : "(null)");
    return -1;
  }
  for (int i = 0; i < mb_conversion_count(); i++) {
    const mb_conversion_def *row = mb__conversion_def(i);
    if (row->id == def->id || strcasecmp(row->name, def->name) == 0) {
      mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                "conversion '%s' (id %d) clashes with '%s' (id %d)", def->name,
                def->id, row->name, row->id);
      return -1;
    }
  }
  if (n_extra == MB_MAX_EXTRA_CONVERSIONS) {
    mb__error(err, MB_STATUS_INVALID_ARGUMENT,
              "at most %d conversions can be registered",
              MB_MAX_EXTRA_CONVERSIONS);
    return -1;
  }
  extra[n_extra++] = def;
  return mb_conversion_count() - 1;
}

static void devices_here(const mb_runtime *rt, mb_conversion_info *info);

mb_status mb_conversion_get(int index, mb_conversion_info *info_out,
                            mb_error *err) {
  const mb_conversion_def *def = mb__conversion_def(index);
  if (!def)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "conversion index %d is out of range (0..%d)", index,
                     mb_conversion_count() - 1);
  memset(info_out, 0, sizeof *info_out);
  info_out->id = def->id;
  info_out->name = def->name;
  info_out->runtime = def->runtime;
  info_out->device = def->device;
  info_out->precision = def->precision;
  info_out->description = def->description ? def->description : "";
  info_out->in_default_set = def->in_default_set;
  info_out->tier = def->tier > 0 ? def->tier : 3;
  info_out->format = def->format;
  info_out->devices = mb__conversion_devices(def);

  const mb_runtime *rt = mb__runtime_find(def->runtime);
  if (!rt) {
    snprintf(info_out->reason, sizeof info_out->reason,
             "runtime '%s' is not built into this modelbench", def->runtime);
    return MB_STATUS_OK;
  }
  mb_runtime_info rinfo;
  memset(&rinfo, 0, sizeof rinfo);
  rinfo.name = rt->name;
  rt->probe(&rinfo);
  if (!rinfo.available) {
    snprintf(info_out->reason, sizeof info_out->reason, "%s",
             rinfo.reason[0] ? rinfo.reason : "runtime unavailable");
    return MB_STATUS_OK;
  }
  if (rt->supports_conversion &&
      !rt->supports_conversion(def->name, info_out->reason,
                               sizeof info_out->reason))
    return MB_STATUS_OK;
  int check =
      def->check ? def->check(info_out->reason, sizeof info_out->reason) : 1;
  if (!check) {
    if (!info_out->reason[0])
      snprintf(info_out->reason, sizeof info_out->reason,
               "not supported on this machine");
    return MB_STATUS_OK;
  }
  info_out->available = 1;
  /* Emulated here (the engine's supports_precision said 2): it runs, but
   * cannot pay off on this CPU, so it leaves the core tier. */
  if (check == 2) {
    info_out->tier = MB_MAX(info_out->tier, 3);
    if (!info_out->reason[0])
      snprintf(info_out->reason, sizeof info_out->reason,
               "emulated on this CPU");
  } else {
    info_out->reason[0] = '\0';
  }
  /* The int8 form the build step will quantise with here (int8_form.c). */
  if (mb__conversion_quantizes(def)) {
    char why[256];
    size_t used = strlen(info_out->reason);
    info_out->int8_weights =
        mb__int8_form(rt, MB_INT8_WEIGHTS_AUTO, why, sizeof why);
    snprintf(info_out->reason + used, sizeof info_out->reason - used,
             "%sint8 with %s: %s", used ? "; " : "",
             mb__int8_weights_words(info_out->int8_weights), why);
  }
  devices_here(rt, info_out);
  if (!info_out->devices_here) {
    /* It runs nowhere here (a GPU-only conversion without a GPU). */
    info_out->available = 0;
    snprintf(info_out->reason, sizeof info_out->reason, "%s",
             info_out->devices_reason);
  }
  return MB_STATUS_OK;
}

unsigned mb__conversion_devices(const mb_conversion_def *def) {
  return def->devices ? def->devices : 1u << def->device;
}

/* ---- devices ---- */

/* Why a device the row can run on is not usable here: NULL when it is.
 * One function per device, a table of them. */
typedef const char *(*device_check_fn)(const mb_runtime *rt, char *why,
                                       size_t size);

static const char *cpu_usable(const mb_runtime *rt, char *why, size_t size) {
  (void)rt, (void)why, (void)size;
  return NULL;
}

static const char *cuda_usable(const mb_runtime *rt, char *why, size_t size) {
  char reason[256] = "";
  unsigned can =
      rt->devices ? rt->devices(reason, sizeof reason) : 1u << MB_DEVICE_CPU;
  if (!(can & (1u << MB_DEVICE_CUDA))) {
    snprintf(why, size, "%s", reason[0] ? reason : "");
    if (!reason[0])
      snprintf(why, size, "runtime '%s' runs on the CPU only", rt->name);
    return why;
  }
  /* Counted once per process: NVML starts in tens of milliseconds on a
   * real driver, and `list` asks for every row. A forked worker inherits
   * the answer with the environment that decided it. */
  static int gpus = -1;
  static char no_gpu[256];
  if (gpus < 0)
    gpus = MB_MAX(mb__gpu_count(no_gpu, sizeof no_gpu), 0);
  if (gpus == 0) {
    snprintf(why, size, "%s", no_gpu[0] ? no_gpu : "no GPU here");
    return why;
  }
  return NULL;
}

static const device_check_fn device_checks[MB_DEVICE_COUNT] = {
    [MB_DEVICE_CPU] = cpu_usable,
    [MB_DEVICE_CUDA] = cuda_usable,
};

/* info->devices_here and devices_reason of an available row. */
static void devices_here(const mb_runtime *rt, mb_conversion_info *info) {
  size_t used = 0;
  for (int d = 0; d < MB_DEVICE_COUNT; d++) {
    if (!(info->devices & (1u << d)) || !device_checks[d])
      continue;
    char why[200];
    const char *not_here = device_checks[d](rt, why, sizeof why);
    if (!not_here) {
      info->devices_here |= 1u << d;
      continue;
    }
    if (used < sizeof info->devices_reason)
      used += (size_t)snprintf(
          info->devices_reason + used, sizeof info->devices_reason - used,
          "%s%s: %s", used ? "; " : "", mb_device_name((mb_device)d), not_here);
  }
}

int mb__conversion_place(const mb_conversion_info *info, mb_device wanted,
                         int allow_override, mb_device *placed, char *why,
                         size_t size) {
  unsigned here = info->devices_here;
  why[0] = '\0';
  if (wanted == MB_DEVICE_AUTO || (unsigned)wanted >= MB_DEVICE_COUNT) {
    *placed = here & (1u << MB_DEVICE_CUDA) ? MB_DEVICE_CUDA : MB_DEVICE_CPU;
    if (!(here & (1u << *placed)))
      *placed = info->device;
    return 1;
  }
  if (here & (1u << wanted)) {
    *placed = wanted;
    return 1;
  }
  char cause[300];
  if (info->devices & (1u << wanted))
    snprintf(cause, sizeof cause, "%s cannot run on %s here (%s)", info->name,
             mb_device_name(wanted),
             info->devices_reason[0] ? info->devices_reason : "unusable");
  else
    snprintf(cause, sizeof cause, "%s runs on %s but the device is %s",
             info->name, mb_device_name(info->device), mb_device_name(wanted));
  if (!allow_override) {
    snprintf(why, size, "%s (allow the device override to run it where it can)",
             cause);
    return 0;
  }
  mb_device fallback = info->device;
  for (int d = 0; d < MB_DEVICE_COUNT; d++)
    if (here & (1u << d)) {
      fallback = (mb_device)d;
      break;
    }
  *placed = fallback;
  snprintf(why, size, "%s: ran on %s (the device override)", cause,
           mb_device_name(fallback));
  return 1;
}

bool mb__conversion_quantizes(const mb_conversion_def *def) {
  return def->steps && (strstr(def->steps, "quantize_") ||
                        strstr(def->steps, "quant_params"));
}

/* ---- lookup and suggestions ---- */

static bool contains_nocase(const char *haystack, const char *needle) {
  size_t n = strlen(needle);
  for (; *haystack; haystack++)
    if (strncasecmp(haystack, needle, n) == 0)
      return true;
  return false;
}

/* How far a typed name is from a conversion's name: the plain edit distance,
 * or, when the user typed a prefix ("ORT_CP") or a part ("NO_OPT") of a
 * longer name, a small score so that family members are suggested too. */
static int suggestion_score(const char *typed, const char *name) {
  int score = mb__edit_distance(typed, name);
  size_t lt = strlen(typed), ln = strlen(name);
  if (lt >= 3 && lt < ln) {
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%.*s", (int)lt, name);
    score = MB_MIN(score, mb__edit_distance(typed, prefix) + 1);
    if (contains_nocase(name, typed))
      score = MB_MIN(score, 2);
  }
  return score;
}

/* Writes "A, B, C" (the up to three closest names) into buf; "" when none
 * is close enough to be a plausible typo. */
static void suggest(const char *typed, char *buf, size_t size) {
  enum { MAX_SUGGESTIONS = 3 };
  int best_index[MAX_SUGGESTIONS], best_score[MAX_SUGGESTIONS], n_best = 0;
  int threshold = MB_MAX(2, (int)strlen(typed) / 3);
  for (int i = 0; i < mb_conversion_count(); i++) {
    int score = suggestion_score(typed, mb__conversion_def(i)->name);
    if (score > threshold)
      continue;
    /* Insertion sort into the short list; ties keep table order. */
    int pos = n_best;
    while (pos > 0 && best_score[pos - 1] > score)
      pos--;
    if (pos >= MAX_SUGGESTIONS)
      continue;
    for (int k = MB_MIN(n_best, MAX_SUGGESTIONS - 1); k > pos; k--) {
      best_index[k] = best_index[k - 1];
      best_score[k] = best_score[k - 1];
    }
    best_index[pos] = i;
    best_score[pos] = score;
    n_best = MB_MIN(n_best + 1, MAX_SUGGESTIONS);
  }
  size_t used = 0;
  buf[0] = '\0';
  for (int k = 0; k < n_best && used < size; k++) {
    /* Only names about as close as the best one: one clear typo fix should
     * not drag in three unrelated names. */
    if (best_score[k] > best_score[0] + 1)
      break;
    int w = snprintf(buf + used, size - used, "%s%s", k ? ", " : "",
                     mb__conversion_def(best_index[k])->name);
    if (w < 0)
      break;
    used += (size_t)w;
  }
}

static bool all_digits(const char *s) {
  if (!*s)
    return false;
  for (; *s; s++)
    if (!isdigit((unsigned char)*s))
      return false;
  return true;
}

mb_status mb_conversion_find(const char *name_or_id, int *index_out,
                             mb_error *err) {
  if (!name_or_id || !name_or_id[0])
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "empty conversion name (modelbench list shows all)");
  if (all_digits(name_or_id)) {
    long id = strlen(name_or_id) > 9 ? -1 : strtol(name_or_id, NULL, 10);
    for (int i = 0; i < mb_conversion_count(); i++)
      if (mb__conversion_def(i)->id == id) {
        *index_out = i;
        return MB_STATUS_OK;
      }
    return mb__error(err, MB_STATUS_NOT_FOUND,
                     "unknown conversion id %s (modelbench list shows all)",
                     name_or_id);
  }
  for (int i = 0; i < mb_conversion_count(); i++)
    if (strcasecmp(mb__conversion_def(i)->name, name_or_id) == 0) {
      *index_out = i;
      return MB_STATUS_OK;
    }
  char names[256];
  suggest(name_or_id, names, sizeof names);
  if (names[0])
    return mb__error(err, MB_STATUS_NOT_FOUND,
                     "unknown conversion '%s'; did you mean %s? (modelbench "
                     "list shows all)",
                     name_or_id, names);
  return mb__error(err, MB_STATUS_NOT_FOUND,
                   "unknown conversion '%s' (modelbench list shows all)",
                   name_or_id);
}

int mb_conversion_applies(int index, unsigned formats) {
  const mb_conversion_def *def = mb__conversion_def(index);
  return def && (formats & (1u << def->format)) != 0;
}

mb_status mb_conversion_parse_list(const char *list, int *indices_out, int max,
                                   int *count_out, mb_error *err) {
  /* Collected locally so that indices_out stays untouched on failure;
   * duplicates are errors, so no list is longer than the registry. */
  int found[MB_ARRAY_COUNT(builtin) + MB_MAX_EXTRA_CONVERSIONS];
  if (!list)
    list = "";
  int count = 0, entry = 0;
  const char *p = list;
  for (;;) {
    size_t len = strcspn(p, ",");
    const char *start = p, *end = p + len;
    while (start < end && isspace((unsigned char)*start))
      start++;
    while (end > start && isspace((unsigned char)end[-1]))
      end--;
    entry++;
    if (start == end) {
      if (entry == 1 && !p[len])
        return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                         "empty conversion list (modelbench list shows all)");
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "conversion list '%s': entry %d is empty", list, entry);
    }
    char name[128];
    if ((size_t)(end - start) >= sizeof name)
      return mb__error(err, MB_STATUS_NOT_FOUND,
                       "unknown conversion '%.*s...' (modelbench list shows "
                       "all)",
                       40, start);
    memcpy(name, start, (size_t)(end - start));
    name[end - start] = '\0';
    int index;
    mb_status status = mb_conversion_find(name, &index, err);
    if (status != MB_STATUS_OK)
      return status;
    for (int k = 0; k < count; k++)
      if (found[k] == index)
        return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                         "conversion list '%s': %s is listed twice", list,
                         mb__conversion_def(index)->name);
    if (count == max)
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "conversion list '%s': more than %d entries", list, max);
    found[count++] = index;
    if (!p[len])
      break;
    p += len + 1;
  }
  memcpy(indices_out, found, sizeof *found * (size_t)count);
  *count_out = count;
  return MB_STATUS_OK;
}
