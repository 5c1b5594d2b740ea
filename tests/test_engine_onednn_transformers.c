/* The oneDNN engine on transformer blocks as the PyTorch exporter writes
 * them (issue 17): nn.MultiheadAttention's [S, B, E] spelling, a GPT block
 * (fused QKV split, scale after the scores, causal mask) and a BERT layer
 * (separate Q/K/V projections, attention mask input). Each graph runs on
 * the reference interpreter and as one oneDNN segment in fp32 (1 and 2
 * threads), bf16 and int8, and the per-primitive profile shows what the
 * engine made of it: transposes, reshapes and slices become views a matmul
 * reads by its strides, the attention scale and the bias go into the
 * products, the residual Add into the projection before it. Variants that
 * look alike but are not the same computation must not be fused that way
 * and still match the reference. */
#include "runtime/engine.h"
#include "test.h"

static const mb_engine *engine = &mb__engine_onednn;

#include "engine_harness.h"
#include "onednn_checks.h"

/* PyTorch 1.13's nn.MultiheadAttention (batch_first, in a
 * TransformerEncoderLayer) on x [batch, S, E] with H heads of D:
 * [S, batch, E] inside, one in_proj MatMul, Slices into q, k, v, heads by
 * Reshape + Transpose, q scaled before the scores, the context back
 * through Transpose + Reshape, out_proj as a Gemm, and the residual Add. */
static void build_torch_mha(gcase *c, int64_t batch, int64_t s, int64_t h,
                            int64_t d) {
  int64_t e = h * d;
  int64_t x[3] = {batch, s, e}, w_in[2] = {e, 3 * e}, b_in[1] = {3 * e};
  int64_t w_out[2] = {e, e}, b_out[1] = {e};
  const int64_t heads[3] = {s, batch * h, d}, flat[2] = {s * batch, e};
  const int64_t back[3] = {s, batch, e};
  const int64_t axis[1] = {2}, st0[1] = {0}, st1[1] = {e}, st2[1] = {2 * e},
                st3[1] = {3 * e};
  gc_init(c, 17);
  gc_input(c, "x", 3, x);
  gc_const(c, "w_in", 2, w_in, NULL, -0.3f, 0.3f);
  gc_const(c, "b_in", 1, b_in, NULL, -0.2f, 0.2f);
  gc_const(c, "w_out", 2, w_out, NULL, -0.3f, 0.3f);
  gc_const(c, "b_out", 1, b_out, NULL, -0.2f, 0.2f);
  gc_const_i64(c, "heads", 3, heads);
  gc_const_i64(c, "flat", 2, flat);
  gc_const_i64(c, "back", 3, back);
  gc_const_i64(c, "axis", 1, axis);
  gc_const_i64(c, "s0", 1, st0);
  gc_const_i64(c, "s1", 1, st1);
  gc_const_i64(c, "s2", 1, st2);
  gc_const_i64(c, "s3", 1, st3);
  gc_scalar(c, "sqrt_d", sqrtf((float)d));
  /* An activation before the block, so that the residual is a value the
   * engine owns (the graph input is the caller's, never written). */
  gc_node(c, "Relu", "x", "xa");
  gc_node(c, "Transpose", "xa", "xt");
  GC_INTS(c, "perm", 1, 0, 2);
  gc_node(c, "MatMul", "xt,w_in", "qkv0");
  gc_node(c, "Add", "b_in,qkv0", "qkv");
  gc_node(c, "Slice", "qkv,s0,s1,axis", "q0");
  gc_node(c, "Slice", "qkv,s1,s2,axis", "k0");
  gc_node(c, "Slice", "qkv,s2,s3,axis", "v0");
  gc_node(c, "Reshape", "q0,heads", "q1");
  gc_node(c, "Transpose", "q1", "q");
  GC_INTS(c, "perm", 1, 0, 2);
  gc_node(c, "Reshape", "k0,heads", "k1");
  gc_node(c, "Transpose", "k1", "kt");
  GC_INTS(c, "perm", 1, 2, 0);
  gc_node(c, "Reshape", "v0,heads", "v1");
  gc_node(c, "Transpose", "v1", "v");
  GC_INTS(c, "perm", 1, 0, 2);
  gc_node(c, "Div", "q,sqrt_d", "qs");
  gc_node(c, "MatMul", "qs,kt", "scores");
  gc_node(c, "Softmax", "scores", "p");
  gc_int(c, "axis", -1);
  gc_node(c, "MatMul", "p,v", "o");
  gc_node(c, "Transpose", "o", "ot");
  GC_INTS(c, "perm", 1, 0, 2);
  gc_node(c, "Reshape", "ot,flat", "o2");
  gc_node(c, "Gemm", "o2,w_out,b_out", "y0");
  gc_int(c, "transB", 1);
  gc_node(c, "Reshape", "y0,back", "y1");
  gc_node(c, "Transpose", "y1", "y2");
  GC_INTS(c, "perm", 1, 0, 2);
  gc_node(c, "Add", "xa,y2", "r");
  /* Post-LN, as the encoder layer. */
  gc_const(c, "ln_g", 1, b_out, NULL, 0.5f, 1.5f);
  gc_const(c, "ln_b", 1, b_out, NULL, -0.2f, 0.2f);
  gc_node(c, "LayerNormalization", "r,ln_g,ln_b", "y");
  gc_output(c, "y");
}

