/* oneDNN engine: fused groups and the lowering loop. A Conv, MatMul or
 * Gemm heads a group that takes the chain after it as post-ops (see
 * onednn.c); plan_groups finds the groups, posts_build and posts_args turn
 * their links into oneDNN post-ops, and lower_node / lower_group emit one
 * node or one group at its position in the segment. */
#ifdef MB_HAVE_DNNL

#include "runtime/onednn/internal.h"

mb_engine_check mb__dn_lower_check_ctx(lctx *l, const mb_node *n, char *reason,
                                       size_t size) {
  return (mb_engine_check){l->eg, n, l->opset, reason, size, &mb__dn_limits};
}

/* supports_node accepted the node, so its parameters read back; when they
 * do not, the graph changed under us. */
mb_status mb__dn_recheck_failed(lctx *l, const char *reason) {
  char label[160];
  return mb__error(l->err, MB_STATUS_INTERNAL,
                   "onednn: %s: accepted earlier but now: %s",
                   mb__node_label(l->node, label, sizeof label), reason);
}

/* ---- post-ops of a fused group ------------------------------------------ */

/* Builds the oneDNN post-op list of posts[0..k) (BIAS links are the head's
 * own argument and skipped) for a destination of `rank` dims. Binary
 * operands are described in bin_md[i] (i: index in posts) without being
 * materialised yet. fold_rank: 0, or the rank of a destination seen as 2-D
 * (rank is 2 then): its leading fold_rank - 1 dims are one. */
mb_status mb__dn_posts_build(lctx *l, const dn_post *posts, int k, int rank,
                             int fold_rank, dnnl_post_ops_t *po_out,
                             dnnl_memory_desc_t *bin_md) {
  dnnl_post_ops_t po = NULL;
  mb_status status = MB_STATUS_OK;
  *po_out = NULL;
  DN_TRY(l, dnnl_post_ops_create(&po));
  for (int i = 0; i < k; i++) {
    const dn_post *p = &posts[i];
    switch (p->kind) {
    case DN_POST_ELTWISE:
      for (int j = 0; j < p->n_ops; j++)
        DN_GOTO(l,
                dnnl_post_ops_append_eltwise(po, 1.0f, p->ops[j].alg,
                                             p->ops[j].alpha, p->ops[j].beta));
      break;
    case DN_POST_SUM:
      DN_GOTO(l, dnnl_post_ops_append_sum(po, 1.0f));
      break;
    case DN_POST_MASK:
    case DN_POST_BINARY: {
      int r;
      int64_t dims[MB_MAX_RANK], padded[DNNL_MAX_NDIMS];
      mb__dn_value_dims(l, p->operand, &r, dims);
      dims_pad(r, dims, fold_rank ? fold_rank : rank, padded);
      if (fold_rank) {
        /* The destination's leading dims are folded into its rows. */
        padded[0] = mb__engine_numel(fold_rank - 1, padded);
        padded[1] = padded[fold_rank - 1];
      }
      DN_GOTO(l, mb__dn_md_plain(&bin_md[i], rank, padded, dnnl_f32));
      DN_GOTO(l, dnnl_post_ops_append_binary(
                     po, p->kind == DN_POST_MASK ? dnnl_binary_add : p->alg,
                     &bin_md[i]));
      break;
    }
    case DN_POST_BIAS:
    case DN_POST_VIEW:
      break;
    }
  }
  *po_out = po;
  return MB_STATUS_OK;
done:
  dnnl_post_ops_destroy(po);
  return status;
}

/* Appends the runtime arguments of the binary post-ops among posts[0..k)
 * to args (materialising their operands as plain float32). */
mb_status mb__dn_posts_args(lctx *l, const dn_post *posts, int k,
                            const dnnl_memory_desc_t *bin_md,
                            dnnl_exec_arg_t *args, int *n_args) {
  int index = 0;
  mb_status status;
  for (int i = 0; i < k; i++) {
    const dn_post *p = &posts[i];
    if (p->kind == DN_POST_BINARY) {
      dn_rep *r;
      dnnl_memory_t mem;
      if ((status = mb__dn_value_get(l, p->operand, DN_WANT_PLAIN, dnnl_f32,
                                     NULL, &r)) ||
          (status = mb__dn_rep_view(l, r, &bin_md[i], &mem)))
        return status;
      args[(*n_args)++] = (dnnl_exec_arg_t){
          DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_1, mem};
    } else if (p->kind == DN_POST_MASK) {
      dnnl_memory_t mem;
      float *mask = mb__dn_where_data(mb__engine_constant(l->eg, p->operand),
                                      p->fill, p->fill_if_true, true);
      if (!mask)
        return mb__dn_oom(l);
      if ((status = mb__dn_const_memory(l, &bin_md[i], mask, true, &bin_md[i],
                                        &mem, NULL)))
        return status;
      args[(*n_args)++] = (dnnl_exec_arg_t){
          DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_1, mem};
    }
    index += p->kind == DN_POST_ELTWISE                           ? p->n_ops
             : p->kind == DN_POST_BIAS || p->kind == DN_POST_VIEW ? 0
                                                                  : 1;
  }
  return MB_STATUS_OK;
}

/* The destination of a head whose posts[0..k) yield value `final`: with a
 * sum, the summand is first put into the destination, in place when it
 * dies here (src_buf, src_buf2: the buffers of the head's inputs, never
 * overwritten; -1 for none). */
