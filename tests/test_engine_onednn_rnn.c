/* The oneDNN engine's int8 recurrent layers (INT8_STATIC+ONEDNN): an LSTM
 * or GRU with a calibrated input runs on oneDNN's int8 primitive (u8 data,
 * s8 weights), close to the fp32 reference and reported as int8; a form
 * oneDNN has no int8 primitive for (peepholes, the linear-before-reset
 * GRU, an uncalibrated input) runs in an fp32 segment of its own, exactly,
 * and is reported as fp32. Through the hybrid "onednn" runtime, as a
 * conversion runs it. Skipped (and passing) without oneDNN. */
#include "runtime/engine.h"
#include "test.h"

static const mb_engine *engine = &mb__engine_onednn;

#include "engine_harness.h"
#include "onednn_checks.h"

enum { SEQ = 24, BATCH = 2, INPUT = 20, HIDDEN = 32 };

/* One bidirectional layer reading x (width `in`) into y [SEQ, 2, BATCH,
 * HIDDEN], weights as PyTorch initialises them (uniform in +-1/sqrt(H));
 * peepholes when asked (LSTM). */
static void rnn_layer(gcase *c, const char *op, int layer, const char *x,
                      int64_t in, int peephole, int lbr, const char *y) {
  int64_t gates = strcmp(op, "LSTM") == 0 ? 4 : 3;
  int64_t w[3] = {2, gates * HIDDEN, in}, r[3] = {2, gates * HIDDEN, HIDDEN};
  int64_t b[2] = {2, 2 * gates * HIDDEN}, pp[2] = {2, 3 * HIDDEN};
  float k = 1.0f / sqrtf((float)HIDDEN);
  char wn[16], rn[16], bn[16], pn[16], ins[96];
  snprintf(wn, sizeof wn, "w%d", layer);
  snprintf(rn, sizeof rn, "r%d", layer);
  snprintf(bn, sizeof bn, "b%d", layer);
  snprintf(pn, sizeof pn, "p%d", layer);
  gc_const(c, wn, 3, w, NULL, -k, k);
  gc_const(c, rn, 3, r, NULL, -k, k);
  gc_const(c, bn, 2, b, NULL, -k, k);
  if (peephole)
    gc_const(c, pn, 2, pp, NULL, -k, k);
  snprintf(ins, sizeof ins, "%s,%s,%s,%s%s%s", x, wn, rn, bn,
           peephole ? ",,,," : "", peephole ? pn : "");
  gc_node(c, op, ins, y);
  gc_int(c, "hidden_size", HIDDEN);
  gc_str(c, "direction", "bidirectional");
  if (strcmp(op, "GRU") == 0)
    gc_int(c, "linear_before_reset", lbr);
}

/* PyTorch's nn.LSTM / nn.GRU(bidirectional=True, num_layers=2) as it
 * exports them: layer, Transpose(0, 2, 1, 3), Reshape [SEQ, BATCH,
 * 2 * HIDDEN], layer. peephole: the first layer has peepholes. */
static void build_stack(gcase *c, const char *op, int peephole, int lbr) {
  int64_t x[3] = {SEQ, BATCH, INPUT};
  const int64_t shape[3] = {SEQ, BATCH, 2 * HIDDEN};
  gc_init(c, 14);
  c->lo = -2.0f;
  c->hi = 2.0f;
  gc_input(c, "x", 3, x);
  rnn_layer(c, op, 1, "x", INPUT, peephole, lbr, "y1");
  gc_node(c, "Transpose", "y1", "t1");
  GC_INTS(c, "perm", 0, 2, 1, 3);
  gc_const_i64(c, "shape", 3, shape);
  gc_node(c, "Reshape", "t1,shape", "x2");
  rnn_layer(c, op, 2, "x2", 2 * HIDDEN, 0, lbr, "y2");
  gc_output(c, "y2");
}

/* The model of c on the hybrid "onednn" runtime at INT8 with `params`:
 * its output into *out, and each segment as "precision:nodes" into segs
 * ("fp32:1 int8:3"). */