/* Batch 1: every transpose, slice and reshape is a view, the scale and
 * both biases go into the products, the residual Add into out_proj; in
 * fp32 nothing is copied. Batch 2: the same graph where [S, 2, E] is a
 * real transpose (read through a copy), still exact. */
TEST(torch_multihead_attention) {
  SKIP_UNLESS_AVAILABLE();
  gcase c;
  char ops[512];
  build_torch_mha(&c, 1, 12, 4, 8);
  if (check_graph(&c))
    return 1;
  build_torch_mha(&c, 1, 12, 4, 8);
  if (profile_ops(&c, 1, ops, sizeof ops, NULL))
    return 1;
  printf("  profile: %s\n", ops);
  ASSERT_EQ(count_word(ops, "MatMul"), 3);
  ASSERT_EQ(count_word(ops, "Gemm"), 1);
  ASSERT_EQ(count_word(ops, "Softmax"), 1);
  /* (q gets a plain copy, a "reorder": oneDNN's gemm reads it faster so;
   * k and v are read where they are.) */
  static const char *const gone[] = {"Transpose", "Slice", "Reshape", "Div",
                                     "Add"};
  for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
    if (count_word(ops, gone[i]))
      TEST_FAIL_("%s still runs as a primitive: %s", gone[i], ops);
  build_torch_mha(&c, 2, 9, 2, 8);
  return check_graph(&c);
}

/* The scores of one head group: q [1, H, S, D] (from a fused QKV split or
 * its own projection), k transposed, scaled (after the product as GPT
 * writes it: scale 1, or before it on q: scale 2, or by a Div after it as
 * BERT writes it: 0), plus the mask, softmax, times v, heads merged back
 * to [1, S, E] and projected, and the residual. */
