/* Calibration for static quantisation (see quantize.h): the float model
 * runs on the reference interpreter over the caller's batches, and every
 * float tensor it computes is summarised by its min/max and, for the
 * Percentile method, a histogram.
 *
 * The histogram is symmetric around zero, [-T, T) in MB_CALIB_BINS bins,
 * with zero on a bin edge. T starts at the first batch's largest |x| and
 * doubles (adjacent bins merged pairwise) whenever a later batch goes
 * beyond it, so the bins always cover every value seen and no data needs
 * a second pass. ORT's histogram collector grows by adding bins instead;
 * doubling keeps memory fixed, and with 4096 bins the resolution after one
 * doubling equals ORT's 2048 over the first range. */
#include "passes/quantize.h"
#include "runtime/reference.h"

#include <math.h>
#include <stdlib.h>

#define MB_CALIB_BINS 4096 /* divisible by 4: see histogram_double */

typedef struct calib_tensor {
  int value;
  bool seen;
  double min, max; /* over finite values */
  int64_t count;   /* finite values */
  double half;     /* histogram covers [-half, half); 0 until nonzero data */
  int64_t *hist;   /* MB_CALIB_BINS, PERCENTILE only */
} calib_tensor;

typedef struct calib_job {
  mb_session *session;
  calib_tensor *tensors;
  bool histogram;
} calib_job;

/* Doubles the histogram's range: bins 2k and 2k+1 become bin N/4 + k. */
static void histogram_double(calib_tensor *t) {
  int64_t *h = t->hist;
  for (int k = 0; k < MB_CALIB_BINS / 2; k++)
    h[k] = h[2 * k] + h[2 * k + 1];
  memmove(h + MB_CALIB_BINS / 4, h, sizeof *h * (MB_CALIB_BINS / 2));
  memset(h, 0, sizeof *h * (MB_CALIB_BINS / 4));
  memset(h + 3 * MB_CALIB_BINS / 4, 0, sizeof *h * (MB_CALIB_BINS / 4));
  t->half *= 2.0;
}

static void update(calib_tensor *t, const mb_tensor *x, bool histogram) {
  if (x->dtype != MB_DTYPE_FLOAT || x->numel <= 0 || !x->data)
    return;
  const float *d = x->data;
  float lo = INFINITY, hi = -INFINITY;
  int64_t finite = 0;
  for (int64_t i = 0; i < x->numel; i++)
    if (isfinite(d[i])) {
      lo = d[i] < lo ? d[i] : lo;
      hi = d[i] > hi ? d[i] : hi;
      finite++;
    }
  if (!finite)
    return;
  t->min = t->seen ? MB_MIN(t->min, (double)lo) : lo;
  t->max = t->seen ? MB_MAX(t->max, (double)hi) : hi;
  t->seen = true;
  t->count += finite;
  if (!histogram)
    return;
  double need = MB_MAX(fabs((double)lo), fabs((double)hi));
  /* Zeros sit in bin N/2 ([0, stride)) whatever the range, so a tensor
   * that was all zeros so far simply takes the new range. */
  if (t->half == 0.0)
    t->half = need;
  while (t->half < need)
    histogram_double(t);
  if (t->half == 0.0) {
    t->hist[MB_CALIB_BINS / 2] += finite;
    return;
  }
  double to_bin = MB_CALIB_BINS / (2.0 * t->half);
  for (int64_t i = 0; i < x->numel; i++) {
    if (!isfinite(d[i]))
      continue;
    double b = floor(((double)d[i] + t->half) * to_bin);
    int64_t bin = b < 0                ? 0
                  : b >= MB_CALIB_BINS ? MB_CALIB_BINS - 1
                                       : (int64_t)b;
    t->hist[bin]++;
  }
}

static void update_range(void *ctx, int64_t begin, int64_t end) {
  calib_job *job = ctx;
  for (int64_t k = begin; k < end; k++) {
    calib_tensor *t = &job->tensors[k];
    update(t, mb__session_value(job->session, t->value), job->histogram);
  }
}

/* The range keeping `percentile` % of the values, (100 - p) / 2 % cut at
 * each end (ORT's asymmetric percentile), within [min, max]. */
