/* ONNX model I/O: sha256, reader and writer round trips (inline and external
 * data), every TensorProto storage form and error paths a user can
 * trigger. TensorProto files and the ONNX backend test data:
 * test_onnx_testdata.c. */
#include "onnx_test_util.h"

/* ---- sha256 ---- */

static void sha_hex(const void *data, size_t size, size_t chunk, char hex[65]) {
  mb_sha256 ctx;
  uint8_t digest[32];
  const uint8_t *p = data;
  mb__sha256_init(&ctx);
  for (size_t done = 0; done < size; done += chunk)
    mb__sha256_update(&ctx, p + done, MB_MIN(chunk, size - done));
  mb__sha256_final(&ctx, digest);
  mb__sha256_hex(digest, hex);
}

TEST(sha256_vectors) {
  char hex[65];
  static const char *const msg448 =
      "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  sha_hex("abc", 3, 3, hex);
  ASSERT_STR_EQ(
      hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  sha_hex("", 0, 1, hex);
  ASSERT_STR_EQ(
      hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  for (size_t chunk = 1; chunk <= 56; chunk += 55) {
    sha_hex(msg448, strlen(msg448), chunk, hex);
    ASSERT_STR_EQ(hex,
                  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd4"
                  "19db06c1");
  }
  /* One million 'a', fed in uneven pieces to exercise the block buffer. */
  char *million = malloc(1000000);
  ASSERT(million != NULL);
  memset(million, 'a', 1000000);
  sha_hex(million, 1000000, 997, hex);
  free(million);
  ASSERT_STR_EQ(
      hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  return 0;
}

/* ---- a model with every feature, built with the IR builder ---- */

static mb_tensor *make_tensor(mb_dtype dtype, int rank, const int64_t *dims,
                              uint32_t seed) {
  mb_tensor *t = NULL;
  if (mb_tensor_create(dtype, rank, dims, &t, NULL))
    return NULL;
  uint8_t *p = t->data;
  for (size_t i = 0; i < t->nbytes; i++) {
    seed = seed * 1664525u + 1013904223u;
    p[i] = (uint8_t)(seed >> 24);
  }
  if (dtype == MB_DTYPE_FLOAT) /* finite, so nothing depends on NaN bits */
    for (int64_t i = 0; i < t->numel; i++)
      ((float *)t->data)[i] = (float)((int)(i * 7 % 13) - 6) / 8.0f;
  return t;
}

/* Graph: X[N,3,8,8] -> Conv(W,B) -> Relu -> Flatten -> Gemm(W2,B2) -> Y[N,5]
 * plus If(cond) whose branches read Y from the outer scope, and a custom
 * node carrying one attribute of every kind. */
static mb_status build_model(mb_model **model_out, mb_error *err) {
  mb_model *m = mb__model_create();
  mb_graph *g, *then_g = NULL, *else_g = NULL, *graphs_g = NULL;
  mb_status st = MB_STATUS_OUT_OF_MEMORY;
  int n;
  if (!m)
    return st;
  g = m->graph;
  m->producer_name = "mb-test";
  m->producer_version = "1";
  m->doc = "a test model";
  m->model_version = 3;
  m->metadata = mb__arena_alloc(m->arena, sizeof(mb_metadata_prop));
  m->metadata[0].key = "author";
  m->metadata[0].value = "test_onnx_io";
  m->n_metadata = 1;
  g->name = "main";
  if ((st = mb__model_set_opset(m, "", 13, err)) ||
      (st = mb__model_set_opset(m, "test.custom", 1, err)))
    goto fail;
  static const int64_t x_dims[] = {-1, 3, 8, 8}, w_dims[] = {4, 3, 3, 3},
                       b_dims[] = {4}, w2_dims[] = {5, 256}, b2_dims[] = {5},
                       y_dims[] = {-1, 5};
  static const char *const x_params[] = {"N", NULL, NULL, NULL};
  static const char *const y_params[] = {"N", NULL};
  st = MB_STATUS_INTERNAL;
  if (mb__graph_add_input(g, "X", MB_DTYPE_FLOAT, 4, x_dims, x_params, err) <
          0 ||
      mb__graph_add_initializer(
          g, "W", make_tensor(MB_DTYPE_FLOAT, 4, w_dims, 1), err) < 0 ||
      mb__graph_add_initializer(
          g, "B", make_tensor(MB_DTYPE_FLOAT, 1, b_dims, 2), err) < 0 ||
      mb__graph_add_initializer(
          g, "W2", make_tensor(MB_DTYPE_FLOAT, 2, w2_dims, 3), err) < 0 ||
      mb__graph_add_initializer(
          g, "B2", make_tensor(MB_DTYPE_FLOAT, 1, b2_dims, 4), err) < 0 ||
      mb__graph_add_initializer(
          g, "cond", make_tensor(MB_DTYPE_BOOL, 0, NULL, 5), err) < 0 ||
      mb__graph_add_output(g, "Y", MB_DTYPE_FLOAT, 2, y_dims, y_params, err) <
          0 ||
      mb__graph_add_output(g, "Z", MB_DTYPE_FLOAT, -1, NULL, NULL, err) < 0 ||
      mb__graph_add_output(g, "K", MB_DTYPE_UNDEFINED, -1, NULL, NULL, err) < 0)
    goto fail;

  const char *conv_in[] = {"X", "W", "B"}, *conv_out[] = {"C"};
  if ((n = mb__graph_add_node(g, "Conv", "", "conv1", 3, conv_in, 1, conv_out,
                              err)) < 0)
    goto fail;
  static const int64_t k33[] = {3, 3}, pads[] = {1, 1, 1, 1}, ones[] = {1, 1};
  if ((st = mb__node_set_ints(g, n, "kernel_shape", 2, k33, err)) ||
      (st = mb__node_set_ints(g, n, "pads", 4, pads, err)) ||
      (st = mb__node_set_ints(g, n, "strides", 2, ones, err)) ||
      (st = mb__node_set_int(g, n, "group", 1, err)) ||
      (st = mb__node_set_string(g, n, "auto_pad", "NOTSET", err)))
    goto fail;
  g->nodes[n].doc = "the first convolution";
  st = MB_STATUS_INTERNAL;
  const char *relu_in[] = {"C"}, *relu_out[] = {"R"};
  const char *flat_in[] = {"R"}, *flat_out[] = {"F"};
  const char *gemm_in[] = {"F", "W2", "B2"}, *gemm_out[] = {"Y"};
  if (mb__graph_add_node(g, "Relu", "", "", 1, relu_in, 1, relu_out, err) < 0 ||
      (n = mb__graph_add_node(g, "Flatten", "", "flat", 1, flat_in, 1, flat_out,
                              err)) < 0 ||
      (st = mb__node_set_int(g, n, "axis", 1, err)) ||
      (n = mb__graph_add_node(g, "Gemm", "", "fc", 3, gemm_in, 1, gemm_out,
                              err)) < 0 ||
      (st = mb__node_set_float(g, n, "alpha", 0.5f, err)) ||
      (st = mb__node_set_float(g, n, "beta", 1.25f, err)) ||
      (st = mb__node_set_int(g, n, "transB", 1, err))) {
    st = st ? st : MB_STATUS_INTERNAL;
    goto fail;
  }
  /* A declared intermediate shape with a symbolic dim. */
  mb_value *c = &g->values[mb__graph_find_value(g, "C")];
  c->dtype = MB_DTYPE_FLOAT;
  c->rank = 4;
  c->dims[0] = (mb_dim){-1, "N"};
  c->dims[1] = (mb_dim){4, NULL};
  c->dims[2] = (mb_dim){-1, NULL};
  c->dims[3] = (mb_dim){8, NULL};

  /* If with branches reading the outer Y. */
  st = MB_STATUS_INTERNAL;
  then_g = mb__graph_create(m, g);
  else_g = mb__graph_create(m, g);
  const char *id_in[] = {"Y"}, *then_out[] = {"t_out"}, *else_out[] = {"e_out"};
  const char *neg_out[] = {"e_mid"}, *neg_in2[] = {"e_mid"};
  if (!then_g || !else_g ||
      mb__graph_add_output(then_g, "t_out", MB_DTYPE_FLOAT, -1, NULL, NULL,
                           err) < 0 ||
      mb__graph_add_node(then_g, "Identity", "", "", 1, id_in, 1, then_out,
                         err) < 0 ||
      mb__graph_add_output(else_g, "e_out", MB_DTYPE_FLOAT, -1, NULL, NULL,
                           err) < 0 ||
      mb__graph_add_node(else_g, "Neg", "", "", 1, id_in, 1, neg_out, err) <
          0 ||
      mb__graph_add_node(else_g, "Identity", "", "", 1, neg_in2, 1, else_out,
                         err) < 0)
    goto fail;
  then_g->name = "then";
  else_g->name = "else";
  const char *if_in[] = {"cond"}, *if_out[] = {"Z"};
  if ((n = mb__graph_add_node(g, "If", "", "branch", 1, if_in, 1, if_out,
                              err)) < 0)
    goto fail;
  mb_attr then_attr = {
      .name = "then_branch", .type = MB_ATTR_GRAPH, .g = then_g};
  mb_attr else_attr = {
      .name = "else_branch", .type = MB_ATTR_GRAPH, .g = else_g};
  if ((st = mb__node_add_attr(g, n, &then_attr, err)))
    goto fail;
  then_g = NULL;
  if ((st = mb__node_add_attr(g, n, &else_attr, err)))
    goto fail;
  else_g = NULL;

  /* A custom node with one attribute of every kind. */
  st = MB_STATUS_INTERNAL;
  const char *all_in[] = {"Y", "", "X"}, *all_out[] = {"K", ""};
  if ((n = mb__graph_add_node(g, "AllAttrs", "test.custom", "all", 3, all_in, 2,
                              all_out, err)) < 0)
    goto fail;
  static const float fl[] = {1.5f, -0.0f, 3e-38f};
  static const int64_t big_ints[] = {INT64_MIN, -1, 0, INT64_MAX};
  static const int64_t t_dims[] = {2, 3}, s_dims[] = {3, 4};
  if ((st = mb__node_set_float(g, n, "f", -2.75f, err)) ||
      (st = mb__node_set_int(g, n, "i", -42, err)) ||
      (st = mb__node_set_string(g, n, "s", "hello", err)) ||
      (st = mb__node_set_floats(g, n, "floats", 3, fl, err)) ||
      (st = mb__node_set_ints(g, n, "ints", 4, big_ints, err)) ||
      (st = mb__node_set_tensor(
           g, n, "t", make_tensor(MB_DTYPE_INT64, 2, t_dims, 9), err)))
    goto fail;
  mb_attr strings = {.name = "strings", .type = MB_ATTR_STRINGS, .n = 2};
  strings.strings = mb__arena_alloc(m->arena, 2 * sizeof(char *));
  strings.strings[0] = "alpha";
  strings.strings[1] = "";
  mb_attr tensors = {.name = "tensors", .type = MB_ATTR_TENSORS, .n = 2};
  tensors.tensors = mb__arena_alloc(m->arena, 2 * sizeof(mb_tensor *));
  tensors.tensors[0] = make_tensor(MB_DTYPE_FLOAT16, 1, b_dims, 11);
  tensors.tensors[1] = make_tensor(MB_DTYPE_UINT8, 2, t_dims, 12);
  if ((st = mb__node_add_attr(g, n, &strings, err)) ||
      (st = mb__node_add_attr(g, n, &tensors, err))) {
    mb_tensor_free(tensors.tensors[0]);
    mb_tensor_free(tensors.tensors[1]);
    goto fail;
  }
  /* A sparse tensor (kept dense in the IR): mostly zeros, one -0.0. */
  mb_attr sparse = {.name = "sparse", .type = MB_ATTR_SPARSE_TENSOR};
  if ((st = mb_tensor_create(MB_DTYPE_FLOAT, 2, s_dims, &sparse.t, err)))
    goto fail;
  ((float *)sparse.t->data)[1] = 4.0f;
  ((float *)sparse.t->data)[7] = -0.0f;
  ((float *)sparse.t->data)[11] = -1.0f;
  if ((st = mb__node_add_attr(g, n, &sparse, err))) {
    mb_tensor_free(sparse.t);
    goto fail;
  }
  /* GRAPHS: one graph reading the outer X. */
  st = MB_STATUS_INTERNAL;
  graphs_g = mb__graph_create(m, g);
  const char *gx_in[] = {"X"}, *gx_out[] = {"gx"};
  if (graphs_g)
    graphs_g->name = "gx_graph";
  if (!graphs_g ||
      mb__graph_add_output(graphs_g, "gx", MB_DTYPE_FLOAT, -1, NULL, NULL,
                           err) < 0 ||
      mb__graph_add_node(graphs_g, "Identity", "", "", 1, gx_in, 1, gx_out,
                         err) < 0)
    goto fail;
  mb_attr graphs = {.name = "graphs", .type = MB_ATTR_GRAPHS, .n = 1};
  graphs.graphs = mb__arena_alloc(m->arena, sizeof(mb_graph *));
  graphs.graphs[0] = graphs_g;
  if ((st = mb__node_add_attr(g, n, &graphs, err)))
    goto fail;
  graphs_g = NULL;
  /* TYPE_PROTO holds a serialized TypeProto: tensor(float). */
  static const char type_bytes[] = {0x0a, 0x02, 0x08, 0x01};
  mb_attr type = {.name = "type",
                  .type = MB_ATTR_TYPE_PROTO,
                  .s = type_bytes,
                  .s_len = sizeof type_bytes};
  if ((st = mb__node_add_attr(g, n, &type, err)))
    goto fail;

  if ((st = mb__graph_finalize(g, err)))
    goto fail;
  *model_out = m;
  return MB_STATUS_OK;
fail:
  mb__graph_free(then_g);
  mb__graph_free(else_g);
  mb__graph_free(graphs_g);
  mb_model_free(m);
  return st ? st : MB_STATUS_INTERNAL;
}

TEST(builder_round_trip) {
  mb_error err_buf = {0}, *err = &err_buf;
  mb_model *a = NULL, *b = NULL, *c = NULL;
  mb_value_info info;
  const char *path = tmp_path("built.onnx");
  ASSERT_OK(build_model(&a, err), err);
  ASSERT_OK(mb_model_save(a, path, NULL, err), err);
  ASSERT_OK(mb_model_load(path, &b, err), err);
  if (model_differs(a, b))
    TEST_FAIL_("round trip differs: %s", g_diff);

  /* Public queries: only X is fed; its batch dim is symbolic. */
  ASSERT_EQ(mb_model_input_count(b), 1);
  ASSERT_EQ(mb_model_output_count(b), 3);
  ASSERT_OK(mb_model_input_info(b, 0, &info, err), err);
  ASSERT_STR_EQ(info.name, "X");
  ASSERT_EQ(info.rank, 4);
  ASSERT_EQ(info.dims[0], -1);
  ASSERT_STR_EQ(info.dim_params[0], "N");
  ASSERT_EQ(info.dims[3], 8);
  ASSERT(info.dim_params[3] == NULL);
  ASSERT_OK(mb_model_output_info(b, 1, &info, err), err);
  ASSERT_STR_EQ(info.name, "Z");
  ASSERT_EQ(info.rank, -1);
  ASSERT_EQ(mb_model_input_info(b, 1, &info, err), MB_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(strlen(mb_model_sha256(b)), 64);
  for (int i = 0; i < b->graph->n_nodes; i++)
    if (strcmp(b->graph->nodes[i].op_type, "If") == 0)
      ASSERT(b->graph->nodes[i].attrs[0].g->parent == b->graph);

  /* The model hash is the sha256 of the file's bytes. */
  size_t size = 0;
  void *bytes = read_bytes(path, &size);
  char hex[65];
  ASSERT(bytes != NULL);
  sha_hex(bytes, size, size ? size : 1, hex);
  ASSERT_STR_EQ(mb_model_sha256(b), hex);
  /* Same bytes from memory: same model, same hash. */
  ASSERT_OK(mb_model_load_memory(bytes, size, NULL, &c, err), err);
  free(bytes);
  if (model_differs(b, c))
    TEST_FAIL_("memory load differs: %s", g_diff);
  ASSERT_STR_EQ(mb_model_sha256(c), hex);
  mb_model_free(a);
  mb_model_free(b);
  mb_model_free(c);
  return 0;
}

TEST(external_data_round_trip) {
  mb_error err_buf = {0}, *err = &err_buf;
  mb_model *a = NULL, *b = NULL, *inline_model = NULL;
  char path[512], inline_path[512], data_path[512];
  snprintf(path, sizeof path, "%s", tmp_path("ext.onnx"));
  snprintf(inline_path, sizeof inline_path, "%s", tmp_path("inline.onnx"));
  snprintf(data_path, sizeof data_path, "%s", tmp_path("ext.onnx.data"));
  mb_save_options opts = {.external_data_threshold = 16};
  ASSERT_OK(build_model(&a, err), err);
  ASSERT_OK(mb_model_save(a, path, &opts, err), err);
  ASSERT_OK(mb_model_save(a, inline_path, NULL, err), err);
  ASSERT_OK(mb_model_load(path, &b, err), err);
  ASSERT_OK(mb_model_load(inline_path, &inline_model, err), err);
  if (model_differs(a, b))
    TEST_FAIL_("external round trip differs: %s", g_diff);

  struct stat st_model, st_inline, st_data;
  ASSERT_EQ(stat(path, &st_model), 0);
  ASSERT_EQ(stat(inline_path, &st_inline), 0);
  ASSERT_EQ(stat(data_path, &st_data), 0);
  ASSERT(st_model.st_size < st_inline.st_size);
  ASSERT(st_data.st_size > 5 * 256 * 4);

  /* The hash covers the model bytes then the data file's bytes. */
  size_t msize = 0, dsize = 0;
  uint8_t *mbytes = read_bytes(path, &msize);
  uint8_t *dbytes = read_bytes(data_path, &dsize);
  ASSERT(mbytes && dbytes);
  uint8_t *both = malloc(msize + dsize);
  ASSERT(both != NULL);
  memcpy(both, mbytes, msize);
  memcpy(both + msize, dbytes, dsize);
  char hex[65];
  sha_hex(both, msize + dsize, msize + dsize, hex);
  ASSERT_STR_EQ(mb_model_sha256(b), hex);
  ASSERT(strcmp(mb_model_sha256(b), mb_model_sha256(inline_model)) != 0);

  /* From memory: needs the base folder for the data file. */
  mb_model *c = NULL;
  ASSERT_EQ(mb_model_load_memory(mbytes, msize, NULL, &c, err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err->message, "ext.onnx.data");
  ASSERT_OK(mb_model_load_memory(mbytes, msize, g_tmpdir, &c, err), err);
  if (model_differs(a, c))
    TEST_FAIL_("memory external load differs: %s", g_diff);
  mb_model_free(c);

  /* A truncated data file: bounds are checked, naming tensor and file. */
  ASSERT_EQ(write_bytes(data_path, dbytes, dsize / 2), 0);
  ASSERT_EQ(mb_model_load(path, &c, err), MB_STATUS_PARSE);
  ASSERT_CONTAINS(err->message, "ext.onnx.data");
  ASSERT_CONTAINS(err->message, "past the end");

  /* A missing data file. */
  ASSERT_EQ(unlink(data_path), 0);
  ASSERT_EQ(mb_model_load(path, &c, err), MB_STATUS_IO);
  ASSERT_CONTAINS(err->message, "ext.onnx.data");
  ASSERT_CONTAINS(err->message, "ext.onnx");
  ASSERT_CONTAINS(err->message, "initializer '");

  /* Locations escaping the folder are refused: patch the name in place. */
  opts.external_data_name = "abcdefgh.bin";
  ASSERT_OK(mb_model_save(a, path, &opts, err), err);
  free(mbytes);
  mbytes = read_bytes(path, &msize);
  ASSERT(mbytes != NULL);
  /* Same length as "abcdefgh.bin", so the protobuf stays well-formed. */
  static const char *const bad_names[] = {"../defgh.bin", "/tmp/fgh.bin"};
  for (size_t k = 0; k < 2; k++) {
    uint8_t *copy = malloc(msize);
    ASSERT(copy != NULL);
    memcpy(copy, mbytes, msize);
    int patched = 0;
    for (size_t i = 0; i + 12 <= msize; i++)
      if (memcmp(copy + i, "abcdefgh.bin", 12) == 0) {
        memcpy(copy + i, bad_names[k], 12);
        patched++;
      }
    ASSERT(patched > 0);
    ASSERT_EQ(write_bytes(tmp_path("escape.onnx"), copy, msize), 0);
    free(copy);
    ASSERT_EQ(mb_model_load(tmp_path("escape.onnx"), &c, err), MB_STATUS_PARSE);
    ASSERT_CONTAINS(err->message, "escape.onnx");
    ASSERT_CONTAINS(err->message, "relative path");
  }
  /* The writer refuses such names too. */
  opts.external_data_name = "../x.data";
  ASSERT_EQ(mb_model_save(a, path, &opts, err), MB_STATUS_INVALID_ARGUMENT);
  unlink(tmp_path("abcdefgh.bin"));
  free(mbytes);
  free(dbytes);
  free(both);
  mb_model_free(a);
  mb_model_free(b);
  mb_model_free(inline_model);
  return 0;
}

/* Issue 27: external data is not read through a symlink out of the
 * model's folder (link.bin -> a file elsewhere was read before); the error
 * names the tensor and the file. A symlink inside the folder is fine. */
TEST(external_data_symlink_out_refused) {
  mb_error err_buf = {0}, *err = &err_buf;
  mb_model *a = NULL, *b = NULL;
  char path[512], data[512], inside[512], outside_dir[64], outside[128];
  snprintf(path, sizeof path, "%s", tmp_path("link.onnx"));
  snprintf(data, sizeof data, "%s", tmp_path("link.bin"));
  snprintf(inside, sizeof inside, "%s", tmp_path("real-link.bin"));
  mb_save_options opts = {.external_data_threshold = 16,
                          .external_data_name = "link.bin"};
  ASSERT_OK(build_model(&a, err), err);
  ASSERT_OK(mb_model_save(a, path, &opts, err), err);
  size_t dsize = 0;
  uint8_t *dbytes = read_bytes(data, &dsize);
  ASSERT(dbytes != NULL);
  /* The very bytes, outside the folder: only the symlink is wrong. */
  snprintf(outside_dir, sizeof outside_dir, "/tmp/mb-onnx-out-XXXXXX");
  ASSERT(mkdtemp(outside_dir) != NULL);
  snprintf(outside, sizeof outside, "%s/weights.bin", outside_dir);
  ASSERT_EQ(write_bytes(outside, dbytes, dsize), 0);
  ASSERT_EQ(unlink(data), 0);
  ASSERT_EQ(symlink(outside, data), 0);
  ASSERT_EQ(mb_model_load(path, &b, err), MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err->message, "initializer '");
  ASSERT_CONTAINS(err->message, "link.bin");
  ASSERT_CONTAINS(err->message, "outside the model's folder");
  /* Inside the folder: followed. */
  ASSERT_EQ(unlink(data), 0);
  ASSERT_EQ(write_bytes(inside, dbytes, dsize), 0);
  ASSERT_EQ(symlink("real-link.bin", data), 0);
  ASSERT_OK(mb_model_load(path, &b, err), err);
  if (model_differs(a, b))
    TEST_FAIL_("load through an inside symlink differs: %s", g_diff);
  mb_model_free(b);
  b = NULL;
  /* "sub/weights.bin" through "sub", a symlink to a folder elsewhere. */
  char sub[512];
  snprintf(sub, sizeof sub, "%s", tmp_path("sub"));
  opts.external_data_name = "sub/weights.bin";
  ASSERT_EQ(mkdir(sub, 0700), 0);
  ASSERT_OK(mb_model_save(a, path, &opts, err), err);
  char in_sub[600];
  snprintf(in_sub, sizeof in_sub, "%s/weights.bin", sub);
  ASSERT_EQ(unlink(in_sub), 0);
  ASSERT_EQ(rmdir(sub), 0);
  ASSERT_EQ(symlink(outside_dir, sub), 0);
  ASSERT_EQ(mb_model_load(path, &b, err), MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err->message, "sub/weights.bin");
  ASSERT_CONTAINS(err->message, "outside the model's folder");
  unlink(sub);
  unlink(data);
  unlink(inside);
  unlink(outside);
  rmdir(outside_dir);
  free(dbytes);
  mb_model_free(a);
  return 0;
}

/* onnx.checker insists on graph names; the writer supplies them. */
TEST(unnamed_graph_gets_a_name) {
  mb_error err_buf = {0}, *err = &err_buf;
  mb_model *m = mb__model_create(), *back = NULL;
  ASSERT(m != NULL);
  const char *in[] = {"x"}, *out[] = {"y"};
  static const int64_t dims[] = {2};
  ASSERT_OK(mb__model_set_opset(m, "", 13, err), err);
  ASSERT(mb__graph_add_input(m->graph, "x", MB_DTYPE_FLOAT, 1, dims, NULL,
                             err) >= 0);
  ASSERT(mb__graph_add_output(m->graph, "y", MB_DTYPE_FLOAT, 1, dims, NULL,
                              err) >= 0);
  ASSERT(mb__graph_add_node(m->graph, "Relu", "", NULL, 1, in, 1, out, err) >=
         0);
  ASSERT_OK(mb__graph_finalize(m->graph, err), err);
  ASSERT_OK(mb_model_save(m, tmp_path("unnamed.onnx"), NULL, err), err);
  mb_model_free(m);
  ASSERT_OK(mb_model_load(tmp_path("unnamed.onnx"), &back, err), err);
  ASSERT_STR_EQ(back->graph->name, "main_graph");
  ASSERT_EQ(back->ir_version, 8);
  ASSERT_EQ(mb__model_opset(back, ""), 13);
  mb_model_free(back);
  return 0;
}

/* ---- hand-written protobuf bytes for inputs the builder cannot make ---- */

typedef struct pb {
  uint8_t data[4096];
  size_t len;
} pb;

static void pb_raw_varint(pb *b, uint64_t v) {
  do {
    uint8_t byte = v & 0x7f;
    v >>= 7;
    b->data[b->len++] = (uint8_t)(byte | (v ? 0x80 : 0));
  } while (v);
}

static void pb_varint(pb *b, int field, uint64_t v) {
  pb_raw_varint(b, (uint64_t)field << 3);
  pb_raw_varint(b, v);
}

static void pb_bytes(pb *b, int field, const void *data, size_t len) {
  pb_raw_varint(b, (uint64_t)field << 3 | 2);
  pb_raw_varint(b, len);
  memcpy(b->data + b->len, data, len);
  b->len += len;
}

static void pb_str(pb *b, int field, const char *s) {
  pb_bytes(b, field, s, strlen(s));
}

static void pb_msg(pb *b, int field, const pb *m) {
  pb_bytes(b, field, m->data, m->len);
}

/* ModelProto { ir_version 7, opset 13, graph { initializer <tensor>,
 * node Identity(name) -> out, output out } } */
static void model_with_initializer(const pb *tensor, const char *name,
                                   pb *model) {
  pb graph = {0}, node = {0}, out = {0}, opset = {0};
  pb_str(&node, 1, name);
  pb_str(&node, 2, "out");
  pb_str(&node, 4, "Identity");
  pb_msg(&graph, 1, &node);
  pb_msg(&graph, 5, tensor);
  pb_str(&out, 1, "out");
  pb_msg(&graph, 12, &out);
  memset(model, 0, sizeof *model);
  pb_varint(model, 1, 7);
  pb_msg(model, 7, &graph);
  pb_varint(&opset, 2, 13);
  pb_msg(model, 8, &opset);
}

/* TensorProto fields. */
enum {
  TP_DIMS = 1,
  TP_DATA_TYPE = 2,
  TP_FLOAT = 4,
  TP_INT32 = 5,
  TP_STRING = 6,
  TP_INT64 = 7,
  TP_NAME = 8,
  TP_RAW = 9,
  TP_EXTERNAL = 13,
  TP_LOCATION = 14,
  TP_DOUBLE = 10,
  TP_UINT64 = 11
};

static mb_status load_tensor_model(const pb *tensor, mb_model **model_out,
                                   mb_error *err) {
  pb model;
  model_with_initializer(tensor, "w", &model);
  return mb_model_load_memory(model.data, model.len, g_tmpdir, model_out, err);
}

static const mb_tensor *initializer_of(const mb_model *m, const char *name) {
  int idx = mb__graph_find_value(m->graph, name);
  return idx >= 0 ? m->graph->values[idx].initializer : NULL;
}

TEST(tensor_storage_forms) {
  mb_error err_buf = {0}, *err = &err_buf;
  mb_model *m = NULL;
  struct {
    int dtype, field;
    int64_t values[3];
    uint8_t expected[24];
    size_t expected_len;
  } cases[] = {
      /* int32_data narrows to 1/2-byte types; fp16 travels as bits. */
      {MB_DTYPE_INT8, TP_INT32, {-1, 5, -128}, {0xff, 5, 0x80}, 3},
      {MB_DTYPE_UINT8, TP_INT32, {255, 0, 7}, {255, 0, 7}, 3},
      {MB_DTYPE_BOOL, TP_INT32, {1, 0, 1}, {1, 0, 1}, 3},
      {MB_DTYPE_INT16, TP_INT32, {-2, 3, 0}, {0xfe, 0xff, 3, 0, 0, 0}, 6},
      {MB_DTYPE_FLOAT16,
       TP_INT32,
       {0x3c00, 0, 0xc000},
       {0, 0x3c, 0, 0, 0, 0xc0},
       6},
      {MB_DTYPE_BFLOAT16,
       TP_INT32,
       {0x3f80, 1, 2},
       {0x80, 0x3f, 1, 0, 2, 0},
       6},
      {MB_DTYPE_UINT32,
       TP_UINT64,
       {0xffffffff, 1, 2},
       {0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 2, 0, 0, 0},
       12},
  };
  for (size_t c = 0; c < MB_ARRAY_COUNT(cases); c++) {
    pb t = {0}, packed = {0};
    pb_varint(&t, TP_DIMS, 3);
    pb_varint(&t, TP_DATA_TYPE, (uint64_t)cases[c].dtype);
    for (int k = 0; k < 3; k++)
      pb_raw_varint(&packed, (uint64_t)cases[c].values[k]);
    pb_msg(&t, cases[c].field, &packed);
    pb_str(&t, TP_NAME, "w");
    ASSERT_OK(load_tensor_model(&t, &m, err), err);
    const mb_tensor *w = initializer_of(m, "w");
    ASSERT(w != NULL);
    ASSERT_EQ(w->dtype, cases[c].dtype);
    ASSERT_EQ(w->nbytes, cases[c].expected_len);
    ASSERT(memcmp(w->data, cases[c].expected, w->nbytes) == 0);
    mb_model_free(m);
    m = NULL;
  }
  /* float_data, int64_data, double_data, uint64_data and raw_data. */
  {
    pb t = {0};
    float f[2] = {1.5f, -2.0f};
    pb_varint(&t, TP_DIMS, 2);
    pb_varint(&t, TP_DATA_TYPE, MB_DTYPE_FLOAT);
    pb_bytes(&t, TP_FLOAT, f, sizeof f);
    pb_str(&t, TP_NAME, "w");
    ASSERT_OK(load_tensor_model(&t, &m, err), err);
    ASSERT(memcmp(initializer_of(m, "w")->data, f, sizeof f) == 0);
    mb_model_free(m);
  }
  {
    pb t = {0}, packed = {0};
    pb_varint(&t, TP_DIMS, 2);
    pb_varint(&t, TP_DATA_TYPE, MB_DTYPE_INT64);
    pb_raw_varint(&packed, (uint64_t)INT64_C(-3));
    pb_raw_varint(&packed, UINT64_C(1) << 40);
    pb_msg(&t, TP_INT64, &packed);
    pb_str(&t, TP_NAME, "w");
    ASSERT_OK(load_tensor_model(&t, &m, err), err);
    const int64_t *v = initializer_of(m, "w")->data;
    ASSERT_EQ(v[0], -3);
    ASSERT_EQ(v[1], INT64_C(1) << 40);
    mb_model_free(m);
  }
  {
    pb t = {0};
    double d[2] = {0.25, -1e300};
    pb_varint(&t, TP_DATA_TYPE, MB_DTYPE_COMPLEX128);
    pb_bytes(&t, TP_DOUBLE, d, sizeof d);
    pb_str(&t, TP_NAME, "w");
    ASSERT_OK(load_tensor_model(&t, &m, err), err);
    ASSERT_EQ(initializer_of(m, "w")->rank, 0);
    ASSERT(memcmp(initializer_of(m, "w")->data, d, sizeof d) == 0);
    mb_model_free(m);
  }
  {
    /* raw_data at an odd offset in the buffer: copied, never cast. */
    pb t = {0};
    uint8_t raw[9] = {0, 1, 0, 0, 0, 0, 0, 0, 0x80};
    pb_varint(&t, TP_DIMS, 1);
    pb_varint(&t, TP_DATA_TYPE, MB_DTYPE_UINT64);
    pb_str(&t, TP_NAME, "w");
    pb_bytes(&t, TP_RAW, raw + 1, 8);
    ASSERT_OK(load_tensor_model(&t, &m, err), err);
    uint64_t v;
    memcpy(&v, initializer_of(m, "w")->data, 8);
    ASSERT(v == (UINT64_C(1) | UINT64_C(0x80) << 56));
    mb_model_free(m);
  }
  m = NULL;
  return 0;
}

TEST(tensor_errors) {
  mb_error err_buf = {0}, *err = &err_buf;
  mb_model *m = NULL;
  pb t;
  /* raw_data shorter than the dims need. */
  memset(&t, 0, sizeof t);
  pb_varint(&t, TP_DIMS, 4);
  pb_varint(&t, TP_DATA_TYPE, MB_DTYPE_FLOAT);
  pb_str(&t, TP_NAME, "w");
  pb_bytes(&t, TP_RAW, "12345678", 8);
  ASSERT_EQ(load_tensor_model(&t, &m, err), MB_STATUS_PARSE);
  ASSERT_CONTAINS(err->message, "initializer 'w'");
  ASSERT_CONTAINS(err->message, "raw_data has 8 bytes");
  /* No data at all. */
  memset(&t, 0, sizeof t);
  pb_varint(&t, TP_DIMS, 2);
  pb_varint(&t, TP_DATA_TYPE, MB_DTYPE_FLOAT);
  pb_str(&t, TP_NAME, "w");
  ASSERT_EQ(load_tensor_model(&t, &m, err), MB_STATUS_PARSE);
  ASSERT_CONTAINS(err->message, "has no data");
  /* Typed field of the wrong kind. */
  memset(&t, 0, sizeof t);
  pb_varint(&t, TP_DIMS, 1);
  pb_varint(&t, TP_DATA_TYPE, MB_DTYPE_INT64);
  pb_bytes(&t, TP_FLOAT, "\0\0\0\0", 4);
  pb_str(&t, TP_NAME, "w");
  ASSERT_EQ(load_tensor_model(&t, &m, err), MB_STATUS_PARSE);
  ASSERT_CONTAINS(err->message, "int64_data");
  /* A string initializer. */
  memset(&t, 0, sizeof t);
  pb_varint(&t, TP_DIMS, 1);
  pb_varint(&t, TP_DATA_TYPE, MB_DTYPE_STRING);
  pb_str(&t, TP_STRING, "hello");
  pb_str(&t, TP_NAME, "w");
  ASSERT_EQ(load_tensor_model(&t, &m, err), MB_STATUS_UNSUPPORTED);
  ASSERT_CONTAINS(err->message, "initializer 'w'");
  ASSERT_CONTAINS(err->message, "string");
  /* Absurd dims. */
  memset(&t, 0, sizeof t);
  pb_varint(&t, TP_DIMS, UINT64_C(1) << 40);
  pb_varint(&t, TP_DIMS, UINT64_C(1) << 30);
  pb_varint(&t, TP_DATA_TYPE, MB_DTYPE_FLOAT);
  pb_str(&t, TP_NAME, "w");
  ASSERT_EQ(load_tensor_model(&t, &m, err), MB_STATUS_OVERFLOW);
  ASSERT_CONTAINS(err->message, "initializer 'w'");
  memset(&t, 0, sizeof t);
  pb_varint(&t, TP_DIMS, UINT64_C(1) << 62);
  pb_varint(&t, TP_DIMS, UINT64_C(1) << 62);
  pb_varint(&t, TP_DATA_TYPE, MB_DTYPE_FLOAT);
  pb_str(&t, TP_NAME, "w");
  ASSERT_EQ(load_tensor_model(&t, &m, err), MB_STATUS_OVERFLOW);
  /* Rank above MB_MAX_RANK. */
  memset(&t, 0, sizeof t);
  for (int k = 0; k <= MB_MAX_RANK; k++)
    pb_varint(&t, TP_DIMS, 1);
  pb_varint(&t, TP_DATA_TYPE, MB_DTYPE_FLOAT);
  pb_str(&t, TP_NAME, "w");
  ASSERT_EQ(load_tensor_model(&t, &m, err), MB_STATUS_UNSUPPORTED);
  ASSERT_CONTAINS(err->message, "rank");
  /* An unknown element type. */
  memset(&t, 0, sizeof t);
  pb_varint(&t, TP_DATA_TYPE, 99);
  pb_str(&t, TP_NAME, "w");
  ASSERT_EQ(load_tensor_model(&t, &m, err), MB_STATUS_UNSUPPORTED);
  /* External data offset past the end of its file. */
  ASSERT_EQ(write_bytes(tmp_path("small.bin"), "0123456789abcdef", 16), 0);
  static const char *const offsets[] = {"8", "20", "x"};
  static const mb_status expected[] = {MB_STATUS_OK, MB_STATUS_PARSE,
                                       MB_STATUS_PARSE};
  for (int k = 0; k < 3; k++) {
    pb kv_loc = {0}, kv_off = {0}, kv_len = {0};
    memset(&t, 0, sizeof t);
    pb_varint(&t, TP_DIMS, 2);
    pb_varint(&t, TP_DATA_TYPE, MB_DTYPE_FLOAT);
    pb_str(&t, TP_NAME, "w");
    pb_str(&kv_loc, 1, "location");
    pb_str(&kv_loc, 2, "./small.bin");
    pb_str(&kv_off, 1, "offset");
    pb_str(&kv_off, 2, offsets[k]);
    pb_str(&kv_len, 1, "length");
    pb_str(&kv_len, 2, "8");
    pb_msg(&t, TP_EXTERNAL, &kv_loc);
    pb_msg(&t, TP_EXTERNAL, &kv_off);
    pb_msg(&t, TP_EXTERNAL, &kv_len);
    pb_varint(&t, TP_LOCATION, 1);
    ASSERT_EQ(load_tensor_model(&t, &m, err), expected[k]);
    if (expected[k] == MB_STATUS_OK) {
      ASSERT(memcmp(initializer_of(m, "w")->data, "89abcdef", 8) == 0);
      mb_model_free(m);
    } else {
      ASSERT_CONTAINS(err->message, "initializer 'w'");
    }
  }
  return 0;
}

TEST(graph_errors) {
  mb_error err_buf = {0}, *err = &err_buf;
  mb_model *m = NULL;
  pb model = {0}, graph = {0}, node = {0}, out = {0};
  /* A node with an empty op_type. */
  pb_str(&node, 1, "x");
  pb_str(&node, 2, "out");
  pb_str(&node, 3, "n0");
  pb_msg(&graph, 1, &node);
  pb_str(&out, 1, "out");
  pb_msg(&graph, 12, &out);
  pb_varint(&model, 1, 7);
  pb_msg(&model, 7, &graph);
  ASSERT_EQ(mb_model_load_memory(model.data, model.len, NULL, &m, err),
            MB_STATUS_PARSE);
  ASSERT_CONTAINS(err->message, "op_type");
  ASSERT_CONTAINS(err->message, "n0");
  /* A node whose input is never produced: saved, then loaded. */
  ASSERT_OK(build_model(&m, err), err);
  const char *in[] = {"nowhere"}, *outs[] = {"dangling"};
  ASSERT(mb__graph_add_node(m->graph, "Relu", "", "lost", 1, in, 1, outs,
                            err) >= 0);
  ASSERT_OK(mb_model_save(m, tmp_path("dangling.onnx"), NULL, err), err);
  mb_model_free(m);
  m = NULL;
  ASSERT_EQ(mb_model_load(tmp_path("dangling.onnx"), &m, err), MB_STATUS_PARSE);
  ASSERT_CONTAINS(err->message, "dangling.onnx");
  ASSERT_CONTAINS(err->message, "nowhere");
  /* A sequence-typed graph input loads, keeps its type through the
   * writer; a map-typed one is refused, naming the input and the type. */
  for (int map = 0; map < 2; map++) {
    pb g2 = {0}, n2 = {0}, in2 = {0}, type = {0}, seq = {0}, m2 = {0},
       elem = {0}, tensor_type = {0};
    pb_str(&n2, 1, "s");
    pb_str(&n2, 2, "out");
    pb_str(&n2, 4, "Identity");
    pb_msg(&g2, 1, &n2);
    /* TypeProto { sequence_type { elem_type { tensor_type { float } } } },
     * or { map_type { key_type: int64, value_type { tensor_type } } } */
    pb_varint(&tensor_type, 1, MB_DTYPE_FLOAT);
    pb_msg(&elem, 1, &tensor_type);
    if (map)
      pb_varint(&seq, 1, MB_DTYPE_INT64);
    pb_msg(&seq, map ? 2 : 1, &elem);
    pb_msg(&type, map ? 5 : 4, &seq);
    pb_str(&in2, 1, "s");
    pb_msg(&in2, 2, &type);
    pb_msg(&g2, 11, &in2);
    pb_msg(&g2, 12, &out);
    pb_varint(&m2, 1, 7);
    pb_msg(&m2, 7, &g2);
    if (map) {
      ASSERT_EQ(mb_model_load_memory(m2.data, m2.len, NULL, &m, err),
                MB_STATUS_UNSUPPORTED);
      ASSERT_CONTAINS(err->message, "graph input 's'");
      ASSERT_CONTAINS(err->message, "map");
      continue;
    }
    ASSERT_OK(mb_model_load_memory(m2.data, m2.len, NULL, &m, err), err);
    ASSERT_EQ(m->graph->values[m->graph->inputs[0]].type,
              MB_VALUE_TYPE_SEQUENCE);
    ASSERT_EQ(m->graph->values[m->graph->inputs[0]].dtype, MB_DTYPE_FLOAT);
    ASSERT_OK(mb_model_save(m, tmp_path("seq.onnx"), NULL, err), err);
    mb_model_free(m);
    m = NULL;
    ASSERT_OK(mb_model_load(tmp_path("seq.onnx"), &m, err), err);
    ASSERT_EQ(m->graph->values[m->graph->inputs[0]].type,
              MB_VALUE_TYPE_SEQUENCE);
    mb_model_free(m);
    m = NULL;
  }
  return 0;
}

/* Sparse initializers become dense; linear and coordinate indices. */
TEST(sparse_initializer) {
  mb_error err_buf = {0}, *err = &err_buf;
  mb_model *m = NULL;
  for (int coords = 0; coords < 2; coords++) {
    pb values = {0}, indices = {0}, sparse = {0}, graph = {0}, node = {0},
       out = {0}, model = {0}, packed = {0};
    float v[2] = {3.0f, -1.0f};
    pb_varint(&values, TP_DIMS, 2);
    pb_varint(&values, TP_DATA_TYPE, MB_DTYPE_FLOAT);
    pb_str(&values, TP_NAME, "sp");
    pb_bytes(&values, TP_RAW, v, sizeof v);
    if (coords) {
      pb_varint(&indices, TP_DIMS, 2);
      pb_varint(&indices, TP_DIMS, 2);
      static const int64_t c[4] = {0, 1, 2, 3}; /* (0,1) and (2,3) */
      for (int k = 0; k < 4; k++)
        pb_raw_varint(&packed, (uint64_t)c[k]);
    } else {
      pb_varint(&indices, TP_DIMS, 2);
      pb_raw_varint(&packed, 1);
      pb_raw_varint(&packed, 11);
    }
    pb_varint(&indices, TP_DATA_TYPE, MB_DTYPE_INT64);
    pb_msg(&indices, TP_INT64, &packed);
    pb_msg(&sparse, 1, &values);
    pb_msg(&sparse, 2, &indices);
    pb_varint(&sparse, 3, 3);
    pb_varint(&sparse, 3, 4);
    pb_str(&node, 1, "sp");
    pb_str(&node, 2, "out");
    pb_str(&node, 4, "Identity");
    pb_msg(&graph, 1, &node);
    pb_msg(&graph, 15, &sparse);
    pb_str(&out, 1, "out");
    pb_msg(&graph, 12, &out);
    pb_varint(&model, 1, 8);
    pb_msg(&model, 7, &graph);
    ASSERT_OK(mb_model_load_memory(model.data, model.len, NULL, &m, err), err);
    const mb_tensor *t = initializer_of(m, "sp");
    ASSERT(t != NULL);
    ASSERT_EQ(t->rank, 2);
    ASSERT_EQ(t->numel, 12);
    const float *f = t->data;
    ASSERT_EQ(f[1], 3.0f);
    ASSERT_EQ(f[11], -1.0f);
    ASSERT_EQ(f[0], 0.0f);
    mb_model_free(m);
  }
  return 0;
}

/* Builds, back to front, a model whose graph holds an If node whose
 * attribute holds a graph with an If node ... `depth` levels deep. */
static uint8_t *deep_model(int depth, size_t *size_out) {
  size_t cap = (size_t)depth * 32 + 64, pos = cap;
  uint8_t *buf = malloc(cap);
  if (!buf)
    return NULL;
#define PREPEND_BYTE(b) (buf[--pos] = (uint8_t)(b))
#define PREPEND_VARINT(v)                                                      \
  do {                                                                         \
    uint8_t tmp_[10];                                                          \
    int n_ = 0;                                                                \
    uint64_t x_ = (v);                                                         \
    do {                                                                       \
      tmp_[n_++] = (uint8_t)((x_ & 0x7f) | (x_ >> 7 ? 0x80 : 0));              \
      x_ >>= 7;                                                                \
    } while (x_);                                                              \
    while (n_)                                                                 \
      PREPEND_BYTE(tmp_[--n_]);                                                \
  } while (0)
  /* The innermost graph: one node without attributes. */
  PREPEND_BYTE('f');
  PREPEND_BYTE('I');
  PREPEND_VARINT(2);
  PREPEND_VARINT(4 << 3 | 2);
  PREPEND_VARINT(4);
  PREPEND_VARINT(1 << 3 | 2);
  size_t graph_len = cap - pos; /* bytes of the current innermost graph */
  for (int level = 0; level < depth; level++) {
    size_t end = pos + graph_len;
    PREPEND_VARINT(graph_len); /* attribute.g = graph */
    PREPEND_VARINT(6 << 3 | 2);
    PREPEND_VARINT(5); /* attribute.type = GRAPH */
    PREPEND_VARINT(20 << 3);
    PREPEND_BYTE('a'); /* attribute.name = "a" */
    PREPEND_VARINT(1);
    PREPEND_VARINT(1 << 3 | 2);
    PREPEND_VARINT(end - pos); /* node.attribute */
    PREPEND_VARINT(5 << 3 | 2);
    PREPEND_BYTE('f');
    PREPEND_BYTE('I'); /* node.op_type = "If" */
    PREPEND_VARINT(2);
    PREPEND_VARINT(4 << 3 | 2);
    PREPEND_VARINT(end - pos); /* graph.node */
    PREPEND_VARINT(1 << 3 | 2);
    graph_len = end - pos;
  }
  PREPEND_VARINT(graph_len); /* model.graph */
  PREPEND_VARINT(7 << 3 | 2);
  PREPEND_VARINT(8); /* model.ir_version */
  PREPEND_VARINT(1 << 3);
#undef PREPEND_VARINT
#undef PREPEND_BYTE
  memmove(buf, buf + pos, cap - pos);
  *size_out = cap - pos;
  return buf;
}

/* Deep nesting is refused before protobuf-c recurses into it. */
TEST(deeply_nested_model) {
  mb_error err_buf = {0}, *err = &err_buf;
  mb_model *m = NULL;
  size_t size = 0;
  uint8_t *bytes = deep_model(10, &size);
  ASSERT(bytes != NULL);
  ASSERT_OK(mb_model_load_memory(bytes, size, NULL, &m, err), err);
  mb_model_free(m);
  free(bytes);
  static const int depths[] = {70, 300000};
  for (size_t k = 0; k < MB_ARRAY_COUNT(depths); k++) {
    m = NULL;
    bytes = deep_model(depths[k], &size);
    ASSERT(bytes != NULL);
    ASSERT_EQ(mb_model_load_memory(bytes, size, NULL, &m, err),
              MB_STATUS_UNSUPPORTED);
    free(bytes);
    ASSERT_CONTAINS(err->message, "nested more than");
    ASSERT(m == NULL);
  }
  return 0;
}

TEST(bad_model_files) {
  mb_error err_buf = {0}, *err = &err_buf;
  mb_model *m = NULL;
  size_t size = 0;
  /* Empty file. */
  ASSERT_EQ(write_bytes(tmp_path("empty.onnx"), "", 0), 0);
  ASSERT_EQ(mb_model_load(tmp_path("empty.onnx"), &m, err), MB_STATUS_PARSE);
  ASSERT_CONTAINS(err->message, "empty.onnx");
  ASSERT(m == NULL);
  /* A real model cut in half. */
  void *bytes = read_bytes(CONV_MODEL, &size);
  ASSERT(bytes != NULL && size > 16);
  ASSERT_EQ(write_bytes(tmp_path("half.onnx"), bytes, size / 2), 0);
  free(bytes);
  ASSERT_EQ(mb_model_load(tmp_path("half.onnx"), &m, err), MB_STATUS_PARSE);
  ASSERT_CONTAINS(err->message, "half.onnx");
  ASSERT_CONTAINS(err->message, "not a valid ONNX model");
  /* Random bytes. */
  uint8_t noise[4096];
  uint32_t seed = 12345;
  for (size_t i = 0; i < sizeof noise; i++) {
    seed = seed * 1664525u + 1013904223u;
    noise[i] = (uint8_t)(seed >> 24);
  }
  ASSERT_EQ(write_bytes(tmp_path("noise.onnx"), noise, sizeof noise), 0);
  ASSERT_EQ(mb_model_load(tmp_path("noise.onnx"), &m, err), MB_STATUS_PARSE);
  ASSERT_CONTAINS(err->message, "noise.onnx");
  /* Every prefix of a small model fails cleanly or loads: no crash, no
   * leak (run under ASan). */
  bytes = read_bytes(CONV_MODEL, &size);
  ASSERT(bytes != NULL);
  for (size_t cut = 0; cut < size; cut++) {
    mb_model *p = NULL;
    if (mb_model_load_memory(bytes, cut, NULL, &p, err) == MB_STATUS_OK)
      mb_model_free(p);
  }
  free(bytes);
  /* Missing file and a folder. */
  ASSERT_EQ(mb_model_load(tmp_path("missing.onnx"), &m, err), MB_STATUS_IO);
  ASSERT_CONTAINS(err->message, "missing.onnx");
  ASSERT_EQ(mb_model_load(g_tmpdir, &m, err), MB_STATUS_IO);
  ASSERT_CONTAINS(err->message, g_tmpdir);
  ASSERT(m == NULL);
  return 0;
}

TEST_MAIN(TEST_ENTRY(sha256_vectors), TEST_ENTRY(builder_round_trip),
          TEST_ENTRY(external_data_round_trip),
          TEST_ENTRY(external_data_symlink_out_refused),
          TEST_ENTRY(unnamed_graph_gets_a_name),
          TEST_ENTRY(tensor_storage_forms), TEST_ENTRY(tensor_errors),
          TEST_ENTRY(graph_errors), TEST_ENTRY(sparse_initializer),
          TEST_ENTRY(deeply_nested_model), TEST_ENTRY(bad_model_files))
