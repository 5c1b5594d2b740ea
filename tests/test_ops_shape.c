/* Shape, data-movement and resize kernels (src/ops/shape.c, indexing.c,
 * layout.c, selection.c, resize.c), called directly through their op table rows
 * with a hand-built node and context: value-dependent shapes, negative axes,
 * zero-sized dims, int64/bool data, error messages, and the DYNAMIC answer of
 * infer when a value input's data is not known. */
#include "ops/op.h"
#include "test.h"

/* Defined in src/ops/shape.c. */

#define MAX_IO 8

/* One node in its own model, plus its input views and output tensors. */
typedef struct harness {
  mb_model *model;
  int node;
  int64_t opset;
  int n_inputs, n_outputs;
  mb_tensor inputs[MAX_IO];
  mb_tensor *input_ptrs[MAX_IO];
  mb_tensor outputs[MAX_IO];
  mb_tensor *output_ptrs[MAX_IO];
  mb_error err;
} harness;

static void h_init(harness *h, const char *op, int64_t opset, int n_inputs,
                   int n_outputs) {
  static const char *const in_names[MAX_IO] = {"i0", "i1", "i2", "i3",
                                               "i4", "i5", "i6", "i7"};
  static const char *const out_names[MAX_IO] = {"o0", "o1", "o2", "o3",
                                                "o4", "o5", "o6", "o7"};
  memset(h, 0, sizeof(*h));
  h->model = mb__model_create();
  h->opset = opset;
  h->n_inputs = n_inputs;
  h->n_outputs = n_outputs;
  h->node = mb__graph_add_node(h->model->graph, op, "", "node", n_inputs,
                               in_names, n_outputs, out_names, NULL);
  for (int i = 0; i < MAX_IO; i++)
    h->output_ptrs[i] = &h->outputs[i];
}

static void h_free(harness *h) {
  for (int i = 0; i < MAX_IO; i++)
    mb__tensor_clear(&h->outputs[i]);
  mb_model_free(h->model);
}

/* Input i views `data` (borrowed; NULL for "not known yet"). */
static void h_input(harness *h, int i, mb_dtype dt, int rank,
                    const int64_t *dims, const void *data) {
  mb_tensor *t = &h->inputs[i];
  memset(t, 0, sizeof(*t));
  mb__tensor_set_shape(t, dt, rank, dims, NULL);
  t->data = (void *)data;
  h->input_ptrs[i] = t;
}

static void h_omit(harness *h, int i) {
  h->input_ptrs[i] = NULL;
}

static mb_graph *h_graph(harness *h) {
  return h->model->graph;
}

static void h_ints(harness *h, const char *name, int n, const int64_t *v) {
  mb__node_set_ints(h_graph(h), h->node, name, n, v, NULL);
}
static void h_int(harness *h, const char *name, int64_t v) {
  mb__node_set_int(h_graph(h), h->node, name, v, NULL);
}
static void h_string(harness *h, const char *name, const char *v) {
  mb__node_set_string(h_graph(h), h->node, name, v, NULL);
}

static mb_op_ctx h_ctx(harness *h, void **scratch, size_t *scratch_size) {
  mb_op_ctx ctx;
  memset(&ctx, 0, sizeof(ctx));
  ctx.node = &h_graph(h)->nodes[h->node];
  ctx.graph = h_graph(h);
  ctx.opset = h->opset;
  ctx.n_inputs = h->n_inputs;
  ctx.inputs = h->input_ptrs;
  ctx.n_outputs = h->n_outputs;
  ctx.outputs = h->output_ptrs;
  ctx.threads = 1;
  ctx.err = &h->err;
  ctx.scratch = scratch;
  ctx.scratch_size = scratch_size;
  return ctx;
}

/* infer only (static shape inference). */
static mb_status h_infer(harness *h) {
  const mb_node *n = &h_graph(h)->nodes[h->node];
  const mb_op_def *def = mb__op_find("", n->op_type, h->opset);
  if (def == NULL)
    return MB_STATUS_NOT_FOUND;
  void *scratch[MB_OP_SCRATCH_SLOTS] = {NULL};
  size_t sizes[MB_OP_SCRATCH_SLOTS] = {0};
  mb_op_ctx ctx = h_ctx(h, scratch, sizes);
  mb_status status = def->infer(&ctx);
  for (int i = 0; i < MB_OP_SCRATCH_SLOTS; i++)
    mb__aligned_free(scratch[i]);
  return status;
}

/* infer, allocate outputs, run: what the interpreter does per node. */
static mb_status h_run(harness *h) {
  const mb_node *n = &h_graph(h)->nodes[h->node];
  const mb_op_def *def = mb__op_find("", n->op_type, h->opset);
  if (def == NULL)
    return MB_STATUS_NOT_FOUND;
  void *scratch[MB_OP_SCRATCH_SLOTS] = {NULL};
  size_t sizes[MB_OP_SCRATCH_SLOTS] = {0};
  mb_op_ctx ctx = h_ctx(h, scratch, sizes);
  mb_status status = def->infer(&ctx);
  for (int i = 0; status == MB_STATUS_OK && i < h->n_outputs; i++) {
    mb_tensor *t = &h->outputs[i];
    status = mb__tensor_reset(t, t->dtype, t->rank, t->dims, &h->err);
    if (status == MB_STATUS_OK && t->nbytes > 0)
      memset(t->data, 0xAB, t->nbytes); /* catch unwritten elements */
  }
  if (status == MB_STATUS_OK)
    status = def->run(&ctx);
  for (int i = 0; i < MB_OP_SCRATCH_SLOTS; i++)
    mb__aligned_free(scratch[i]);
  return status;
}

#define ASSERT_SHAPE(t, ...)                                                   \
  do {                                                                         \
    const int64_t want_[] = {__VA_ARGS__};                                     \
    int n_ = (int)(sizeof(want_) / sizeof(want_[0]));                          \
    ASSERT_EQ((t)->rank, n_);                                                  \
    for (int k_ = 0; k_ < n_; k_++)                                            \
      ASSERT_EQ((t)->dims[k_], want_[k_]);                                     \
  } while (0)

#define ASSERT_DATA(type, t, ...)                                              \
  do {                                                                         \
    const type want_[] = {__VA_ARGS__};                                        \
    int64_t n_ = (int64_t)(sizeof(want_) / sizeof(want_[0]));                  \
    ASSERT_EQ((t)->numel, n_);                                                 \
    for (int64_t k_ = 0; k_ < n_; k_++)                                        \
      ASSERT_EQ(((const type *)(t)->data)[k_], want_[k_]);                     \
  } while (0)

