/* The Conv and Gemm cases both XNNPACK engine tests run: in fp32
 * (test_engine_xnnpack.c) and in int8 (test_engine_xnnpack_int8.c).
 * Include after engine_harness.h. */
#ifndef MB_TESTS_XNNPACK_CASES_H
#define MB_TESTS_XNNPACK_CASES_H

static const conv_spec conv_specs[] = {
    /* n c_in h w c_out group kh kw stride dilation pads auto_pad bias */
    {1, 3, 9, 11, 8, 1, 3, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, NULL, 1},
    {2, 5, 10, 7, 6, 1, 3, 2, {2, 2}, {1, 1}, {0, 1, 2, 1}, NULL, 0},
    {1, 6, 13, 13, 9, 3, 3, 3, {1, 2}, {2, 2}, {2, 1, 2, 0}, NULL, 1},
    {1, 8, 15, 15, 8, 8, 3, 3, {2, 2}, {1, 1}, {1, 1, 1, 1}, NULL, 1},
    {2, 4, 9, 8, 8, 4, 5, 3, {1, 1}, {1, 2}, {2, 2, 1, 2}, NULL, 0},
    {1, 7, 11, 9, 5, 1, 3, 3, {2, 2}, {1, 1}, {0}, "SAME_UPPER", 1},
    {1, 7, 11, 9, 5, 1, 4, 4, {2, 3}, {1, 1}, {0}, "SAME_LOWER", 1},
    {1, 4, 10, 10, 4, 4, 3, 3, {2, 2}, {1, 1}, {0}, "SAME_UPPER", 1},
    {1, 3, 12, 9, 4, 1, 3, 3, {1, 1}, {1, 1}, {0}, "VALID", 1},
    {1, 16, 8, 8, 32, 1, 1, 1, {2, 2}, {1, 1}, {0, 0, 0, 0}, NULL, 1},
    {1, 5, 10, 10, 3, 1, 1, 1, {3, 3}, {1, 1}, {0, 0, 0, 0}, NULL, 0},
    {1, 1, 9, 9, 4, 1, 3, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, NULL, 1},
    {1, 12, 6, 6, 12, 12, 3, 3, {1, 1}, {2, 2}, {2, 2, 2, 2}, NULL, 0},
};

static const struct gemm_spec {
  int trans_b;
  float alpha, beta;
  int c_rank; /* -1: no C */
  int64_t c_dims[2];
} gemm_specs[] = {
    {0, 1, 1, -1, {0}},    {1, 1, 1, 1, {7}},    {0, 0.5f, 2, 2, {1, 7}},
    {1, 1, 0.25f, 0, {0}}, {0, 1, 1, 2, {5, 7}}, {1, 2, 1, 2, {5, 1}},
};

static inline void build_gemm(gcase *c, const struct gemm_spec *s) {
  gc_init(c, 13);
  int64_t a[2] = {5, 11};
  int64_t b[2] = {s->trans_b ? 7 : 11, s->trans_b ? 11 : 7};
  gc_input(c, "a", 2, a);
  gc_const(c, "b", 2, b, NULL, -1, 1);
  if (s->c_rank >= 0)
    gc_const(c, "c", s->c_rank, s->c_dims, NULL, -1, 1);
  gc_node(c, "Gemm", s->c_rank >= 0 ? "a,b,c" : "a,b", "y");
  gc_int(c, "transB", s->trans_b);
  gc_float(c, "alpha", s->alpha);
  gc_float(c, "beta", s->beta);
  gc_output(c, "y");
}

#endif /* MB_TESTS_XNNPACK_CASES_H */