static void build_attention(gcase *c, int qkv_fused, int scale_form,
                            int mask_input) {
  const int64_t s = 10, h = 2, d = 8, e = 16;
  int64_t x[3] = {1, s, e}, w[2] = {e, e}, wqkv[2] = {e, 3 * e}, b[1] = {e};
  int64_t bqkv[1] = {3 * e}, mask[4] = {1, 1, s, s}, mask_in[4] = {1, 1, 1, s};
  const int64_t heads[4] = {1, s, h, d}, back[3] = {1, s, e};
  gc_init(c, 17);
  gc_input(c, "x", 3, x);
  if (mask_input)
    gc_input(c, "mask", 4, mask_in);
  else
    gc_const(c, "mask", 4, mask, NULL, -2.0f, 0.0f);
  gc_const_i64(c, "heads", 4, heads);
  gc_const_i64(c, "back", 3, back);
  gc_const(c, "wo", 2, w, NULL, -0.3f, 0.3f);
  gc_const(c, "bo", 1, b, NULL, -0.2f, 0.2f);
  gc_scalar(c, "scale", 1.0f / sqrtf((float)d));
  gc_scalar(c, "sqrt_d", sqrtf((float)d));
  gc_node(c, "Relu", "x", "xa");
  if (qkv_fused) {
    const int64_t split[3] = {e, e, e};
    gc_const(c, "wqkv", 2, wqkv, NULL, -0.3f, 0.3f);
    gc_const(c, "bqkv", 1, bqkv, NULL, -0.2f, 0.2f);
    gc_const_i64(c, "split", 3, split);
    gc_node(c, "MatMul", "xa,wqkv", "qkv0");
    gc_node(c, "Add", "qkv0,bqkv", "qkv");
    gc_node(c, "Split", "qkv,split", "q0,k0,v0");
    gc_int(c, "axis", 2);
  } else {
    gc_const(c, "wq", 2, w, NULL, -0.3f, 0.3f);
    gc_const(c, "wk", 2, w, NULL, -0.3f, 0.3f);
    gc_const(c, "wv", 2, w, NULL, -0.3f, 0.3f);
    gc_const(c, "bq", 1, b, NULL, -0.2f, 0.2f);
    gc_const(c, "bk", 1, b, NULL, -0.2f, 0.2f);
    gc_const(c, "bv", 1, b, NULL, -0.2f, 0.2f);
    gc_node(c, "MatMul", "xa,wq", "qm");
    gc_node(c, "Add", "qm,bq", "q0");
    gc_node(c, "MatMul", "xa,wk", "km");
    gc_node(c, "Add", "km,bk", "k0");
    gc_node(c, "MatMul", "xa,wv", "vm");
    gc_node(c, "Add", "vm,bv", "v0");
  }
  gc_node(c, "Reshape", "q0,heads", "q1");
  gc_node(c, "Transpose", "q1", "q");
  GC_INTS(c, "perm", 0, 2, 1, 3);
  gc_node(c, "Reshape", "k0,heads", "k1");
  gc_node(c, "Transpose", "k1", "kt");
  GC_INTS(c, "perm", 0, 2, 3, 1);
  gc_node(c, "Reshape", "v0,heads", "v1");
  gc_node(c, "Transpose", "v1", "v");
  GC_INTS(c, "perm", 0, 2, 1, 3);
  if (scale_form == 2) {
    gc_node(c, "Mul", "q,scale", "qs");
    gc_node(c, "MatMul", "qs,kt", "ss");
  } else {
    gc_node(c, "MatMul", "q,kt", "sc");
    if (scale_form == 1)
      gc_node(c, "Mul", "sc,scale", "ss");
    else
      gc_node(c, "Div", "sc,sqrt_d", "ss");
  }
  gc_node(c, "Add", "ss,mask", "sm");
  gc_node(c, "Softmax", "sm", "p");
  gc_int(c, "axis", -1);
  gc_node(c, "MatMul", "p,v", "o");
  gc_node(c, "Transpose", "o", "ot");
  GC_INTS(c, "perm", 0, 2, 1, 3);
  gc_node(c, "Reshape", "ot,back", "o2");
  gc_node(c, "MatMul", "o2,wo", "y0");
  gc_node(c, "Add", "y0,bo", "y1");
  gc_node(c, "Add", "y1,xa", "r");
  gc_const(c, "ln_g", 1, b, NULL, 0.5f, 1.5f);
  gc_const(c, "ln_b", 1, b, NULL, -0.2f, 0.2f);
  gc_node(c, "LayerNormalization", "r,ln_g,ln_b", "y");
  gc_output(c, "y");
}

/* GPT (fused QKV, Split, scale after the product, constant causal-style
 * mask) and BERT (three projections, Div after the product, a mask input
 * broadcast over heads and rows), and q scaled before the product: exact
 * in fp32, close in bf16; the views leave no Transpose, Reshape, Split or
 * Add primitive, the scale and mask no Mul/Div/Add, and BERT's three
 * projections run as one product (4 MatMuls in each form). */
