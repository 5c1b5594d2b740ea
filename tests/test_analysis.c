/* Tests of model analysis (FLOPs, parameters), input shape resolution,
 * generated inputs and the JSON writer. Models are built with the IR
 * builder so every expected number can be worked out by hand. */
#include "core/ir.h"
#include "core/json_write.h"
#include "test.h"

#define CHECK_INDEX(call)                                                      \
  do {                                                                         \
    if ((call) < 0)                                                            \
      goto fail;                                                               \
  } while (0)
#define CHECK_OK(call)                                                         \
  do {                                                                         \
    if ((call) != MB_STATUS_OK)                                                \
      goto fail;                                                               \
  } while (0)

static int add_f32(mb_graph *g, const char *name, int rank, const int64_t *dims,
                   mb_error *err) {
  mb_tensor *t = NULL;
  if (mb_tensor_create(MB_DTYPE_FLOAT, rank, dims, &t, err) != MB_STATUS_OK)
    return -1;
  float *p = t->data;
  for (int64_t i = 0; i < t->numel; i++)
    p[i] = (float)((i % 7) - 3) * 0.1f;
  return mb__graph_add_initializer(g, name, t, err);
}

/* x[batch,3,8,8] -> Conv(4x3x3x3, bias, pads 1) -> Relu -> Flatten ->
 * Gemm(256x10, bias) -> y[batch,10]. */
static mb_model *build_conv_gemm(mb_error *err) {
  static const int64_t x_dims[] = {-1, 3, 8, 8}, w_dims[] = {4, 3, 3, 3},
                       b_dims[] = {4}, w2_dims[] = {256, 10}, b2_dims[] = {10},
                       y_dims[] = {-1, 10}, pads[] = {1, 1, 1, 1};
  static const char *const x_params[] = {"batch", NULL, NULL, NULL};
  static const char *const y_params[] = {"batch", NULL};
  mb_model *m = mb__model_create();
  if (!m)
    return NULL;
  mb_graph *g = m->graph;
  const char *conv_in[] = {"x", "w", "b"}, *conv_out[] = {"c"};
  const char *relu_in[] = {"c"}, *relu_out[] = {"r"};
  const char *flat_in[] = {"r"}, *flat_out[] = {"f"};
  const char *gemm_in[] = {"f", "w2", "b2"}, *gemm_out[] = {"y"};
  int conv;
  CHECK_OK(mb__model_set_opset(m, "", 17, err));
  CHECK_INDEX(
      mb__graph_add_input(g, "x", MB_DTYPE_FLOAT, 4, x_dims, x_params, err));
  CHECK_INDEX(add_f32(g, "w", 4, w_dims, err));
  CHECK_INDEX(add_f32(g, "b", 1, b_dims, err));
  CHECK_INDEX(add_f32(g, "w2", 2, w2_dims, err));
  CHECK_INDEX(add_f32(g, "b2", 1, b2_dims, err));
  CHECK_INDEX(conv = mb__graph_add_node(g, "Conv", "", "conv", 3, conv_in, 1,
                                        conv_out, err));
  CHECK_OK(mb__node_set_ints(g, conv, "pads", 4, pads, err));
  CHECK_INDEX(
      mb__graph_add_node(g, "Relu", "", "relu", 1, relu_in, 1, relu_out, err));
  CHECK_INDEX(mb__graph_add_node(g, "Flatten", "", "flatten", 1, flat_in, 1,
                                 flat_out, err));
  CHECK_INDEX(
      mb__graph_add_node(g, "Gemm", "", "fc", 3, gemm_in, 1, gemm_out, err));
  CHECK_INDEX(
      mb__graph_add_output(g, "y", MB_DTYPE_FLOAT, 2, y_dims, y_params, err));
  CHECK_OK(mb__graph_finalize(g, err));
  return m;
fail:
  mb_model_free(m);
  return NULL;
}

/* Inputs: x[batch,seq,16] float, ids[batch,8] int64, mask[4] bool; one
 * Identity per input so the graph has outputs. */