mb_status mb__dn_head_dst(lctx *l, const dn_post *posts, int k, int final,
                          const dnnl_memory_desc_t *dst_md, int src_buf,
                          int src_buf2, dn_rep **out) {
  int sum = -1;
  mb_status status;
  for (int i = 0; i < k; i++)
    if (posts[i].kind == DN_POST_SUM)
      sum = posts[i].operand;
  if (sum < 0)
    return mb__dn_value_define(l, final, dst_md, out);
  dn_val *x = &l->vals[sum];
  if (x->n_reps == 0 && (status = mb__dn_const_rep(l, sum)))
    return status;
  for (int i = 0; i < x->n_reps; i++) {
    dn_rep r = x->rep[i];
    if (mb__dn_md_same(&r.md, dst_md) && r.buf != src_buf2 &&
        mb__dn_can_overwrite(l, &r, src_buf))
      return mb__dn_value_alias(l, final, dst_md, r.buf, out);
  }
  dn_rep src = x->rep[0];
  if ((status = mb__dn_value_define(l, final, dst_md, out)))
    return status;
  return mb__dn_emit_reorder(l, src.mem, &src.md, (*out)->mem, &(*out)->md);
}

/* The value a head with posts[0..k) yields. */
int mb__dn_head_final(const dn_post *posts, int k, int head_out) {
  return k > 0 ? posts[k - 1].out_value : head_out;
}

/* Lowers the nodes of posts[k..n) one by one (oneDNN refused them as
 * post-ops), each at its own position. Liveness puts every read inside
 * the group at the group's last position, so lowered there a node could
 * overwrite in place a value that a later node of the chain still reads
 * (SiLU's Sigmoid over the x its Mul multiplies); at its own, earlier
 * position no value of the chain has died yet. */
mb_status mb__dn_lower_rest(lctx *l, const dn_post *posts, int k, int n) {
  mb_status status = MB_STATUS_OK;
  int pos = l->pos;
  for (int i = k; i < n && !status; i++)
    for (int j = 0; j < posts[i].n_nodes && !status; j++) {
      l->pos = posts[i].nodes[j];
      status = mb__dn_lower_node(l, posts[i].nodes[j]);
    }
  l->pos = pos;
  return status;
}

static void group_init(dn_group *g, int head) {
  memset(g, 0, sizeof *g);
  g->head = head;
  g->last = head;
  g->in_value[0] = g->in_value[1] = -1;
  g->pre_alpha = 1.0f;
  g->ln_x = g->ln_out = g->ln_gamma = g->ln_beta = -1;
}

mb_status mb__dn_lower_node(lctx *l, int pos) {
  const mb_node *n = node_at(l, pos), *saved = l->node;
  int saved_prof = l->prof;
  mb_status status;
  if (mb__engine_node_folded(l->eg, n))
    return MB_STATUS_OK;
  const dn_op_row *row = mb__dn_op_find(n);
  l->node = n;
  if (!row)
    return mb__dn_internal_error(l, "not supported by the oneDNN engine");
  if ((l->prof = mb__dn_prof_new(l, n->op_type, n->name)) < 0)
    return mb__dn_oom(l);
  if (row->head != DN_NOT_HEAD) {
    dn_group g;
    group_init(&g, pos);
    status = row->head == DN_HEAD_CONV ? mb__dn_lower_conv(l, &g)
                                       : mb__dn_lower_mm(l, &g);
  } else {
    status = row->lower(l, n);
  }
  for (int i = 0; i < n->n_outputs && !status; i++)
    status = mb__dn_finish_output(l, n->outputs[i]);
  l->node = saved;
  l->prof = saved_prof;
  return status;
}

/* Positions of the nodes reading value v (each node once); returns the
 * count, storing at most max. */
static int consumers(lctx *l, int v, int *out, int max) {
  return mb__segment_readers(l->d, v, out, max);
}

/* v has exactly one reader, at position *pos, and is not a segment
 * output. */
static bool sole_reader(lctx *l, int v, int *pos) {
  return v >= 0 && l->vals[v].out_slot < 0 && consumers(l, v, pos, 1) == 1 &&
         l->group_of[*pos] < 0;
}

static bool same_shape(lctx *l, int a, int b) {
  int ra, rb;
  int64_t da[MB_MAX_RANK], db[MB_MAX_RANK];
  return mb__engine_value_shape(l->eg, a, &ra, da, NULL) &&
         mb__engine_value_shape(l->eg, b, &rb, db, NULL) &&
         dims_equal(ra, da, rb, db);
}

/* The other input of binary node n, which reads cur once. */
static int other_input(const mb_node *n, int cur) {
  if (n->n_inputs != 2 || n->inputs[0] == n->inputs[1])
    return -1;
  return n->inputs[0] == cur   ? n->inputs[1]
         : n->inputs[1] == cur ? n->inputs[0]
                               : -1;
}

static bool scalar_const(lctx *l, int v, float *value) {
  const mb_tensor *k = v >= 0 ? mb__engine_constant(l->eg, v) : NULL;
  if (!k || k->numel != 1 || k->dtype != MB_DTYPE_FLOAT)
    return false;
  *value = ((const float *)k->data)[0];
  return true;
}