TEST(attention_spellings) {
  SKIP_UNLESS_AVAILABLE();
  static const struct {
    int qkv_fused, scale_form, mask_input, matmuls;
  } forms[] = {{1, 1, 0, 4}, {0, 0, 1, 4}, {1, 2, 1, 4}, {0, 1, 0, 4}};
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
    gcase c;
    char ops[512];
    build_attention(&c, forms[i].qkv_fused, forms[i].scale_form,
                    forms[i].mask_input);
    if (check_graph(&c))
      TEST_FAIL_("attention form %zu failed", i);
    build_attention(&c, forms[i].qkv_fused, forms[i].scale_form,
                    forms[i].mask_input);
    if (profile_ops(&c, 1, ops, sizeof ops, NULL))
      TEST_FAIL_("attention form %zu: profile failed", i);
    printf("  form %zu: %s\n", i, ops);
    static const char *const gone[] = {"Transpose", "Reshape", "Split",
                                       "Mul",       "Div",     "Add"};
    for (size_t k = 0; k < sizeof gone / sizeof gone[0]; k++)
      if (count_word(ops, gone[k]))
        TEST_FAIL_("form %zu: %s still runs as a primitive: %s", i, gone[k],
                   ops);
    if (count_word(ops, "MatMul") != forms[i].matmuls)
      TEST_FAIL_("form %zu: %d MatMuls in %s", i, count_word(ops, "MatMul"),
                 ops);
  }
  return 0;
}

/* Look-alikes that must not be fused the same way: a per-head (not
 * scalar) scale on q, a scalar divided by q, a scaled q that is also
 * read elsewhere, a product transposed in its last dim, a projection
 * whose result is transposed for real before the residual, and a batched
 * product whose broadcast operand does not fold into rows. Each matches
 * the reference; the nodes that cannot go into a product still run. */
/* Scores of a scaled q that the product cannot take: by a per-head
 * factor (form 0), a scalar divided by q (1), q / 2 also read as an
 * output (2). */
static void build_scaled_scores(gcase *c, int form) {
  const int64_t q[4] = {1, 2, 6, 4}, k[4] = {1, 2, 4, 6},
                per_head[4] = {1, 2, 1, 1};
  gc_init(c, 17);
  gc_input(c, "q", 4, q);
  gc_input(c, "kt", 4, k);
  if (form == 0) {
    gc_const(c, "f", 4, per_head, NULL, 0.5f, 2.0f);
    gc_node(c, "Mul", "q,f", "qs");
  } else {
    gc_scalar(c, "f", 2.0f);
    gc_node(c, "Div", form == 1 ? "f,q" : "q,f", "qs");
  }
  gc_node(c, "MatMul", "qs,kt", "s");
  gc_output(c, "s");
  if (form == 2)
    gc_output(c, "qs");
  c->lo = 0.5f; /* f / q away from 0 */
}

