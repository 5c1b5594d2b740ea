/* The recurrent operators (RNN, GRU, LSTM) of the reference interpreter
 * against ONNX Runtime, which implements them independently: one table row
 * per combination of direction, biases, initial states, sequence lengths,
 * peepholes, clip, activations and their parameters, layout and element
 * type. Weights and inputs are seeded from the row's name. A row ORT does
 * not run (it lacks some combinations) is compared with the same model in
 * the other layout on our own interpreter instead, which the conformance
 * suite anchors. Plus the error paths a user can reach: a bad direction,
 * a W of the wrong shape, an out-of-range sequence length. */
#include "op_harness.h"

#define TOLERANCE 1e-4

typedef struct rnn_case {
  const char *name;
  const char *op; /* "RNN", "GRU", "LSTM" */
  const char *direction;
  int64_t seq, batch, input, hidden;
  bool bias, h0, c0, peep;
  const int32_t *lens; /* batch entries, or NULL */
  int64_t layout, linear_before_reset, input_forget;
  float clip;                  /* 0: none */
  const char *activations;     /* comma-separated, or NULL */
  const float *alphas, *betas; /* 0-terminated lists, or NULL */
  mb_dtype dtype; /* UNDEFINED: float32; others compare with ORT's float32 */
  bool ort_lacks; /* ORT lacks layout 1: compare with our layout 0 */
} rnn_case;

static const int32_t lens_3[] = {5, 2, 4};
static const int32_t lens_2[] = {3, 1};
static const float alphas_lstm[] = {0.3f, 0.7f, 1.5f, 0.2f, 0};
static const float betas_lstm[] = {0.4f, 0.9f, 0};
static const float alpha_leaky[] = {0.2f, 0};

static const rnn_case cases[] = {
    {"lstm/forward_plain", "LSTM", "forward", 4, 2, 3, 5},
    {"lstm/forward_all_inputs_lens", "LSTM", "forward", 5, 3, 4, 6, true, true,
     true, true, lens_3},
    {"lstm/reverse_lens_peepholes", "LSTM", "reverse", 5, 3, 4, 6, true, true,
     true, true, lens_3},
    {"lstm/bidirectional", "LSTM", "bidirectional", 6, 2, 5, 7, true, true,
     true, false},
    {"lstm/bidirectional_lens_clip", "LSTM", "bidirectional", 3, 2, 4, 5, true,
     true, true, true, lens_2, 0, 0, 0, 0.5f},
    {"lstm/input_forget", "LSTM", "forward", 4, 2, 3, 4, true, false, false,
     true, NULL, 0, 0, 1},
    {"lstm/activations", "LSTM", "bidirectional", 4, 2, 3, 4, true, true, true,
     false, NULL, 0, 0, 0, 0,
     "HardSigmoid,ScaledTanh,Softsign,Sigmoid,Tanh,LeakyRelu", alphas_lstm,
     betas_lstm},
    {"lstm/layout1_bidirectional", "LSTM", "bidirectional", 5, 3, 4, 6, true,
     true, true, true, lens_3, 1, .ort_lacks = true},
    {"lstm/double", "LSTM", "bidirectional", 4, 2, 3, 5, true, true, true, true,
     .dtype = MB_DTYPE_DOUBLE},
    {"lstm/wide", "LSTM", "bidirectional", 12, 4, 40, 48, true, true, true,
     false},
    {"gru/forward_reset_after", "GRU", "forward", 5, 3, 4, 6, true, true, false,
     false, lens_3, 0, 0},
    {"gru/forward_linear_before_reset", "GRU", "forward", 5, 3, 4, 6, true,
     true, false, false, lens_3, 0, 1},
    {"gru/reverse", "GRU", "reverse", 5, 3, 4, 6, true, true, false, false,
     lens_3},
    {"gru/bidirectional_clip", "GRU", "bidirectional", 4, 2, 3, 5, true, true,
     false, false, NULL, 0, 1, 0, 0.7f},
    {"gru/activations", "GRU", "bidirectional", 4, 2, 3, 5, true, false, false,
     false, NULL, 0, 0, 0, 0, "Sigmoid,Relu,HardSigmoid,Tanh", alphas_lstm,
     betas_lstm},
    {"gru/layout1", "GRU", "bidirectional", 4, 2, 3, 5, true, true, false,
     false, lens_2, 1, 1, .ort_lacks = true},
    {"rnn/forward", "RNN", "forward", 5, 3, 4, 6, true, true, false, false,
     lens_3},
    {"rnn/bidirectional_relu", "RNN", "bidirectional", 4, 2, 3, 5, true, true,
     false, false, NULL, 0, 0, 0, 0, "Relu,LeakyRelu", alpha_leaky},
    {"rnn/reverse_no_bias", "RNN", "reverse", 6, 2, 3, 4, false, false, false,
     false, lens_2},
    {"rnn/layout1", "RNN", "bidirectional", 5, 3, 3, 5, true, true, false,
     false, lens_3, 1, .ort_lacks = true},
};