/* The attention scale before a product: input i of the MatMul/Gemm at
 * `head` is the output of a Mul or Div of another value by a float scalar
 * constant, read by nothing else; (x * c) @ y = (x @ y) * c, so the head
 * reads x and takes c into its alpha. */
static void match_pre_scale(lctx *l, int head, dn_group *g) {
  const mb_node *h = node_at(l, head);
  for (int i = 0; i < 2 && i < h->n_inputs; i++) {
    int v = h->inputs[i], at, cons[2];
    int prod = v >= 0 ? l->g->values[v].producer : -1;
    if (prod < 0 || (at = l->node_pos[prod]) < 0 || l->group_of[at] >= 0 ||
        l->vals[v].out_slot >= 0 || consumers(l, v, cons, 2) != 1 ||
        (i == 1 && h->inputs[0] == v))
      continue;
    const mb_node *n = node_at(l, at);
    float c;
    int x;
    if (n->n_inputs != 2 || mb__engine_node_folded(l->eg, n))
      continue;
    if (op_is(n, "Mul") && scalar_const(l, n->inputs[1], &c))
      x = n->inputs[0];
    else if (op_is(n, "Mul") && scalar_const(l, n->inputs[0], &c))
      x = n->inputs[1];
    else if (op_is(n, "Div") && scalar_const(l, n->inputs[1], &c) && c != 0.0f)
      x = n->inputs[0], c = 1.0f / c;
    else
      continue;
    if (!same_shape(l, x, v) || mb__engine_constant(l->eg, x) || !(c == c) ||
        c == 0.0f)
      continue;
    g->in_value[i] = x;
    g->pre_alpha *= c;
    l->group_of[at] = (int)(g - l->groups);
  }
}

static bool near(float a, float b) {
  return fabsf(a - b) <= 1e-4f * fabsf(b);
}

static void post_nodes(dn_post *post, int n, const int *pos) {
  post->n_nodes = n;
  for (int i = 0; i < n; i++)
    post->nodes[i] = pos[i];
  /* In segment order, so that unfused they lower in a valid order. */
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && post->nodes[j - 1] > post->nodes[j]; j--) {
      int t = post->nodes[j];
      post->nodes[j] = post->nodes[j - 1];
      post->nodes[j - 1] = t;
    }
}

/* x * sigmoid(x) (SiLU) among the readers cons[0..nc) of x. */
static bool match_swish(lctx *l, int x, const int *cons, int nc,
                        dn_post *post) {
  for (int i = 0; i < nc; i++) {
    const mb_node *s = node_at(l, cons[i]);
    int m;
    if (!op_is(s, "Sigmoid") || l->group_of[cons[i]] >= 0 ||
        s->inputs[0] != x || !sole_reader(l, s->outputs[0], &m))
      continue;
    const mb_node *mul = node_at(l, m);
    if (!op_is(mul, "Mul") || other_input(mul, s->outputs[0]) != x)
      continue;
    memset(post, 0, sizeof *post);
    post->kind = DN_POST_ELTWISE;
    post->n_ops = 1;
    post->ops[0] = (eltwise_op){dnnl_eltwise_swish, 1.0f, 0.0f};
    post_nodes(post, 2, (int[]){cons[i], m});
    post->out_value = mul->outputs[0];
    return true;
  }
  return false;
}

/* x * 0.5 * (1 + erf(x / sqrt 2)) as PyTorch exports GELU: Div (or Mul by
 * 1/sqrt 2), Erf, Add 1, Mul x (or x*0.5), Mul 0.5. */
static bool match_gelu(lctx *l, int x, const int *cons, int nc, dn_post *post) {
  for (int i = 0; i < nc; i++) {
    const mb_node *d = node_at(l, cons[i]);
    int pe, pa, pm, pm2, ph = -1;
    float c;
    if (l->group_of[cons[i]] >= 0 || d->inputs[0] != x ||
        !scalar_const(l, other_input(d, x), &c))
      continue;
    if (!(op_is(d, "Div") && near(c, 1.41421356f)) &&
        !(op_is(d, "Mul") && near(c, 0.70710678f)))
      continue;
    if (!sole_reader(l, d->outputs[0], &pe) || !op_is(node_at(l, pe), "Erf"))
      continue;
    const mb_node *e = node_at(l, pe);
    if (!sole_reader(l, e->outputs[0], &pa))
      continue;
    const mb_node *a = node_at(l, pa);
    if (!op_is(a, "Add") ||
        !scalar_const(l, other_input(a, e->outputs[0]), &c) || c != 1.0f ||
        !sole_reader(l, a->outputs[0], &pm))
      continue;
    const mb_node *m = node_at(l, pm);
    int other = op_is(m, "Mul") ? other_input(m, a->outputs[0]) : -1;
    int out;
    if (other == x) {
      /* (x * (1 + erf)) * 0.5 */
      if (!sole_reader(l, m->outputs[0], &pm2))
        continue;
      const mb_node *m2 = node_at(l, pm2);
      if (!op_is(m2, "Mul") ||
          !scalar_const(l, other_input(m2, m->outputs[0]), &c) || c != 0.5f)
        continue;
      out = m2->outputs[0];
    } else {
      /* (x * 0.5) * (1 + erf) */
      int hp = other >= 0 ? l->eg->graph->values[other].producer : -1;
      ph = hp >= 0 ? l->node_pos[hp] : -1;
      if (ph < 0 || l->group_of[ph] >= 0 || !op_is(node_at(l, ph), "Mul") ||
          !scalar_const(l, other_input(node_at(l, ph), x), &c) || c != 0.5f ||
          !sole_reader(l, other, &(int){0}))
        continue;
      pm2 = ph;
      out = m->outputs[0];
    }
    memset(post, 0, sizeof *post);
    post->kind = DN_POST_ELTWISE;
    post->n_ops = 1;
    post->ops[0] = (eltwise_op){dnnl_eltwise_gelu_erf, 0.0f, 0.0f};
    post_nodes(post, 5, (int[]){cons[i], pe, pa, pm, pm2});
    post->out_value = out;
    return true;
  }
  return false;
}

