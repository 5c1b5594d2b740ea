/* Operators whose backend-suite tests leave paths open: DFT (dft_length
 * padding and truncation, onesided, the FFT and direct-sum paths agreeing,
 * inverse round trip), STFT against the DFT of each frame, the random
 * generators (reproducible, seed-dependent, in range, sensible moments),
 * RoiAlign's max mode, NonMaxSuppression with no score threshold, and the
 * errors of the losses and detectors a user can reach. */
#include "op_harness.h"

#define V(...)                                                                 \
  (const double[]) {                                                           \
    __VA_ARGS__                                                                \
  }

/* Runs a one-node case: inputs given, n_out fresh outputs. */
typedef struct node_run {
  op_case oc;
  mb_tensor *out[3];
  int n_out;
} node_run;

static void node_run_free(node_run *r) {
  free_tensors(r->out, 3);
  case_free(&r->oc);
}

static mb_status run_node(node_run *r, const char *op, int64_t opset,
                          mb_tensor **in, int n_in, int n_out) {
  r->n_out = n_out;
  for (int i = 0; i < 3; i++)
    r->out[i] = i < n_out ? empty_output() : NULL;
  return case_run(&r->oc, opset, in, n_in, r->out, n_out);
}

static double at(const mb_tensor *t, int64_t i) {
  return mb__tensor_get_f64(t, i);
}

/* Direct complex DFT of re/im (n_in values, zero-padded to n). */
static void direct_dft(const double *re, const double *im, int n_in, int n,
                       double *out_re, double *out_im) {
  for (int k = 0; k < n; k++) {
    out_re[k] = out_im[k] = 0.0;
    for (int j = 0; j < n_in && j < n; j++) {
      double a = -2.0 * M_PI * k * j / n;
      out_re[k] += re[j] * cos(a) - im[j] * sin(a);
      out_im[k] += re[j] * sin(a) + im[j] * cos(a);
    }
  }
}

/* DFT of a [1, 12, 1] real signal at lengths 8 (FFT path, truncating), 12
 * (direct), 16 (FFT, padding) and 20 (direct, padding), twosided and
 * onesided, against a direct sum. */
TEST(dft_lengths_and_onesided) {
  double sig[12], zeros[12] = {0};
  for (int i = 0; i < 12; i++)
    sig[i] = sin(0.7 * i) + 0.1 * i;
  int64_t xd[3] = {1, 12, 1};
  static const int lengths[] = {8, 12, 16, 20};
  for (size_t li = 0; li < MB_ARRAY_COUNT(lengths); li++) {
    for (int onesided = 0; onesided < 2; onesided++) {
      int n = lengths[li];
      node_run r;
      ASSERT_EQ(case_init(&r.oc, "", "DFT", 2, 1), 0);
      if (onesided)
        case_int(&r.oc, "onesided", 1);
      mb_tensor *in[2] = {tensor_of(MB_DTYPE_FLOAT, 3, xd, sig),
                          tensor_of(MB_DTYPE_INT64, 0, NULL, V(n))};
      ASSERT_OK(run_node(&r, "DFT", 17, in, 2, 1), &r.oc.err);
      double want_re[32], want_im[32];
      direct_dft(sig, zeros, 12, n, want_re, want_im);
      int bins = onesided ? n / 2 + 1 : n;
      ASSERT_EQ(r.out[0]->dims[1], bins);
      ASSERT_EQ(r.out[0]->dims[2], 2);
      for (int k = 0; k < bins; k++) {
        ASSERT_NEAR(at(r.out[0], 2 * k), want_re[k], 1e-4);
        ASSERT_NEAR(at(r.out[0], 2 * k + 1), want_im[k], 1e-4);
      }
      free_tensors(in, 2);
      node_run_free(&r);
    }
  }
  return 0;
}

/* inverse(DFT(x)) == x for a complex signal on the direct path, along a
 * middle axis with an inner axis after it. */
