/* modelbench machine: this machine's peaks, the roofs every result of
 * bench is placed against (GEMM at each precision the CPU has, memory
 * bandwidth), measured once per thread count and cached. */
#include "bench/bench.h"
#include "cli/cli_common.h"
#include "core/json_write.h"

static const char machine_help[] =
    "Usage: modelbench machine [--threads N] [--json] [--remeasure]\n"
    "\n"
    "Prints this machine's peaks at N threads: fp32 GEMM (the best of\n"
    "OpenBLAS sgemm and oneDNN's matmul), int8 GEMM (oneDNN u8 x s8), bf16\n"
    "GEMM (oneDNN, where the CPU has avx512_bf16 or amx_bf16) and memory\n"
    "bandwidth (a STREAM-like triad over arrays beyond the last-level\n"
    "cache). Measured in a few seconds, then cached in the cache folder\n"
    "(or $MODELBENCH_PEAKS_DIR) by CPU model, CPU flags and thread count;\n"
    "bench places every result against them (% peak, compute-, memory- or\n"
    "overhead-bound).\n"
    "\n"
    "Options:\n"
    "  -t, --threads N     threads, as bench's --threads (default 1)\n"
    "      --remeasure     measure again and replace the cached figures\n"
    "      --cache-dir DIR the cache folder (default $MODELBENCH_CACHE_DIR\n"
    "                      or ~/.cache/modelbench)\n"
    "      --json          print JSON (docs/json-schema.md, \"peaks\")\n"
    "  -h, --help          show this help\n"
    "\n"
    "Exit status: 0 measured or read, 1 measuring failed, 2 usage error.\n";

static void print_text(const mb_machine_peaks *p) {
  printf("cpu:        %s\n", p->cpu_model[0] ? p->cpu_model : "unknown");
  printf("threads:    %d\n", p->threads);
  printf("fp32 GEMM:  %.1f GFLOP/s (%s)\n", p->fp32_gflops, p->fp32_source);
  if (p->int8_gops > 0)
    printf("int8 GEMM:  %.1f GOP/s (onednn matmul u8 x s8 -> s32)\n",
           p->int8_gops);
  else
    printf("int8 GEMM:  n/a: %s\n", p->int8_note);
  if (p->bf16_gflops > 0)
    printf("bf16 GEMM:  %.1f GFLOP/s (onednn matmul)\n", p->bf16_gflops);
  else
    printf("bf16 GEMM:  n/a: %s\n", p->bf16_note);
  printf("memory:     %.1f GB/s (triad)\n", p->bandwidth_gbs);
  printf("ridge:      %.1f FLOP/byte (fp32 peak / bandwidth)\n",
         p->bandwidth_gbs > 0 ? p->fp32_gflops / p->bandwidth_gbs : 0.0);
  printf("%s\n", p->from_cache ? "(cached; --remeasure measures again)"
                               : "(measured now, cached)");
  if (p->note[0])
    printf("note:       %s\n", p->note);
}

int mb__cli_machine(int argc, char **argv) {
  static const struct option options[] = {
      {"threads", required_argument, NULL, 't'},
      {"json", no_argument, NULL, 'j'},
      {"remeasure", no_argument, NULL, 'r'},
      {"cache-dir", required_argument, NULL, 'C'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  const char *cmd = "machine";
  const char *cache_dir = NULL;
  bool json = false, remeasure = false;
  int64_t threads = 1;
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":ht:", options, NULL)) != -1) {
    switch (c) {
    case 't':
      if (!mb__cli_parse_i64(optarg, 1, 1024, &threads))
        return mb__cli_usage_error(
            cmd, "--threads: '%s' is not a whole number in 1..1024", optarg);
      break;
    case 'j':
      json = true;
      break;
    case 'r':
      remeasure = true;
      break;
    case 'C':
      cache_dir = optarg;
      break;
    case 'h':
      fputs(machine_help, stdout);
      return MB_EXIT_OK;
    default:
      return mb__cli_bad_option(cmd, c, argv);
    }
  }
  if (optind < argc)
    return mb__cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
  mb_machine_peaks peaks;
  mb_error err = {MB_STATUS_OK, ""};
  if (mb__peaks_get(cache_dir, (int)threads, remeasure, &peaks, &err))
    return mb__cli_fail(cmd, &err);
  if (!peaks.measured) {
    mb__cli_error(cmd, "%s", peaks.note[0] ? peaks.note : "nothing measured");
    return MB_EXIT_FAILURE;
  }
  if (json) {
    mb_json j;
    mb__json_init(&j, stdout, true);
    mb__peaks_write_json(&j, &peaks);
    fputc('\n', stdout);
  } else {
    print_text(&peaks);
  }
  return MB_EXIT_OK;
}