/* ---- building one model ---- */

static uint32_t seed_of(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++)
    h = (h ^ (uint8_t)*s) * 16777619u;
  return h;
}

static double next_value(uint32_t *state) {
  *state = *state * 1664525u + 1013904223u;
  return ((*state >> 8) / 16777216.0) * 2.0 - 1.0;
}

static void fill(mb_tensor *t, uint32_t *state, double scale) {
  for (int64_t i = 0; i < t->numel; i++)
    mb__tensor_set_f64(t, i, next_value(state) * scale);
}

static int gates_of(const char *op) {
  return strcmp(op, "LSTM") == 0 ? 4 : strcmp(op, "GRU") == 0 ? 3 : 1;
}

static void set_strings(graph_builder *b, const char *name, const char *csv) {
  if (gb_failed(b))
    return;
  mb_arena *arena = b->model->arena;
  mb_attr a = {.type = MB_ATTR_STRINGS};
  a.name = mb__arena_strdup(arena, name);
  a.strings = mb__arena_alloc(arena, sizeof(char *) * 8);
  char *copy = mb__arena_strdup(arena, csv);
  for (char *tok = strtok(copy, ","); tok && a.n < 8; tok = strtok(NULL, ","))
    a.strings[a.n++] = tok;
  mb__node_add_attr(b->graph, b->last_node, &a, &b->err);
}

static void set_floats(graph_builder *b, const char *name, const float *v) {
  int n = 0;
  while (v[n] != 0)
    n++;
  if (!gb_failed(b))
    mb__node_set_floats(b->graph, b->last_node, name, n, v, &b->err);
}

/* The model of a case at `layout` and element type `dt`, and its inputs
 * (X, initial_h, initial_c as present). Weights and data depend only on the
 * name, so every layout and type of a case sees the same numbers. */
