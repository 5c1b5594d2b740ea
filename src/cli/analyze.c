/* modelbench analyze: what a model is made of and what it costs. */
#include "bench/bench.h"
#include "cli/cli_common.h"
#include "core/json_write.h"

#include <stdlib.h>

static const char analyze_help[] =
    "Usage: modelbench analyze MODEL [OPTIONS]\n"
    "\n"
    "Shows a model's producer, IR version, opsets, inputs and outputs, the\n"
    "operator histogram, parameter count and size, FLOPs per operator type\n"
    "and in total, its sha256 and the operators the reference interpreter\n"
    "does not implement.\n"
    "\n"
    "Options:\n"
    "  --shape NAME=D0,D1,...  concrete shape of input NAME (repeatable)\n"
    "  --batch-size N          size of a dynamic first dim (default 1)\n"
    "  --runtime NAME          also show how a hybrid runtime splits the\n"
    "                          graph: NAME is xnnpack or onednn, or a\n"
    "                          conversion (XNNPACK, BF16+ONEDNN) for its\n"
    "                          precision; segments in execution order and\n"
    "                          the nodes left to the reference interpreter\n"
    "  --json                  print JSON instead of text\n"
    "  -h, --help              show this help\n"
    "\n"
    "FLOPs count a multiply-add as 2. When an input has dynamic dims other\n"
    "than the first, pass --shape for it, or FLOPs are reported unknown.\n"
    "Exit status: 0 success, 1 model error, 2 usage error.\n";

static const char *domain_name(const char *domain) {
  return domain && domain[0] ? domain : "ai.onnx";
}

static const char *flops_str(double v, char *buf, size_t size) {
  return mb__cli_si(v, buf, size);
}

/* Names, paths and notes come from the model file: printed with their
 * control characters escaped (core/text.c), so a name cannot move the
 * cursor, recolour the terminal or fake a line. buf: a char array. */
#define SAFE(s, buf) mb__term_text((s), (buf), sizeof(buf))

static void print_io(const char *title, int n, const mb_value_info *infos,
                     const mb_input_shape *resolved) {
  char shape[256], concrete[256], name[MB_TERM_TEXT_SIZE];
  char safe_shape[MB_TERM_TEXT_SIZE];
  printf("%s\n", title);
  if (n == 0)
    printf("  (none)\n");
  for (int i = 0; i < n; i++) {
    const mb_value_info *v = &infos[i];
    printf("  %-24s %-9s %s", SAFE(v->name, name), mb_dtype_name(v->dtype),
           SAFE(mb__cli_info_shape(v, shape, sizeof shape), safe_shape));
    if (resolved && resolved[i].rank >= 0) {
      mb__shape_str(resolved[i].rank, resolved[i].dims, concrete,
                    sizeof concrete);
      if (strcmp(concrete, shape) != 0)
        printf("  -> %s", concrete);
    }
    printf("\n");
  }
}