TEST(lookalikes_stay_exact) {
  SKIP_UNLESS_AVAILABLE();
  for (int form = 0; form < 3; form++) {
    gcase c;
    char ops[512];
    build_scaled_scores(&c, form);
    if (check_graph(&c))
      TEST_FAIL_("scale form %d failed", form);
    build_scaled_scores(&c, form);
    if (profile_ops(&c, 1, ops, sizeof ops, NULL))
      TEST_FAIL_("scale form %d: profile failed", form);
    if (!count_word(ops, form == 0 ? "Mul" : "Div"))
      TEST_FAIL_("scale form %d was taken into the product: %s", form, ops);
  }
  {
    /* MatMul -> Transpose of its last two dims. */
    gcase c;
    int64_t a[3] = {2, 5, 6}, b[3] = {2, 6, 7};
    gc_init(&c, 17);
    gc_input(&c, "a", 3, a);
    gc_input(&c, "b", 3, b);
    gc_node(&c, "MatMul", "a,b", "m");
    gc_node(&c, "Transpose", "m", "y");
    GC_INTS(&c, "perm", 0, 2, 1);
    gc_output(&c, "y");
    if (check_graph(&c))
      TEST_FAIL_("transposed product failed");
  }
  {
    /* Gemm -> Reshape -> a real Transpose -> residual Add. */
    gcase c;
    int64_t x[2] = {6, 8}, w[2] = {8, 8}, r[3] = {3, 2, 8};
    const int64_t shape[3] = {2, 3, 8};
    gc_init(&c, 17);
    gc_input(&c, "x", 2, x);
    gc_input(&c, "r", 3, r);
    gc_const(&c, "w", 2, w, NULL, -0.5f, 0.5f);
    gc_const_i64(&c, "shape", 3, shape);
    gc_node(&c, "Gemm", "x,w", "g");
    gc_node(&c, "Reshape", "g,shape", "g3");
    gc_node(&c, "Transpose", "g3", "gt");
    GC_INTS(&c, "perm", 1, 0, 2);
    gc_node(&c, "Add", "gt,r", "y");
    gc_output(&c, "y");
    if (check_graph(&c))
      TEST_FAIL_("projection, transpose, residual failed");
  }
  {
    /* Products of one input: with a bias, without, and one whose result
     * is read twice (its bias Add cannot take it) and is an output. */
    gcase c;
    int64_t x[3] = {1, 7, 12}, w[2] = {12, 8}, w3[2] = {12, 5}, b[1] = {8},
            b3[1] = {5};
    gc_init(&c, 17);
    gc_input(&c, "x", 3, x);
    gc_const(&c, "w1", 2, w, NULL, -0.5f, 0.5f);
    gc_const(&c, "w2", 2, w, NULL, -0.5f, 0.5f);
    gc_const(&c, "w3", 2, w3, NULL, -0.5f, 0.5f);
    gc_const(&c, "b1", 1, b, NULL, -0.5f, 0.5f);
    gc_const(&c, "b3", 1, b3, NULL, -0.5f, 0.5f);
    gc_node(&c, "MatMul", "x,w1", "m1");
    gc_node(&c, "Add", "m1,b1", "y1");
    gc_node(&c, "MatMul", "x,w2", "y2");
    gc_node(&c, "MatMul", "x,w3", "m3");
    gc_node(&c, "Add", "b3,m3", "y3");
    gc_node(&c, "Relu", "m3", "y4");
    gc_output(&c, "y1");
    gc_output(&c, "y2");
    gc_output(&c, "y3");
    gc_output(&c, "y4");
    gc_output(&c, "m3");
    if (check_graph(&c))
      TEST_FAIL_("sibling products failed");
  }
  {
    /* [2, 3, K] x [K, N] + C [2, 1, N]: C does not fold into 6 rows. */
    gcase c;
    int64_t a[3] = {2, 3, 5}, w[2] = {5, 4}, cc[3] = {2, 1, 4};
    gc_init(&c, 17);
    gc_input(&c, "a", 3, a);
    gc_const(&c, "w", 2, w, NULL, -0.5f, 0.5f);
    gc_const(&c, "c", 3, cc, NULL, -1.0f, 1.0f);
    gc_node(&c, "MatMul", "a,w", "m");
    gc_node(&c, "Add", "m,c", "y");
    gc_output(&c, "y");
    if (check_graph(&c))
      TEST_FAIL_("batched product with a batch-wise operand failed");
  }
  return 0;
}

/* The encoder block in int8 (calibrated as the quant_params step does):
 * close to fp32 and really int8, attention's products of two activations
 * (q.k^T, probabilities.v) included, the Softmax between them writing u8
 * for the second, and the second writing u8 for out_proj through the head
 * merge (Transpose, Reshape). oneDNN 2.6 has no u8-output Softmax below
 * AVX-512 (its AVX2 kernel writes f32 only): there the Softmax writes f32,
 * as its profile line says, and the product still reads it as u8. */
TEST(int8_attention) {
  SKIP_UNLESS_AVAILABLE();
#ifdef MB_TEST_DNNL
  const char *softmax =
      dn_isa_has(dnnl_cpu_isa_avx512_core) ? "-> u8" : "f32 -> f32";
#else
  const char *softmax = "-> u8";
#endif
  printf("  Softmax kernel expected on this ISA: '%s'\n", softmax);
  const char *const every_product_int8[] = {"MatMul",  "s8 -> ", "Softmax",
                                            softmax,   "Gemm",   "s8 -> ",
                                            "+MatMul", "-> u8",  NULL};
  const char *const products_int8[] = {"MatMul", "s8 -> ", "Softmax", softmax,
                                       NULL};
  gcase c;
  build_torch_mha(&c, 1, 12, 4, 8);
  if (check_int8_kernels(&c, 0, every_product_int8))
    return 1;
  build_attention(&c, 0, 0, 0);
  return check_int8_kernels(&c, 0, products_int8);
}

/* A transformer's FFN in int8: linear1 -> Relu -> linear2, where linear1
 * writes int8 for linear2 when linear2 is its only reader; also when the
 * hidden value is read in float too (a graph output, a product with
 * another activation), which must then see real values. */