TEST(dft_inverse_round_trip) {
  int64_t xd[4] = {2, 6, 3, 2};
  double x[72];
  for (int i = 0; i < 72; i++)
    x[i] = cos(0.3 * i) - 0.05 * i;
  node_run f, b;
  ASSERT_EQ(case_init(&f.oc, "", "DFT", 1, 1), 0);
  ASSERT_EQ(case_init(&b.oc, "", "DFT", 1, 1), 0);
  case_int(&b.oc, "inverse", 1);
  mb_tensor *in[1] = {tensor_of(MB_DTYPE_DOUBLE, 4, xd, x)};
  ASSERT_OK(run_node(&f, "DFT", 17, in, 1, 1), &f.oc.err);
  ASSERT_OK(run_node(&b, "DFT", 17, &f.out[0], 1, 1), &b.oc.err);
  for (int i = 0; i < 72; i++)
    ASSERT_NEAR(at(b.out[0], i), x[i], 1e-9);
  free_tensors(in, 1);
  node_run_free(&f);
  node_run_free(&b);
  return 0;
}

/* Each STFT frame is the DFT of the windowed samples; frames stop before
 * the signal runs out. */
TEST(stft_frames_match_dft) {
  double sig[40], win[10], zeros[10] = {0};
  for (int i = 0; i < 40; i++)
    sig[i] = sin(0.45 * i) * (1 + 0.02 * i);
  for (int i = 0; i < 10; i++)
    win[i] = 0.5 - 0.5 * cos(2 * M_PI * i / 10);
  int64_t xd[3] = {1, 40, 1}, wd[1] = {10};
  node_run r;
  ASSERT_EQ(case_init(&r.oc, "", "STFT", 3, 1), 0);
  mb_tensor *in[3] = {tensor_of(MB_DTYPE_FLOAT, 3, xd, sig),
                      tensor_of(MB_DTYPE_INT64, 0, NULL, V(7)),
                      tensor_of(MB_DTYPE_FLOAT, 1, wd, win)};
  ASSERT_OK(run_node(&r, "STFT", 17, in, 3, 1), &r.oc.err);
  ASSERT_EQ(r.out[0]->dims[1], (40 - 10) / 7 + 1);
  ASSERT_EQ(r.out[0]->dims[2], 6);
  for (int f = 0; f < 5; f++) {
    double frame[10], re[10], im[10];
    for (int j = 0; j < 10; j++)
      frame[j] = (double)(float)sig[f * 7 + j] * (double)(float)win[j];
    direct_dft(frame, zeros, 10, 10, re, im);
    for (int k = 0; k < 6; k++) {
      ASSERT_NEAR(at(r.out[0], (f * 6 + k) * 2), re[k], 1e-4);
      ASSERT_NEAR(at(r.out[0], (f * 6 + k) * 2 + 1), im[k], 1e-4);
    }
  }
  free_tensors(in, 3);
  node_run_free(&r);
  return 0;
}