static mb_model *build(const rnn_case *c, int64_t layout, mb_dtype dt,
                       mb_tensor **inputs, int *n_inputs) {
  graph_builder b;
  uint32_t state = seed_of(c->name);
  int dirs = strcmp(c->direction, "bidirectional") == 0 ? 2 : 1;
  int64_t gh = gates_of(c->op) * c->hidden;
  int64_t x_dims[3] = {c->seq, c->batch, c->input};
  int64_t h_dims[3] = {dirs, c->batch, c->hidden};
  int64_t w_dims[3] = {dirs, gh, c->input}, r_dims[3] = {dirs, gh, c->hidden};
  int64_t b_dims[2] = {dirs, 2 * gh}, p_dims[2] = {dirs, 3 * c->hidden};
  int64_t len_dims[1] = {c->batch};
  bool lstm = strcmp(c->op, "LSTM") == 0;
  mb_tensor *x = tensor_of(dt, 3, x_dims, NULL);
  mb_tensor *h0 = c->h0 ? tensor_of(dt, 3, h_dims, NULL) : NULL;
  mb_tensor *c0 = c->c0 ? tensor_of(dt, 3, h_dims, NULL) : NULL;
  mb_tensor *w = tensor_of(dt, 3, w_dims, NULL),
            *r = tensor_of(dt, 3, r_dims, NULL);
  mb_tensor *bias = tensor_of(dt, 2, b_dims, NULL),
            *p = tensor_of(dt, 2, p_dims, NULL);
  fill(x, &state, 1.0);
  if (h0)
    fill(h0, &state, 0.5);
  if (c0)
    fill(c0, &state, 0.5);
  fill(w, &state, 0.6);
  fill(r, &state, 0.6);
  fill(bias, &state, 0.3);
  fill(p, &state, 0.4);
  gb_init(&b, 14);
  /* The data is made in layout 0; layout 1 swaps the first two axes. */
  mb_tensor *views[3] = {x, h0, c0};
  for (int i = 0; i < 3 && layout == 1; i++) {
    mb_tensor *t = views[i];
    if (!t)
      continue;
    mb_tensor *u = tensor_of(dt, 3, t->dims, NULL);
    int64_t d0 = t->dims[0], d1 = t->dims[1], inner = t->dims[2];
    size_t es = mb_dtype_size(dt);
    for (int64_t a = 0; a < d0; a++)
      for (int64_t bb = 0; bb < d1; bb++)
        memcpy((char *)u->data + ((bb * d0 + a) * inner) * es,
               (char *)t->data + ((a * d1 + bb) * inner) * es,
               (size_t)inner * es);
    u->dims[0] = d1;
    u->dims[1] = d0;
    mb_tensor_free(t);
    views[i] = u;
  }
  x = views[0];
  h0 = views[1];
  c0 = views[2];
  gb_input(&b, "X", dt, 3, x->dims);
  if (h0)
    gb_input(&b, "initial_h", dt, 3, h0->dims);
  if (c0)
    gb_input(&b, "initial_c", dt, 3, c0->dims);
  const char *wn = gb_const(&b, dt, 3, w_dims, NULL);
  const char *rn = gb_const(&b, dt, 3, r_dims, NULL);
  const char *bn = c->bias ? gb_const(&b, dt, 2, b_dims, NULL) : "";
  const char *pn = c->peep ? gb_const(&b, dt, 2, p_dims, NULL) : "";
  const char *ln = "";
  if (c->lens) {
    ln = gb_const(&b, MB_DTYPE_INT32, 1, len_dims, NULL);
  }
  if (!gb_failed(&b)) {
    /* gb_const made zeros: copy the weights in. */
    const mb_graph *g = b.graph;
    memcpy(g->values[mb__graph_find_value(g, wn)].initializer->data, w->data,
           w->nbytes);
    memcpy(g->values[mb__graph_find_value(g, rn)].initializer->data, r->data,
           r->nbytes);
    if (c->bias)
      memcpy(g->values[mb__graph_find_value(g, bn)].initializer->data,
             bias->data, bias->nbytes);
    if (c->peep)
      memcpy(g->values[mb__graph_find_value(g, pn)].initializer->data, p->data,
             p->nbytes);
    if (c->lens)
      memcpy(g->values[mb__graph_find_value(g, ln)].initializer->data, c->lens,
             sizeof(int32_t) * (size_t)c->batch);
  }
  const char *in[8] = {
      "X", wn, rn, bn, ln, h0 ? "initial_h" : "", c0 ? "initial_c" : "", pn};
  const char *outs[3] = {"Y", "Y_h", "Y_c"};
  gb_node_outs(&b, c->op, lstm ? 8 : 6, in, lstm ? 3 : 2, outs);
  gb_int(&b, "hidden_size", c->hidden);
  if (!gb_failed(&b))
    mb__node_set_string(b.graph, b.last_node, "direction", c->direction,
                        &b.err);
  if (layout)
    gb_int(&b, "layout", layout);
  if (c->linear_before_reset)
    gb_int(&b, "linear_before_reset", 1);
  if (c->input_forget)
    gb_int(&b, "input_forget", 1);
  if (c->clip > 0)
    gb_float(&b, "clip", c->clip);
  if (c->activations)
    set_strings(&b, "activations", c->activations);
  if (c->alphas)
    set_floats(&b, "activation_alpha", c->alphas);
  if (c->betas)
    set_floats(&b, "activation_beta", c->betas);
  int64_t y_dims[4] = {c->seq, dirs, c->batch, c->hidden};
  int64_t yh_dims[3] = {dirs, c->batch, c->hidden};
  if (layout) {
    int64_t yb[4] = {c->batch, c->seq, dirs, c->hidden};
    memcpy(y_dims, yb, sizeof y_dims);
    yh_dims[0] = c->batch;
    yh_dims[1] = dirs;
  }
  gb_output(&b, "Y", dt, 4, y_dims);
  gb_output(&b, "Y_h", dt, 3, yh_dims);
  if (lstm)
    gb_output(&b, "Y_c", dt, 3, yh_dims);
  *n_inputs = 0;
  inputs[(*n_inputs)++] = x;
  if (h0)
    inputs[(*n_inputs)++] = h0;
  if (c0)
    inputs[(*n_inputs)++] = c0;
  mb_tensor_free(w);
  mb_tensor_free(r);
  mb_tensor_free(bias);
  mb_tensor_free(p);
  return gb_finish(&b);
}