/* The node at the sole reader of v when it is an ungrouped `op` whose
 * other input is a float scalar constant near c (any c when c is NAN);
 * -1 otherwise. */
static int next_scalar_op(lctx *l, int v, const char *op, float c) {
  int pos;
  float k;
  if (!sole_reader(l, v, &pos))
    return -1;
  const mb_node *n = node_at(l, pos);
  if (!op_is(n, op) || !scalar_const(l, other_input(n, v), &k) ||
      (!isnan(c) && !near(k, c)))
    return -1;
  return pos;
}

/* 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))) as PyTorch
 * exports GELU(approximate='tanh') and GPT code writes it: x^3 as
 * Mul(x, Mul(x, x)) or Pow(x, 3), the 0.5 applied to x first or to the
 * product last. cons[0..nc): x's readers; exclusive: each must be one of
 * its nodes (x is a product's result, which the post-op never writes). */
static bool match_gelu_tanh(lctx *l, int x, const int *cons, int nc,
                            bool exclusive, dn_post *post) {
  int pos[12], np = 0, cube = -1, p, half_x = -1;
  float k;
  for (int i = 0; i < nc && cube < 0; i++) {
    const mb_node *n = node_at(l, cons[i]);
    if (l->group_of[cons[i]] >= 0 || n->n_inputs != 2 || n->inputs[0] != x)
      continue;
    if (op_is(n, "Pow") && scalar_const(l, n->inputs[1], &k) && k == 3.0f) {
      pos[np++] = cons[i];
      cube = n->outputs[0];
    } else if (op_is(n, "Mul") && n->inputs[1] == x &&
               sole_reader(l, n->outputs[0], &p) &&
               op_is(node_at(l, p), "Mul") &&
               other_input(node_at(l, p), n->outputs[0]) == x) {
      pos[np++] = cons[i];
      pos[np++] = p;
      cube = node_at(l, p)->outputs[0];
    }
  }
  if (cube < 0 || (p = next_scalar_op(l, cube, "Mul", 0.044715f)) < 0)
    return false;
  pos[np++] = p;
  int a1;
  if (!sole_reader(l, node_at(l, p)->outputs[0], &a1) ||
      !op_is(node_at(l, a1), "Add") ||
      other_input(node_at(l, a1), node_at(l, p)->outputs[0]) != x)
    return false;
  pos[np++] = a1;
  if ((p = next_scalar_op(l, node_at(l, a1)->outputs[0], "Mul",
                          0.7978845608f)) < 0)
    return false;
  pos[np++] = p;
  int t;
  if (!sole_reader(l, node_at(l, p)->outputs[0], &t) ||
      !op_is(node_at(l, t), "Tanh"))
    return false;
  pos[np++] = t;
  if ((p = next_scalar_op(l, node_at(l, t)->outputs[0], "Add", 1.0f)) < 0)
    return false;
  pos[np++] = p;
  int a2 = node_at(l, p)->outputs[0], m;
  if (!sole_reader(l, a2, &m) || !op_is(node_at(l, m), "Mul"))
    return false;
  pos[np++] = m;
  int other = other_input(node_at(l, m), a2), out;
  if (other == x) {
    /* (x * (1 + tanh)) * 0.5 */
    if ((p = next_scalar_op(l, node_at(l, m)->outputs[0], "Mul", 0.5f)) < 0)
      return false;
    pos[np++] = p;
    out = node_at(l, p)->outputs[0];
  } else {
    /* (x * 0.5) * (1 + tanh) */
    int hp = other >= 0 ? l->eg->graph->values[other].producer : -1;
    half_x = hp >= 0 ? l->node_pos[hp] : -1;
    if (half_x < 0 || l->group_of[half_x] >= 0 ||
        !op_is(node_at(l, half_x), "Mul") ||
        !scalar_const(l, other_input(node_at(l, half_x), x), &k) || k != 0.5f ||
        !sole_reader(l, other, &(int){0}))
      return false;
    pos[np++] = half_x;
    out = node_at(l, m)->outputs[0];
  }
  /* x's readers: all in the pattern (the square reads x twice, once). */
  for (int i = 0; i < nc && exclusive; i++) {
    bool in = false;
    for (int j = 0; j < np; j++)
      in |= pos[j] == cons[i];
    if (!in)
      return false;
  }
  memset(post, 0, sizeof *post);
  post->kind = DN_POST_ELTWISE;
  post->n_ops = 1;
  post->ops[0] = (eltwise_op){dnnl_eltwise_gelu_tanh, 0.0f, 0.0f};
  post_nodes(post, np, pos);
  post->out_value = out;
  return true;
}