static mb_model *build_dynamic(mb_error *err) {
  static const int64_t x_dims[] = {-1, -1, 16}, ids_dims[] = {-1, 8},
                       mask_dims[] = {4};
  static const char *const x_params[] = {"batch", "seq", NULL};
  static const char *const ids_params[] = {"batch", NULL};
  static const char *const names[][2] = {
      {"x", "x_out"}, {"ids", "ids_out"}, {"mask", "mask_out"}};
  mb_model *m = mb__model_create();
  if (!m)
    return NULL;
  mb_graph *g = m->graph;
  CHECK_OK(mb__model_set_opset(m, "", 17, err));
  CHECK_INDEX(
      mb__graph_add_input(g, "x", MB_DTYPE_FLOAT, 3, x_dims, x_params, err));
  CHECK_INDEX(mb__graph_add_input(g, "ids", MB_DTYPE_INT64, 2, ids_dims,
                                  ids_params, err));
  CHECK_INDEX(
      mb__graph_add_input(g, "mask", MB_DTYPE_BOOL, 1, mask_dims, NULL, err));
  for (int i = 0; i < 3; i++) {
    CHECK_INDEX(mb__graph_add_node(g, "Identity", "", names[i][1], 1,
                                   &names[i][0], 1, &names[i][1], err));
    CHECK_INDEX(mb__graph_add_output(g, names[i][1], MB_DTYPE_UNDEFINED, -1,
                                     NULL, NULL, err));
  }
  CHECK_OK(mb__graph_finalize(g, err));
  return m;
fail:
  mb_model_free(m);
  return NULL;
}

static const mb_op_stats *find_op(const mb_model_stats *s,
                                  const char *op_type) {
  for (int i = 0; i < s->n_ops; i++)
    if (strcmp(s->ops[i].op_type, op_type) == 0)
      return &s->ops[i];
  return NULL;
}

TEST(conv_gemm_flops) {
  mb_error err_ = {0}, *err = &err_;
  mb_model_stats s;
  mb_model *m = build_conv_gemm(err);
  ASSERT(m != NULL);
  ASSERT_OK(mb_model_analyze(m, NULL, &s, err), err);
  ASSERT_EQ(s.node_count, 4);
  ASSERT_EQ(s.n_inputs, 1);
  ASSERT_STR_EQ(s.inputs[0].dim_params[0], "batch");
  /* 4*3*3*3 + 4 + 256*10 + 10 float parameters. */
  ASSERT_EQ(s.param_count, 2682);
  ASSERT_EQ(s.param_bytes, 2682 * 4);
  ASSERT_EQ(s.unknown_flops_nodes, 0);
  const mb_op_stats *conv = find_op(&s, "Conv"), *relu = find_op(&s, "Relu"),
                    *flat = find_op(&s, "Flatten"), *gemm = find_op(&s, "Gemm");
  ASSERT(conv && relu && flat && gemm);
  /* Conv: 2 * (1*4*8*8 outputs) * (3*3*3) + 256 bias adds. */
  ASSERT_NEAR(conv->flops, 2.0 * 256 * 27 + 256, 0);
  ASSERT_NEAR(relu->flops, 256, 0);
  ASSERT_EQ(flat->has_formula, 0);
  ASSERT_NEAR(flat->flops, 0, 0);
  /* Gemm: 2 * M(1) * N(10) * K(256) + 10 bias adds. */
  ASSERT_NEAR(gemm->flops, 2.0 * 10 * 256 + 10, 0);
  ASSERT_NEAR(s.total_flops, 14080 + 256 + 5130, 0);
  /* The histogram is sorted by FLOPs; nodes point into it. */
  ASSERT_STR_EQ(s.ops[0].op_type, "Conv");
  ASSERT_EQ(s.n_nodes, 4);
  ASSERT_STR_EQ(s.ops[s.nodes[3].op_index].op_type, "Gemm");
  ASSERT_NEAR(s.nodes[3].flops, 5130, 0);
  ASSERT_EQ(s.output_shapes[0].rank, 2);
  ASSERT_EQ(s.output_shapes[0].dims[1], 10);
  mb_model_stats_free(&s);

  /* Batch 2 doubles everything. */
  mb_shape_spec spec = {2, 0, NULL};
  ASSERT_OK(mb_model_analyze(m, &spec, &s, err), err);
  ASSERT_NEAR(s.total_flops, 2.0 * (14080 + 256 + 5130), 0);
  ASSERT_EQ(s.input_shapes[0].dims[0], 2);
  ASSERT_EQ(s.output_shapes[0].dims[0], 2);
  mb_model_stats_free(&s);
  mb_model_stats_free(&s); /* a zeroed struct is fine */
  mb_model_free(m);
  return 0;
}