static void print_text(const char *path, const mb_model_stats *s) {
  char a[64], b[64], t1[MB_TERM_TEXT_SIZE], t2[MB_TERM_TEXT_SIZE];
  printf("model        %s\n", SAFE(path, t1));
  printf("sha256       %s\n", s->sha256);
  printf("producer     %s%s%s\n",
         SAFE(s->producer_name[0] ? s->producer_name : "(unknown)", t1),
         s->producer_version[0] ? " " : "", SAFE(s->producer_version, t2));
  printf("ir version   %lld\n", (long long)s->ir_version);
  printf("opsets       ");
  for (int i = 0; i < s->n_opsets; i++)
    printf("%s%s %lld", i ? ", " : "",
           SAFE(domain_name(s->opsets[i].domain), t1),
           (long long)s->opsets[i].version);
  printf("%s\n", s->n_opsets ? "" : "(none)");
  print_io("inputs", s->n_inputs, s->inputs, s->input_shapes);
  print_io("outputs", s->n_outputs, s->outputs, s->output_shapes);
  printf("nodes        %lld\n", (long long)s->node_count);
  printf("parameters   %lld (%s)\n", (long long)s->param_count,
         mb__cli_bytes((double)s->param_bytes, a, sizeof a));
  if (s->unknown_flops_nodes == 0)
    printf("FLOPs        %s (%.0f)\n", flops_str(s->total_flops, a, sizeof a),
           s->total_flops);
  else
    printf("FLOPs        unknown for %lld node(s); %s counted\n",
           (long long)s->unknown_flops_nodes,
           flops_str(s->total_flops, a, sizeof a));
  if (s->shape_note[0])
    printf("note         %s\n", SAFE(s->shape_note, t1));
  printf("operators\n");
  printf("  %-28s %7s %12s %7s\n", "op type", "count", "FLOPs", "share");
  for (int i = 0; i < s->n_ops; i++) {
    const mb_op_stats *op = &s->ops[i];
    char name[160];
    snprintf(name, sizeof name, "%s%s%s", op->domain, op->domain[0] ? ":" : "",
             op->op_type);
    if (!op->has_formula)
      snprintf(b, sizeof b, "-");
    else if (op->unknown_count)
      snprintf(b, sizeof b, "?");
    else
      flops_str(op->flops, b, sizeof b);
    char share[16] = "";
    if (op->has_formula && s->total_flops > 0)
      snprintf(share, sizeof share, "%.1f%%",
               100.0 * op->flops / s->total_flops);
    printf("  %-28s %7lld %12s %7s\n", SAFE(name, t1), (long long)op->count, b,
           share);
  }
  printf("unsupported  %s\n",
         s->n_unsupported ? SAFE(s->unsupported_ops, t1)
                          : "none (the reference interpreter runs every op)");
  if (s->quantized)
    printf("quantized    yes: %s (bench judges every conversion by cosine)\n",
           SAFE(s->quantization, t1));
  else if (s->quantization[0])
    printf("quantized    no, weights only: %s\n", SAFE(s->quantization, t1));
  else
    printf("quantized    no\n");
  /* A model `tune --output` wrote: what bench will run on it. */
  mb_tune_recorded tuned;
  mb_error err;
  if (mb__tune_recorded_read(path, &tuned, &err) != MB_STATUS_OK)
    printf("tuned        unreadable record: %s\n", SAFE(err.message, t1));
  else if (tuned.found)
    printf("tuned        yes (metadata %s): 'bench' runs %s at %d thread%s, "
           "%d node%s kept in float\n",
           MB_TUNE_METADATA_KEY, SAFE(tuned.conversion, t1), tuned.threads,
           tuned.threads == 1 ? "" : "s", tuned.n_keep_float,
           tuned.n_keep_float == 1 ? "" : "s");
  mb__tune_recorded_free(&tuned);
}

static void json_value_infos(mb_json *j, const char *key, int n,
                             const mb_value_info *infos,
                             const mb_input_shape *resolved) {
  mb__json_key(j, key);
  mb__json_array_begin(j);
  for (int i = 0; i < n; i++) {
    const mb_value_info *v = &infos[i];
    mb__json_object_begin(j);
    mb__json_kv_string(j, "name", v->name);
    mb__json_kv_string(j, "dtype", mb_dtype_name(v->dtype));
    mb__json_key(j, "shape");
    if (v->rank < 0) {
      mb__json_null(j);
    } else {
      mb__json_array_begin(j);
      for (int d = 0; d < v->rank; d++) {
        if (v->dims[d] >= 0)
          mb__json_int(j, v->dims[d]);
        else
          mb__json_string(j, v->dim_params[d] ? v->dim_params[d] : "?");
      }
      mb__json_array_end(j);
    }
    mb__json_key(j, "resolved_shape");
    if (resolved && resolved[i].rank >= 0) {
      mb__json_array_begin(j);
      for (int d = 0; d < resolved[i].rank; d++)
        mb__json_int(j, resolved[i].dims[d]);
      mb__json_array_end(j);
    } else {
      mb__json_null(j);
    }
    mb__json_object_end(j);
  }
  mb__json_array_end(j);
}