static int hybrid_int8(gcase *c, prepared *p, const mb_quant_params *params,
                       mb_tensor **out, char *segs, size_t size) {
  const mb_runtime *rt = mb__runtime_find("onednn");
  mb_runtime_options o = {
      .threads = 1,
      .precision = MB_PRECISION_INT8,
      .example_inputs = (const mb_tensor *const *)p->inputs,
      .quant_params = params,
  };
  const mb_tensor *const *in = (const mb_tensor *const *)p->inputs;
  void *session = NULL;
  mb_profile prof;
  memset(&prof, 0, sizeof prof);
  ASSERT(rt);
  ASSERT_OK(rt->prepare(c->model, NULL, 0, &o, &session, &c->err), &c->err);
  ASSERT_OK(rt->run(session, in, &c->err), &c->err);
  ASSERT_OK(rt->fetch_outputs(session, out, &c->err), &c->err);
  rt->profile_reset(session, 1);
  ASSERT_OK(rt->run(session, in, &c->err), &c->err);
  prof.iterations = 1;
  ASSERT_OK(rt->profile_collect(session, &prof, &c->err), &c->err);
  size_t used = 0;
  segs[0] = '\0';
  for (int i = 0; i < prof.n_segments; i++) {
    const mb_profile_segment *s = &prof.segments[i];
    used += (size_t)snprintf(segs + used, size - MB_MIN(used, size), "%s%s:%d",
                             i ? " " : "", s->precision, s->nodes);
  }
  mb__profile_clear(&prof);
  rt->release(session);
  return 0;
}

/* Calibrates c's model and runs it at INT8: the segments must read
 * `want_segs`; every output must be within int8 accuracy of the reference
 * (cosine >= 0.99, and not fp32-exact: int8 ran) or, when exact, within
 * 1e-4 (fp32 through and through). Frees the case. */
static int int8_case(gcase *c, const char *what, const char *want_segs,
                     int exact) {
  prepared p;
  mb_tensor *ref[8] = {0}, *got[8] = {0};
  mb_quant_params *params = NULL;
  mb_quant_options qo = {0};
  char segs[256];
  int rc = 1;
  if (prepare(c, &p) || run_reference(c, &p, ref) ||
      int8_params(c, &p, &qo, &params) ||
      hybrid_int8(c, &p, params, got, segs, sizeof segs))
    goto done;
  printf("  %s: segments %s\n", what, segs);
  if (strcmp(segs, want_segs) != 0) {
    fprintf(stderr, "  segments \"%s\", want \"%s\"\n", segs, want_segs);
    goto done;
  }
  for (int j = 0; j < p.desc.n_outputs; j++) {
    double e = normalised_error(got[j], ref[j]), cs = cosine(got[j], ref[j]);
    printf("    output %d: cosine %.6f, normalised error %.3g\n", j, cs, e);
    if (exact ? !(e <= 1e-4) : !(cs >= 0.99) || !(e > 1e-6)) {
      fprintf(stderr, "  output %d: cosine %.6f, normalised error %g: not %s\n",
              j, cs, e, exact ? "fp32" : "int8 accuracy");
      goto done;
    }
  }
  rc = 0;
done:
  mb__quant_params_free(params);
  for (int j = 0; j < 8; j++) {
    mb_tensor_free(ref[j]);
    mb_tensor_free(got[j]);
  }
  prepared_free(&p);
  gc_free(c);
  return rc;
}

static int stack_case(const char *op, int peephole, int lbr,
                      const char *want_segs, int exact) {
  gcase c;
  char what[64];
  snprintf(what, sizeof what, "%s peephole %d lbr %d", op, peephole, lbr);
  build_stack(&c, op, peephole, lbr);
  return int8_case(&c, what, want_segs, exact);
}

/* Both layers, the transpose and the reshape in one int8 segment. */
TEST(int8_lstm_2layer_bidirectional) {
  SKIP_UNLESS_AVAILABLE();
  return stack_case("LSTM", 0, 0, "int8:4", 0);
}

/* Peepholes: the first layer runs in an fp32 segment of its own. */
TEST(int8_lstm_peephole_runs_fp32) {
  SKIP_UNLESS_AVAILABLE();
  return stack_case("LSTM", 1, 0, "fp32:1 int8:3", 0);
}

TEST(int8_gru_2layer_bidirectional) {
  SKIP_UNLESS_AVAILABLE();
  return stack_case("GRU", 0, 0, "int8:4", 0);
}

/* PyTorch's GRU (linear_before_reset = 1): no int8 form in oneDNN 2.6,
 * so both layers run in fp32 segments, exactly. */
