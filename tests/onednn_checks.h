/* The checks only the oneDNN engine tests make (test_engine_onednn*.c),
 * beside engine_harness.h's: the ISA gate, a graph in int8 against the
 * reference interpreter, and the per-primitive profile (which nodes were
 * fused or became views). Include after engine_harness.h. */
#ifndef MB_TESTS_ONEDNN_CHECKS_H
#define MB_TESTS_ONEDNN_CHECKS_H

#include <stdbool.h>

#ifdef MB_TEST_DNNL
#include <oneapi/dnnl/dnnl.h>

/* Does the ISA oneDNN runs at here (the CPU's best, or less under
 * ONEDNN_MAX_CPU_ISA) include every feature of `isa`? */
static inline bool dn_isa_has(dnnl_cpu_isa_t isa) {
  unsigned have = (unsigned)dnnl_get_effective_cpu_isa();
  return (have & (unsigned)isa) == (unsigned)isa;
}

/* make test runs each oneDNN test once more per ISA oneDNN can be held to
 * (tests/CMakeLists.txt sets ONEDNN_MAX_CPU_ISA), so that an AVX-512 or AMX
 * machine also proves the AVX2 and pre-VNNI paths. Asked for an ISA this
 * CPU lacks, oneDNN runs a lower one, which another run already covers:
 * that run is skipped (exit 77). */
__attribute__((constructor)) static void dn_isa_gate(void) {
  static const struct {
    const char *name;
    dnnl_cpu_isa_t isa;
  } isas[] = {
      {"AVX2", dnnl_cpu_isa_avx2},
      {"AVX2_VNNI", dnnl_cpu_isa_avx2_vnni},
      {"AVX512_CORE", dnnl_cpu_isa_avx512_core},
      {"AVX512_CORE_VNNI", dnnl_cpu_isa_avx512_core_vnni},
      {"AVX512_CORE_BF16", dnnl_cpu_isa_avx512_core_bf16},
      {"AVX512_CORE_AMX", dnnl_cpu_isa_avx512_core_amx},
  };
  const char *want = getenv("ONEDNN_MAX_CPU_ISA");
  dnnl_cpu_isa_t have = dnnl_get_effective_cpu_isa();
  for (size_t i = 0; want && i < sizeof isas / sizeof isas[0]; i++)
    if (strcmp(want, isas[i].name) == 0 && have != isas[i].isa) {
      printf("skipped: ONEDNN_MAX_CPU_ISA=%s, but oneDNN runs at ISA 0x%x "
             "here (this CPU lacks %s)\n",
             want, (unsigned)have, want);
      exit(77);
    }
  printf("oneDNN ISA 0x%x%s%s\n", (unsigned)have,
         want ? ", ONEDNN_MAX_CPU_ISA=" : "", want ? want : "");
}
#endif

/* Compiles with profiling, runs `runs` times and writes the op types of
 * the primitives' profile entries, space-separated, into ops (e.g.
 * "reorder Conv MaxPool"). Checks the results as check_graph does at 1
 * thread. Frees the case. kernels: NULL, or where each entry's kernel
 * goes, '|'-separated in the same order (ksize bytes). */
static inline int profile_ops_kernels(gcase *c, int runs, char *ops,
                                      size_t size, int64_t *runs_out,
                                      char *kernels, size_t ksize) {
  prepared p;
  mb_tensor *ref[8] = {0}, *outs[8] = {0};
  mb_engine_node_time times[64];
  void *compiled = NULL;
  int rc = 1;
  ops[0] = '\0';
  if (prepare(c, &p) || run_reference(c, &p, ref))
    goto done;
  mb_engine_options eo = {1, MB_PRECISION_FP32, 1};
  if (engine->compile(&p.desc, &eo, &compiled, &c->err) ||
      make_outputs(&p, outs)) {
    fprintf(stderr, "  compile: %s\n", c->err.message);
    goto done;
  }
  for (int r = 0; r < runs; r++) {
    if (engine->run(compiled, (const mb_tensor *const *)p.inputs, outs,
                    &c->err)) {
      fprintf(stderr, "  run: %s\n", c->err.message);
      goto done;
    }
  }
  for (int j = 0; j < p.desc.n_outputs; j++) {
    double e = normalised_error(outs[j], ref[j]);
    if (!(e <= 1e-4)) {
      fprintf(stderr, "  output %d: error %g\n", j, e);
      goto done;
    }
  }
  int n = engine->node_profile(compiled, times, 64);
  size_t used = 0, kused = 0;
  if (kernels && ksize)
    kernels[0] = '\0';
  for (int i = 0; i < n && i < 64; i++) {
    used += (size_t)snprintf(ops + used, size - MB_MIN(used, size), "%s%s",
                             i ? " " : "", times[i].op_type);
    if (kernels)
      kused += (size_t)snprintf(kernels + kused, ksize - MB_MIN(kused, ksize),
                                "%s%s", i ? "|" : "", times[i].kernel);
    if (runs_out)
      runs_out[i] = times[i].runs;
    if (times[i].total_ms < 0) {
      fprintf(stderr, "  negative time\n");
      goto done;
    }
  }
  rc = 0;
done:
  for (int j = 0; j < 8; j++) {
    mb_tensor_free(ref[j]);
    mb_tensor_free(outs[j]);
  }
  engine->release(compiled);
  prepared_free(&p);
  gc_free(c);
  return rc;
}

