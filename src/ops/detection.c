/* Object detection: NonMaxSuppression (opsets 10, 11) and RoiAlign (10,
 * 16), following ONNX Runtime's CPU kernels, which the ONNX reference
 * implementation mirrors.
 *
 * NonMaxSuppression's output length depends on the data, so infer runs the
 * selection to count it and run repeats it (kernels keep no state between
 * the two calls). */
#include "ops/op.h"

#include <math.h>

/* ------------------------------------------------------------------------ */
/* NonMaxSuppression                                                         */
/* ------------------------------------------------------------------------ */

typedef struct nms_plan {
  int64_t batches, classes, boxes;
  int64_t max_per_class;
  float iou_threshold;
  bool has_score_threshold;
  float score_threshold;
  bool center_point_box;
} nms_plan;

static mb_status nms_float_scalar(mb_op_ctx *ctx, int i, const char *what,
                                  bool *present, float *out) {
  const mb_tensor *t = mb__op_input(ctx, i);
  *present = t != NULL;
  if (!t)
    return MB_STATUS_OK;
  if (t->numel != 1 || !mb__dtype_is_float(t->dtype))
    return mb__op_error(ctx, MB_STATUS_SHAPE, "%s must be one float", what);
  *out = (float)mb__tensor_get_f64(t, 0);
  return MB_STATUS_OK;
}

static mb_status nms_plan_make(mb_op_ctx *ctx, nms_plan *p) {
  mb_status st = mb__op_check_arity(ctx, 2, 5);
  if (st)
    return st;
  const mb_tensor *boxes = ctx->inputs[0], *scores = ctx->inputs[1];
  char a[96], b[96];
  if (boxes->dtype != MB_DTYPE_FLOAT || scores->dtype != MB_DTYPE_FLOAT)
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "boxes and scores must be float32, got %s and %s",
                        mb_dtype_name(boxes->dtype),
                        mb_dtype_name(scores->dtype));
  if (boxes->rank != 3 || boxes->dims[2] != 4 || scores->rank != 3 ||
      scores->dims[0] != boxes->dims[0] || scores->dims[2] != boxes->dims[1])
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "boxes %s and scores %s must be [batches, boxes, 4] "
                        "and [batches, classes, boxes]",
                        mb__shape_str(boxes->rank, boxes->dims, a, sizeof a),
                        mb__shape_str(scores->rank, scores->dims, b, sizeof b));
  for (int i = 0; i < 5; i++)
    MB_OP_NEED_DATA(ctx, i);
  p->batches = boxes->dims[0];
  p->boxes = boxes->dims[1];
  p->classes = scores->dims[1];
  p->max_per_class = 0;
  const mb_tensor *max_t = mb__op_input(ctx, 2);
  if (max_t) {
    if (max_t->numel != 1 || !mb__dtype_is_int(max_t->dtype))
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "max_output_boxes_per_class must be one integer");
    p->max_per_class = MB_MAX(0, mb__tensor_get_i64(max_t, 0));
  }
  bool present;
  p->iou_threshold = 0.0f;
  if ((st = nms_float_scalar(ctx, 3, "iou_threshold", &present,
                             &p->iou_threshold)) ||
      (st = nms_float_scalar(ctx, 4, "score_threshold", &p->has_score_threshold,
                             &p->score_threshold)))
    return st;
  if (p->iou_threshold < 0 || p->iou_threshold > 1)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "iou_threshold %g is outside [0, 1]",
                        (double)p->iou_threshold);
  p->center_point_box =
      mb__node_attr_int(ctx->node, "center_point_box", 0) != 0;
  return MB_STATUS_OK;
}

/* [ymin, xmin, ymax, xmax] of box i. */
static void nms_corners(const nms_plan *p, const float *box, float *out) {
  if (p->center_point_box) {
    float xc = box[0], yc = box[1], w = box[2], h = box[3];
    out[0] = yc - h / 2;
    out[1] = xc - w / 2;
    out[2] = yc + h / 2;
    out[3] = xc + w / 2;
    return;
  }
  out[0] = fminf(box[0], box[2]);
  out[1] = fminf(box[1], box[3]);
  out[2] = fmaxf(box[0], box[2]);
  out[3] = fmaxf(box[1], box[3]);
}