static void percentile_range(const calib_tensor *t, double percentile,
                             double *lo_out, double *hi_out) {
  *lo_out = t->min;
  *hi_out = t->max;
  if (t->half == 0.0 || percentile >= 100.0)
    return;
  double cut = (100.0 - percentile) / 200.0 * (double)t->count;
  double stride = 2.0 * t->half / MB_CALIB_BINS;
  int64_t below = 0;
  int left = 0, right = MB_CALIB_BINS - 1;
  /* First bin where the share of values up to and including it reaches
   * cut (its lower edge), and the same from the top. */
  for (left = 0; left < MB_CALIB_BINS; left++)
    if ((double)(below += t->hist[left]) >= cut && below > 0)
      break;
  int64_t above = 0;
  for (right = MB_CALIB_BINS - 1; right >= 0; right--)
    if ((double)(above += t->hist[right]) >= cut && above > 0)
      break;
  double lo = -t->half + stride * left, hi = -t->half + stride * (right + 1);
  if (lo > *lo_out && lo <= *hi_out)
    *lo_out = lo;
  if (hi < *hi_out && hi >= *lo_out)
    *hi_out = hi;
}

mb_status mb__calibrate(const mb_model *model,
                        const mb_tensor *const *const *batches, int n_batches,
                        const mb_quant_options *opt_in,
                        mb_quant_params **params_out, mb_error *err) {
  mb_quant_options opt;
  mb_status status = mb__quant_options_resolve(opt_in, &opt, err);
  if (status)
    return status;
  if (n_batches <= 0 || !batches)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "calibration needs at least one batch");
  const mb_graph *g = model->graph;
  bool histogram = opt.calibration == MB_QUANT_CALIBRATION_PERCENTILE;
  mb_session_options so = {.threads = opt.threads};
  mb_session *session = NULL;
  mb_threadpool *pool = NULL;
  mb_quant_params *params = NULL;
  calib_tensor *tensors = calloc((size_t)g->n_values + 1, sizeof *tensors);
  int n = 0;
  if (!tensors)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  /* Every value the interpreter computes or is fed, except the outputs of
   * Constant nodes (which are constants, quantised like weights). */
  for (int v = 0; v < g->n_values; v++) {
    const mb_value *val = &g->values[v];
    if (val->initializer ||
        (val->kind != MB_VALUE_INPUT && val->producer < 0) ||
        (val->producer >= 0 &&
         strcmp(g->nodes[val->producer].op_type, "Constant") == 0))
      continue;
    tensors[n].value = v;
    if (histogram &&
        !(tensors[n].hist = calloc(MB_CALIB_BINS, sizeof(int64_t)))) {
      status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
      goto done;
    }
    n++;
  }
  if ((status = mb_session_create(model, &so, &session, err)))
    goto done;
  if (opt.threads > 1 && !(pool = mb__threadpool_create(opt.threads))) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (int b = 0; b < n_batches; b++) {
    if (!batches[b]) {
      status = mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                         "calibration batch %d is missing", b);
      goto done;
    }
    if ((status = mb__session_run_keep(session, batches[b], err))) {
      mb__error_prefix(err, status, "calibration batch %d", b);
      goto done;
    }
    calib_job job = {session, tensors, histogram};
    mb__parallel_for(pool, n, update_range, &job);
  }
  if (!(params = calloc(1, sizeof *params))) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  params->calibration = opt.calibration;
  params->percentile = opt.percentile;
  params->activations = opt.activations;
  params->weights = opt.weights;
  params->samples = n_batches;
  mb_dtype dtype = opt.activations == MB_QUANT_ACTIVATIONS_UINT8
                       ? MB_DTYPE_UINT8
                       : MB_DTYPE_INT8;
  for (int k = 0; k < n; k++) {
    const calib_tensor *t = &tensors[k];
    if (!t->seen)
      continue; /* not float, or never computed */
    int e = mb__quant_params_add(params, g->values[t->value].name,
                                 MB_QUANT_KIND_ACTIVATION, err);
    if (e < 0) {
      status = err ? err->status : MB_STATUS_OUT_OF_MEMORY;
      goto done;
    }
    mb_quant_param *p = &params->tensors[e];
    p->dtype = dtype;
    p->count = t->count;
    if (histogram)
      percentile_range(t, opt.percentile, &p->min, &p->max);
    else {
      p->min = t->min;
      p->max = t->max;
    }
    mb__quant_scale_zero_point(p->min, p->max, dtype, &p->scales[0],
                               &p->zero_points[0]);
  }
  *params_out = params;
  params = NULL;
done:
  mb__quant_params_free(params);
  for (int k = 0; k <= n; k++) /* tensors[n] may hold a failed alloc */
    free(tensors[k].hist);
  free(tensors);
  mb__threadpool_free(pool);
  mb_session_free(session);
  return status;
}