TEST(int8_ffn_kept_int8) {
  SKIP_UNLESS_AVAILABLE();
  for (int form = 0; form < 3; form++) {
    gcase c;
    int64_t x[3] = {1, 12, 16}, w1[2] = {16, 32}, b1[1] = {32},
            w2[2] = {32, 16}, b2[1] = {16}, o[3] = {1, 32, 5};
    gc_init(&c, 17);
    gc_input(&c, "x", 3, x);
    gc_const(&c, "w1", 2, w1, NULL, -0.3f, 0.3f);
    gc_const(&c, "b1", 1, b1, NULL, -0.2f, 0.2f);
    gc_const(&c, "w2", 2, w2, NULL, -0.3f, 0.3f);
    gc_const(&c, "b2", 1, b2, NULL, -0.2f, 0.2f);
    gc_node(&c, "MatMul", "x,w1", "h0");
    gc_node(&c, "Add", "h0,b1", "h1");
    gc_node(&c, "Relu", "h1", "h");
    gc_node(&c, "MatMul", "h,w2", "y0");
    gc_node(&c, "Add", "y0,b2", "y");
    gc_output(&c, "y");
    if (form == 1)
      gc_output(&c, "h");
    if (form == 2) {
      gc_input(&c, "other", 3, o);
      gc_node(&c, "MatMul", "h,other", "z");
      gc_output(&c, "z");
    }
    if (check_int8(&c, 0))
      TEST_FAIL_("int8 FFN form %d failed", form);
  }
  return 0;
}

/* A bool constant of dims: lower triangle (causal) when tril, else a
 * pseudo-random pattern. */
static void gc_const_bool(gcase *c, const char *name, int rank,
                          const int64_t *dims, int tril) {
  mb_tensor *t = NULL;
  if (c->failed)
    return;
  if (mb_tensor_create(MB_DTYPE_BOOL, rank, dims, &t, &c->err)) {
    c->failed = 1;
    return;
  }
  uint8_t *b = t->data;
  int64_t cols = dims[rank - 1];
  for (int64_t i = 0; i < t->numel; i++)
    b[i] = tril ? (i % cols) <= (i / cols) % dims[rank - 2] : rnd01() < 0.6f;
  if (mb__graph_add_initializer(c->g, name, t, &c->err) < 0)
    c->failed = 1;
}

/* Where(cond, x, fill) as PyTorch's masked_fill writes a causal mask:
 * after the scores (scaled) it is an addition in the product (no Where
 * primitive); alone, with a finite fill in either branch, its own binary
 * primitive. A condition that is not constant, or two activation
 * branches, are not oneDNN's. */
TEST(where_masks) {
  SKIP_UNLESS_AVAILABLE();
  {
    gcase c;
    char ops[512];
    int64_t q[4] = {1, 2, 9, 8}, k[4] = {1, 2, 8, 9}, m[4] = {1, 1, 9, 9};
    for (int pass = 0; pass < 2; pass++) {
      gc_init(&c, 17);
      gc_input(&c, "q", 4, q);
      gc_input(&c, "kt", 4, k);
      gc_const_bool(&c, "causal", 4, m, 1);
      gc_scalar(&c, "scale", 0.35f);
      gc_scalar(&c, "ninf", -INFINITY);
      gc_node(&c, "MatMul", "q,kt", "s0");
      gc_node(&c, "Mul", "s0,scale", "s1");
      gc_node(&c, "Where", "causal,s1,ninf", "s2");
      gc_node(&c, "Softmax", "s2", "y");
      gc_int(&c, "axis", -1);
      gc_output(&c, "y");
      if (pass == 0 && check_graph(&c))
        TEST_FAIL_("masked scores failed");
      if (pass == 1) {
        if (profile_ops(&c, 1, ops, sizeof ops, NULL))
          TEST_FAIL_("masked scores: profile failed");
        printf("  masked scores: %s\n", ops);
        if (count_word(ops, "Where") || count_word(ops, "Mul"))
          TEST_FAIL_("the mask or scale still runs alone: %s", ops);
      }
    }
  }
  for (int form = 0; form < 2; form++) {
    gcase c;
    int64_t x[3] = {2, 5, 7}, m[2] = {5, 7};
    gc_init(&c, 17);
    gc_input(&c, "x", 3, x);
    gc_const_bool(&c, "cond", 2, m, 0);
    gc_scalar(&c, "fill", 2.5f);
    gc_node(&c, "Relu", "x", "r");
    gc_node(&c, "Where", form ? "cond,fill,r" : "cond,r,fill", "y");
    gc_output(&c, "y");
    if (check_graph(&c))
      TEST_FAIL_("Where form %d failed", form);
  }
  {
    gcase c;
    int64_t x[2] = {4, 6};
    gc_init(&c, 17);
    gc_input_typed(&c, "cond", MB_DTYPE_BOOL, 2, x);
    gc_input(&c, "x", 2, x);
    gc_scalar(&c, "fill", 1.0f);
    gc_node(&c, "Where", "cond,x,fill", "y");
    gc_output(&c, "y");
    if (check_rejected(&c, 0, "condition"))
      TEST_FAIL_("Where with a run-time condition accepted");
    gc_init(&c, 17);
    gc_input(&c, "x", 2, x);
    gc_input(&c, "z", 2, x);
    gc_const_bool(&c, "cond", 2, x, 0);
    gc_node(&c, "Where", "cond,x,z", "y");
    gc_output(&c, "y");
    if (check_rejected(&c, 0, "one constant"))
      TEST_FAIL_("Where of two activations accepted");
  }
  return 0;
}