static bool nms_suppresses(const float *a, const float *b, float threshold) {
  float ymin = fmaxf(a[0], b[0]), xmin = fmaxf(a[1], b[1]);
  float ymax = fminf(a[2], b[2]), xmax = fminf(a[3], b[3]);
  if (xmin > xmax || ymin > ymax)
    return false;
  float inter = (ymax - ymin) * (xmax - xmin);
  float area_a = (a[2] - a[0]) * (a[3] - a[1]);
  float area_b = (b[2] - b[0]) * (b[3] - b[1]);
  float uni = area_a + area_b - inter;
  if (area_a <= 0 || area_b <= 0 || uni <= 0)
    return false;
  return inter / uni > threshold;
}

/* Selects into out (3 int64 per selection, NULL to count only); returns
 * the count. work: boxes int64 + 4 * boxes floats. */
static int64_t nms_select(const nms_plan *p, const float *boxes,
                          const float *scores, int64_t *order, float *corners,
                          int64_t *selected, int64_t *out) {
  int64_t count = 0;
  for (int64_t b = 0; b < p->batches; b++) {
    const float *bx = boxes + b * p->boxes * 4;
    for (int64_t i = 0; i < p->boxes; i++)
      nms_corners(p, bx + i * 4, corners + i * 4);
    for (int64_t c = 0; c < p->classes; c++) {
      const float *sc = scores + (b * p->classes + c) * p->boxes;
      int64_t n = 0, kept = 0;
      for (int64_t i = 0; i < p->boxes; i++)
        if (!p->has_score_threshold || sc[i] > p->score_threshold)
          order[n++] = i;
      /* Insertion sort by score, descending; ties keep the lower index. */
      for (int64_t i = 1; i < n; i++) {
        int64_t v = order[i], j = i;
        while (j > 0 && sc[order[j - 1]] < sc[v]) {
          order[j] = order[j - 1];
          j--;
        }
        order[j] = v;
      }
      for (int64_t i = 0; i < n && kept < p->max_per_class; i++) {
        bool keep = true;
        for (int64_t k = 0; k < kept && keep; k++)
          keep = !nms_suppresses(corners + order[i] * 4,
                                 corners + selected[k] * 4, p->iou_threshold);
        if (!keep)
          continue;
        selected[kept++] = order[i];
        if (out) {
          out[count * 3] = b;
          out[count * 3 + 1] = c;
          out[count * 3 + 2] = order[i];
        }
        count++;
      }
    }
  }
  return count;
}

static mb_status nms_exec(mb_op_ctx *ctx, int64_t *out, int64_t *count_out) {
  nms_plan p;
  mb_status st = nms_plan_make(ctx, &p);
  if (st)
    return st;
  size_t n = (size_t)MB_MAX(p.boxes, 1);
  int64_t *order = mb__op_scratch(ctx, 0, sizeof(int64_t) * 2 * n);
  float *corners = mb__op_scratch(ctx, 1, sizeof(float) * 4 * n);
  if (!order || !corners)
    return MB_STATUS_OUT_OF_MEMORY;
  *count_out = nms_select(&p, ctx->inputs[0]->data, ctx->inputs[1]->data, order,
                          corners, order + n, out);
  return MB_STATUS_OK;
}

static mb_status nms_infer(mb_op_ctx *ctx) {
  int64_t count = 0;
  mb_status st = nms_exec(ctx, NULL, &count);
  mb_tensor *y = mb__op_output(ctx, 0);
  if (st || !y)
    return st;
  int64_t dims[2] = {count, 3};
  return mb__tensor_set_shape(y, MB_DTYPE_INT64, 2, dims, ctx->err);
}