TEST(signal_errors_name_the_node) {
  node_run r;
  int64_t xd[3] = {1, 8, 3}, ok[3] = {1, 8, 1};
  ASSERT_EQ(case_init(&r.oc, "", "DFT", 1, 1), 0);
  mb_tensor *bad[1] = {tensor_of(MB_DTYPE_FLOAT, 3, xd, NULL)};
  ASSERT_EQ(run_node(&r, "DFT", 17, bad, 1, 1), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(r.oc.err.message, "DFT 'n'");
  ASSERT_CONTAINS(r.oc.err.message, "1 or 2");
  node_run_free(&r);
  ASSERT_EQ(case_init(&r.oc, "", "DFT", 1, 1), 0);
  case_int(&r.oc, "inverse", 1);
  case_int(&r.oc, "onesided", 1);
  mb_tensor *x[1] = {tensor_of(MB_DTYPE_FLOAT, 3, ok, NULL)};
  ASSERT_EQ(run_node(&r, "DFT", 17, x, 1, 1), MB_STATUS_UNSUPPORTED);
  ASSERT_CONTAINS(r.oc.err.message, "onesided");
  node_run_free(&r);
  ASSERT_EQ(case_init(&r.oc, "", "STFT", 2, 1), 0);
  mb_tensor *s[2] = {tensor_of(MB_DTYPE_FLOAT, 3, ok, NULL),
                     tensor_of(MB_DTYPE_INT64, 0, NULL, V(2))};
  ASSERT_EQ(run_node(&r, "STFT", 17, s, 2, 1), MB_STATUS_PARSE);
  ASSERT_CONTAINS(r.oc.err.message, "window or a frame_length");
  node_run_free(&r);
  free_tensors(bad, 1);
  free_tensors(x, 1);
  free_tensors(s, 2);
  return 0;
}

/* ---- random generators ---- */

static mb_status run_random(node_run *r, const char *op, const char *name,
                            double seed, bool seeded, mb_tensor *like) {
  if (case_init(&r->oc, "", op, like ? 1 : 0, 1))
    return MB_STATUS_OUT_OF_MEMORY;
  /* case_init names the node "n"; give it the name under test. */
  r->oc.model->graph->nodes[r->oc.node].name = name;
  if (!like) {
    int64_t shape[2] = {64, 64};
    case_ints(&r->oc, "shape", 2, shape);
  }
  if (seeded)
    case_float(&r->oc, "seed", (float)seed);
  if (strstr(op, "Uniform")) {
    case_float(&r->oc, "low", -2.0f);
    case_float(&r->oc, "high", 3.0f);
  } else if (strstr(op, "Normal")) {
    case_float(&r->oc, "mean", 1.5f);
    case_float(&r->oc, "scale", 0.5f);
  }
  mb_tensor *in[1] = {like};
  return run_node(r, op, 15, in, like ? 1 : 0, 1);
}

static bool same_values(const mb_tensor *a, const mb_tensor *b) {
  return a->nbytes == b->nbytes && memcmp(a->data, b->data, a->nbytes) == 0;
}

TEST(random_is_reproducible_and_in_range) {
  static const char *const ops[] = {"RandomUniform", "RandomNormal"};
  for (size_t o = 0; o < MB_ARRAY_COUNT(ops); o++) {
    node_run a, b, c, d;
    ASSERT_OK(run_random(&a, ops[o], "n", 3, true, NULL), &a.oc.err);
    ASSERT_OK(run_random(&b, ops[o], "other", 3, true, NULL), &b.oc.err);
    ASSERT_OK(run_random(&c, ops[o], "n", 4, true, NULL), &c.oc.err);
    ASSERT_OK(run_random(&d, ops[o], "n", 0, false, NULL), &d.oc.err);
    /* The seed decides, not the node; without one, the name does. */
    ASSERT(same_values(a.out[0], b.out[0]));
    ASSERT(!same_values(a.out[0], c.out[0]));
    ASSERT(!same_values(a.out[0], d.out[0]));
    double sum = 0, sq = 0, lo = INFINITY, hi = -INFINITY;
    int64_t n = a.out[0]->numel;
    for (int64_t i = 0; i < n; i++) {
      double v = at(a.out[0], i);
      sum += v;
      sq += v * v;
      lo = fmin(lo, v);
      hi = fmax(hi, v);
    }
    double mean = sum / n, sd = sqrt(sq / n - mean * mean);
    if (o == 0) { /* uniform [-2, 3): mean 0.5, sd 5 / sqrt(12) */
      ASSERT(lo >= -2.0 && hi < 3.0);
      ASSERT_NEAR(mean, 0.5, 0.1);
      ASSERT_NEAR(sd, 5 / sqrt(12.0), 0.05);
    } else { /* normal(1.5, 0.5) */
      ASSERT_NEAR(mean, 1.5, 0.03);
      ASSERT_NEAR(sd, 0.5, 0.03);
    }
    node_run_free(&a);
    node_run_free(&b);
    node_run_free(&c);
    node_run_free(&d);
  }
  return 0;
}

TEST(bernoulli_and_multinomial_follow_their_probabilities) {
  int64_t dims[1] = {4000};
  double *p = malloc(sizeof(double) * 4000);
  for (int i = 0; i < 4000; i++)
    p[i] = i < 2000 ? 0.2 : 0.9;
  mb_tensor *probs = tensor_of(MB_DTYPE_FLOAT, 1, dims, p);
  node_run r;
  ASSERT_OK(run_random(&r, "Bernoulli", "n", 1, true, probs), &r.oc.err);
  double low = 0, high = 0;
  for (int i = 0; i < 4000; i++) {
    double v = at(r.out[0], i);
    ASSERT(v == 0.0 || v == 1.0);
    *(i < 2000 ? &low : &high) += v;
  }
  ASSERT_NEAR(low / 2000, 0.2, 0.03);
  ASSERT_NEAR(high / 2000, 0.9, 0.03);
  node_run_free(&r);
  /* Multinomial on log-probabilities log(0.1), log(0.3), log(0.6). */
  int64_t ld[2] = {1, 3};
  mb_tensor *logits =
      tensor_of(MB_DTYPE_FLOAT, 2, ld, V(log(0.1), log(0.3), log(0.6)));
  ASSERT_EQ(case_init(&r.oc, "", "Multinomial", 1, 1), 0);
  case_int(&r.oc, "sample_size", 3000);
  case_int(&r.oc, "dtype", MB_DTYPE_INT64);
  mb_tensor *in[1] = {logits};
  ASSERT_OK(run_node(&r, "Multinomial", 7, in, 1, 1), &r.oc.err);
  ASSERT_EQ(r.out[0]->dtype, MB_DTYPE_INT64);
  double count[3] = {0};
  for (int i = 0; i < 3000; i++) {
    int64_t c = mb__tensor_get_i64(r.out[0], i);
    ASSERT(c >= 0 && c < 3);
    count[c]++;
  }
  ASSERT_NEAR(count[0] / 3000, 0.1, 0.03);
  ASSERT_NEAR(count[2] / 3000, 0.6, 0.03);
  node_run_free(&r);
  mb_tensor_free(probs);
  mb_tensor_free(logits);
  free(p);
  return 0;
}

/* ---- detection and losses ---- */

/* RoiAlign max mode: each output is the largest weighted tap of its bin's
 * samples. The ROI puts the 2x2 samples of each bin on whole pixels, so
 * bin (i, j) is the largest of pixels 2i..2i+1 x 2j..2j+1 of a plane
 * holding its own index. */
TEST(roialign_max_mode) {
  int64_t xd[4] = {1, 1, 6, 6}, rd[2] = {1, 4}, bd[1] = {1};
  double plane[36];
  for (int i = 0; i < 36; i++)
    plane[i] = i;
  node_run r;
  ASSERT_EQ(case_init(&r.oc, "", "RoiAlign", 3, 1), 0);
  case_string(&r.oc, "mode", "max");
  case_int(&r.oc, "output_height", 2);
  case_int(&r.oc, "output_width", 2);
  case_int(&r.oc, "sampling_ratio", 2);
  case_string(&r.oc, "coordinate_transformation_mode", "output_half_pixel");
  mb_tensor *in[3] = {tensor_of(MB_DTYPE_FLOAT, 4, xd, plane),
                      tensor_of(MB_DTYPE_FLOAT, 2, rd, V(-0.5, -0.5, 3.5, 3.5)),
                      tensor_of(MB_DTYPE_INT64, 1, bd, V(0))};
  ASSERT_OK(run_node(&r, "RoiAlign", 16, in, 3, 1), &r.oc.err);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++)
      ASSERT_NEAR(at(r.out[0], i * 2 + j), (2 * i + 1) * 6 + 2 * j + 1, 1e-5);
  free_tensors(in, 3);
  node_run_free(&r);
  /* A batch index past the batch is an error naming it. */
  ASSERT_EQ(case_init(&r.oc, "", "RoiAlign", 3, 1), 0);
  mb_tensor *bad[3] = {tensor_of(MB_DTYPE_FLOAT, 4, xd, plane),
                       tensor_of(MB_DTYPE_FLOAT, 2, rd, V(1, 1, 3, 3)),
                       tensor_of(MB_DTYPE_INT64, 1, bd, V(5))};
  ASSERT_EQ(run_node(&r, "RoiAlign", 16, bad, 3, 1), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(r.oc.err.message, "batch_indices[0] = 5");
  free_tensors(bad, 3);
  node_run_free(&r);
  /* A sampling grid past any real detector (65536 x 65536 per bin, found
   * by fuzz model_run) is refused before it is sampled, not run for hours. */
  ASSERT_EQ(case_init(&r.oc, "", "RoiAlign", 3, 1), 0);
  case_int(&r.oc, "sampling_ratio", 65536);
  mb_tensor *huge[3] = {tensor_of(MB_DTYPE_FLOAT, 4, xd, plane),
                        tensor_of(MB_DTYPE_FLOAT, 2, rd, V(1, 1, 3, 3)),
                        tensor_of(MB_DTYPE_INT64, 1, bd, V(0))};
  ASSERT_EQ(run_node(&r, "RoiAlign", 16, huge, 3, 1), MB_STATUS_UNSUPPORTED);
  ASSERT_CONTAINS(r.oc.err.message, "65536 x 65536 per bin");
  free_tensors(huge, 3);
  node_run_free(&r);
  return 0;
}

/* Without a score threshold every box competes; overlapping ones go. */
TEST(nms_without_score_threshold) {
  int64_t bd[3] = {1, 3, 4}, sd[3] = {1, 1, 3};
  node_run r;
  ASSERT_EQ(case_init(&r.oc, "", "NonMaxSuppression", 4, 1), 0);
  mb_tensor *in[4] = {tensor_of(MB_DTYPE_FLOAT, 3, bd,
                                V(0, 0, 1, 1, 0, 0, 1, 1.05, 2, 2, 3, 3)),
                      tensor_of(MB_DTYPE_FLOAT, 3, sd, V(0.5, 0.7, 0.1)),
                      tensor_of(MB_DTYPE_INT64, 0, NULL, V(10)),
                      tensor_of(MB_DTYPE_FLOAT, 0, NULL, V(0.5))};
  ASSERT_OK(run_node(&r, "NonMaxSuppression", 11, in, 4, 1), &r.oc.err);
  ASSERT_EQ(r.out[0]->dims[0], 2);
  ASSERT_EQ(mb__tensor_get_i64(r.out[0], 2), 1); /* highest score first */
  ASSERT_EQ(mb__tensor_get_i64(r.out[0], 5), 2);
  free_tensors(in, 4);
  node_run_free(&r);
  return 0;
}

TEST(loss_errors_name_the_node) {
  int64_t xd[2] = {2, 3}, td[1] = {2}, wrong[1] = {3};
  node_run r;
  ASSERT_EQ(case_init(&r.oc, "", "NegativeLogLikelihoodLoss", 2, 1), 0);
  mb_tensor *in[2] = {tensor_of(MB_DTYPE_FLOAT, 2, xd, NULL),
                      tensor_of(MB_DTYPE_INT64, 1, td, V(0, 7))};
  ASSERT_EQ(run_node(&r, "NegativeLogLikelihoodLoss", 13, in, 2, 1),
            MB_STATUS_SHAPE);
  ASSERT_CONTAINS(r.oc.err.message, "NegativeLogLikelihoodLoss 'n'");
  ASSERT_CONTAINS(r.oc.err.message, "target 7");
  node_run_free(&r);
  ASSERT_EQ(case_init(&r.oc, "", "SoftmaxCrossEntropyLoss", 2, 1), 0);
  mb_tensor *in2[2] = {tensor_of(MB_DTYPE_FLOAT, 2, xd, NULL),
                       tensor_of(MB_DTYPE_INT64, 1, wrong, V(0, 1, 2))};
  ASSERT_EQ(run_node(&r, "SoftmaxCrossEntropyLoss", 13, in2, 2, 1),
            MB_STATUS_SHAPE);
  ASSERT_CONTAINS(r.oc.err.message, "class axis");
  node_run_free(&r);
  ASSERT_EQ(case_init(&r.oc, "", "SoftmaxCrossEntropyLoss", 2, 1), 0);
  case_string(&r.oc, "reduction", "median");
  ASSERT_EQ(run_node(&r, "SoftmaxCrossEntropyLoss", 13, in, 2, 1),
            MB_STATUS_PARSE);
  ASSERT_CONTAINS(r.oc.err.message, "'median'");
  node_run_free(&r);
  free_tensors(in, 2);
  free_tensors(in2, 2);
  return 0;
}

TEST_MAIN(TEST_ENTRY(dft_lengths_and_onesided),
          TEST_ENTRY(dft_inverse_round_trip), TEST_ENTRY(stft_frames_match_dft),
          TEST_ENTRY(signal_errors_name_the_node),
          TEST_ENTRY(random_is_reproducible_and_in_range),
          TEST_ENTRY(bernoulli_and_multinomial_follow_their_probabilities),
          TEST_ENTRY(roialign_max_mode),
          TEST_ENTRY(nms_without_score_threshold),
          TEST_ENTRY(loss_errors_name_the_node))
