/* bench_model: the smallest complete use of modelbench's C API.
 *
 *   bench_model MODEL.onnx [CONVERSIONS] [REPORT.json]
 *
 * Benchmarks MODEL under each conversion in CONVERSIONS (names or ids,
 * comma-separated, e.g. "REFERENCE,ORT_CPU" or "1,2"; default: the default
 * set, as `modelbench bench` without -c), each in its own child process,
 * prints the console table and, when REPORT.json is given, writes the JSON
 * report (schema: docs/json-schema.md). Exit status: 0 when every
 * conversion ran, 1 when one failed, 2 on bad arguments.
 *
 * Built with the project (build/bin/bench_model). Against an installed
 * modelbench:
 *   cc bench_model.c $(pkg-config --cflags --libs modelbench) -o bench_model
 *
 * It uses only include/modelbench.h. */
#define _POSIX_C_SOURCE 200809L /* isatty */
#include <modelbench.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_CONVERSIONS 64

int main(int argc, char **argv) {
  if (argc < 2 || argc > 4) {
    fprintf(stderr, "usage: %s MODEL.onnx [CONVERSIONS] [REPORT.json]\n",
            argv[0]);
    return 2;
  }
  const char *model_path = argv[1];
  const char *conversions = argc > 2 ? argv[2] : NULL;
  const char *json_path = argc > 3 ? argv[3] : NULL;
  mb_error err = {0};

  /* Every setting starts at its default; override what you need. The
   * config only borrows the conversion list, which must stay alive until
   * mb_benchmark_model returns. */
  mb_bench_config config;
  mb_bench_config_init(&config);
  config.min_seconds = 1.0; /* a quicker run than the CLI's default */
  int indices[MAX_CONVERSIONS];
  if (conversions) {
    int n = 0;
    if (mb_conversion_parse_list(conversions, indices, MAX_CONVERSIONS, &n,
                                 &err) != MB_STATUS_OK) {
      fprintf(stderr, "bench_model: %s\n", err.message);
      return 2;
    }
    config.n_conversions = n;
    config.conversions = indices;
  }

  /* The report owns every result; mb_bench_report_free releases it all. A
   * failing conversion does not fail the call: it is recorded in its
   * result. The call itself fails only for a bad model, config or inputs. */
  mb_bench_report *report = NULL;
  mb_status status = mb_benchmark_model(model_path, &config, &report, &err);
  if (status != MB_STATUS_OK) {
    fprintf(stderr, "bench_model: %s\n", err.message);
    return status == MB_STATUS_INVALID_ARGUMENT ? 2 : 1;
  }

  mb_bench_report_print_table(report, stdout,
                              isatty(STDOUT_FILENO) && !getenv("NO_COLOR"));
  int rc = 0;
  if (json_path) {
    if (mb_bench_report_write_json(report, json_path, &err) != MB_STATUS_OK) {
      fprintf(stderr, "bench_model: %s\n", err.message);
      rc = 1;
    } else {
      printf("report written to %s\n", json_path);
    }
  }

  /* The results are plain structs, in the requested order. */
  const mb_bench_result *fastest = NULL;
  for (int i = 0; i < report->n_results; i++) {
    const mb_bench_result *r = &report->results[i];
    if (r->status != MB_BENCH_OK)
      rc = 1;
    else if (!fastest || r->latency_ms.median < fastest->latency_ms.median)
      fastest = r;
  }
  if (fastest)
    printf("fastest: %s, median %.3f ms, %.1f samples/s\n", fastest->conversion,
           fastest->latency_ms.median, fastest->throughput_sps);
  mb_bench_report_free(report);
  return rc;
}