static mb_status nms_run(mb_op_ctx *ctx) {
  int64_t count;
  mb_tensor *y = mb__op_output(ctx, 0);
  return nms_exec(ctx, y ? y->data : NULL, &count);
}

/* ------------------------------------------------------------------------ */
/* RoiAlign                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct roi_plan {
  int64_t rois, channels, height, width, out_h, out_w, sampling_ratio;
  float spatial_scale;
  bool max_mode, half_pixel;
} roi_plan;

static mb_status roi_plan_make(mb_op_ctx *ctx, roi_plan *p) {
  mb_status st = mb__op_check_arity(ctx, 3, 3);
  if (st)
    return st;
  const mb_tensor *x = ctx->inputs[0], *rois = ctx->inputs[1],
                  *idx = ctx->inputs[2];
  char a[96], b[96], c[96];
  if (!mb__dtype_is_float(x->dtype) || rois->dtype != x->dtype)
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "X and rois must be of one float type, got %s and %s",
                        mb_dtype_name(x->dtype), mb_dtype_name(rois->dtype));
  if (!mb__dtype_is_int(idx->dtype))
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "batch_indices is %s, expected int64",
                        mb_dtype_name(idx->dtype));
  if (x->rank != 4 || rois->rank != 2 || rois->dims[1] != 4 || idx->rank != 1 ||
      idx->dims[0] != rois->dims[0])
    return mb__op_error(
        ctx, MB_STATUS_SHAPE,
        "X %s, rois %s and batch_indices %s must be [N, C, H, W], "
        "[rois, 4] and [rois]",
        mb__shape_str(x->rank, x->dims, a, sizeof a),
        mb__shape_str(rois->rank, rois->dims, b, sizeof b),
        mb__shape_str(idx->rank, idx->dims, c, sizeof c));
  p->rois = rois->dims[0];
  p->channels = x->dims[1];
  p->height = x->dims[2];
  p->width = x->dims[3];
  p->out_h = mb__node_attr_int(ctx->node, "output_height", 1);
  p->out_w = mb__node_attr_int(ctx->node, "output_width", 1);
  p->sampling_ratio = mb__node_attr_int(ctx->node, "sampling_ratio", 0);
  p->spatial_scale = mb__node_attr_float(ctx->node, "spatial_scale", 1.0f);
  if (p->out_h < 1 || p->out_w < 1 || p->out_h > MB_OP_ATTR_MAX ||
      p->out_w > MB_OP_ATTR_MAX || p->sampling_ratio < 0 ||
      p->sampling_ratio > MB_OP_ATTR_MAX)
    return mb__op_error(ctx, MB_STATUS_PARSE,
                        "output_height %lld, output_width %lld and "
                        "sampling_ratio %lld must be positive",
                        (long long)p->out_h, (long long)p->out_w,
                        (long long)p->sampling_ratio);
  const char *mode = mb__node_attr_string(ctx->node, "mode", "avg");
  if (strcmp(mode, "avg") && strcmp(mode, "max"))
    return mb__op_error(ctx, MB_STATUS_PARSE, "mode '%s' is not avg or max",
                        mode);
  p->max_mode = strcmp(mode, "max") == 0;
  /* Opset 10 had no attribute and behaved as output_half_pixel. */
  const char *ctm = mb__node_attr_string(
      ctx->node, "coordinate_transformation_mode",
      ctx->opset >= 16 ? "half_pixel" : "output_half_pixel");
  if (strcmp(ctm, "half_pixel") && strcmp(ctm, "output_half_pixel"))
    return mb__op_error(ctx, MB_STATUS_PARSE,
                        "coordinate_transformation_mode '%s' is not "
                        "half_pixel or output_half_pixel",
                        ctm);
  p->half_pixel = strcmp(ctm, "half_pixel") == 0;
  return MB_STATUS_OK;
}