/* Scalar-constant Add/Sub/Mul/Div/Max/Min of cur as one eltwise op. */
static bool scalar_affine(const mb_node *n, int cur, float c, eltwise_op *op) {
  bool first = n->inputs[0] == cur;
  if (op_is(n, "Add"))
    *op = (eltwise_op){dnnl_eltwise_linear, 1.0f, c};
  else if (op_is(n, "Sub"))
    *op = first ? (eltwise_op){dnnl_eltwise_linear, 1.0f, -c}
                : (eltwise_op){dnnl_eltwise_linear, -1.0f, c};
  else if (op_is(n, "Mul"))
    *op = (eltwise_op){dnnl_eltwise_linear, c, 0.0f};
  else if (op_is(n, "Div") && first && c != 0.0f)
    *op = (eltwise_op){dnnl_eltwise_linear, 1.0f / c, 0.0f};
  else if (op_is(n, "Max"))
    *op = (eltwise_op){dnnl_eltwise_clip, c, FLT_MAX};
  else if (op_is(n, "Min"))
    *op = (eltwise_op){dnnl_eltwise_clip, -FLT_MAX, c};
  else
    return false;
  return true;
}

/* How the chain after a head continues from value cur (which must not be
 * read by anything else): fills post. */
/* Does node n (reading cur) only reinterpret a plain result: a reshape, or
 * a Transpose that moves only size-1 dims? */
static bool is_plain_view(lctx *l, const mb_node *n, int cur) {
  static const char *const reshapes[] = {"Reshape", "Flatten", "Squeeze",
                                         "Unsqueeze", "Identity"};
  char reason[8];
  mb_engine_check c = mb__dn_lower_check_ctx(l, n, reason, sizeof reason);
  const dn_op_row *row = mb__dn_op_find(n);
  if (n->n_outputs != 1 || n->inputs[0] != cur || !row || !row->check(&c))
    return false;
  for (size_t i = 0; i < MB_ARRAY_COUNT(reshapes); i++)
    if (op_is(n, reshapes[i]))
      return true;
  int perm[MB_MAX_RANK], rank, last = -1;
  int64_t dims[MB_MAX_RANK];
  if (!op_is(n, "Transpose") || !mb__dn_transpose_get(&c, perm))
    return false;
  mb__dn_value_dims(l, cur, &rank, dims);
  for (int j = 0; j < rank; j++) {
    if (dims[perm[j]] == 1)
      continue;
    if (perm[j] < last)
      return false;
    last = perm[j];
  }
  return true;
}

static bool match_link(lctx *l, int cur, dn_head_kind head, bool has_bias,
                       bool has_sum, bool after_view, dn_post *post) {
  int cons[4];
  int nc = consumers(l, cur, cons, 4);
  if (l->vals[cur].out_slot >= 0 || nc < 1 || nc > 4)
    return false;
  for (int i = 0; i < nc; i++)
    if (l->group_of[cons[i]] >= 0 ||
        mb__engine_node_folded(l->eg, node_at(l, cons[i])))
      return false;
  if (nc >= 2)
    return match_swish(l, cur, cons, nc, post) ||
           match_gelu(l, cur, cons, nc, post) ||
           match_gelu_tanh(l, cur, cons, nc, true, post);
  const mb_node *n = node_at(l, cons[0]);
  int out = n->n_outputs == 1 ? n->outputs[0] : -1;
  if (out >= 0 && head == DN_HEAD_MM && is_plain_view(l, n, cur)) {
    /* The product's result reshaped: the chain goes on in the new shape,
     * the primitive writes the same bytes. */
    memset(post, 0, sizeof *post);
    post_nodes(post, 1, cons);
    post->kind = DN_POST_VIEW;
    post->out_value = out;
    return true;
  }
  if (out < 0 || !same_shape(l, out, cur))
    return false;
  memset(post, 0, sizeof *post);
  post_nodes(post, 1, cons);
  post->out_value = out;
  char rsn[8];
  mb_engine_check wc = mb__dn_lower_check_ctx(l, n, rsn, sizeof rsn);
  where_params wp;
  if (op_is(n, "Where") && !after_view && mb__dn_where_get(&wc, &wp) &&
      n->inputs[wp.act] == cur && isinf(wp.fill)) {
    /* A masked fill of -inf (a causal mask) as an addition. */
    post->kind = DN_POST_MASK;
    post->operand = n->inputs[0];
    post->fill = wp.fill;
    post->fill_if_true = wp.fill_if_true;
    return true;
  }
  char reason[8];
  mb_engine_check c = mb__dn_lower_check_ctx(l, n, reason, sizeof reason);
  if (mb__dn_op_find(n) && mb__dn_op_find(n)->check == mb__dn_check_unary &&
      n->inputs[0] == cur) {
    post->kind = DN_POST_ELTWISE;
    return (post->n_ops = mb__dn_unary_get(&c, post->ops)) > 0;
  }
  const struct binary_row *row = mb__dn_binary_find(n);
  int other = other_input(n, cur);
  float k;
  if (!row || other < 0)
    return false;
  if (scalar_const(l, other, &k) && scalar_affine(n, cur, k, &post->ops[0])) {
    post->kind = DN_POST_ELTWISE;
    post->n_ops = 1;
    return true;
  }
  mb_dtype dt;
  int ro, rc;
  int64_t od[MB_MAX_RANK], cd[MB_MAX_RANK], pd[MB_MAX_RANK];
  if (!mb__engine_value_shape(l->eg, other, &ro, od, &dt) ||
      dt != MB_DTYPE_FLOAT ||
      !mb__engine_value_shape(l->eg, cur, &rc, cd, NULL) || ro > rc)
    return false;
  const mb_tensor *kc = mb__engine_constant(l->eg, other);
  post->operand = other;
  if (row->alg == dnnl_binary_add && !kc && !has_sum &&
      same_shape(l, other, cur)) {
    post->kind = DN_POST_SUM;
    return true;
  }
  /* Broadcast operands are described in the primitive's own dims. */
  if (after_view)
    return false;
  dims_pad(ro, od, rc, pd);
  bool bias_shape = true;
  for (int i = 0; i < rc; i++) {
    if (pd[i] != 1 && pd[i] != cd[i])
      return false;
    bias_shape &= i == rc - 1 ? pd[i] == cd[i] : pd[i] == 1;
  }
  if (head == DN_HEAD_MM && !has_bias && kc && bias_shape &&
      row->alg == dnnl_binary_add) {
    post->kind = DN_POST_BIAS;
    return true;
  }
  if (!row->commutative && n->inputs[0] != cur)
    return false;
  post->kind = DN_POST_BINARY;
  post->alg = row->alg;
  return true;
}