static void print_partition_text(const mb_partition *p) {
  char t1[MB_TERM_TEXT_SIZE];
  printf("\nPartition for %s: %d of %d nodes on %s, %d folded to constants, "
         "%d segment%s\n",
         p->runtime, p->n_native_nodes, p->n_nodes, p->runtime, p->n_folded,
         p->n_segments, p->n_segments == 1 ? "" : "s");
  for (int i = 0; i < p->n_segments; i++) {
    const mb_partition_segment *seg = &p->segments[i];
    printf("  %3d  %-10s %5d node%s  %s", i + 1, seg->runtime, seg->n_nodes,
           seg->n_nodes == 1 ? " " : "s", SAFE(seg->first_node, t1));
    if (seg->n_nodes > 1)
      printf(" .. %s", SAFE(seg->last_node, t1));
    printf("\n");
  }
  if (p->n_unsupported > 0) {
    printf("On the reference interpreter (%d):\n", p->n_unsupported);
    for (int i = 0; i < p->n_unsupported; i++)
      printf("  %s\n", SAFE(p->unsupported[i], t1));
  }
}

static void print_partition_json(mb_json *j, const mb_partition *p) {
  mb__json_key(j, "partition");
  mb__json_object_begin(j);
  mb__json_kv_string(j, "runtime", p->runtime);
  mb__json_kv_int(j, "nodes", p->n_nodes);
  mb__json_kv_int(j, "native_nodes", p->n_native_nodes);
  mb__json_kv_int(j, "folded_nodes", p->n_folded);
  mb__json_key(j, "segments");
  mb__json_array_begin(j);
  for (int i = 0; i < p->n_segments; i++) {
    mb__json_object_begin(j);
    mb__json_kv_string(j, "runtime", p->segments[i].runtime);
    mb__json_kv_int(j, "nodes", p->segments[i].n_nodes);
    mb__json_kv_string(j, "first_node", p->segments[i].first_node);
    mb__json_kv_string(j, "last_node", p->segments[i].last_node);
    mb__json_object_end(j);
  }
  mb__json_array_end(j);
  mb__json_key(j, "unsupported");
  mb__json_array_begin(j);
  for (int i = 0; i < p->n_unsupported; i++)
    mb__json_string(j, p->unsupported[i]);
  mb__json_array_end(j);
  mb__json_object_end(j);
}

static void print_json(const char *path, const mb_model_stats *s,
                       const mb_partition *partition) {
  mb_json j;
  mb__json_init(&j, stdout, true);
  mb__json_object_begin(&j);
  mb__json_kv_string(&j, "model", path);
  mb__json_kv_string(&j, "sha256", s->sha256);
  mb__json_kv_string(&j, "producer_name", s->producer_name);
  mb__json_kv_string(&j, "producer_version", s->producer_version);
  mb__json_kv_int(&j, "ir_version", s->ir_version);
  mb__json_key(&j, "opsets");
  mb__json_array_begin(&j);
  for (int i = 0; i < s->n_opsets; i++) {
    mb__json_object_begin(&j);
    mb__json_kv_string(&j, "domain", domain_name(s->opsets[i].domain));
    mb__json_kv_int(&j, "version", s->opsets[i].version);
    mb__json_object_end(&j);
  }
  mb__json_array_end(&j);
  json_value_infos(&j, "inputs", s->n_inputs, s->inputs, s->input_shapes);
  json_value_infos(&j, "outputs", s->n_outputs, s->outputs, s->output_shapes);
  mb__json_kv_int(&j, "node_count", s->node_count);
  mb__json_kv_int(&j, "parameter_count", s->param_count);
  mb__json_kv_int(&j, "parameter_bytes", s->param_bytes);
  mb__json_key(&j, "flops");
  if (s->unknown_flops_nodes)
    mb__json_null(&j);
  else
    mb__json_double(&j, s->total_flops);
  mb__json_kv_double(&j, "flops_counted", s->total_flops);
  mb__json_kv_int(&j, "flops_unknown_nodes", s->unknown_flops_nodes);
  mb__json_key(&j, "note");
  mb__json_string(&j, s->shape_note[0] ? s->shape_note : NULL);
  mb__json_key(&j, "operators");
  mb__json_array_begin(&j);
  for (int i = 0; i < s->n_ops; i++) {
    const mb_op_stats *op = &s->ops[i];
    mb__json_object_begin(&j);
    mb__json_kv_string(&j, "domain", domain_name(op->domain));
    mb__json_kv_string(&j, "op_type", op->op_type);
    mb__json_kv_int(&j, "count", op->count);
    mb__json_key(&j, "flops");
    if (op->unknown_count)
      mb__json_null(&j);
    else
      mb__json_double(&j, op->flops);
    mb__json_kv_bool(&j, "has_flops_formula", op->has_formula);
    mb__json_object_end(&j);
  }
  mb__json_array_end(&j);
  mb__json_key(&j, "unsupported_operators");
  mb__json_array_begin(&j);
  /* The list is "a, b, c"; split it back into strings. */
  const char *p = s->unsupported_ops;
  while (s->n_unsupported && p && *p) {
    size_t len = strcspn(p, ",");
    mb__json_string_n(&j, p, len);
    p += len;
    while (*p == ',' || *p == ' ')
      p++;
  }
  mb__json_array_end(&j);
  mb__json_kv_bool(&j, "quantized", s->quantized != 0);
  mb__json_key(&j, "quantization");
  mb__json_string(&j, s->quantization[0] ? s->quantization : NULL);
  if (partition)
    print_partition_json(&j, partition);
  mb__json_object_end(&j);
}