static mb_status roi_infer(mb_op_ctx *ctx) {
  roi_plan p;
  mb_status st = roi_plan_make(ctx, &p);
  mb_tensor *y = mb__op_output(ctx, 0);
  if (st || !y)
    return st;
  int64_t dims[4] = {p.rois, p.channels, p.out_h, p.out_w};
  return mb__tensor_set_shape(y, ctx->inputs[0]->dtype, 4, dims, ctx->err);
}

/* One bilinear sample: four taps and weights (all zero outside). */
typedef struct roi_sample {
  int64_t pos[4];
  double w[4];
  bool inside; /* false: the sample is 0 and pos must not be read */
} roi_sample;

static void roi_sample_at(const roi_plan *p, double y, double x,
                          roi_sample *s) {
  memset(s, 0, sizeof *s);
  /* An empty feature map (H or W 0) has no pixel to sample: every sample
   * is 0 (reading its "last" pixel read before the buffer; found by fuzz
   * model_run, ASan). */
  if (p->height <= 0 || p->width <= 0 || y < -1.0 || y > (double)p->height ||
      x < -1.0 || x > (double)p->width)
    return;
  y = fmax(y, 0.0);
  x = fmax(x, 0.0);
  int64_t y_low = (int64_t)y, x_low = (int64_t)x, y_high, x_high;
  if (y_low >= p->height - 1) {
    y_high = y_low = p->height - 1;
    y = (double)y_low;
  } else {
    y_high = y_low + 1;
  }
  if (x_low >= p->width - 1) {
    x_high = x_low = p->width - 1;
    x = (double)x_low;
  } else {
    x_high = x_low + 1;
  }
  s->inside = true;
  double ly = y - (double)y_low, lx = x - (double)x_low;
  double hy = 1.0 - ly, hx = 1.0 - lx;
  s->pos[0] = y_low * p->width + x_low;
  s->pos[1] = y_low * p->width + x_high;
  s->pos[2] = y_high * p->width + x_low;
  s->pos[3] = y_high * p->width + x_high;
  s->w[0] = hy * hx;
  s->w[1] = hy * lx;
  s->w[2] = ly * hx;
  s->w[3] = ly * lx;
}

/* The most samples per bin side of the adaptive grid (sampling_ratio 0):
 * a box 1024 feature-map pixels per output bin is past any real feature
 * map (detectors sample a few per side), and the square of it per bin is
 * already a million samples. */
#define ROI_MAX_GRID 1024
/* The most bilinear samples one RoiAlign node takes in all (rois x
 * channels x bins x grid): 2^27, past a Mask R-CNN box head's ~5e7 (1000
 * rois x 256 channels x 7x7 bins x 2x2), and a few seconds at most. A
 * fuzzed sampling_ratio of 65536 asked for 4 billion per bin. */
#define ROI_MAX_SAMPLES ((double)(1 << 27))