static void group_claim(lctx *l, int gi) {
  dn_group *g = &l->groups[gi];
  g->last = g->head;
  if (g->head >= 0)
    l->group_of[g->head] = gi;
  for (int i = 0; i < g->n_post; i++)
    for (int j = 0; j < g->post[i].n_nodes; j++) {
      l->group_of[g->post[i].nodes[j]] = gi;
      g->last = MB_MAX(g->last, g->post[i].nodes[j]);
    }
}

/* ReduceMean of value x over its last axis only, keeping dims. */
static bool mean_of_last_axis(lctx *l, const mb_node *n, int x) {
  char reason[8];
  mb_engine_check c = mb__dn_lower_check_ctx(l, n, reason, sizeof reason);
  reduce_params rp;
  int rank;
  int64_t dims[MB_MAX_RANK];
  if (!op_is(n, "ReduceMean") || n->inputs[0] != x ||
      mb__engine_node_folded(l->eg, n) || !mb__dn_reduce_get(&c, &rp))
    return false;
  mb__dn_value_dims(l, x, &rank, dims);
  const mb_shape_info *y = &l->eg->shapes[n->outputs[0]];
  if (rank != rp.rank || y->rank != rank || dims[rank - 1] < 2)
    return false;
  for (int d = 0; d < rank; d++)
    if (rp.kept_dims[d] != (d == rank - 1 ? 1 : dims[d]))
      return false;
  return true;
}

/* The sole reader of value v: an ungrouped op_type node reading v as one
 * of its inputs; its position, or -1. */
static int sole_node(lctx *l, int v, const char *op) {
  int pos;
  if (!sole_reader(l, v, &pos) || !op_is(node_at(l, pos), op) ||
      mb__engine_node_folded(l->eg, node_at(l, pos)))
    return -1;
  return pos;
}

/* PyTorch's LayerNorm below opset 17, from the ReduceMean at position p
 * (see dn_group). Claims the nodes into a new group. */
static bool match_layernorm(lctx *l, int p) {
  const mb_node *rm = node_at(l, p);
  dn_group *g = &l->groups[l->n_groups];
  int at[9], n_at = 0, x = rm->inputs[0], cons[3];
  float c;
  if (rm->n_inputs < 1 || l->group_of[p] >= 0 || !mean_of_last_axis(l, rm, x))
    return false;
  at[n_at++] = p;
  int ps = sole_node(l, rm->outputs[0], "Sub");
  const mb_node *sub = ps >= 0 ? node_at(l, ps) : NULL;
  if (!sub || sub->inputs[0] != x || sub->inputs[1] != rm->outputs[0])
    return false;
  at[n_at++] = ps;
  int d = sub->outputs[0], pp = -1, pdiv = -1;
  if (l->vals[d].out_slot >= 0 || consumers(l, d, cons, 3) != 2)
    return false;
  for (int i = 0; i < 2; i++) {
    const mb_node *r = node_at(l, cons[i]);
    if (l->group_of[cons[i]] >= 0)
      return false;
    if (op_is(r, "Pow") && r->inputs[0] == d)
      pp = cons[i];
    else if (op_is(r, "Div") && r->inputs[0] == d)
      pdiv = cons[i];
  }
  if (pp < 0 || pdiv < 0 || !scalar_const(l, node_at(l, pp)->inputs[1], &c) ||
      c != 2.0f)
    return false;
  at[n_at++] = pp;
  int pv = -1, pe, pq;
  int sq = node_at(l, pp)->outputs[0];
  if (!sole_reader(l, sq, &pv) || !mean_of_last_axis(l, node_at(l, pv), sq))
    return false;
  at[n_at++] = pv;
  if ((pe = sole_node(l, node_at(l, pv)->outputs[0], "Add")) < 0 ||
      !scalar_const(l, other_input(node_at(l, pe), node_at(l, pv)->outputs[0]),
                    &c) ||
      !(c > 0.0f))
    return false;
  g = &l->groups[l->n_groups];
  group_init(g, -1);
  g->ln_eps = c;
  at[n_at++] = pe;
  if ((pq = sole_node(l, node_at(l, pe)->outputs[0], "Sqrt")) < 0)
    return false;
  at[n_at++] = pq;
  int pdiv2 = sole_node(l, node_at(l, pq)->outputs[0], "Div");
  if (pdiv2 != pdiv ||
      node_at(l, pdiv)->inputs[1] != node_at(l, pq)->outputs[0])
    return false;
  at[n_at++] = pdiv;
  int rank;
  int64_t dims[MB_MAX_RANK];
  mb__dn_value_dims(l, x, &rank, dims);
  g->ln_inner = dims[rank - 1];
  int cur = node_at(l, pdiv)->outputs[0];
  /* An affine constant [.., inner] (ones before it) of the op after cur. */
  for (int k = 0; k < 2; k++) {
    const char *op = k == 0 ? "Mul" : "Add";
    int pos = sole_node(l, cur, op);
    const mb_node *m = pos >= 0 ? node_at(l, pos) : NULL;
    int other = m ? other_input(m, cur) : -1;
    const mb_tensor *t = other >= 0 ? mb__engine_constant(l->eg, other) : NULL;
    if (!t || t->dtype != MB_DTYPE_FLOAT || t->numel != g->ln_inner ||
        t->dims[t->rank - 1] != g->ln_inner ||
        !same_shape(l, m->outputs[0], cur))
      continue;
    if (k == 0)
      g->ln_gamma = other;
    else
      g->ln_beta = other;
    at[n_at++] = pos;
    cur = m->outputs[0];
  }
  g->ln_x = x;
  g->ln_out = cur;
  g->last = -1;
  for (int i = 0; i < n_at; i++) {
    l->group_of[at[i]] = l->n_groups;
    g->last = MB_MAX(g->last, at[i]);
  }
  l->n_groups++;
  return true;
}