static inline int profile_ops(gcase *c, int runs, char *ops, size_t size,
                              int64_t *runs_out) {
  return profile_ops_kernels(c, runs, ops, size, runs_out, NULL, 0);
}

/* How often `word` appears as a whole word in the space-separated list. */
static inline int count_word(const char *list, const char *word) {
  int n = 0;
  size_t k = strlen(word);
  for (const char *p = list; (p = strstr(p, word)) != NULL; p += k)
    if ((p == list || p[-1] == ' ') && (p[k] == ' ' || p[k] == '\0'))
      n++;
  return n;
}

/* Compiles the whole graph in INT8 with `params` and runs it twice on the
 * prepared inputs; each output's normalised error against the fp32
 * reference goes into err_out[] (the worst of the two runs). */
static inline int int8_run(gcase *c, prepared *p, const mb_quant_params *params,
                           mb_tensor **ref, double *err_out, double *cos_out,
                           const char *const *kernels) {
  mb_engine_options eo = {2, MB_PRECISION_INT8, kernels != NULL, params};
  mb_engine_node_time times[64];
  void *compiled = NULL;
  mb_tensor *outs[8] = {0};
  int rc = 1;
  ASSERT_OK(engine->compile(&p->desc, &eo, &compiled, &c->err), &c->err);
  if (make_outputs(p, outs))
    goto done;
  for (int j = 0; j < p->desc.n_outputs; j++) {
    err_out[j] = 0;
    cos_out[j] = 1;
  }
  for (int r = 0; r < 2; r++) {
    for (int j = 0; j < p->desc.n_outputs; j++)
      memset(outs[j]->data, 0xff, outs[j]->nbytes); /* NaN */
    if (engine->run(compiled, (const mb_tensor *const *)p->inputs, outs,
                    &c->err)) {
      fprintf(stderr, "  run failed: %s\n", c->err.message);
      goto done;
    }
    for (int j = 0; j < p->desc.n_outputs; j++) {
      err_out[j] = fmax(err_out[j], normalised_error(outs[j], ref[j]));
      cos_out[j] = fmin(cos_out[j], cosine(outs[j], ref[j]));
    }
  }
  /* kernels: {op type, what its kernel must say, ...}: every profile line
   * of that op names such a kernel, and there is one ("+op": at least one
   * line of op does). */
  int n = kernels ? MB_MIN(engine->node_profile(compiled, times, 64), 64) : 0;
  for (int k = 0; kernels && kernels[k]; k += 2) {
    int seen = 0, some = kernels[k][0] == '+', found = 0;
    const char *op = kernels[k] + some;
    for (int i = 0; i < n; i++) {
      if (strcmp(times[i].op_type, op) != 0)
        continue;
      seen++;
      found += strstr(times[i].kernel, kernels[k + 1]) != NULL;
      if (!some && !strstr(times[i].kernel, kernels[k + 1])) {
        fprintf(stderr, "  %s '%s': kernel '%s', want '%s'\n", times[i].op_type,
                times[i].name, times[i].kernel, kernels[k + 1]);
        goto done;
      }
    }
    if (!seen || (some && !found)) {
      fprintf(stderr, "  no %s with a '%s' kernel in the int8 profile\n", op,
              kernels[k + 1]);
      goto done;
    }
  }
  rc = 0;
done:
  for (int j = 0; j < p->desc.n_outputs; j++)
    mb_tensor_free(outs[j]);
  engine->release(compiled);
  return rc;
}

/* c's graph in INT8 against fp32: close (cosine >= 0.999, normalised
 * error <= 0.05) yet not fp32-exact (> 1e-6: int8 really ran). With
 * per_tensor_weights the weights get one scale. Frees the case. */
static inline int check_int8_kernels(gcase *c, int per_tensor_weights,
                                     const char *const *kernels) {
  prepared p;
  mb_tensor *ref[8] = {0};
  mb_quant_params *params = NULL;
  mb_quant_options qo = {.per_tensor_weights = per_tensor_weights};
  double e[8], cs[8];
  int rc = 1;
  if (prepare(c, &p) || run_reference(c, &p, ref) ||
      int8_params(c, &p, &qo, &params) ||
      int8_run(c, &p, params, ref, e, cs, kernels))
    goto done;
  for (int j = 0; j < p.desc.n_outputs; j++) {
    if (!(cs[j] >= 0.999) || !(e[j] <= 0.05) || !(e[j] > 1e-6)) {
      fprintf(stderr,
              "  output %d: int8 cosine %.6f, normalised error %g (want "
              ">= 0.999 and in (1e-6, 0.05])\n",
              j, cs[j], e[j]);
      goto done;
    }
  }
  rc = 0;
done:
  mb__quant_params_free(params);
  for (int j = 0; j < 8; j++)
    mb_tensor_free(ref[j]);
  prepared_free(&p);
  gc_free(c);
  return rc;
}

static inline int check_int8(gcase *c, int per_tensor_weights) {
  return check_int8_kernels(c, per_tensor_weights, NULL);
}

#endif /* MB_TESTS_ONEDNN_CHECKS_H */