#define ASSERT_RUN(h)                                                          \
  do {                                                                         \
    mb_status s_ = h_run(h);                                                   \
    if (s_ != MB_STATUS_OK)                                                    \
      TEST_FAIL_("run failed: %s: %s", mb_status_string(s_),                   \
                 (h)->err.message);                                            \
  } while (0)

static const float iota_f32[64] = {
    0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15,
    16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
    32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47,
    48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63};

/* ------------------------------------------------------------------------ */

TEST(reshape) {
  harness h;
  int64_t xd[3] = {2, 3, 4}, sd[1] = {3};
  int64_t shape[3] = {0, -1, 2};
  h_init(&h, "Reshape", 14, 2, 1);
  h_input(&h, 0, MB_DTYPE_FLOAT, 3, xd, iota_f32);
  h_input(&h, 1, MB_DTYPE_INT64, 1, sd, shape);
  ASSERT_RUN(&h);
  ASSERT_SHAPE(&h.outputs[0], 2, 6, 2);
  ASSERT_EQ(((float *)h.outputs[0].data)[23], 23.0f);

  /* Shape data unknown: static inference says DYNAMIC, not an error. */
  h_input(&h, 1, MB_DTYPE_INT64, 1, sd, NULL);
  ASSERT_EQ(h_infer(&h), MB_STATUS_DYNAMIC);

  /* allowzero keeps a literal 0 dim. */
  int64_t zd[2] = {0, 3}, zshape[3] = {3, 0, 7};
  h_input(&h, 0, MB_DTYPE_FLOAT, 2, zd, NULL);
  h_input(&h, 1, MB_DTYPE_INT64, 1, sd, zshape);
  h_int(&h, "allowzero", 1);
  ASSERT_RUN(&h);
  ASSERT_SHAPE(&h.outputs[0], 3, 0, 7);
  h_free(&h);

  /* Size mismatch names both shapes. */
  h_init(&h, "Reshape", 13, 2, 1);
  int64_t bad[2] = {5, 5}, bd[1] = {2};
  h_input(&h, 0, MB_DTYPE_FLOAT, 3, xd, iota_f32);
  h_input(&h, 1, MB_DTYPE_INT64, 1, bd, bad);
  ASSERT_EQ(h_run(&h), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(h.err.message, "cannot reshape [2,3,4] (24 elements)");
  ASSERT_CONTAINS(h.err.message, "Reshape");
  int64_t two_neg[2] = {-1, -1};
  h_input(&h, 1, MB_DTYPE_INT64, 1, bd, two_neg);
  ASSERT_EQ(h_run(&h), MB_STATUS_INVALID_ARGUMENT);
  h_free(&h);
  return 0;
}

TEST(flatten_shape_size) {
  harness h;
  int64_t xd[4] = {2, 3, 4, 1};
  h_init(&h, "Flatten", 13, 1, 1);
  h_input(&h, 0, MB_DTYPE_FLOAT, 4, xd, iota_f32);
  h_int(&h, "axis", -2);
  ASSERT_RUN(&h);
  ASSERT_SHAPE(&h.outputs[0], 6, 4);
  h_free(&h);

  h_init(&h, "Shape", 15, 1, 1);
  h_input(&h, 0, MB_DTYPE_FLOAT, 4, xd, NULL); /* no data needed */
  h_int(&h, "start", -3);
  h_int(&h, "end", 100);
  ASSERT_RUN(&h);
  ASSERT_DATA(int64_t, &h.outputs[0], 3, 4, 1);
  h_free(&h);

  h_init(&h, "Size", 13, 1, 1);
  h_input(&h, 0, MB_DTYPE_BOOL, 4, xd, NULL);
  ASSERT_RUN(&h);
  ASSERT_SHAPE(&h.outputs[0]);
  ASSERT_DATA(int64_t, &h.outputs[0], 24);
  h_free(&h);
  return 0;
}

TEST(squeeze_unsqueeze) {
  harness h;
  int64_t xd[4] = {1, 3, 1, 2}, ad[1] = {2};
  int64_t axes[2] = {-2, 0};
  /* Input form (opset 13) with negative axes. */
  h_init(&h, "Squeeze", 13, 2, 1);
  h_input(&h, 0, MB_DTYPE_INT64, 4, xd, NULL);
  h_input(&h, 1, MB_DTYPE_INT64, 1, ad, axes);
  ASSERT_EQ(h_infer(&h), MB_STATUS_OK);
  ASSERT_SHAPE(&h.outputs[0], 3, 2);
  h_input(&h, 1, MB_DTYPE_INT64, 1, ad, NULL);
  ASSERT_EQ(h_infer(&h), MB_STATUS_DYNAMIC);
  int64_t wrong[1] = {1}, wd[1] = {1};
  h_input(&h, 1, MB_DTYPE_INT64, 1, wd, wrong);
  ASSERT_EQ(h_infer(&h), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(h.err.message, "cannot squeeze axis 1 of size 3");
  /* No axes: every 1 goes. */
  h.n_inputs = 1;
  ASSERT_EQ(h_infer(&h), MB_STATUS_OK);
  ASSERT_SHAPE(&h.outputs[0], 3, 2);
  h_free(&h);

  /* Attribute form (opset 11). */
  int64_t yd[2] = {3, 2};
  int64_t uaxes[3] = {-1, 0, 2};
  const int64_t data[6] = {1, 2, 3, 4, 5, 6};
  h_init(&h, "Unsqueeze", 11, 1, 1);
  h_input(&h, 0, MB_DTYPE_INT64, 2, yd, data);
  h_ints(&h, "axes", 3, uaxes);
  ASSERT_RUN(&h);
  ASSERT_SHAPE(&h.outputs[0], 1, 3, 1, 2, 1);
  ASSERT_DATA(int64_t, &h.outputs[0], 1, 2, 3, 4, 5, 6);
  h_free(&h);

  h_init(&h, "Unsqueeze", 13, 2, 1);
  int64_t dup[2] = {1, 1}, dd[1] = {2};
  h_input(&h, 0, MB_DTYPE_INT64, 2, yd, data);
  h_input(&h, 1, MB_DTYPE_INT64, 1, dd, dup);
  ASSERT_EQ(h_infer(&h), MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(h.err.message, "twice");
  h_free(&h);
  return 0;
}

/* Naive transpose for checking the fast paths. */
static void naive_transpose(uint8_t *dst, const uint8_t *src, size_t es,
                            int rank, const int64_t *dims, const int *perm) {
  int64_t strides[MB_MAX_RANK], out_dims[MB_MAX_RANK], idx[MB_MAX_RANK] = {0};
  int64_t numel = 1;
  mb__contiguous_strides(rank, dims, strides);
  for (int i = 0; i < rank; i++) {
    out_dims[i] = dims[perm[i]];
    numel *= dims[i];
  }
  for (int64_t o = 0; o < numel; o++) {
    int64_t off = 0;
    for (int i = 0; i < rank; i++)
      off += idx[i] * strides[perm[i]];
    memcpy(dst + o * (int64_t)es, src + off * (int64_t)es, es);
    for (int k = rank - 1; k >= 0; k--) {
      if (++idx[k] < out_dims[k])
        break;
      idx[k] = 0;
    }
  }
}

static bool next_permutation(int *p, int n) {
  int i = n - 2;
  while (i >= 0 && p[i] > p[i + 1])
    i--;
  if (i < 0)
    return false;
  int j = n - 1;
  while (p[j] < p[i])
    j--;
  int t = p[i];
  p[i] = p[j];
  p[j] = t;
  for (int a = i + 1, b = n - 1; a < b; a++, b--) {
    t = p[a];
    p[a] = p[b];
    p[b] = t;
  }
  return true;
}

TEST(transpose_matches_naive) {
  static const int64_t shapes[][5] = {
      {2, 3, 4, 5, 0}, {1, 33, 17, 3, 0}, {3, 1, 40, 2, 0}, {5, 64, 1, 1, 0}};
  static const size_t sizes[] = {1, 2, 4, 8, 16};
  size_t cap = 2 * 3 * 4 * 5 * 16 * 40;
  uint8_t *src = malloc(cap), *want = malloc(cap), *got = malloc(cap);
  ASSERT(src && want && got);
  for (size_t i = 0; i < cap; i++)
    src[i] = (uint8_t)(i * 7 + i / 251);
  int failures = 0;
  for (size_t s = 0; s < MB_ARRAY_COUNT(shapes); s++)
    for (size_t e = 0; e < MB_ARRAY_COUNT(sizes); e++) {
      int perm[4] = {0, 1, 2, 3};
      do {
        naive_transpose(want, src, sizes[e], 4, shapes[s], perm);
        mb__transpose(got, src, sizes[e], 4, shapes[s], perm);
        int64_t n = shapes[s][0] * shapes[s][1] * shapes[s][2] * shapes[s][3];
        if (memcmp(want, got, (size_t)n * sizes[e]) != 0)
          failures++;
      } while (next_permutation(perm, 4));
    }
  /* Rank 1-3 and 5, plus a 2-D matrix bigger than one tile. */
  int64_t d5[5] = {2, 3, 2, 5, 3};
  int p5[5] = {4, 0, 3, 1, 2};
  naive_transpose(want, src, 4, 5, d5, p5);
  mb__transpose(got, src, 4, 5, d5, p5);
  failures += memcmp(want, got, 180 * 4) != 0;
  int64_t d2[2] = {70, 45};
  int p2[2] = {1, 0};
  naive_transpose(want, src, 2, 2, d2, p2);
  mb__transpose(got, src, 2, 2, d2, p2);
  failures += memcmp(want, got, 70 * 45 * 2) != 0;
  free(src);
  free(want);
  free(got);
  ASSERT_EQ(failures, 0);
  return 0;
}

TEST(transpose_op) {
  harness h;
  int64_t xd[3] = {2, 1, 3};
  const uint8_t data[6] = {1, 0, 1, 1, 1, 0};
  int64_t perm[3] = {2, 0, 1};
  h_init(&h, "Transpose", 13, 1, 1);
  h_input(&h, 0, MB_DTYPE_BOOL, 3, xd, data);
  h_ints(&h, "perm", 3, perm);
  ASSERT_RUN(&h);
  ASSERT_SHAPE(&h.outputs[0], 3, 2, 1);
  ASSERT_DATA(uint8_t, &h.outputs[0], 1, 1, 0, 1, 1, 0);
  int64_t bad[3] = {0, 0, 1};
  h_free(&h);
  h_init(&h, "Transpose", 13, 1, 1);
  h_input(&h, 0, MB_DTYPE_BOOL, 3, xd, data);
  h_ints(&h, "perm", 3, bad);
  ASSERT_EQ(h_infer(&h), MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(h.err.message, "perm");
  h_free(&h);

  /* Zero-sized dims: default perm reverses. */
  int64_t zd[3] = {2, 0, 5};
  h_init(&h, "Transpose", 13, 1, 1);
  h_input(&h, 0, MB_DTYPE_FLOAT, 3, zd, NULL);
  ASSERT_RUN(&h);
  ASSERT_SHAPE(&h.outputs[0], 5, 0, 2);
  h_free(&h);
  return 0;
}

TEST(strided_copy_broadcast_and_reverse) {
  const int32_t src[6] = {1, 2, 3, 4, 5, 6};
  int32_t dst[12];
  /* [2,3] reversed on both axes. */
  int64_t dims[2] = {2, 3}, rev[2] = {-3, -1};
  mb__copy_strided(dst, src + 5, 4, 2, dims, rev);
  ASSERT_EQ(dst[0], 6);
  ASSERT_EQ(dst[5], 1);
  /* Broadcast a row 4 times. */
  int64_t bd[2] = {4, 3}, bs[2] = {0, 1};
  mb__copy_strided(dst, src, 4, 2, bd, bs);
  ASSERT_EQ(dst[9], 1);
  ASSERT_EQ(dst[11], 3);
  return 0;
}

TEST(expand_tile) {
  harness h;
  int64_t xd[2] = {3, 1}, sd[1] = {3};
  int64_t shape[3] = {2, 1, 4};
  const int64_t data[3] = {7, 8, -9};
  h_init(&h, "Expand", 13, 2, 1);
  h_input(&h, 0, MB_DTYPE_INT64, 2, xd, data);
  h_input(&h, 1, MB_DTYPE_INT64, 1, sd, shape);
  ASSERT_RUN(&h);
  ASSERT_SHAPE(&h.outputs[0], 2, 3, 4);
  int64_t *y = h.outputs[0].data;
  ASSERT_EQ(y[0], 7);
  ASSERT_EQ(y[7], 8);
  ASSERT_EQ(y[23], -9);
  int64_t bad[1] = {2}, bd[1] = {1};
  int64_t x2[1] = {3};
  h_input(&h, 0, MB_DTYPE_INT64, 1, x2, data);
  h_input(&h, 1, MB_DTYPE_INT64, 1, bd, bad);
  ASSERT_EQ(h_infer(&h), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(h.err.message, "cannot expand [3] to [2]");
  h_input(&h, 1, MB_DTYPE_INT64, 1, bd, NULL);
  ASSERT_EQ(h_infer(&h), MB_STATUS_DYNAMIC);
  h_free(&h);

  h_init(&h, "Tile", 13, 2, 1);
  int64_t td[2] = {2, 2}, rd[1] = {2}, reps[2] = {2, 3};
  h_input(&h, 0, MB_DTYPE_FLOAT, 2, td, iota_f32);
  h_input(&h, 1, MB_DTYPE_INT64, 1, rd, reps);
  ASSERT_RUN(&h);
  ASSERT_SHAPE(&h.outputs[0], 4, 6);
  ASSERT_DATA(float, &h.outputs[0], 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 0, 1, 0,
              1, 0, 1, 2, 3, 2, 3, 2, 3);
  int64_t zero_reps[2] = {0, 3};
  h_input(&h, 1, MB_DTYPE_INT64, 1, rd, zero_reps);
  ASSERT_RUN(&h);
  ASSERT_SHAPE(&h.outputs[0], 0, 6);
  h_free(&h);
  return 0;
}

TEST(constant_family) {
  harness h;
  int64_t sd[1] = {2}, shape[2] = {2, 3};
  h_init(&h, "ConstantOfShape", 9, 1, 1);
  h_input(&h, 0, MB_DTYPE_INT64, 1, sd, NULL);
  ASSERT_EQ(h_infer(&h), MB_STATUS_DYNAMIC);
  h_input(&h, 0, MB_DTYPE_INT64, 1, sd, shape);
  ASSERT_RUN(&h);
  ASSERT_EQ(h.outputs[0].dtype, MB_DTYPE_FLOAT);
  ASSERT_DATA(float, &h.outputs[0], 0, 0, 0, 0, 0, 0);
  mb_tensor *value = NULL;
  int64_t one = 1;
  mb_error *err = &h.err;
  ASSERT_OK(mb_tensor_create(MB_DTYPE_INT32, 1, &one, &value, err), err);
  *(int32_t *)value->data = -5;
  mb__node_set_tensor(h_graph(&h), h.node, "value", value, NULL);
  ASSERT_RUN(&h);
  ASSERT_DATA(int32_t, &h.outputs[0], -5, -5, -5, -5, -5, -5);
  h_free(&h);

  h_init(&h, "Constant", 13, 0, 1);
  int64_t ints[3] = {4, -1, 9};
  h_ints(&h, "value_ints", 3, ints);
  ASSERT_RUN(&h);
  ASSERT_SHAPE(&h.outputs[0], 3);
  ASSERT_DATA(int64_t, &h.outputs[0], 4, -1, 9);
  h_free(&h);

  h_init(&h, "Constant", 13, 0, 1);
  h_string(&h, "value_string", "hello");
  ASSERT_EQ(h_infer(&h), MB_STATUS_UNSUPPORTED);
  ASSERT_CONTAINS(h.err.message, "value_string");
  h_free(&h);

  h_init(&h, "Range", 11, 3, 1);
  int64_t start = 10, limit = 3, delta = -3;
  h_input(&h, 0, MB_DTYPE_INT64, 0, NULL, &start);
  h_input(&h, 1, MB_DTYPE_INT64, 0, NULL, &limit);
  h_input(&h, 2, MB_DTYPE_INT64, 0, NULL, &delta);
  ASSERT_RUN(&h);
  ASSERT_DATA(int64_t, &h.outputs[0], 10, 7, 4);
  h_input(&h, 2, MB_DTYPE_INT64, 0, NULL, NULL);
  ASSERT_EQ(h_infer(&h), MB_STATUS_DYNAMIC);
  h_free(&h);

  h_init(&h, "EyeLike", 9, 1, 1);
  int64_t ed[2] = {2, 3};
  h_input(&h, 0, MB_DTYPE_INT32, 2, ed, NULL);
  h_int(&h, "k", 1);
  h_int(&h, "dtype", MB_DTYPE_BOOL);
  ASSERT_RUN(&h);
  ASSERT_DATA(uint8_t, &h.outputs[0], 0, 1, 0, 0, 0, 1);
  h_free(&h);

  h_init(&h, "Trilu", 14, 2, 1);
  int64_t k = -1;
  h_input(&h, 0, MB_DTYPE_FLOAT, 2, (int64_t[2]){3, 3}, iota_f32);
  h_input(&h, 1, MB_DTYPE_INT64, 0, NULL, &k);
  h_int(&h, "upper", 0);
  ASSERT_RUN(&h);
  ASSERT_DATA(float, &h.outputs[0], 0, 0, 0, 3, 0, 0, 6, 7, 0);
  h_free(&h);
  return 0;
}

TEST(gather_family) {
  harness h;
  int64_t xd[2] = {3, 2}, id[2] = {2, 2};
  const int64_t data[6] = {10, 11, 20, 21, 30, 31};
  const int32_t ind[4] = {0, -1, 1, 2};
  h_init(&h, "Gather", 13, 2, 1);
  h_input(&h, 0, MB_DTYPE_INT64, 2, xd, data);
  h_input(&h, 1, MB_DTYPE_INT32, 2, id, ind);
  ASSERT_RUN(&h);
  ASSERT_SHAPE(&h.outputs[0], 2, 2, 2);
  ASSERT_DATA(int64_t, &h.outputs[0], 10, 11, 30, 31, 20, 21, 30, 31);
  h_int(&h, "axis", -1);
  const int32_t ind2[1] = {1};
  int64_t i1[1] = {1};
  h_input(&h, 1, MB_DTYPE_INT32, 1, i1, ind2);
  ASSERT_RUN(&h);
  ASSERT_SHAPE(&h.outputs[0], 3, 1);
  ASSERT_DATA(int64_t, &h.outputs[0], 11, 21, 31);
  const int32_t oob[1] = {2};
  h_input(&h, 1, MB_DTYPE_INT32, 1, i1, oob);
  ASSERT_EQ(h_run(&h), MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(h.err.message, "index 2 is out of range");
  h_free(&h);

  h_init(&h, "GatherElements", 13, 2, 1);
  const int64_t ge[4] = {1, 0, -1, 0};
  h_input(&h, 0, MB_DTYPE_INT64, 2, xd, data);
  h_input(&h, 1, MB_DTYPE_INT64, 2, id, ge);
  h_int(&h, "axis", 1);
  ASSERT_RUN(&h);
  ASSERT_DATA(int64_t, &h.outputs[0], 11, 10, 21, 20);
  h_free(&h);

  h_init(&h, "GatherND", 13, 2, 1);
  const int64_t nd[4] = {2, 1, 0, 0};
  h_input(&h, 0, MB_DTYPE_INT64, 2, xd, data);
  h_input(&h, 1, MB_DTYPE_INT64, 2, id, nd);
  ASSERT_RUN(&h);
  ASSERT_DATA(int64_t, &h.outputs[0], 31, 10);
  h_free(&h);

  h_init(&h, "ScatterND", 16, 3, 1);
  const int64_t sidx[2] = {1, 1};
  const int64_t upd[4] = {5, 6, 7, 8};
  h_input(&h, 0, MB_DTYPE_INT64, 2, xd, data);
  h_input(&h, 1, MB_DTYPE_INT64, 2, (int64_t[2]){2, 1}, sidx);
  h_input(&h, 2, MB_DTYPE_INT64, 2, (int64_t[2]){2, 2}, upd);
  h_string(&h, "reduction", "add");
  ASSERT_RUN(&h);
  ASSERT_DATA(int64_t, &h.outputs[0], 10, 11, 32, 35, 30, 31);
  h_free(&h);

  h_init(&h, "ScatterElements", 18, 3, 1);
  const int64_t eidx[2] = {-1, 0};
  const int64_t eupd[2] = {100, -100};
  h_input(&h, 0, MB_DTYPE_INT64, 2, xd, data);
  h_input(&h, 1, MB_DTYPE_INT64, 2, (int64_t[2]){1, 2}, eidx);
  h_input(&h, 2, MB_DTYPE_INT64, 2, (int64_t[2]){1, 2}, eupd);
  h_string(&h, "reduction", "max");
  ASSERT_RUN(&h);
  ASSERT_DATA(int64_t, &h.outputs[0], 10, 11, 20, 21, 100, 31);
  h_free(&h);
  return 0;
}

TEST(slice) {
  harness h;
  int64_t xd[2] = {4, 4}, one[1] = {1}, two[1] = {2};
  int64_t starts[2] = {-1, INT64_MAX}, ends[2] = {INT64_MIN, 0};
  int64_t axes[2] = {-1, 0}, steps[2] = {-2, -1};
  h_init(&h, "Slice", 13, 5, 1);
  h_input(&h, 0, MB_DTYPE_FLOAT, 2, xd, iota_f32);
  h_input(&h, 1, MB_DTYPE_INT64, 1, two, starts);
  h_input(&h, 2, MB_DTYPE_INT64, 1, two, ends);
  h_input(&h, 3, MB_DTYPE_INT64, 1, two, axes);
  h_input(&h, 4, MB_DTYPE_INT64, 1, two, steps);
  ASSERT_RUN(&h);
  /* rows 3,2,1 (end 0 exclusive), columns 3,1. */
  ASSERT_SHAPE(&h.outputs[0], 3, 2);
  ASSERT_DATA(float, &h.outputs[0], 15, 13, 11, 9, 7, 5);
  h_input(&h, 4, MB_DTYPE_INT64, 1, two, NULL);
  ASSERT_EQ(h_infer(&h), MB_STATUS_DYNAMIC);
  /* Empty selection. */
  int64_t s1[1] = {3}, e1[1] = {1};
  h.n_inputs = 3;
  h_input(&h, 1, MB_DTYPE_INT64, 1, one, s1);
  h_input(&h, 2, MB_DTYPE_INT64, 1, one, e1);
  ASSERT_RUN(&h);
  ASSERT_SHAPE(&h.outputs[0], 0, 4);
  h_free(&h);

  /* Opset 1 attribute form, bool data. */
  const uint8_t b[8] = {1, 0, 0, 1, 1, 1, 0, 0};
  int64_t bd[2] = {2, 4}, as[1] = {1}, ae[1] = {1000}, aa[1] = {1};
  h_init(&h, "Slice", 1, 1, 1);
  h_input(&h, 0, MB_DTYPE_BOOL, 2, bd, b);
  h_ints(&h, "starts", 1, as);
  h_ints(&h, "ends", 1, ae);
  h_ints(&h, "axes", 1, aa);
  ASSERT_RUN(&h);
  ASSERT_SHAPE(&h.outputs[0], 2, 3);
  ASSERT_DATA(uint8_t, &h.outputs[0], 0, 0, 1, 1, 0, 0);
  h_free(&h);
  return 0;
}

TEST(concat_split) {
  harness h;
  int64_t ad[2] = {2, 1}, bd[2] = {2, 0}, cd[2] = {2, 2};
  const int64_t a[2] = {1, 2}, c[4] = {3, 4, 5, 6};
  h_init(&h, "Concat", 13, 3, 1);
  h_input(&h, 0, MB_DTYPE_INT64, 2, ad, a);
  h_input(&h, 1, MB_DTYPE_INT64, 2, bd, NULL);
  h_input(&h, 2, MB_DTYPE_INT64, 2, cd, c);
  h_int(&h, "axis", -1);
  ASSERT_RUN(&h);
  ASSERT_SHAPE(&h.outputs[0], 2, 3);
  ASSERT_DATA(int64_t, &h.outputs[0], 1, 3, 4, 2, 5, 6);
  int64_t wrong[2] = {3, 2};
  h_input(&h, 2, MB_DTYPE_INT64, 2, wrong, c);
  ASSERT_EQ(h_infer(&h), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(h.err.message, "input 2");
  h_free(&h);

  int64_t xd[1] = {7}, sd[1] = {3}, split[3] = {2, 0, 5};
  const int32_t x[7] = {1, 2, 3, 4, 5, 6, 7};
  h_init(&h, "Split", 13, 2, 3);
  h_input(&h, 0, MB_DTYPE_INT32, 1, xd, x);
  h_input(&h, 1, MB_DTYPE_INT64, 1, sd, split);
  ASSERT_RUN(&h);
  ASSERT_DATA(int32_t, &h.outputs[0], 1, 2);
  ASSERT_SHAPE(&h.outputs[1], 0);
  ASSERT_DATA(int32_t, &h.outputs[2], 3, 4, 5, 6, 7);
  h_input(&h, 1, MB_DTYPE_INT64, 1, sd, NULL);
  ASSERT_EQ(h_infer(&h), MB_STATUS_DYNAMIC);
  h_free(&h);

  /* Opset 18: uneven equal split, last chunk smaller. */
  h_init(&h, "Split", 18, 1, 3);
  h_input(&h, 0, MB_DTYPE_INT32, 1, xd, x);
  h_int(&h, "num_outputs", 3);
  ASSERT_RUN(&h);
  ASSERT_DATA(int32_t, &h.outputs[0], 1, 2, 3);
  ASSERT_DATA(int32_t, &h.outputs[2], 7);
  h_free(&h);

  /* Before 18 an uneven split is an error. */
  h_init(&h, "Split", 13, 1, 3);
  h_input(&h, 0, MB_DTYPE_INT32, 1, xd, x);
  ASSERT_EQ(h_infer(&h), MB_STATUS_SHAPE);
  h_free(&h);
  return 0;
}

TEST(pad) {
  harness h;
  int64_t xd[2] = {2, 3}, pd[1] = {4};
  int64_t pads[4] = {0, 2, 1, -1};
  const int64_t x[6] = {1, 2, 3, 4, 5, 6};
  static const int64_t expect_reflect[] = {3, 2, 1, 2, 6, 5, 4, 5, 3, 2, 1, 2};
  static const int64_t expect_edge[] = {1, 1, 1, 2, 4, 4, 4, 5, 4, 4, 4, 5};
  const char *modes[2] = {"reflect", "edge"};
  const int64_t *expect[2] = {expect_reflect, expect_edge};
  for (int m = 0; m < 2; m++) {
    h_init(&h, "Pad", 13, 2, 1);
    h_input(&h, 0, MB_DTYPE_INT64, 2, xd, x);
    h_input(&h, 1, MB_DTYPE_INT64, 1, pd, pads);
    h_string(&h, "mode", modes[m]);
    ASSERT_RUN(&h);
    ASSERT_SHAPE(&h.outputs[0], 3, 4);
    for (int i = 0; i < 12; i++)
      ASSERT_EQ(((int64_t *)h.outputs[0].data)[i], expect[m][i]);
    h_free(&h);
  }
  int64_t cv = 9;
  h_init(&h, "Pad", 13, 3, 1);
  h_input(&h, 0, MB_DTYPE_INT64, 2, xd, x);
  h_input(&h, 1, MB_DTYPE_INT64, 1, pd, pads);
  h_input(&h, 2, MB_DTYPE_INT64, 0, NULL, &cv);
  ASSERT_RUN(&h);
  ASSERT_DATA(int64_t, &h.outputs[0], 9, 9, 1, 2, 9, 9, 4, 5, 9, 9, 9, 9);
  h_input(&h, 1, MB_DTYPE_INT64, 1, pd, NULL);
  ASSERT_EQ(h_infer(&h), MB_STATUS_DYNAMIC);
  h_free(&h);

  /* Opset 2 attribute form with a float value on bool data. */
  int64_t apads[2] = {1, 1};
  const uint8_t b[1] = {0};
  int64_t bd[1] = {1};
  h_init(&h, "Pad", 2, 1, 1);
  h_input(&h, 0, MB_DTYPE_BOOL, 1, bd, b);
  h_ints(&h, "pads", 2, apads);
  mb__node_set_float(h_graph(&h), h.node, "value", 1.0f, NULL);
  ASSERT_RUN(&h);
  ASSERT_DATA(uint8_t, &h.outputs[0], 1, 0, 1);
  h_free(&h);
  return 0;
}

TEST(topk_nonzero_unique_onehot) {
  harness h;
  int64_t xd[2] = {2, 4}, kd[1] = {1}, k = 2;
  const float x[8] = {1, 3, 3, 2, -1, -5, 0, -1};
  h_init(&h, "TopK", 11, 2, 2);
  h_input(&h, 0, MB_DTYPE_FLOAT, 2, xd, x);
  h_input(&h, 1, MB_DTYPE_INT64, 1, kd, &k);
  ASSERT_RUN(&h);
  ASSERT_DATA(float, &h.outputs[0], 3, 3, 0, -1);
  ASSERT_DATA(int64_t, &h.outputs[1], 1, 2, 2, 0); /* ties: lower index */
  h_int(&h, "largest", 0);
  ASSERT_RUN(&h);
  ASSERT_DATA(int64_t, &h.outputs[1], 0, 3, 1, 0);
  h_input(&h, 1, MB_DTYPE_INT64, 1, kd, NULL);
  ASSERT_EQ(h_infer(&h), MB_STATUS_DYNAMIC);
  h_free(&h);

  h_init(&h, "NonZero", 13, 1, 1);
  h_input(&h, 0, MB_DTYPE_FLOAT, 2, xd, x);
  ASSERT_RUN(&h);
  ASSERT_SHAPE(&h.outputs[0], 2, 7);
  ASSERT_DATA(int64_t, &h.outputs[0], 0, 0, 0, 0, 1, 1, 1, 0, 1, 2, 3, 0, 1, 3);
  h_input(&h, 0, MB_DTYPE_FLOAT, 2, xd, NULL);
  ASSERT_EQ(h_infer(&h), MB_STATUS_DYNAMIC);
  h_free(&h);

  h_init(&h, "Unique", 11, 1, 4);
  h_input(&h, 0, MB_DTYPE_FLOAT, 2, xd, x);
  h_int(&h, "sorted", 0);
  ASSERT_RUN(&h);
  ASSERT_DATA(float, &h.outputs[0], 1, 3, 2, -1, -5, 0);
  ASSERT_DATA(int64_t, &h.outputs[1], 0, 1, 3, 4, 5, 6);
  ASSERT_DATA(int64_t, &h.outputs[2], 0, 1, 1, 2, 3, 4, 5, 3);
  ASSERT_DATA(int64_t, &h.outputs[3], 1, 2, 1, 2, 1, 1);
  h_free(&h);

  h_init(&h, "OneHot", 11, 3, 1);
  const int64_t ind[3] = {0, -1, 7};
  int64_t id[1] = {3}, vd[1] = {2};
  float depth = 3;
  const int64_t values[2] = {0, 5};
  h_input(&h, 0, MB_DTYPE_INT64, 1, id, ind);
  h_input(&h, 1, MB_DTYPE_FLOAT, 0, NULL, &depth);
  h_input(&h, 2, MB_DTYPE_INT64, 1, vd, values);
  h_int(&h, "axis", 0);
  ASSERT_RUN(&h);
  ASSERT_SHAPE(&h.outputs[0], 3, 3);
  ASSERT_DATA(int64_t, &h.outputs[0], 5, 0, 0, 0, 0, 0, 0, 5, 0);
  h_free(&h);
  return 0;
}

TEST(cumsum_reverse_space) {
  harness h;
  int64_t xd[2] = {2, 3}, axis = -1;
  const int32_t x[6] = {1, 2, 3, 4, 5, 6};
  h_init(&h, "CumSum", 14, 2, 1);
  h_input(&h, 0, MB_DTYPE_INT32, 2, xd, x);
  h_input(&h, 1, MB_DTYPE_INT64, 0, NULL, &axis);
  h_int(&h, "exclusive", 1);
  h_int(&h, "reverse", 1);
  ASSERT_RUN(&h);
  ASSERT_DATA(int32_t, &h.outputs[0], 5, 3, 0, 11, 6, 0);
  h_free(&h);

  h_init(&h, "DepthToSpace", 13, 1, 1);
  int64_t dd[4] = {1, 4, 1, 2};
  h_input(&h, 0, MB_DTYPE_FLOAT, 4, dd, iota_f32);
  h_int(&h, "blocksize", 2);
  h_string(&h, "mode", "CRD");
  ASSERT_RUN(&h);
  ASSERT_SHAPE(&h.outputs[0], 1, 1, 2, 4);
  ASSERT_DATA(float, &h.outputs[0], 0, 2, 1, 3, 4, 6, 5, 7);
  h_free(&h);

  h_init(&h, "SpaceToDepth", 13, 1, 1);
  int64_t sd[4] = {1, 1, 2, 4};
  h_input(&h, 0, MB_DTYPE_FLOAT, 4, sd, iota_f32);
  h_int(&h, "blocksize", 2);
  ASSERT_RUN(&h);
  ASSERT_SHAPE(&h.outputs[0], 1, 4, 1, 2);
  ASSERT_DATA(float, &h.outputs[0], 0, 2, 1, 3, 4, 6, 5, 7);
  int64_t odd[4] = {1, 1, 3, 4};
  h_input(&h, 0, MB_DTYPE_FLOAT, 4, odd, iota_f32);
  ASSERT_EQ(h_infer(&h), MB_STATUS_SHAPE);
  h_free(&h);

  h_init(&h, "Compress", 11, 2, 1);
  const uint8_t cond[2] = {0, 1};
  int64_t cd[1] = {2};
  h_input(&h, 0, MB_DTYPE_INT32, 2, xd, x);
  h_input(&h, 1, MB_DTYPE_BOOL, 1, cd, cond);
  h_int(&h, "axis", 0);
  ASSERT_RUN(&h);
  ASSERT_DATA(int32_t, &h.outputs[0], 4, 5, 6);
  h_free(&h);
  return 0;
}

TEST(resize) {
  harness h;
  int64_t xd[4] = {1, 1, 2, 2}, sd[1] = {4};
  const float x[4] = {1, 2, 3, 4};
  const float scales[4] = {1, 1, 2, 2};
  h_init(&h, "Resize", 13, 3, 1);
  h_input(&h, 0, MB_DTYPE_FLOAT, 4, xd, x);
  h_omit(&h, 1);
  h_input(&h, 2, MB_DTYPE_FLOAT, 1, sd, scales);
  h_string(&h, "mode", "linear");
  ASSERT_RUN(&h);
  ASSERT_SHAPE(&h.outputs[0], 1, 1, 4, 4);
  /* half_pixel: first row 1, 1.25, 1.75, 2. */
  const float *y = h.outputs[0].data;
  ASSERT_NEAR(y[0], 1.0, 1e-6);
  ASSERT_NEAR(y[1], 1.25, 1e-6);
  ASSERT_NEAR(y[2], 1.75, 1e-6);
  ASSERT_NEAR(y[15], 4.0, 1e-6);
  ASSERT_NEAR(y[5], 1.25 + 0.25 * 2, 1e-6);
  h_input(&h, 2, MB_DTYPE_FLOAT, 1, sd, NULL);
  ASSERT_EQ(h_infer(&h), MB_STATUS_DYNAMIC);
  h_free(&h);

  /* Nearest on int64 data with sizes; asymmetric + floor. */
  const int64_t xi[4] = {1, 2, 3, 4};
  const int64_t sizes[4] = {1, 1, 3, 1};
  h_init(&h, "Resize", 13, 4, 1);
  h_input(&h, 0, MB_DTYPE_INT64, 4, xd, xi);
  h_omit(&h, 1);
  h_omit(&h, 2);
  h_input(&h, 3, MB_DTYPE_INT64, 1, sd, sizes);
  h_string(&h, "coordinate_transformation_mode", "asymmetric");
  h_string(&h, "nearest_mode", "floor");
  ASSERT_RUN(&h);
  ASSERT_SHAPE(&h.outputs[0], 1, 1, 3, 1);
  ASSERT_DATA(int64_t, &h.outputs[0], 1, 1, 3);
  h_free(&h);

  /* Linear needs float data. */
  h_init(&h, "Resize", 13, 3, 1);
  h_input(&h, 0, MB_DTYPE_INT64, 4, xd, xi);
  h_omit(&h, 1);
  h_input(&h, 2, MB_DTYPE_FLOAT, 1, sd, scales);
  h_string(&h, "mode", "linear");
  ASSERT_EQ(h_infer(&h), MB_STATUS_UNSUPPORTED);
  ASSERT_CONTAINS(h.err.message, "linear mode on int64");
  h_free(&h);

  /* Upsample-7 (attribute scales), nearest on float16. */
  const uint16_t xh[4] = {0x3c00, 0x4000, 0x4200, 0x4400};
  const float us[4] = {1, 1, 1, 2};
  h_init(&h, "Upsample", 7, 1, 1);
  h_input(&h, 0, MB_DTYPE_FLOAT16, 4, xd, xh);
  mb__node_set_floats(h_graph(&h), h.node, "scales", 4, us, NULL);
  ASSERT_RUN(&h);
  ASSERT_SHAPE(&h.outputs[0], 1, 1, 2, 4);
  ASSERT_DATA(uint16_t, &h.outputs[0], 0x3c00, 0x3c00, 0x4000, 0x4000, 0x4200,
              0x4200, 0x4400, 0x4400);
  h_free(&h);
  return 0;
}

/* Integers that go through a double lose their low bits beyond 2^53 (and
 * uint64 beyond 2^63 reads as negative through int64): each kernel here
 * used to do one or the other. */
TEST(integers_beyond_double_precision) {
  harness h;
  const int64_t big = INT64_C(1) << 60;
  /* Range: the count came from doubles, where 2^60 + 3 is 2^60: empty. */
  {
    int64_t start = big, limit = big + 3, delta = 1;
    h_init(&h, "Range", 11, 3, 1);
    h_input(&h, 0, MB_DTYPE_INT64, 0, NULL, &start);
    h_input(&h, 1, MB_DTYPE_INT64, 0, NULL, &limit);
    h_input(&h, 2, MB_DTYPE_INT64, 0, NULL, &delta);
    ASSERT_RUN(&h);
    ASSERT_DATA(int64_t, &h.outputs[0], big, big + 1, big + 2);
    int64_t down = -1;
    h_input(&h, 0, MB_DTYPE_INT64, 0, NULL, &limit);
    h_input(&h, 1, MB_DTYPE_INT64, 0, NULL, &start);
    h_input(&h, 2, MB_DTYPE_INT64, 0, NULL, &down);
    ASSERT_RUN(&h);
    ASSERT_DATA(int64_t, &h.outputs[0], big + 3, big + 2, big + 1);
    /* The whole int64 line in four steps: 3 * 2^62 alone overflows. */
    int64_t lo = INT64_MIN, hi = INT64_MAX, step = INT64_C(1) << 62;
    h_input(&h, 0, MB_DTYPE_INT64, 0, NULL, &lo);
    h_input(&h, 1, MB_DTYPE_INT64, 0, NULL, &hi);
    h_input(&h, 2, MB_DTYPE_INT64, 0, NULL, &step);
    ASSERT_RUN(&h);
    ASSERT_DATA(int64_t, &h.outputs[0], INT64_MIN, -step, 0, step);
    h_free(&h);
    const uint64_t u[3] = {0, 3, 1};
    h_init(&h, "Range", 11, 3, 1);
    for (int i = 0; i < 3; i++)
      h_input(&h, i, MB_DTYPE_UINT64, 0, NULL, &u[i]);
    ASSERT_EQ(h_infer(&h), MB_STATUS_UNSUPPORTED);
    ASSERT_CONTAINS(h.err.message, "uint64");
    h_free(&h);
  }
  /* ScatterElements reductions: uint64 and the narrow types in integer
   * arithmetic, wrapping as C and ONNX Runtime do (a double saturated). */
  {
    const uint64_t data[2] = {(UINT64_C(1) << 63) + 1, 5};
    const uint64_t upd[2] = {2, (UINT64_C(1) << 63) + 2};
    const int64_t idx[2] = {0, 1};
    int64_t d2[1] = {2};
    static const char *const reds[3] = {"add", "max", "min"};
    const uint64_t want[3][2] = {
        {(UINT64_C(1) << 63) + 3, (UINT64_C(1) << 63) + 7},
        {(UINT64_C(1) << 63) + 1, (UINT64_C(1) << 63) + 2},
        {2, 5}};
    for (int r = 0; r < 3; r++) {
      h_init(&h, "ScatterElements", 18, 3, 1);
      h_input(&h, 0, MB_DTYPE_UINT64, 1, d2, data);
      h_input(&h, 1, MB_DTYPE_INT64, 1, d2, idx);
      h_input(&h, 2, MB_DTYPE_UINT64, 1, d2, upd);
      h_string(&h, "reduction", reds[r]);
      ASSERT_RUN(&h);
      ASSERT_DATA(uint64_t, &h.outputs[0], want[r][0], want[r][1]);
      h_free(&h);
    }
    const int8_t small[2] = {127, -128}, one[2] = {1, -1};
    h_init(&h, "ScatterElements", 18, 3, 1);
    h_input(&h, 0, MB_DTYPE_INT8, 1, d2, small);
    h_input(&h, 1, MB_DTYPE_INT64, 1, d2, idx);
    h_input(&h, 2, MB_DTYPE_INT8, 1, d2, one);
    h_string(&h, "reduction", "add");
    ASSERT_RUN(&h);
    ASSERT_DATA(int8_t, &h.outputs[0], -128, 127);
    h_free(&h);
  }
  /* TopK and Unique order uint64 values above 2^63 as the largest. */
  {
    const uint64_t x[3] = {1, (UINT64_C(1) << 63) + 1, 5};
    int64_t xd[1] = {3}, kd[1] = {1}, k = 1;
    h_init(&h, "TopK", 11, 2, 2);
    h_input(&h, 0, MB_DTYPE_UINT64, 1, xd, x);
    h_input(&h, 1, MB_DTYPE_INT64, 1, kd, &k);
    ASSERT_RUN(&h);
    ASSERT_DATA(uint64_t, &h.outputs[0], (UINT64_C(1) << 63) + 1);
    ASSERT_DATA(int64_t, &h.outputs[1], 1);
    h_free(&h);
    h_init(&h, "Unique", 11, 1, 1);
    h_input(&h, 0, MB_DTYPE_UINT64, 1, xd, x);
    ASSERT_RUN(&h);
    ASSERT_DATA(uint64_t, &h.outputs[0], 1, 5, (UINT64_C(1) << 63) + 1);
    h_free(&h);
  }
  /* OneHot reads integer indices and depth as integers; a uint64 index
   * above INT64_MAX is out of range, not a negative one. */
  {
    const uint64_t ind[3] = {UINT64_MAX, 1, UINT64_C(1) << 63};
    const int64_t depth = 3;
    const int64_t values[2] = {0, 5};
    int64_t id[1] = {3}, vd[1] = {2};
    h_init(&h, "OneHot", 11, 3, 1);
    h_input(&h, 0, MB_DTYPE_UINT64, 1, id, ind);
    h_input(&h, 1, MB_DTYPE_INT64, 0, NULL, &depth);
    h_input(&h, 2, MB_DTYPE_INT64, 1, vd, values);
    ASSERT_RUN(&h);
    ASSERT_SHAPE(&h.outputs[0], 3, 3);
    ASSERT_DATA(int64_t, &h.outputs[0], 0, 0, 0, 0, 5, 0, 0, 0, 0);
    h_free(&h);
  }
  return 0;
}

TEST_MAIN(TEST_ENTRY(reshape), TEST_ENTRY(flatten_shape_size),
          TEST_ENTRY(squeeze_unsqueeze), TEST_ENTRY(transpose_matches_naive),
          TEST_ENTRY(transpose_op),
          TEST_ENTRY(strided_copy_broadcast_and_reverse),
          TEST_ENTRY(expand_tile), TEST_ENTRY(constant_family),
          TEST_ENTRY(gather_family), TEST_ENTRY(slice),
          TEST_ENTRY(concat_split), TEST_ENTRY(pad),
          TEST_ENTRY(topk_nonzero_unique_onehot),
          TEST_ENTRY(cumsum_reverse_space), TEST_ENTRY(resize),
          TEST_ENTRY(integers_beyond_double_precision))