/* MatMul at position p as a sibling product: an activation times a
 * float constant [K, N]; its result, or the sole Add of a bias [N] after
 * it, goes into *sib. */
static bool sibling_get(lctx *l, int p, int a, int64_t k,
                        struct dn_sibling *sib) {
  const mb_node *m = node_at(l, p);
  const mb_tensor *w =
      m->n_inputs == 2 ? mb__engine_constant(l->eg, m->inputs[1]) : NULL;
  int cons[2];
  if (!op_is(m, "MatMul") || l->group_of[p] >= 0 || m->inputs[0] != a ||
      mb__engine_node_folded(l->eg, m) || !w || w->rank != 2 ||
      w->dtype != MB_DTYPE_FLOAT || w->dims[0] != k ||
      mb__engine_constant(l->eg, a))
    return false;
  char reason[8];
  mb_engine_check c = mb__dn_lower_check_ctx(l, m, reason, sizeof reason);
  mm_params mp;
  if (!mb__dn_mm_get(&c, &mp) || mp.rank < 2)
    return false;
  sib->head = p;
  sib->final = m->outputs[0];
  sib->bias_value = -1;
  int out = m->outputs[0];
  if (l->vals[out].out_slot >= 0 || consumers(l, out, cons, 2) != 1 ||
      l->group_of[cons[0]] >= 0)
    return true;
  const mb_node *add = node_at(l, cons[0]);
  int other = op_is(add, "Add") ? other_input(add, out) : -1;
  const mb_tensor *bias = other >= 0 ? mb__engine_constant(l->eg, other) : NULL;
  if (!bias || bias->dtype != MB_DTYPE_FLOAT || bias->numel != w->dims[1] ||
      bias->dims[bias->rank - 1] != w->dims[1] || add->n_outputs != 1 ||
      !same_shape(l, add->outputs[0], out) ||
      mb__engine_node_folded(l->eg, add))
    return true;
  sib->final = add->outputs[0];
  sib->bias_value = other;
  return true;
}

/* Products of one input by constant weights (Q, K and V): one group each
 * set, emitted at the first of them (where the input is ready and before
 * any reader of their results). */
static void plan_siblings(lctx *l) {
  int n = l->d->n_nodes;
  for (int p = 0; p < n; p++) {
    const mb_node *m = node_at(l, p);
    dn_group *g = &l->groups[l->n_groups];
    const mb_tensor *w =
        m->n_inputs == 2 ? mb__engine_constant(l->eg, m->inputs[1]) : NULL;
    if (!w || w->rank != 2)
      continue;
    group_init(g, p);
    if (!sibling_get(l, p, m->inputs[0], w->dims[0], &g->sib[0]))
      continue;
    g->n_sib = 1;
    for (int q = p + 1; q < n && g->n_sib < DN_MAX_SIB; q++) {
      if (sibling_get(l, q, m->inputs[0], w->dims[0], &g->sib[g->n_sib]))
        g->n_sib++;
    }
    if (g->n_sib < 2) {
      g->n_sib = 0;
      continue;
    }
    for (int i = 0; i < g->n_sib; i++) {
      l->group_of[g->sib[i].head] = l->n_groups;
      if (g->sib[i].bias_value >= 0)
        l->group_of[l->node_pos[l->g->values[g->sib[i].final].producer]] =
            l->n_groups;
    }
    l->n_groups++;
  }
}