TEST(int8_gru_linear_before_reset_runs_fp32) {
  SKIP_UNLESS_AVAILABLE();
  return stack_case("GRU", 0, 1, "fp32:1 int8:2 fp32:1", 1);
}

/* One bidirectional LSTM with its states: initial h and c given (graph
 * inputs, calibrated) or h alone (c zero), every output read (the final h
 * dequantised from oneDNN's u8), in both layouts. */
TEST(int8_lstm_states_and_layouts) {
  SKIP_UNLESS_AVAILABLE();
  for (int layout = 0; layout < 2; layout++) {
    for (int with_c = 0; with_c < 2; with_c++) {
      gcase c;
      char what[64];
      int64_t x[3] = {layout ? BATCH : SEQ, layout ? SEQ : BATCH, INPUT};
      int64_t st[3] = {layout ? BATCH : 2, layout ? 2 : BATCH, HIDDEN};
      int64_t w[3] = {2, 4 * HIDDEN, INPUT}, r[3] = {2, 4 * HIDDEN, HIDDEN};
      float k = 1.0f / sqrtf((float)HIDDEN);
      gc_init(&c, 14);
      c.lo = -1.5f;
      c.hi = 1.5f;
      gc_input(&c, "x", 3, x);
      gc_input(&c, "h0", 3, st);
      if (with_c)
        gc_input(&c, "c0", 3, st);
      gc_const(&c, "w", 3, w, NULL, -k, k);
      gc_const(&c, "r", 3, r, NULL, -k, k);
      gc_node(&c, "LSTM", with_c ? "x,w,r,,,h0,c0" : "x,w,r,,,h0",
              with_c ? "y,yh,yc" : "y,yh");
      gc_int(&c, "hidden_size", HIDDEN);
      gc_str(&c, "direction", "bidirectional");
      gc_int(&c, "layout", layout);
      gc_output(&c, "y");
      gc_output(&c, "yh");
      if (with_c)
        gc_output(&c, "yc");
      snprintf(what, sizeof what, "LSTM layout %d, initial c %d", layout,
               with_c);
      if (int8_case(&c, what, "int8:1", 0))
        TEST_FAIL_("%s failed", what);
    }
  }
  return 0;
}

/* Compiled directly at INT8, a form without int8 is MB_STATUS_UNSUPPORTED
 * naming why (the hybrid layer's cue to cut it out), and node_precision
 * says which nodes those are: also without any calibrated range. */
TEST(int8_rnn_node_precision) {
  SKIP_UNLESS_AVAILABLE();
  gcase c;
  prepared p;
  mb_quant_params empty;
  memset(&empty, 0, sizeof empty);
  build_stack(&c, "LSTM", 1, 0);
  if (prepare(&c, &p))
    return 1;
  mb_engine_options eo = {1, MB_PRECISION_INT8, 0, &empty};
  void *compiled = NULL;
  mb_status s = engine->compile(&p.desc, &eo, &compiled, &c.err);
  int rc = 1;
  if (s != MB_STATUS_UNSUPPORTED || compiled ||
      !strstr(c.err.message, "peepholes")) {
    fprintf(stderr, "  peephole LSTM at int8: status %d, '%s'\n", s,
            c.err.message);
    engine->release(compiled);
    goto done;
  }
  /* node 0: the peephole LSTM; node 3: the second LSTM, uncalibrated. */
  for (int i = 0; i < p.desc.n_nodes; i++) {
    int want = i != 0 && i != 3;
    if (engine->node_precision(&p.eg, i, &eo) != want) {
      fprintf(stderr, "  node %d (%s): node_precision %d, want %d\n", i,
              c.g->nodes[i].op_type, !want, want);
      goto done;
    }
  }
  rc = 0;
done:
  prepared_free(&p);
  gc_free(&c);
  return rc;
}

TEST_MAIN(TEST_ENTRY(int8_lstm_2layer_bidirectional),
          TEST_ENTRY(int8_lstm_peephole_runs_fp32),
          TEST_ENTRY(int8_gru_2layer_bidirectional),
          TEST_ENTRY(int8_gru_linear_before_reset_runs_fp32),
          TEST_ENTRY(int8_lstm_states_and_layouts),
          TEST_ENTRY(int8_rnn_node_precision))