/* LayerNorm as PyTorch writes it below opset 17, on x [2, 5, 16]: with
 * gamma and beta (form 0), without (1); the look-alikes: a fourth power
 * instead of the square (2), a mean over another axis (3), a per-row epsilon
 * (4). Forms 0 and 1 become one LayerNormalization primitive; all match the
 * reference. */
static void build_layernorm(gcase *c, int form) {
  int64_t x[3] = {2, 5, 16}, e[1] = {16}, rows[3] = {2, 5, 1};
  gc_init(c, 13);
  gc_input(c, "x", 3, x);
  gc_const(c, "gamma", 1, e, NULL, 0.5f, 1.5f);
  gc_const(c, "beta", 1, e, NULL, -0.3f, 0.3f);
  gc_scalar(c, "two", form == 2 ? 4.0f : 2.0f);
  if (form == 4)
    gc_const(c, "eps", 3, rows, NULL, 1e-5f, 2e-5f);
  else
    gc_scalar(c, "eps", 1e-5f);
  gc_node(c, "ReduceMean", "x", "m");
  GC_INTS(c, "axes", form == 3 ? 1 : -1);
  gc_node(c, "Sub", "x,m", "d");
  gc_node(c, "Pow", "d,two", "p");
  gc_node(c, "ReduceMean", "p", "v");
  GC_INTS(c, "axes", form == 3 ? 1 : -1);
  gc_node(c, "Add", "v,eps", "ve");
  gc_node(c, "Sqrt", "ve", "s");
  gc_node(c, "Div", "d,s", form == 1 ? "y" : "n");
  if (form != 1) {
    gc_node(c, "Mul", "n,gamma", "g");
    gc_node(c, "Add", "g,beta", "y");
  }
  gc_output(c, "y");
}

TEST(layernorm_written_out) {
  SKIP_UNLESS_AVAILABLE();
  for (int form = 0; form < 5; form++) {
    gcase c;
    char ops[512];
    build_layernorm(&c, form);
    if (check_graph(&c))
      TEST_FAIL_("layernorm form %d failed", form);
    build_layernorm(&c, form);
    if (profile_ops(&c, 1, ops, sizeof ops, NULL))
      TEST_FAIL_("layernorm form %d: profile failed", form);
    printf("  form %d: %s\n", form, ops);
    bool fused = count_word(ops, "LayerNormalization") == 1 &&
                 !count_word(ops, "ReduceMean") && !count_word(ops, "Sqrt");
    if (fused != (form < 2))
      TEST_FAIL_("layernorm form %d %s fused: %s", form,
                 form < 2 ? "not" : "wrongly", ops);
  }
  return 0;
}

TEST_MAIN(TEST_ENTRY(torch_multihead_attention),
          TEST_ENTRY(attention_spellings), TEST_ENTRY(lookalikes_stay_exact),
          TEST_ENTRY(where_masks), TEST_ENTRY(layernorm_written_out),
          TEST_ENTRY(int8_attention), TEST_ENTRY(int8_ffn_kept_int8))