static mb_status roi_run(mb_op_ctx *ctx) {
  roi_plan p;
  mb_status st = roi_plan_make(ctx, &p);
  if (st)
    return st;
  const mb_tensor *x = ctx->inputs[0], *rois = ctx->inputs[1],
                  *idx = ctx->inputs[2];
  mb_tensor *y = ctx->outputs[0];
  int64_t plane = p.height * p.width;
  double offset = p.half_pixel ? 0.5 : 0.0;
  double samples = 0.0; /* taken so far, bounded by ROI_MAX_SAMPLES */
  for (int64_t r = 0; r < p.rois; r++) {
    int64_t batch = mb__tensor_get_i64(idx, r);
    if (batch < 0 || batch >= x->dims[0])
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "batch_indices[%lld] = %lld is outside [0, %lld)",
                          (long long)r, (long long)batch,
                          (long long)x->dims[0]);
    double x1 = mb__tensor_get_f64(rois, r * 4) * p.spatial_scale - offset;
    double y1 = mb__tensor_get_f64(rois, r * 4 + 1) * p.spatial_scale - offset;
    double x2 = mb__tensor_get_f64(rois, r * 4 + 2) * p.spatial_scale - offset;
    double y2 = mb__tensor_get_f64(rois, r * 4 + 3) * p.spatial_scale - offset;
    double roi_w = x2 - x1, roi_h = y2 - y1;
    if (!p.half_pixel) {
      roi_w = fmax(roi_w, 1.0);
      roi_h = fmax(roi_h, 1.0);
    }
    double bin_h = roi_h / (double)p.out_h, bin_w = roi_w / (double)p.out_w;
    double adaptive_h = ceil(roi_h / p.out_h),
           adaptive_w = ceil(roi_w / p.out_w);
    /* Written so that NaN fails too: an infinite box (or scale) has no
     * sampling grid, a huge one would not finish. */
    if (!(fabs(x1) + fabs(y1) + fabs(x2) + fabs(y2) < 1e15) ||
        (p.sampling_ratio <= 0 &&
         !(fmax(adaptive_h, adaptive_w) <= ROI_MAX_GRID)))
      return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                          "roi %lld [%g, %g, %g, %g] (scaled) is not finite "
                          "or needs more than %d x %d samples per bin",
                          (long long)r, x1, y1, x2, y2, ROI_MAX_GRID,
                          ROI_MAX_GRID);
    int64_t grid_h =
        p.sampling_ratio > 0 ? p.sampling_ratio : (int64_t)adaptive_h;
    int64_t grid_w =
        p.sampling_ratio > 0 ? p.sampling_ratio : (int64_t)adaptive_w;
    grid_h = MB_MAX(grid_h, 0);
    grid_w = MB_MAX(grid_w, 0);
    samples += (double)p.channels * (double)p.out_h * (double)p.out_w *
               (double)grid_h * (double)grid_w;
    if (samples > ROI_MAX_SAMPLES)
      return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                          "rois 0..%lld need %.3g bilinear samples (%lld x "
                          "%lld per bin), more than the %.3g one node may take",
                          (long long)r, samples, (long long)grid_h,
                          (long long)grid_w, ROI_MAX_SAMPLES);
    double count = (double)MB_MAX(grid_h * grid_w, 1);
    for (int64_t c = 0; c < p.channels; c++) {
      int64_t base = (batch * p.channels + c) * plane;
      for (int64_t ph = 0; ph < p.out_h; ph++) {
        for (int64_t pw = 0; pw < p.out_w; pw++) {
          double acc = 0.0;
          bool first = true;
          for (int64_t iy = 0; iy < grid_h; iy++) {
            double yy = y1 + (double)ph * bin_h +
                        ((double)iy + 0.5) * bin_h / (double)grid_h;
            for (int64_t ix = 0; ix < grid_w; ix++) {
              double xx = x1 + (double)pw * bin_w +
                          ((double)ix + 0.5) * bin_w / (double)grid_w;
              roi_sample s;
              roi_sample_at(&p, yy, xx, &s);
              double v[4];
              for (int k = 0; k < 4; k++)
                v[k] = s.inside
                           ? s.w[k] * mb__tensor_get_f64(x, base + s.pos[k])
                           : 0.0;
              if (p.max_mode) {
                double m = fmax(fmax(v[0], v[1]), fmax(v[2], v[3]));
                acc = first ? m : fmax(acc, m);
                first = false;
              } else {
                acc += v[0] + v[1] + v[2] + v[3];
              }
            }
          }
          int64_t at = ((r * p.channels + c) * p.out_h + ph) * p.out_w + pw;
          mb__tensor_set_f64(y, at, p.max_mode ? acc : acc / count);
        }
      }
    }
  }
  return MB_STATUS_OK;
}

const mb_op_def mb__ops_detection[] = {
    {"", "NonMaxSuppression", 10, nms_infer, nms_run, 0},
    {"", "NonMaxSuppression", 11, nms_infer, nms_run, 0},
    {"", "RoiAlign", 10, roi_infer, roi_run, 0},
    {"", "RoiAlign", 16, roi_infer, roi_run, 0},
};
MB_OP_TABLE_END(detection);