/* max |got - want| <= TOLERANCE * max(1, max |want|), output by output.
 * `swap` compares a layout-1 result with a layout-0 one. */
static int compare(const rnn_case *c, mb_tensor **got, mb_tensor **want, int n,
                   bool swap) {
  for (int o = 0; o < n; o++) {
    const mb_tensor *g = got[o], *w = want[o];
    if (g->numel != w->numel)
      TEST_FAIL_("%s output %d: %lld vs %lld elements", c->name, o,
                 (long long)g->numel, (long long)w->numel);
    double scale = 1.0, worst = 0.0;
    for (int64_t i = 0; i < w->numel; i++)
      scale = fmax(scale, fabs(mb__tensor_get_f64(w, i)));
    for (int64_t i = 0; i < g->numel; i++) {
      int64_t j = i;
      if (swap) { /* g is layout 1: Y [b,s,d,h], Y_h [b,d,h] */
        int64_t h = g->dims[g->rank - 1];
        if (g->rank == 4) {
          int64_t bb = i / (g->dims[1] * g->dims[2] * h),
                  s = i / (g->dims[2] * h) % g->dims[1], d = i / h % g->dims[2];
          j = ((s * w->dims[1] + d) * w->dims[2] + bb) * h + i % h;
        } else {
          int64_t bb = i / (g->dims[1] * h), d = i / h % g->dims[1];
          j = (d * w->dims[1] + bb) * h + i % h;
        }
      }
      worst = fmax(worst,
                   fabs(mb__tensor_get_f64(g, i) - mb__tensor_get_f64(w, j)));
    }
    if (!(worst <= TOLERANCE * scale))
      TEST_FAIL_("%s output %d: max abs error %g (scale %g)", c->name, o, worst,
                 scale);
  }
  return 0;
}

