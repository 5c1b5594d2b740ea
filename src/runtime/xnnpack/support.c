/* XNNPACK engine: which nodes run here, and why not. Each check reads the
 * node's parameters through a getter that the lowering calls again at
 * compile time; rank-4 values are NHWC inside a segment, so a node whose
 * meaning depends on the layout is refused here. The operator table at the
 * end maps each ONNX op to its check and lowering, with what the fp16
 * rewrite of this snapshot does with it. */
#ifdef MB_HAVE_XNNPACK

#include "runtime/xnnpack/internal.h"

/* Checks take an mb_engine_check (engine.h) and return 1 (accepted) or
 * 0 through mb__engine_reject. */

const mb_engine_limits mb__xnn_limits = {"XNNPACK", XNN_RANK_MAX};

static const mb_shape_info *shape_of(mb_engine_check *c, int v) {
  return &c->eg->shapes[v];
}

/* Input 0 as activation and output 0: the common case of unary nodes. */
int mb__xnn_check_unary(mb_engine_check *c) {
  return mb__engine_check_float_input(c, 0, -1) && mb__engine_check_outputs(c);
}

static bool fits_u32(int64_t v) {
  return v >= 0 && v <= (int64_t)UINT32_MAX;
}

static int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
static int64_t ceil_div(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

/* Resolves strides, dilations, pads, auto_pad and ceil_mode of node n over
 * input spatial dims in[2] with kernel[2] already set; checks the output
 * size against the inferred shape `out_dims` (rank 4). */
static int window_resolve(mb_engine_check *c, window2d *w, bool pool,
                          const int64_t *out_dims) {
  int64_t pads[4];
  const mb_node *n = c->n;
  if (!mb__engine_attr_ints(n, "strides", 2, 1, 1, w->stride))
    return mb__engine_reject(c, "strides must be 2 values >= 1");
  if (!mb__engine_attr_ints(n, "dilations", 2, 1, 1, w->dilation))
    return mb__engine_reject(c, "dilations must be 2 values >= 1");
  if (!mb__engine_attr_ints(n, "pads", 4, 0, 0, pads))
    return mb__engine_reject(c, "pads must be 4 values >= 0");
  mb_auto_pad mode;
  if (!mb__engine_auto_pad(c, &mode))
    return 0;
  bool ceil_mode = pool && mb__node_attr_int(n, "ceil_mode", 0) != 0;
  for (int d = 0; d < 2; d++) {
    int64_t extent = (w->kernel[d] - 1) * w->dilation[d] + 1;
    int64_t in = w->in[d], s = w->stride[d];
    w->pad_begin[d] = w->pad_end[d] = w->pad_extra[d] = 0;
    switch (mode) {
    case MB_AUTO_PAD_NOTSET: {
      w->pad_begin[d] = pads[d];
      w->pad_end[d] = pads[2 + d];
      int64_t span = in + pads[d] + pads[2 + d] - extent;
      w->out[d] = (ceil_mode ? ceil_div(span, s) : floor_div(span, s)) + 1;
      if (ceil_mode && w->out[d] > 1 && (w->out[d] - 1) * s >= in + pads[d])
        w->out[d]--;
      break;
    }
    case MB_AUTO_PAD_VALID:
      w->out[d] = floor_div(in - extent, s) + 1;
      break;
    case MB_AUTO_PAD_SAME_UPPER:
    case MB_AUTO_PAD_SAME_LOWER: {
      w->out[d] = ceil_div(in, s);
      int64_t total = MB_MAX(0, (w->out[d] - 1) * s + extent - in);
      int64_t small = total / 2, big = total - small;
      w->pad_begin[d] = mode == MB_AUTO_PAD_SAME_UPPER ? small : big;
      w->pad_end[d] = mode == MB_AUTO_PAD_SAME_UPPER ? big : small;
      break;
    }
    }
    if (w->out[d] < 1)
      return mb__engine_reject(c, "kernel larger than the padded input");
    int64_t need = (w->out[d] - 1) * s + extent;
    int64_t have = in + w->pad_begin[d] + w->pad_end[d];
    if (need > have)
      w->pad_extra[d] = need - have;
    if (pool && (w->pad_begin[d] >= extent || w->pad_end[d] >= extent))
      return mb__engine_reject(c, "padding as large as the window");
    if (w->out[d] != out_dims[2 + d])
      return mb__engine_reject(
          c, "output size %lld differs from the inferred %lld",
          (long long)w->out[d], (long long)out_dims[2 + d]);
    if (!fits_u32(w->pad_begin[d]) ||
        !fits_u32(w->pad_end[d] + w->pad_extra[d]))
      return mb__engine_reject(c, "padding out of range");
  }
  return 1;
}

int mb__xnn_conv_params_get(mb_engine_check *c, conv_params *p) {
  const mb_node *n = c->n;
  memset(p, 0, sizeof *p);
  if (!mb__engine_check_float_input(c, 0, -1) ||
      !mb__engine_check_float_input(c, 1, 1) || !mb__engine_check_outputs(c))
    return 0;
  if (n->n_inputs > 3)
    return mb__engine_reject(c, "too many inputs");
  const mb_shape_info *x = shape_of(c, n->inputs[0]);
  const mb_tensor *w = mb__engine_constant(c->eg, n->inputs[1]);
  const mb_shape_info *y = shape_of(c, n->outputs[0]);
  if (x->rank != 4 || w->rank != 4 || y->rank != 4)
    return mb__engine_reject(c, "only 2-D convolutions (input rank %d)",
                             x->rank);
  int b = mb__engine_input(n, 2);
  if (b >= 0) {
    if (!mb__engine_check_float_input(c, 2, 1))
      return 0;
    const mb_tensor *bias = mb__engine_constant(c->eg, b);
    if (bias->rank != 1 || bias->dims[0] != w->dims[0])
      return mb__engine_reject(c, "bias shape does not match the weights");
  }
  p->groups = mb__node_attr_int(n, "group", 1);
  p->c_in = x->dims[1];
  p->c_out = w->dims[0];
  if (p->groups < 1 || p->c_in % p->groups != 0 || p->c_out % p->groups != 0 ||
      w->dims[1] != p->c_in / p->groups)
    return mb__engine_reject(c, "weights do not match the input and group");
  if (y->dims[1] != p->c_out || y->dims[0] != x->dims[0])
    return mb__engine_reject(c, "output shape does not match the weights");
  const int64_t *ks;
  int64_t nks = mb__node_attr_ints(n, "kernel_shape", &ks);
  if (nks >= 0 && (nks != 2 || ks[0] != w->dims[2] || ks[1] != w->dims[3]))
    return mb__engine_reject(c, "kernel_shape disagrees with the weights");
  p->w.in[0] = x->dims[2];
  p->w.in[1] = x->dims[3];
  p->w.kernel[0] = w->dims[2];
  p->w.kernel[1] = w->dims[3];
  if (!window_resolve(c, &p->w, false, y->dims))
    return 0;
  for (int d = 0; d < 2; d++)
    if (p->w.pad_extra[d])
      return mb__engine_reject(c, "padding does not cover the windows");
  p->depthwise = p->groups > 1 && p->groups == p->c_in;
  if (!fits_u32(p->groups) || !fits_u32(p->c_in) || !fits_u32(p->c_out))
    return mb__engine_reject(c, "channel count out of range");
  return 1;
}

int mb__xnn_pool_params_get(mb_engine_check *c, pool_params *p, bool average) {
  const mb_node *n = c->n;
  memset(p, 0, sizeof *p);
  p->average = average;
  if (!mb__engine_check_float_input(c, 0, -1) || !mb__engine_check_outputs(c))
    return 0;
  const mb_shape_info *x = shape_of(c, n->inputs[0]);
  const mb_shape_info *y = shape_of(c, n->outputs[0]);
  if (x->rank != 4 || y->rank != 4)
    return mb__engine_reject(c, "only 2-D pooling (input rank %d)", x->rank);
  if (!mb__engine_attr_ints(n, "kernel_shape", 2, 0, 1, p->w.kernel) ||
      !p->w.kernel[0])
    return mb__engine_reject(c, "kernel_shape must be 2 values >= 1");
  p->w.in[0] = x->dims[2];
  p->w.in[1] = x->dims[3];
  if (!window_resolve(c, &p->w, true, y->dims))
    return 0;
  if (average && (p->w.dilation[0] != 1 || p->w.dilation[1] != 1))
    return mb__engine_reject(c, "dilated average pooling");
  p->count_include_pad =
      average && mb__node_attr_int(n, "count_include_pad", 0) != 0;
  bool padded = false;
  for (int d = 0; d < 2; d++)
    padded |= p->w.pad_begin[d] || p->w.pad_end[d] || p->w.pad_extra[d];
  if (p->w.kernel[0] * p->w.kernel[1] == 1) {
    /* XNNPACK refuses 1-element windows; with stride 1 and no padding the
     * pool is a copy. */
    if (padded || p->w.stride[0] != 1 || p->w.stride[1] != 1)
      return mb__engine_reject(c, "1x1 window with strides or padding");
    p->identity = true;
  }
  return 1;
}

static int check_conv(mb_engine_check *c) {
  conv_params p;
  return mb__xnn_conv_params_get(c, &p);
}

static int check_maxpool(mb_engine_check *c) {
  pool_params p;
  return mb__xnn_pool_params_get(c, &p, false);
}

static int check_avgpool(mb_engine_check *c) {
  pool_params p;
  return mb__xnn_pool_params_get(c, &p, true);
}

static int check_global_pool(mb_engine_check *c) {
  if (!mb__xnn_check_unary(c))
    return 0;
  const mb_shape_info *x = shape_of(c, c->n->inputs[0]);
  if (x->rank != 4)
    return mb__engine_reject(c, "only 2-D pooling (input rank %d)", x->rank);
  if (strcmp(c->n->op_type, "GlobalMaxPool") == 0 &&
      x->dims[2] * x->dims[3] == 1)
    return mb__engine_reject(c, "a 1x1 input (a copy)");
  return 1;
}

/* Elementwise binary: the layout rules of broadcasting. */
static int check_binary(mb_engine_check *c) {
  const mb_node *n = c->n;
  if (n->n_inputs != 2)
    return mb__engine_reject(c, "%d inputs (2 supported)", n->n_inputs);
  if (!mb__engine_check_float_input(c, 0, 0) ||
      !mb__engine_check_float_input(c, 1, 0) || !mb__engine_check_outputs(c))
    return 0;
  const mb_shape_info *y = shape_of(c, n->outputs[0]);
  int n_const = 0;
  for (int i = 0; i < 2; i++) {
    int v = n->inputs[i];
    if (mb__engine_constant(c->eg, v)) {
      n_const++;
      continue;
    }
    const mb_shape_info *s = shape_of(c, v);
    if (is_nhwc(s->rank) && !is_nhwc(y->rank))
      return mb__engine_reject(c, "a rank-4 input broadcast to rank %d",
                               y->rank);
    if (is_nhwc(y->rank) && !is_nhwc(s->rank) &&
        mb__engine_numel(s->rank, s->dims) != 1)
      return mb__engine_reject(
          c,
          "input %d of rank %d broadcast against rank 4 (NHWC "
          "inside the segment)",
          i, s->rank);
  }
  if (n_const == 2)
    return mb__engine_reject(c, "both inputs constant");
  return 1;
}

/* Clip's bounds: attributes before opset 11, constant inputs after. */
int mb__xnn_clip_bounds(mb_engine_check *c, float *lo, float *hi) {
  *lo = -INFINITY;
  *hi = INFINITY;
  if (c->opset < 11) {
    *lo = mb__node_attr_float(c->n, "min", -INFINITY);
    *hi = mb__node_attr_float(c->n, "max", INFINITY);
    return 1;
  }
  return mb__engine_scalar_input(c, 1, -INFINITY, lo) &&
         mb__engine_scalar_input(c, 2, INFINITY, hi);
}

static int check_clip(mb_engine_check *c) {
  float lo, hi;
  if (!mb__xnn_check_unary(c) || !mb__xnn_clip_bounds(c, &lo, &hi))
    return 0;
  if (!(lo < hi))
    return mb__engine_reject(c, "min %g is not below max %g", (double)lo,
                             (double)hi);
  return 1;
}

static int check_prelu(mb_engine_check *c) {
  if (!mb__engine_check_float_input(c, 0, -1) ||
      !mb__engine_check_float_input(c, 1, 1) || !mb__engine_check_outputs(c))
    return 0;
  const mb_shape_info *x = shape_of(c, c->n->inputs[0]);
  const mb_tensor *slope = mb__engine_constant(c->eg, c->n->inputs[1]);
  if (x->rank < 2)
    return mb__engine_reject(c, "input of rank %d", x->rank);
  if (slope->numel == 1)
    return 1;
  /* XNNPACK's PReLU takes one slope per channel, which is the last dim
   * inside the segment: dim 1 for rank 4 (NHWC) and rank 2. */
  int channel_axis = is_nhwc(x->rank) ? 1 : x->rank - 1;
  if (slope->rank > x->rank)
    return mb__engine_reject(c, "slope of higher rank than the input");
  for (int i = 0; i < slope->rank; i++) {
    int axis = x->rank - slope->rank + i;
    int64_t want = axis == channel_axis ? x->dims[axis] : 1;
    if (slope->dims[i] != want)
      return mb__engine_reject(c, "slope is not per channel");
  }
  return 1;
}

static int check_softmax(mb_engine_check *c) {
  if (!mb__xnn_check_unary(c))
    return 0;
  const mb_shape_info *x = shape_of(c, c->n->inputs[0]);
  int64_t axis = mb__node_attr_int(c->n, "axis", c->opset >= 13 ? -1 : 1);
  if (axis < 0)
    axis += x->rank;
  if (axis < 0 || axis >= x->rank)
    return mb__engine_reject(c, "axis out of range");
  if (c->opset >= 13) {
    int last = is_nhwc(x->rank) ? 1 : x->rank - 1;
    if (axis != last)
      return mb__engine_reject(
          c, "softmax over axis %lld of a rank-%d tensor%s", (long long)axis,
          x->rank, is_nhwc(x->rank) ? " (NHWC inside the segment)" : "");
    return 1;
  }
  /* Before opset 13: over the flattened dims [axis, rank), contiguous in
   * NHWC too when they include H, W and C together. */
  if (is_nhwc(x->rank) && axis > 1)
    return mb__engine_reject(
        c, "softmax over dims from %lld of a rank-4 tensor", (long long)axis);
  return 1;
}

/* Reshape, Flatten, Squeeze, Unsqueeze: a static reshape to the inferred
 * output shape, valid when no rank-4 side is reordered by NHWC. */
static int check_reshape(mb_engine_check *c) {
  /* The shape or axes input need not be constant: the output shape is
   * static, and that is all the lowering reads. */
  if (!mb__engine_check_float_input(c, 0, -1) || !mb__engine_check_outputs(c))
    return 0;
  const mb_shape_info *x = shape_of(c, c->n->inputs[0]);
  const mb_shape_info *y = shape_of(c, c->n->outputs[0]);
  if (is_nhwc(x->rank) && is_nhwc(y->rank) &&
      memcmp(x->dims, y->dims, 4 * sizeof(int64_t)) == 0)
    return 1;
  if ((is_nhwc(x->rank) && !layouts_agree(x->dims)) ||
      (is_nhwc(y->rank) && !layouts_agree(y->dims)))
    return mb__engine_reject(
        c, "reshape of a rank-4 tensor with C > 1 and H*W > 1 "
           "(NHWC inside the segment)");
  return 1;
}

static int check_identity(mb_engine_check *c) {
  if (!mb__xnn_check_unary(c))
    return 0;
  if (strcmp(c->n->op_type, "Dropout") == 0) {
    if (c->opset < 7 && mb__node_attr_int(c->n, "is_test", 0) == 0)
      return mb__engine_reject(c, "training mode");
    int t = mb__engine_input(c->n, 2);
    if (t >= 0) {
      const mb_tensor *k = mb__engine_constant(c->eg, t);
      if (!k || k->numel != 1 || mb__tensor_get_f64(k, 0) != 0)
        return mb__engine_reject(c, "training_mode is not a constant false");
    }
  }
  return 1;
}

int mb__xnn_pad_params_get(mb_engine_check *c, pad_params *p) {
  const mb_node *n = c->n;
  if (!mb__engine_check_float_input(c, 0, -1) || !mb__engine_check_outputs(c))
    return 0;
  const mb_shape_info *x = shape_of(c, n->inputs[0]);
  int r = x->rank;
  int64_t pads[2 * MB_MAX_RANK];
  const char *mode = mb__node_attr_string(n, "mode", "constant");
  if (strcmp(mode, "constant") != 0)
    return mb__engine_reject(c, "mode '%s' (constant only)", mode);
  p->value = 0.0f;
  if (c->opset < 11) {
    const int64_t *v;
    if (mb__node_attr_ints(n, "pads", &v) != 2 * r)
      return mb__engine_reject(c, "pads must have %d values", 2 * r);
    memcpy(pads, v, (size_t)(2 * r) * sizeof *v);
    p->value = mb__node_attr_float(n, "value", 0.0f);
  } else {
    int64_t count = mb__engine_int_input(c, 1, pads, 2 * MB_MAX_RANK);
    if (count < 0)
      return 0;
    if (!mb__engine_scalar_input(c, 2, 0.0f, &p->value))
      return 0;
    int64_t axes[MB_MAX_RANK];
    int n_axes = r;
    for (int i = 0; i < r; i++)
      axes[i] = i;
    if (mb__engine_input(n, 3) >= 0) {
      int64_t k = mb__engine_int_input(c, 3, axes, MB_MAX_RANK);
      if (k < 0)
        return 0;
      n_axes = (int)k;
    }
    if (count != 2 * n_axes)
      return mb__engine_reject(c, "pads has %lld values for %d axes",
                               (long long)count, n_axes);
    int64_t full[2 * MB_MAX_RANK] = {0};
    for (int i = 0; i < n_axes; i++) {
      int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
      if (a < 0 || a >= r)
        return mb__engine_reject(c, "axis out of range");
      full[a] = pads[i];
      full[r + a] = pads[n_axes + i];
    }
    memcpy(pads, full, sizeof full);
  }
  for (int i = 0; i < r; i++) {
    if (pads[i] < 0 || pads[r + i] < 0)
      return mb__engine_reject(c, "negative pads (cropping)");
    p->begin[i] = pads[i];
    p->end[i] = pads[r + i];
  }
  return 1;
}

static int check_pad(mb_engine_check *c) {
  pad_params p;
  return mb__xnn_pad_params_get(c, &p);
}

static int check_batchnorm(mb_engine_check *c) {
  if (!mb__engine_check_float_input(c, 0, -1) || !mb__engine_check_outputs(c))
    return 0;
  if (c->n->n_inputs != 5)
    return mb__engine_reject(c, "%d inputs", c->n->n_inputs);
  if (mb__node_attr_int(c->n, "training_mode", 0) != 0)
    return mb__engine_reject(c, "training mode");
  const mb_shape_info *x = shape_of(c, c->n->inputs[0]);
  if (x->rank < 2)
    return mb__engine_reject(c, "input of rank %d", x->rank);
  for (int i = 1; i < 5; i++) {
    if (!mb__engine_check_float_input(c, i, 1))
      return 0;
    const mb_tensor *k = mb__engine_constant(c->eg, c->n->inputs[i]);
    if (k->rank != 1 || k->dims[0] != x->dims[1])
      return mb__engine_reject(c, "input %d is not one value per channel", i);
  }
  return 1;
}

int mb__xnn_fc_params_get(mb_engine_check *c, fc_params *p) {
  const mb_node *n = c->n;
  bool gemm = strcmp(n->op_type, "Gemm") == 0;
  memset(p, 0, sizeof *p);
  if (!mb__engine_check_float_input(c, 0, -1) ||
      !mb__engine_check_float_input(c, 1, 1) || !mb__engine_check_outputs(c))
    return 0;
  const mb_shape_info *a = shape_of(c, n->inputs[0]);
  const mb_tensor *b = mb__engine_constant(c->eg, n->inputs[1]);
  const mb_shape_info *y = shape_of(c, n->outputs[0]);
  if (b->rank != 2)
    return mb__engine_reject(c, "weights of rank %d (2 supported)", b->rank);
  p->alpha = p->beta = 1.0f;
  if (gemm) {
    if (a->rank != 2)
      return mb__engine_reject(c, "input of rank %d", a->rank);
    if (mb__node_attr_int(n, "transA", 0) != 0)
      return mb__engine_reject(c, "transA = 1");
    p->trans_b = mb__node_attr_int(n, "transB", 0) != 0;
    p->alpha = mb__node_attr_float(n, "alpha", 1.0f);
    p->beta = mb__node_attr_float(n, "beta", 1.0f);
  } else if (n->n_inputs != 2) {
    return mb__engine_reject(c, "%d inputs", n->n_inputs);
  } else if (a->rank != 2 && a->rank != 3) {
    return mb__engine_reject(c, "input of rank %d (2 or 3 supported)", a->rank);
  }
  p->k = p->trans_b ? b->dims[1] : b->dims[0];
  p->n = p->trans_b ? b->dims[0] : b->dims[1];
  if (a->dims[a->rank - 1] != p->k || y->rank != a->rank ||
      y->dims[y->rank - 1] != p->n)
    return mb__engine_reject(c, "shapes do not match");
  int cv = mb__engine_input(n, 2);
  if (gemm && cv >= 0 && p->beta != 0.0f) {
    if (!mb__engine_check_float_input(c, 2, 1))
      return 0;
    const mb_tensor *k = mb__engine_constant(c->eg, cv);
    if (k->rank > 2)
      return mb__engine_reject(c, "C of rank %d", k->rank);
    bool per_n = k->numel == 1 || k->dims[k->rank - 1] == p->n;
    bool one_row = k->rank < 2 || k->dims[0] == 1;
    p->bias_kind = per_n && one_row ? 1 : 2;
  }
  return 1;
}

static int check_fc(mb_engine_check *c) {
  fc_params p;
  return mb__xnn_fc_params_get(c, &p);
}

static int check_hardsigmoid(mb_engine_check *c) {
  return mb__xnn_check_unary(c);
}

static int check_depth_to_space(mb_engine_check *c) {
  if (!mb__xnn_check_unary(c))
    return 0;
  const mb_shape_info *x = shape_of(c, c->n->inputs[0]);
  if (x->rank != 4)
    return mb__engine_reject(c, "input of rank %d", x->rank);
  const char *mode = mb__node_attr_string(c->n, "mode", "DCR");
  if (strcmp(mode, "DCR") != 0)
    return mb__engine_reject(c, "mode %s (DCR only)", mode);
  int64_t bs = mb__node_attr_int(c->n, "blocksize", 0);
  if (bs < 2 || bs > 1024 || x->dims[1] % (bs * bs) != 0)
    return mb__engine_reject(c, "blocksize %lld", (long long)bs);
  return 1;
}

static int check_leaky_relu(mb_engine_check *c) {
  return mb__xnn_check_unary(c);
}

/* Resize, linear over H and W of a rank-4 tensor: XNNPACK's bilinear
 * resize, whose coordinate modes are TensorFlow's. Only the ONNX modes that
 * map exactly are accepted, and only when the coordinate scale is
 * input / output size, which is XNNPACK's. */
int mb__xnn_resize_flags(mb_engine_check *c, uint32_t *flags) {
  const mb_node *n = c->n;
  if (!mb__engine_check_float_input(c, 0, -1) || !mb__engine_check_outputs(c))
    return 0;
  const mb_shape_info *x = shape_of(c, n->inputs[0]);
  const mb_shape_info *y = shape_of(c, n->outputs[0]);
  if (x->rank != 4 || y->rank != 4)
    return mb__engine_reject(c, "input of rank %d (4 supported)", x->rank);
  if (x->dims[0] != y->dims[0] || x->dims[1] != y->dims[1])
    return mb__engine_reject(c, "resizes N or C");
  const char *mode = mb__node_attr_string(n, "mode", "nearest");
  if (strcmp(mode, "linear") != 0)
    return mb__engine_reject(c, "mode '%s' (linear only)", mode);
  if (mb__node_attr_int(n, "antialias", 0) != 0)
    return mb__engine_reject(c, "antialias");
  if (mb__node_attr(n, "axes"))
    return mb__engine_reject(c, "the axes attribute");
  if (strcmp(mb__node_attr_string(n, "keep_aspect_ratio_policy", "stretch"),
             "stretch") != 0)
    return mb__engine_reject(c, "keep_aspect_ratio_policy other than stretch");
  const char *coord =
      c->opset < 11 ? "asymmetric"
                    : mb__node_attr_string(n, "coordinate_transformation_mode",
                                           "half_pixel");
  if (strcmp(coord, "half_pixel") == 0 ||
      (strcmp(coord, "pytorch_half_pixel") == 0 && y->dims[2] > 1 &&
       y->dims[3] > 1))
    *flags = 0;
  else if (strcmp(coord, "align_corners") == 0)
    *flags = XNN_FLAG_ALIGN_CORNERS;
  else if (strcmp(coord, "asymmetric") == 0)
    *flags = XNN_FLAG_TENSORFLOW_LEGACY_MODE;
  else
    return mb__engine_reject(c, "coordinate_transformation_mode '%s'", coord);
  int scales_at = c->opset < 11 ? 1 : 2;
  for (int i = 1; i < n->n_inputs; i++) {
    int v = n->inputs[i];
    const mb_tensor *k = mb__engine_constant(c->eg, v);
    if (v < 0 || (k && k->numel == 0))
      continue;
    if (!k)
      return mb__engine_reject(c, "input %d is not a constant", i);
    if (i != scales_at)
      continue;
    /* Given scales set the coordinate scale: it must be out / in. */
    if (k->numel != 4 || k->dtype != MB_DTYPE_FLOAT)
      return mb__engine_reject(c, "scales are not 4 floats");
    for (int d = 0; d < 4; d++) {
      double sc = mb__tensor_get_f64(k, d);
      if ((double)x->dims[d] * sc != (double)y->dims[d])
        return mb__engine_reject(
            c, "scale %g does not give a whole output size", sc);
    }
  }
  return 1;
}

static int check_resize(mb_engine_check *c) {
  uint32_t flags;
  return mb__xnn_resize_flags(c, &flags);
}

static const xnn_op_row xnn_ops[] = {
    {"Conv", check_conv, mb__xnn_lower_conv, false, true},
    {"Gemm", check_fc, mb__xnn_lower_fc, false, true},
    {"MatMul", check_fc, mb__xnn_lower_fc, false, true},
    {"Add", check_binary, mb__xnn_lower_binary, false, true},
    {"Sub", check_binary, mb__xnn_lower_binary},
    {"Mul", check_binary, mb__xnn_lower_binary, false, true},
    {"Div", check_binary, mb__xnn_lower_binary},
    {"Max", check_binary, mb__xnn_lower_binary},
    {"Min", check_binary, mb__xnn_lower_binary},
    {"Relu", mb__xnn_check_unary, mb__xnn_lower_relu, false, true},
    {"Clip", check_clip, mb__xnn_lower_clip, false, true},
    {"LeakyRelu", check_leaky_relu, mb__xnn_lower_leaky_relu, false, true},
    {"Elu", mb__xnn_check_unary, mb__xnn_lower_elu},
    {"PRelu", check_prelu, mb__xnn_lower_prelu, false, true},
    {"Sigmoid", mb__xnn_check_unary, mb__xnn_lower_unary},
    {"HardSwish", mb__xnn_check_unary, mb__xnn_lower_unary, true},
    {"HardSigmoid", check_hardsigmoid, mb__xnn_lower_hardsigmoid},
    {"Abs", mb__xnn_check_unary, mb__xnn_lower_unary},
    {"Neg", mb__xnn_check_unary, mb__xnn_lower_unary},
    {"Floor", mb__xnn_check_unary, mb__xnn_lower_unary},
    {"Ceil", mb__xnn_check_unary, mb__xnn_lower_unary},
    {"Sqrt", mb__xnn_check_unary, mb__xnn_lower_unary},
    {"MaxPool", check_maxpool, mb__xnn_lower_pool, false, true},
    {"AveragePool", check_avgpool, mb__xnn_lower_pool},
    {"GlobalAveragePool", check_global_pool, mb__xnn_lower_global_pool, false,
     true},
    {"GlobalMaxPool", check_global_pool, mb__xnn_lower_global_pool, false,
     true},
    {"Softmax", check_softmax, mb__xnn_lower_softmax},
    {"Reshape", check_reshape, mb__xnn_lower_reshape, false, true},
    {"Flatten", check_reshape, mb__xnn_lower_reshape, false, true},
    {"Squeeze", check_reshape, mb__xnn_lower_reshape, false, true},
    {"Unsqueeze", check_reshape, mb__xnn_lower_reshape, false, true},
    {"Identity", check_identity, mb__xnn_lower_reshape, false, true},
    {"Dropout", check_identity, mb__xnn_lower_reshape, false, true},
    {"Pad", check_pad, mb__xnn_lower_pad, false, true},
    {"BatchNormalization", check_batchnorm, mb__xnn_lower_batchnorm},
    {"DepthToSpace", check_depth_to_space, mb__xnn_lower_depth_to_space},
    {"Resize", check_resize, mb__xnn_lower_resize},
};

const xnn_op_row *mb__xnn_op_find(const mb_node *n) {
  if (n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)
    return NULL;
  for (size_t i = 0; i < MB_ARRAY_COUNT(xnn_ops); i++)
    if (strcmp(n->op_type, xnn_ops[i].op_type) == 0)
      return &xnn_ops[i];
  return NULL;
}

#endif /* MB_HAVE_XNNPACK */
