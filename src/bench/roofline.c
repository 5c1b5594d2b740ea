/* Each result on this machine's roofline (mb_roofline): achieved GFLOP/s
 * against the compute roof of its precision and the memory roof, and what
 * bounds it. Pure arithmetic over the report's figures; the peaks come
 * from peaks.c, FLOPs and bytes from the analysis (engine.c). */
#include "bench/bench.h"
#include "conversions/conversion.h"

#include <math.h>

/* The compute roof of a precision, 0 when not measured. fp16 has no
 * native GEMM on x86 (runtimes convert around fp32 kernels, issue 23), so
 * its roof is fp32's. */
static double precision_peak(const mb_machine_peaks *peaks,
                             mb_precision precision) {
  switch (precision) {
  case MB_PRECISION_INT8:
    return peaks->int8_gops;
  case MB_PRECISION_BF16:
    return peaks->bf16_gflops;
  case MB_PRECISION_FP16:
  case MB_PRECISION_FP32:
  default:
    return peaks->fp32_gflops;
  }
}

static int precision_width(mb_precision precision) {
  return precision == MB_PRECISION_INT8   ? 1
         : precision == MB_PRECISION_FP32 ? 4
                                          : 2;
}

void mb__roofline_compute(double flops, double bytes, double median_ms,
                          mb_precision precision, double precision_share,
                          const mb_machine_peaks *peaks, mb_roofline *out) {
  memset(out, 0, sizeof *out);
  if (!peaks || !peaks->measured || peaks->fp32_gflops <= 0.0 ||
      peaks->bandwidth_gbs <= 0.0 || !(flops > 0.0) || !(median_ms > 0.0) ||
      !isfinite(flops) || !isfinite(median_ms))
    return;
  double fp32 = peaks->fp32_gflops;
  double reduced = precision_peak(peaks, precision);
  const char *name = mb_precision_name(precision);
  if (precision == MB_PRECISION_FP16 || reduced <= 0.0) {
    reduced = fp32; /* no roof of its own measured here */
    name = "fp32";
  }
  double peak = reduced;
  snprintf(out->peak_precision, sizeof out->peak_precision, "%s", name);
  if (precision != MB_PRECISION_FP32 && precision_share >= 0.0 &&
      precision_share < 0.9995 && reduced != fp32) {
    /* Part of the FLOPs ran in fp32: the roof is the time-weighted mix,
     * each part at its own peak. */
    double share = MB_MAX(precision_share, 0.0);
    peak = 1.0 / (share / reduced + (1.0 - share) / fp32);
    snprintf(out->peak_precision, sizeof out->peak_precision,
             "%s %.0f%% + fp32", name, 100.0 * share);
  }
  double seconds = median_ms / 1e3;
  out->gflops = flops / seconds / 1e9;
  out->peak_gflops = peak;
  out->bandwidth_gbs = peaks->bandwidth_gbs;
  out->peak_share = out->gflops / peak;
  out->attainable_gflops = peak;
  bool memory = false;
  if (bytes > 0.0 && isfinite(bytes)) {
    out->bytes = bytes;
    out->intensity = flops / bytes;
    double memory_roof = out->intensity * peaks->bandwidth_gbs;
    memory = memory_roof < peak;
    out->attainable_gflops = memory ? memory_roof : peak;
    out->bandwidth_share = bytes / seconds / 1e9 / peaks->bandwidth_gbs;
  }
  if (out->gflops < MB_ROOFLINE_OVERHEAD_SHARE * out->attainable_gflops)
    out->bound = MB_ROOFLINE_OVERHEAD;
  else
    out->bound = memory ? MB_ROOFLINE_MEMORY : MB_ROOFLINE_COMPUTE;
}

double mb__roofline_bytes(const mb_bench_report *report, mb_precision precision,
                          double precision_share) {
  if (report->model_weight_bytes < 0 || report->model_input_bytes < 0 ||
      report->model_activation_bytes < 0)
    return -1.0;
  double weights = report->model_weight_bytes;
  if (precision != MB_PRECISION_FP32 && !report->model_quantized) {
    double share = precision_share >= 0.0 ? MB_MIN(precision_share, 1.0) : 1.0;
    double scale = precision_width(precision) / 4.0;
    weights *= share * scale + (1.0 - share);
  }
  return weights + report->model_input_bytes +
         2.0 * report->model_activation_bytes;
}

void mb__roofline_fill(const mb_bench_report *report, mb_bench_result *r) {
  memset(&r->roofline, 0, sizeof r->roofline);
  if (r->status != MB_BENCH_OK || !report->peaks.measured ||
      report->model_flops <= 0.0)
    return;
  const mb_conversion_def *def = mb__conversion_def(r->conversion_index);
  mb_precision precision = def ? def->precision : MB_PRECISION_FP32;
  /* A load run's latency includes queueing: the roofline is about run()
   * alone, its service time. */
  double median_ms = r->load.scenario == MB_LOAD_NONE
                         ? r->latency_ms.median
                         : r->load.service_ms.median;
  double bytes = mb__roofline_bytes(report, precision, r->precision_share);
  mb__roofline_compute(report->model_flops, bytes, median_ms, precision,
                       r->precision_share, &report->peaks, &r->roofline);
}