static int check_case(const rnn_case *c) {
  mb_tensor *inputs[3] = {0}, *inputs0[3] = {0};
  mb_tensor *got[3] = {0}, *want[3] = {0};
  int n_in = 0, n_in0 = 0, rc = 1;
  int n_out = strcmp(c->op, "LSTM") == 0 ? 3 : 2;
  mb_dtype dt = c->dtype ? c->dtype : MB_DTYPE_FLOAT;
  mb_model *model = build(c, c->layout, dt, inputs, &n_in), *model0 = NULL;
  if (!model)
    goto done;
  if (run_reference(model, inputs, got))
    goto done;
  if (c->ort_lacks) {
    if (!(model0 = build(c, 0, dt, inputs0, &n_in0)) ||
        run_reference(model0, inputs0, want))
      goto done;
    rc = compare(c, got, want, n_out, c->layout == 1);
    goto done;
  }
  /* ORT runs these operators in float32 only: compare other types with
   * the float32 model on the same numbers. */
  if (dt != MB_DTYPE_FLOAT &&
      !(model0 = build(c, c->layout, MB_DTYPE_FLOAT, inputs0, &n_in0)))
    goto done;
  int ort = model0 ? run_onnxruntime(model0, inputs0, want)
                   : run_onnxruntime(model, inputs, want);
  if (ort < 0) {
    const char *require = getenv("MB_REQUIRE_ORT");
    rc = require && strcmp(require, "1") == 0;
    goto done;
  }
  rc = ort ? 1 : compare(c, got, want, n_out, false);
done:
  free_tensors(inputs, 3);
  free_tensors(inputs0, 3);
  free_tensors(got, 3);
  free_tensors(want, 3);
  mb_model_free(model);
  mb_model_free(model0);
  return rc;
}

TEST(every_case_matches) {
  int failed = 0;
  for (size_t i = 0; i < MB_ARRAY_COUNT(cases); i++) {
    int rc = check_case(&cases[i]);
    printf("  %-34s %s\n", cases[i].name, rc ? "FAIL" : "ok");
    failed += rc;
  }
  ASSERT_EQ(failed, 0);
  return 0;
}

/* A session of a case with one attribute or initializer changed, run; the
 * error must name the node's op and the fault. */
static int expect_error(const rnn_case *c, void (*spoil)(mb_model *),
                        const char *needle) {
  mb_tensor *inputs[3] = {0}, *out[3] = {0};
  int n_in = 0;
  mb_error err = {0};
  mb_session *s = NULL;
  mb_model *model = build(c, 0, MB_DTYPE_FLOAT, inputs, &n_in);
  ASSERT(model);
  spoil(model);
  mb_status st = mb_session_create(model, NULL, &s, &err);
  if (!st)
    st = mb_session_run(s, n_in, (const mb_tensor *const *)inputs,
                        mb_model_output_count(model), out, &err);
  mb_session_free(s);
  mb_model_free(model);
  free_tensors(inputs, 3);
  free_tensors(out, 3);
  ASSERT_NE(st, MB_STATUS_OK);
  ASSERT_CONTAINS(err.message, c->op);
  ASSERT_CONTAINS(err.message, needle);
  return 0;
}

static void spoil_direction(mb_model *m) {
  mb_attr *a = (mb_attr *)mb__node_attr(&m->graph->nodes[0], "direction");
  a->s = "sideways";
}
static void spoil_w(mb_model *m) {
  mb_tensor *w = m->graph->values[m->graph->nodes[0].inputs[1]].initializer;
  w->dims[2] -= 1;
  w->numel = w->dims[0] * w->dims[1] * w->dims[2];
  w->nbytes = (size_t)w->numel * mb_dtype_size(w->dtype);
}
static void spoil_lens(mb_model *m) {
  mb_tensor *l = m->graph->values[m->graph->nodes[0].inputs[4]].initializer;
  ((int32_t *)l->data)[1] = 99;
}
static void spoil_activation(mb_model *m) {
  mb_attr *a = (mb_attr *)mb__node_attr(&m->graph->nodes[0], "activations");
  a->strings[0] = "Swish";
}

TEST(bad_attributes_and_shapes_fail_cleanly) {
  if (expect_error(&cases[1], spoil_direction, "sideways") ||
      expect_error(&cases[1], spoil_w, "W has shape") ||
      expect_error(&cases[1], spoil_lens, "sequence_lens[1] = 99") ||
      expect_error(&cases[6], spoil_activation, "'Swish'"))
    return 1;
  return 0;
}

TEST_MAIN(TEST_ENTRY(every_case_matches),
          TEST_ENTRY(bad_attributes_and_shapes_fail_cleanly))