void mb__dn_plan_groups(lctx *l) {
  int n = l->d->n_nodes;
  plan_siblings(l);
  for (int p = 0; p < n; p++)
    match_layernorm(l, p);
  for (int p = 0; p < n; p++) {
    const mb_node *node = node_at(l, p);
    const dn_op_row *row = mb__dn_op_find(node);
    if (l->group_of[p] >= 0 || !row || row->head == DN_NOT_HEAD ||
        mb__engine_node_folded(l->eg, node))
      continue;
    dn_group *g = &l->groups[l->n_groups];
    group_init(g, p);
    int cur = node->outputs[0];
    bool has_bias = op_is(node, "Gemm") && mb__engine_input(node, 2) >= 0;
    bool has_sum = false, has_view = false;
    l->group_of[p] = l->n_groups;
    if (row->head == DN_HEAD_MM)
      match_pre_scale(l, p, g);
    while (g->n_post < DN_MAX_POST &&
           match_link(l, cur, row->head, has_bias, has_sum, has_view,
                      &g->post[g->n_post])) {
      dn_post *post = &g->post[g->n_post++];
      has_bias |= post->kind == DN_POST_BIAS;
      has_sum |= post->kind == DN_POST_SUM;
      has_view |= post->kind == DN_POST_VIEW;
      if (post->kind == DN_POST_BIAS && g->n_post != 1) {
        g->n_post--; /* a bias only right after the head */
        break;
      }
      for (int j = 0; j < post->n_nodes; j++)
        l->group_of[post->nodes[j]] = l->n_groups;
      cur = post->out_value;
    }
    group_claim(l, l->n_groups++);
  }
  /* SiLU and GELU elsewhere: one eltwise each. */
  for (int p = 0; p < n; p++) {
    const mb_node *node = node_at(l, p);
    int cons[16], x = node->n_inputs ? node->inputs[0] : -1;
    dn_group *g = &l->groups[l->n_groups];
    if (l->group_of[p] >= 0 || x < 0 ||
        !(op_is(node, "Sigmoid") || op_is(node, "Div") || op_is(node, "Mul") ||
          op_is(node, "Pow")))
      continue;
    int nc = MB_MIN(consumers(l, x, cons, 16), 16);
    group_init(g, -1);
    g->src = x;
    if (!match_swish(l, x, cons, nc, &g->post[0]) &&
        !match_gelu(l, x, cons, nc, &g->post[0]) &&
        !match_gelu_tanh(l, x, cons, nc, false, &g->post[0]))
      continue;
    g->n_post = 1;
    g->last = -1;
    for (int j = 0; j < g->post[0].n_nodes; j++) {
      l->group_of[g->post[0].nodes[j]] = l->n_groups;
      g->last = MB_MAX(g->last, g->post[0].nodes[j]);
    }
    l->n_groups++;
  }
}

mb_status mb__dn_lower_group(lctx *l, const dn_group *g) {
  mb_status status;
  const mb_node *first = node_at(l, g->head >= 0   ? g->head
                                    : g->ln_x >= 0 ? g->last
                                                   : g->post[0].nodes[0]);
  l->node = first;
  if (g->head >= 0) {
    const dn_op_row *row = mb__dn_op_find(first);
    if ((l->prof = mb__dn_prof_new(l, first->op_type, first->name)) < 0)
      return mb__dn_oom(l);
    status = row->head == DN_HEAD_CONV ? mb__dn_lower_conv(l, g)
                                       : mb__dn_lower_mm(l, g);
    if (status)
      return status;
    if ((status = mb__dn_finish_output(l, first->outputs[0])))
      return status;
  } else if (g->ln_x >= 0) {
    const mb_tensor *gm =
        g->ln_gamma >= 0 ? mb__engine_constant(l->eg, g->ln_gamma) : NULL;
    const mb_tensor *bt =
        g->ln_beta >= 0 ? mb__engine_constant(l->eg, g->ln_beta) : NULL;
    int rank;
    int64_t dims[MB_MAX_RANK];
    mb__dn_value_dims(l, g->ln_x, &rank, dims);
    if ((l->prof = mb__dn_prof_new(l, "LayerNormalization", first->name)) < 0)
      return mb__dn_oom(l);
    status = mb__dn_emit_lnorm(
        l, g->ln_x, g->ln_out, mb__engine_numel(rank, dims) / g->ln_inner,
        g->ln_inner, g->ln_eps, gm ? gm->data : NULL, bt ? bt->data : NULL);
    if (status || (status = mb__dn_finish_output(l, g->ln_out)))
      return status;
  } else {
    const dn_post *p = &g->post[0];
    mb_error save = *l->err;
    bool gelu = p->ops[0].alg == dnnl_eltwise_gelu_erf ||
                p->ops[0].alg == dnnl_eltwise_gelu_tanh;
    if ((l->prof = mb__dn_prof_new(l, gelu ? "Gelu" : "Swish", first->name)) <
        0)
      return mb__dn_oom(l);
    status = mb__dn_emit_eltwise(l, g->src, p->out_value, p->ops, p->n_ops);
    if (status) {
      *l->err = save;
      if ((status = mb__dn_lower_rest(l, g->post, 0, 1)))
        return status;
    }
  }
  for (int i = 0; i < g->n_post; i++)
    if ((status = mb__dn_finish_output(l, g->post[i].out_value)))
      return status;
  for (int i = 0; i < g->n_sib; i++)
    if ((status = mb__dn_finish_output(l, g->sib[i].final)))
      return status;
  return MB_STATUS_OK;
}

#endif /* MB_HAVE_DNNL */