int mb__cli_analyze(int argc, char **argv) {
  static const struct option options[] = {
      {"shape", required_argument, NULL, 's'},
      {"batch-size", required_argument, NULL, 'b'},
      {"json", no_argument, NULL, 'j'},
      {"runtime", required_argument, NULL, 'r'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  const char *cmd = "analyze";
  mb_cli_shapes shapes;
  mb_model *model = NULL;
  mb_model_stats stats;
  mb_partition *partition = NULL;
  const char *runtime = NULL;
  mb_error err;
  const char *path;
  mb_status status;
  bool json = false;
  int rc = MB_EXIT_OK, c;
  memset(&shapes, 0, sizeof shapes);
  memset(&stats, 0, sizeof stats);
  memset(&err, 0, sizeof err);
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
    switch (c) {
    case 's':
      rc = mb__cli_add_shape(&shapes, cmd, optarg);
      break;
    case 'b':
      rc = mb__cli_set_batch(&shapes, cmd, optarg);
      break;
    case 'j':
      json = true;
      break;
    case 'r':
      runtime = optarg;
      break;
    case 'h':
      fputs(analyze_help, stdout);
      goto done;
    default:
      rc = mb__cli_bad_option(cmd, c, argv);
      break;
    }
    if (rc != MB_EXIT_OK)
      goto done;
  }
  if (optind >= argc) {
    rc = mb__cli_usage_error(cmd, "missing MODEL");
    goto done;
  }
  if (argc - optind > 1) {
    rc = mb__cli_usage_error(cmd, "unexpected argument '%s'", argv[optind + 1]);
    goto done;
  }
  path = argv[optind];
  rc = mb__cli_load_model(path, &model);
  if (rc != MB_EXIT_OK)
    goto done;
  status = mb_model_analyze(model, &shapes.spec, &stats, &err);
  if (status == MB_STATUS_INVALID_ARGUMENT || status == MB_STATUS_OVERFLOW) {
    rc = mb__cli_shape_error(path, &err);
    goto done;
  }
  if (status != MB_STATUS_OK) {
    rc = mb__cli_fail(path, &err);
    goto done;
  }
  if (runtime) {
    /* A conversion name brings its precision; otherwise a runtime name. */
    mb_precision precision = MB_PRECISION_FP32;
    const char *engine = runtime;
    int index;
    mb_conversion_info info;
    if (mb_conversion_find(runtime, &index, NULL) == MB_STATUS_OK &&
        mb_conversion_get(index, &info, NULL) == MB_STATUS_OK) {
      engine = info.runtime;
      precision = info.precision;
    }
    status = mb_model_partition(model, engine, precision, &shapes.spec,
                                &partition, &err);
    if (status == MB_STATUS_UNSUPPORTED && !partition &&
        strstr(err.message, "not a hybrid runtime")) {
      rc = mb__cli_usage_error(cmd, "--runtime: %s", err.message);
      goto done;
    }
    if (status != MB_STATUS_OK) {
      rc = mb__cli_fail(path, &err);
      goto done;
    }
  }
  if (json) {
    print_json(path, &stats, partition);
  } else {
    print_text(path, &stats);
    if (partition)
      print_partition_text(partition);
  }
  if (fflush(stdout) != 0) {
    mb__cli_error(NULL, "cannot write output");
    rc = MB_EXIT_FAILURE;
  }

done:
  mb_partition_free(partition);
  mb_model_stats_free(&stats);
  mb_model_free(model);
  mb__cli_shapes_free(&shapes);
  return rc;
}