TEST(stats_outlive_model) {
  mb_error err_ = {0}, *err = &err_;
  mb_model_stats s;
  mb_model *m = build_conv_gemm(err);
  ASSERT(m != NULL);
  ASSERT_OK(mb_model_analyze(m, NULL, &s, err), err);
  mb_model_free(m);
  ASSERT_STR_EQ(s.inputs[0].name, "x");
  ASSERT_STR_EQ(s.nodes[0].name, "conv");
  ASSERT(find_op(&s, "Gemm") != NULL);
  mb_model_stats_free(&s);
  return 0;
}

TEST(resolve_shapes) {
  mb_error err_ = {0}, *err = &err_;
  mb_input_shape shapes[3];
  mb_model *m = build_dynamic(err);
  ASSERT(m != NULL);

  /* seq is dynamic and not the first dim: the message says how to fix. */
  ASSERT_EQ(mb_model_resolve_input_shapes(m, NULL, shapes, err),
            MB_STATUS_DYNAMIC);
  ASSERT_CONTAINS(err->message, "'x'");
  ASSERT_CONTAINS(err->message, "dim 1");
  ASSERT_CONTAINS(err->message, "seq");
  ASSERT_CONTAINS(err->message, "--shape x=");

  /* An override for x; batch size fills ids' first dim. */
  mb_input_shape x = {"x", 3, {3, 5, 16}};
  mb_shape_spec spec = {4, 1, &x};
  ASSERT_OK(mb_model_resolve_input_shapes(m, &spec, shapes, err), err);
  ASSERT_STR_EQ(shapes[0].name, "x");
  ASSERT_EQ(shapes[0].dims[0], 3);
  ASSERT_EQ(shapes[0].dims[1], 5);
  ASSERT_EQ(shapes[1].rank, 2);
  ASSERT_EQ(shapes[1].dims[0], 4);
  ASSERT_EQ(shapes[1].dims[1], 8);
  ASSERT_EQ(shapes[2].rank, 1);
  ASSERT_EQ(shapes[2].dims[0], 4);

  /* An override naming no input lists the inputs. */
  mb_input_shape typo = {"xx", 3, {1, 2, 16}};
  mb_shape_spec bad = {0, 1, &typo};
  ASSERT_EQ(mb_model_resolve_input_shapes(m, &bad, shapes, err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err->message, "'xx'");
  ASSERT_CONTAINS(err->message, "'x', 'ids', 'mask'");

  /* Rank differs from the declared one. */
  mb_input_shape rank2 = {"x", 2, {1, 2}};
  bad.shapes = &rank2;
  ASSERT_EQ(mb_model_resolve_input_shapes(m, &bad, shapes, err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err->message, "rank 3");

  /* Byte size overflow. */
  mb_input_shape huge = {"x", 3, {INT64_C(1) << 40, INT64_C(1) << 40, 16}};
  bad.shapes = &huge;
  ASSERT_EQ(mb_model_resolve_input_shapes(m, &bad, shapes, err),
            MB_STATUS_OVERFLOW);
  ASSERT_CONTAINS(err->message, "'x'");

  /* analyze fails on an invalid spec but not on an unresolved dim. */
  mb_model_stats s;
  ASSERT_EQ(mb_model_analyze(m, &bad, &s, err), MB_STATUS_OVERFLOW);
  ASSERT(s.ops == NULL && s.storage_ == NULL);
  ASSERT_OK(mb_model_analyze(m, NULL, &s, err), err);
  ASSERT_CONTAINS(s.shape_note, "--shape");
  ASSERT(s.input_shapes == NULL);
  mb_model_stats_free(&s);
  mb_model_free(m);
  return 0;
}

TEST(generate_inputs) {
  mb_error err_ = {0}, *err = &err_;
  mb_tensor *a[3] = {NULL, NULL, NULL}, *b[3] = {NULL, NULL, NULL},
            *c[3] = {NULL, NULL, NULL};
  mb_model *m = build_dynamic(err);
  ASSERT(m != NULL);
  mb_input_shape x = {"x", 3, {2, 50, 16}};
  mb_shape_spec spec = {3, 1, &x};
  ASSERT_OK(mb_inputs_generate(m, &spec, 42, 0, NULL, a, err), err);
  ASSERT_OK(mb_inputs_generate(m, &spec, 42, 0, NULL, b, err), err);
  mb_input_range ranges[] = {{"ids", 5, 7}, {NULL, 10, 20}};
  ASSERT_OK(mb_inputs_generate(m, &spec, 43, 2, ranges, c, err), err);

  ASSERT_STR_EQ(a[0]->name, "x");
  ASSERT_EQ(a[0]->numel, 2 * 50 * 16);
  ASSERT_EQ(a[1]->dtype, MB_DTYPE_INT64);
  ASSERT_EQ(a[1]->dims[0], 3);
  ASSERT_EQ(a[2]->dtype, MB_DTYPE_BOOL);
  for (int i = 0; i < 3; i++) {
    ASSERT_EQ(a[i]->nbytes, b[i]->nbytes);
    ASSERT(memcmp(a[i]->data, b[i]->data, a[i]->nbytes) == 0);
  }
  ASSERT(memcmp(a[0]->data, c[0]->data, a[0]->nbytes) != 0);
  const float *xf = a[0]->data, *cf = c[0]->data;
  double sum = 0;
  for (int64_t i = 0; i < a[0]->numel; i++) {
    ASSERT(xf[i] >= -1.0f && xf[i] < 1.0f);
    ASSERT(cf[i] >= 10.0f && cf[i] <= 20.0f);
    sum += xf[i];
  }
  ASSERT(fabs(sum / (double)a[0]->numel) < 0.1); /* roughly centred */
  const int64_t *ids = a[1]->data, *cids = c[1]->data;
  for (int64_t i = 0; i < a[1]->numel; i++) {
    ASSERT(ids[i] >= 0 && ids[i] < 100);
    ASSERT(cids[i] >= 5 && cids[i] <= 7);
  }
  const uint8_t *mask = a[2]->data;
  for (int64_t i = 0; i < a[2]->numel; i++)
    ASSERT(mask[i] <= 1);
  /* The first value is fixed by the PRNG: generated data must be the same
   * on every machine. */
  mb_tensor *d[3] = {NULL, NULL, NULL};
  ASSERT_OK(mb_inputs_generate(m, &spec, 42, 0, NULL, d, err), err);
  ASSERT(memcmp(((float *)d[0]->data), xf, sizeof(float)) == 0);
  for (int i = 0; i < 3; i++) {
    mb_tensor_free(a[i]);
    mb_tensor_free(b[i]);
    mb_tensor_free(c[i]);
    mb_tensor_free(d[i]);
  }

  /* Without a shape for seq, generation fails and leaves no tensors. */
  ASSERT_EQ(mb_inputs_generate(m, NULL, 0, 0, NULL, a, err), MB_STATUS_DYNAMIC);
  ASSERT(a[0] == NULL && a[1] == NULL && a[2] == NULL);
  mb_model_free(m);
  return 0;
}

TEST(json_writer) {
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  ASSERT(f != NULL);
  mb_json j;
  mb__json_init(&j, f, false);
  mb__json_object_begin(&j);
  mb__json_kv_string(&j, "s", "a\"b\\c\n\x01\xff\xc3\xa9");
  mb__json_kv_int(&j, "i", -42);
  mb__json_kv_double(&j, "d", 0.5);
  mb__json_kv_double(&j, "big", 3e15);
  mb__json_kv_double(&j, "nan", NAN);
  mb__json_key(&j, "a");
  mb__json_array_begin(&j);
  mb__json_bool(&j, true);
  mb__json_null(&j);
  mb__json_array_begin(&j);
  mb__json_array_end(&j);
  mb__json_array_end(&j);
  mb__json_kv_string(&j, "n", NULL);
  mb__json_object_end(&j);
  fclose(f);
  ASSERT_STR_EQ(text, "{\"s\":\"a\\\"b\\\\c\\n\\u0001\\ufffd\xc3\xa9\","
                      "\"i\":-42,\"d\":0.5,\"big\":3000000000000000,"
                      "\"nan\":null,\"a\":[true,null,[]],\"n\":null}");
  free(text);
  return 0;
}

TEST_MAIN(TEST_ENTRY(conv_gemm_flops), TEST_ENTRY(stats_outlive_model),
          TEST_ENTRY(resolve_shapes), TEST_ENTRY(generate_inputs),
          TEST_ENTRY(json_writer))
