/* Tiled execution of one layer: see inc/deeploy_tiling.h. */
#include <stdint.h>

#include "deeploy_tiling.h"

typedef struct {
  int32_t lo[DEEPLOY_TILE_MAX_RANK], ext[DEEPLOY_TILE_MAX_RANK];
} box_t;

/* How a box of given extents moves between a C-contiguous view and a dense buffer: contiguous
 * axes merge; the innermost run and two strided levels make one 3-D copy, further levels loop. */
typedef struct {
  int32_t ext[DEEPLOY_TILE_MAX_RANK];   /* the extents (and view shape) it was planned for */
  int32_t shape[DEEPLOY_TILE_MAX_RANK];
  uint32_t vstride[DEEPLOY_TILE_MAX_RANK]; /* bytes between neighbours along each view axis */
  uint32_t row, rows, rvs, rds, planes, pvs, pds;
  uint32_t outer, count[DEEPLOY_TILE_MAX_RANK], vs[DEEPLOY_TILE_MAX_RANK], ds[DEEPLOY_TILE_MAX_RANK];
  uint8_t empty, valid;
} geom_t;

typedef struct {
  box_t l2box;              /* the operand's L2 tile (staged operands) */
  box_t slot[2];            /* the box each L1 slot holds */
  uint8_t l2valid, valid[2], cur;
  uint32_t dims;            /* mask of the dims the operand's box depends on */
  geom_t l1geom, l3geom;    /* last copy plans: L1 tiles, L2 tiles */
  deeploy_dma_t pending[2]; /* last write-back from each slot (outputs) */
} op_state_t;

/* Core 0's bookkeeping, in L1 next to the tiles it describes, and an L1 copy of the layer's
 * description (generated tables are constants in L2, where every core access is slow). */
static op_state_t state[DEEPLOY_TILE_MAX_OPERANDS] DEEPLOY_L1;
static deeploy_tiled_layer_t layer_l1 DEEPLOY_L1;
static deeploy_tile_operand_t operands_l1[DEEPLOY_TILE_MAX_OPERANDS] DEEPLOY_L1;
static deeploy_tile_axis_t axes_l1[DEEPLOY_TILE_MAX_OPERANDS][DEEPLOY_TILE_MAX_RANK] DEEPLOY_L1;
static uint8_t order_l1[DEEPLOY_TILE_MAX_DIMS] DEEPLOY_L1;
static int32_t size_l1[DEEPLOY_TILE_MAX_DIMS] DEEPLOY_L1;
static int32_t l2_tile_l1[DEEPLOY_TILE_MAX_DIMS] DEEPLOY_L1;
static int32_t l1_tile_l1[DEEPLOY_TILE_MAX_DIMS] DEEPLOY_L1;
static uint32_t radix_l1[DEEPLOY_TILE_MAX_DIMS] DEEPLOY_L1;
static const uint16_t *dim_class_l1[DEEPLOY_TILE_MAX_DIMS] DEEPLOY_L1;

static deeploy_dma_t fetch(void *dst, const void *src, uint32_t bytes) {
  return deeploy_dma_copy(DEEPLOY_DMA_CLUSTER, dst, src, bytes);
}

/* The L1 copy, moved by the cluster DMA in three rounds (the layer; its arrays; the operands'
 * axes), each waiting for the pointers the next one follows: a few transfers instead of a core
 * load from L2 per word (Deeploy/analysis/traffic.py counts their bytes). */
static const deeploy_tiled_layer_t *to_l1(const deeploy_tiled_layer_t *src) {
  deeploy_tiled_layer_t *L = &layer_l1;
  deeploy_dma_wait(DEEPLOY_DMA_CLUSTER, fetch(L, src, sizeof *L));
  const uint32_t n = L->ndims, m = L->noperands;
  fetch(order_l1, L->order, n);
  fetch(size_l1, L->size, n * sizeof(int32_t));
  fetch(l2_tile_l1, L->l2_tile, n * sizeof(int32_t));
  fetch(l1_tile_l1, L->l1_tile, n * sizeof(int32_t));
  fetch(radix_l1, L->class_radix, n * sizeof(uint32_t));
  fetch(dim_class_l1, L->dim_class, n * sizeof(uint16_t *));
  fetch(operands_l1, L->operands, m * sizeof(deeploy_tile_operand_t));
  deeploy_dma_wait_all(DEEPLOY_DMA_CLUSTER);
  for (uint32_t o = 0; o < m; o++) {
    fetch(axes_l1[o], operands_l1[o].axes, operands_l1[o].rank * sizeof(deeploy_tile_axis_t));
    operands_l1[o].axes = axes_l1[o];
  }
  L->order = order_l1;
  L->size = size_l1;
  L->l2_tile = l2_tile_l1;
  L->l1_tile = l1_tile_l1;
  L->class_radix = radix_l1;
  L->dim_class = dim_class_l1;
  L->operands = operands_l1;
  deeploy_dma_wait_all(DEEPLOY_DMA_CLUSTER);
  return L;
}

static void axis_range(const deeploy_tile_axis_t *a, const int32_t *lo, const int32_t *hi, int32_t *ra,
                       int32_t *rb) {
  int32_t x, y;
  if (a->dim < 0) {
    *ra = 0;
    *rb = a->size;
    return;
  }
  int32_t l = lo[a->dim], h = hi[a->dim];
  if (a->group_q) {
    x = (l / a->group_q) * a->group_r;
    y = ((h - 1) / a->group_q + 1) * a->group_r;
  } else if (a->reverse) {
    x = a->offset - a->stride * (h - 1);
    y = a->offset - a->stride * l + a->span;
  } else {
    x = l * a->stride + a->offset;
    y = (h - 1) * a->stride + a->offset + a->span;
  }
  if (x < 0) x = 0;
  if (y > a->size) y = a->size;
  if (x >= y) {
    x = x < a->size ? x : a->size;
    y = x;
  }
  *ra = x;
  *rb = y;
}

static void operand_box(const deeploy_tile_operand_t *op, const int32_t *lo, const int32_t *hi, box_t *box) {
  for (int k = 0; k < op->rank; k++) {
    int32_t a, b;
    axis_range(&op->axes[k], lo, hi, &a, &b);
    box->lo[k] = a;
    box->ext[k] = b - a;
  }
}

static int same_box(const box_t *a, const box_t *b, int rank) {
  for (int k = 0; k < rank; k++)
    if (a->lo[k] != b->lo[k] || a->ext[k] != b->ext[k]) return 0;
  return 1;
}

static void set_box(box_t *dst, const box_t *src, int rank) {
  for (int k = 0; k < rank; k++) {
    dst->lo[k] = src->lo[k];
    dst->ext[k] = src->ext[k];
  }
}

static void plan_copy(geom_t *g, const int32_t *shape, const box_t *box, int rank, uint32_t elem) {
  uint32_t count[DEEPLOY_TILE_MAX_RANK], vs[DEEPLOY_TILE_MAX_RANK], ds[DEEPLOY_TILE_MAX_RANK];
  int levels = 0;
  uint32_t vstride = elem, dstride = elem;
  g->empty = 0;
  g->valid = 1;
  for (int k = rank - 1; k >= 0; k--) {
    uint32_t ext = (uint32_t)box->ext[k];
    g->ext[k] = box->ext[k];
    g->shape[k] = shape[k];
    g->vstride[k] = vstride;
    if (ext == 0) g->empty = 1;
    if (ext > 1) {
      if (levels && count[levels - 1] * vs[levels - 1] == vstride) {
        count[levels - 1] *= ext;
      } else {
        count[levels] = ext;
        vs[levels] = vstride;
        ds[levels] = dstride;
        levels++;
      }
      dstride *= ext;
    }
    vstride *= (uint32_t)shape[k];
  }
  int first = 0;
  g->row = elem;
  if (levels && vs[0] == elem) {
    g->row = count[0] * elem;
    first = 1;
  }
  g->rows = 1, g->rvs = g->rds = g->row, g->planes = 1, g->pvs = g->pds = 0;
  if (first < levels) g->rows = count[first], g->rvs = vs[first], g->rds = ds[first];
  if (first + 1 < levels) g->planes = count[first + 1], g->pvs = vs[first + 1], g->pds = ds[first + 1];
  g->outer = 0;
  for (int l = first + 2; l < levels; l++, g->outer++) {
    g->count[g->outer] = count[l];
    g->vs[g->outer] = vs[l];
    g->ds[g->outer] = ds[l];
  }
}

static int same_plan(const geom_t *g, const int32_t *shape, const box_t *box, int rank) {
  if (!g->valid) return 0;
  for (int k = 0; k < rank; k++)
    if (g->ext[k] != box->ext[k] || g->shape[k] != shape[k]) return 0;
  return 1;
}

/* Copies `box` of the view (`shape`, at `view`) to or from the dense buffer, planned by (and
 * re-planning) `g`. Returns the handle of the last copy (waiting for it waits for all). */
static deeploy_dma_t copy_box(deeploy_dma_engine_t engine, uint8_t *view, const int32_t *shape, const box_t *box,
                              int rank, uint32_t elem, uint8_t *dense, int load, geom_t *g) {
  if (!same_plan(g, shape, box, rank)) plan_copy(g, shape, box, rank, elem);
  if (g->empty) return DEEPLOY_DMA_NONE;
  uint32_t offset = 0;
  for (int k = 0; k < rank; k++) offset += (uint32_t)box->lo[k] * g->vstride[k];
  uint32_t idx[DEEPLOY_TILE_MAX_RANK] = {0};
  deeploy_dma_t h = DEEPLOY_DMA_NONE;
  for (;;) {
    uint32_t vo = offset, dof = 0;
    for (uint32_t l = 0; l < g->outer; l++) {
      vo += idx[l] * g->vs[l];
      dof += idx[l] * g->ds[l];
    }
    if (load)
      h = deeploy_dma_copy_3d(engine, dense + dof, view + vo, g->row, g->rows, g->rds, g->rvs, g->planes, g->pds,
                              g->pvs);
    else
      h = deeploy_dma_copy_3d(engine, view + vo, dense + dof, g->row, g->rows, g->rvs, g->rds, g->planes, g->pvs,
                              g->pds);
    uint32_t l = 0;
    while (l < g->outer && ++idx[l] == g->count[l]) idx[l++] = 0;
    if (l >= g->outer) break;
  }
  return h;
}

/* The shape of an operand's home view. */
static void home_shape(const deeploy_tile_operand_t *op, int32_t *shape) {
  for (int k = 0; k < op->rank; k++) shape[k] = op->axes[k].size;
}

/* The view an operand's L1 tiles are copied from or to: its home, or its staged L2 tile. */
static uint8_t *tile_source(const deeploy_tile_operand_t *op, const op_state_t *s, const box_t *box, int32_t *shape,
                            box_t *local) {
  if (!op->in_l3) home_shape(op, shape);
  for (int k = 0; k < op->rank; k++) {
    if (op->in_l3) shape[k] = s->l2box.ext[k];
    local->lo[k] = box->lo[k] - (op->in_l3 ? s->l2box.lo[k] : 0);
    local->ext[k] = box->ext[k];
  }
  return op->in_l3 ? op->staging : op->home;
}

/* Loads input `i`'s tile `box` unless a slot holds it already: into the next slot when `next`
 * (prefetch while the current one is in use), else into the current one. */
static deeploy_dma_t load_input(const deeploy_tile_operand_t *op, op_state_t *s, const box_t *box, int next) {
  if (s->valid[s->cur] && same_box(&s->slot[s->cur], box, op->rank)) return DEEPLOY_DMA_NONE;
  int slot = next && op->copies > 1 ? 1 - s->cur : s->cur;
  s->cur = (uint8_t)slot;
  set_box(&s->slot[slot], box, op->rank);
  s->valid[slot] = 1;
  s->valid[1 - slot] = s->valid[1 - slot] && op->copies > 1;
  int32_t shape[DEEPLOY_TILE_MAX_RANK];
  box_t local;
  uint8_t *src = tile_source(op, s, box, shape, &local);
  return copy_box(DEEPLOY_DMA_CLUSTER, src, shape, &local, op->rank, op->elem, op->l1[slot], 1, &s->l1geom);
}

static deeploy_dma_t later(deeploy_dma_t a, deeploy_dma_t b) { return a > b ? a : b; }

/* The L1 tiles of one L2 tile [lo2, hi2), walked in loop order like an odometer (no divisions
 * per tile): per dim the number of tiles, the current tile's index and the classes along it. */
typedef struct {
  uint32_t count[DEEPLOY_TILE_MAX_DIMS], at[DEEPLOY_TILE_MAX_DIMS];
  const uint16_t *cls[DEEPLOY_TILE_MAX_DIMS];
} walk_t;

/* L1 tiles per L2 tile along each dim (the class arrays' stride), set once per layer. */
static uint32_t per_l2_l1[DEEPLOY_TILE_MAX_DIMS] DEEPLOY_L1;

/* Starts the walk at the first L1 tile (lo, hi) of L2 tile j = [lo2, hi2); returns the tile count. */
static uint32_t walk_start(const deeploy_tiled_layer_t *L, walk_t *w, const int32_t *lo2, const int32_t *hi2,
                           const int32_t *j, int32_t *lo, int32_t *hi) {
  uint32_t tiles = 1;
  for (int d = 0; d < L->ndims; d++) {
    const int32_t t = L->l1_tile[d];
    w->count[d] = (uint32_t)((hi2[d] - lo2[d] + t - 1) / t);
    w->at[d] = 0;
    w->cls[d] = L->dim_class[d] + (uint32_t)j[d] * per_l2_l1[d];
    lo[d] = lo2[d];
    hi[d] = lo2[d] + t < hi2[d] ? lo2[d] + t : hi2[d];
    tiles *= w->count[d];
  }
  return tiles;
}

/* The class of the walk's current tile (the classes are L2 constants: one load per dim). */
static uint32_t walk_class(const deeploy_tiled_layer_t *L, const walk_t *w) {
  uint32_t cls = 0;
  for (int d = 0; d < L->ndims; d++) cls += w->cls[d][w->at[d]] * L->class_radix[d];
  return cls;
}

/* Steps the walk to the next tile, updating (lo, hi) of the dims that move; returns their mask. */
static uint32_t walk_next(const deeploy_tiled_layer_t *L, walk_t *w, const int32_t *lo2, const int32_t *hi2,
                          int32_t *lo, int32_t *hi) {
  uint32_t changed = 0;
  for (int k = L->ndims - 1; k >= 0; k--) {
    const int d = L->order[k];
    const int32_t t = L->l1_tile[d];
    if (++w->at[d] < w->count[d]) {
      lo[d] += t;
      hi[d] = lo[d] + t < hi2[d] ? lo[d] + t : hi2[d];
      return changed | 1u << d;
    }
    if (w->count[d] > 1) changed |= 1u << d;
    w->at[d] = 0;
    lo[d] = lo2[d];
    hi[d] = lo2[d] + t < hi2[d] ? lo2[d] + t : hi2[d];
  }
  return changed;
}

/* A resident input (copies 0: it lives where the engine reads it, e.g. a weight memory) is never
 * copied: its tile's box is contiguous at home, and its slot pointer (in the L1 copy of the table)
 * becomes the box's address there. */
static void point_in_place(deeploy_tile_operand_t *op, op_state_t *s, const box_t *box) {
  uint32_t offset = 0, stride = op->elem;
  for (int k = op->rank - 1; k >= 0; k--) {
    offset += (uint32_t)box->lo[k] * stride;
    stride *= (uint32_t)op->axes[k].size;
  }
  op->l1[0] = op->home + offset;
  s->cur = 0;
  set_box(&s->slot[0], box, op->rank);
  s->valid[0] = 1;
}

/* Loads the inputs of tile (lo, hi) that are not in L1 yet (only operands depending on a dim in
 * `changed` since the tile whose inputs are in L1 can differ). LOAD_ALL: every input into its
 * current slot; LOAD_SINGLE: only those without a second slot (the others were prefetched);
 * PREFETCH: only those with a second slot, into it. Returns the handle to wait for. */
enum { LOAD_ALL, LOAD_SINGLE, PREFETCH };

static deeploy_dma_t load_inputs(const deeploy_tiled_layer_t *L, const int32_t *lo, const int32_t *hi, int which,
                                 uint32_t changed) {
  deeploy_dma_t h = DEEPLOY_DMA_NONE;
  for (int o = 0; o < L->noperands; o++) {
    const deeploy_tile_operand_t *op = &L->operands[o];
    if (op->output || (!(state[o].dims & changed) && state[o].valid[state[o].cur])) continue;
    if ((which == PREFETCH && op->copies < 2) || (which == LOAD_SINGLE && op->copies > 1)) continue;
    int prefetch = which == PREFETCH;
    box_t box;
    operand_box(op, lo, hi, &box);
    if (op->copies == 0)
      point_in_place(&operands_l1[o], &state[o], &box);   /* resident: with the tile's own inputs */
    else
      h = later(h, load_input(op, &state[o], &box, prefetch));
  }
  return h;
}

/* The tile kernel: forked on every core, or called on core 0 for an engine core 0 programs. */
static inline void run_kernel(const deeploy_tiled_layer_t *L, deeploy_tile_t *tile) {
  if (L->engine_sync)
    L->kernel(tile);
  else
    deeploy_cluster_fork(L->kernel, tile);
}

/* With a data-mover core (DEEPLOY_DM_CORE) the loop runs there and the tile kernel runs while it
 * prepares the next tile: the kernel starts at kernel_start and ends at kernel_end. Without one,
 * core 0 runs the loop and the kernel runs at kernel_end. */
static inline void kernel_start(const deeploy_tiled_layer_t *L, deeploy_tile_t *tile) {
#ifdef DEEPLOY_DM_CORE
  DEEPLOY_MARKER(DEEPLOY_MARK_TILE_KERNEL);
  if (L->engine_sync)
    L->kernel(tile);
  else
    deeploy_cluster_fork_begin(L->kernel, tile);
#else
  (void)L;
  (void)tile;
#endif
}

static inline void kernel_end(const deeploy_tiled_layer_t *L, deeploy_tile_t *tile) {
#ifdef DEEPLOY_DM_CORE
  if (!L->engine_sync) deeploy_cluster_join();
#else
  DEEPLOY_MARKER(DEEPLOY_MARK_TILE_KERNEL);
  run_kernel(L, tile);
#endif
}

/* Issues the write-back of the outputs of tile (lo, hi): from each output's current slot, or
 * (`previous`) from its other slot, which holds the tile before (deferred tiles). */
static inline void store_outputs(const deeploy_tiled_layer_t *L, const int32_t *lo, const int32_t *hi, int previous) {
  for (int o = 0; o < L->noperands; o++) {
    const deeploy_tile_operand_t *op = &L->operands[o];
    if (!op->output) continue;
    op_state_t *s = &state[o];
    int slot = previous ? 1 - s->cur : s->cur;
    box_t box, local;
    int32_t shape[DEEPLOY_TILE_MAX_RANK];
    operand_box(op, lo, hi, &box);
    uint8_t *dst = tile_source(op, s, &box, shape, &local);
    s->pending[slot] = copy_box(DEEPLOY_DMA_CLUSTER, dst, shape, &local, op->rank, op->elem, op->l1[slot], 0,
                                &s->l1geom);
  }
}

/* Takes the next output slot of every output (waiting for the write-back it held) and points
 * the tile at every operand's current slot. */
static inline void bind_slots(const deeploy_tiled_layer_t *L, deeploy_tile_t *tile) {
  for (int o = 0; o < L->noperands; o++) {
    const deeploy_tile_operand_t *op = &L->operands[o];
    op_state_t *s = &state[o];
    if (op->output) {
      s->cur = op->copies > 1 ? 1 - s->cur : 0;
      deeploy_dma_wait(DEEPLOY_DMA_CLUSTER, s->pending[s->cur]);
    }
    tile->buf[o] = op->l1[s->cur];
  }
}

/* Whether the tiles of the L2 tile can be deferred: an engine whose kernels return with work in
 * flight, double-buffered, several tiles, and two slots for every output. */
static int deferrable(const deeploy_tiled_layer_t *L, uint32_t tiles) {
  if (!L->engine_sync || !L->double_buffer || tiles < 2) return 0;
  for (int o = 0; o < L->noperands; o++)
    if (L->operands[o].output && L->operands[o].copies < 2) return 0;
  return 1;
}

/* tile.fill: 1 on the first tile of its class since *seen was cleared (a class beyond 31: every
 * tile), whose call fills the layer's shared tables; the class is marked in *seen. */
static inline uint32_t first_of_class(uint32_t cls, uint32_t *seen) {
  const uint32_t bit = cls < 32 ? 1u << cls : 0;
  const uint32_t fill = !(*seen & bit) || !bit;
  *seen |= bit;
  return fill;
}

/* Deferred tiles (an engine with a job queue, deeploy_tiling.h): tile q's kernel programs its
 * work and returns; the loop then waits only for tile q-1's work, writes tile q-1's outputs back
 * and prefetches tile q+1's inputs into the slots tile q-1 used, while tile q's work runs. The
 * last tile waits for everything and writes both tiles back. The walk w starts at the first tile,
 * (lo, hi). */
static void run_deferred_tiles(const deeploy_tiled_layer_t *L, walk_t *w, uint32_t tiles, const int32_t *lo2,
                               const int32_t *hi2, int32_t *lo, int32_t *hi) {
  int32_t plo[DEEPLOY_TILE_MAX_DIMS], phi[DEEPLOY_TILE_MAX_DIMS];
  int32_t nlo[DEEPLOY_TILE_MAX_DIMS], nhi[DEEPLOY_TILE_MAX_DIMS];
  deeploy_tile_t tile;
  uint32_t cls = walk_class(L, w), changed = ~0u, seen = 0;
  deeploy_dma_t ready = load_inputs(L, lo, hi, LOAD_ALL, changed);
  L->engine_sync(DEEPLOY_TILE_SYNC_DEFER);
  for (uint32_t q = 0; q < tiles; q++) {
    const int last = q + 1 == tiles;
    DEEPLOY_MARKER(DEEPLOY_MARK_TILE_INPUT);
    ready = later(ready, load_inputs(L, lo, hi, LOAD_SINGLE, changed));
    deeploy_dma_wait(DEEPLOY_DMA_CLUSTER, ready);
    bind_slots(L, &tile);
    tile.cls = cls;
    tile.fill = first_of_class(cls, &seen);
    DEEPLOY_MARKER(DEEPLOY_MARK_TILE_KERNEL);
    L->kernel(&tile);
    L->engine_sync(last ? DEEPLOY_TILE_SYNC_ALL : DEEPLOY_TILE_SYNC_PREVIOUS);
    DEEPLOY_MARKER(DEEPLOY_MARK_TILE_OUTPUT);
    if (q > 0) store_outputs(L, plo, phi, 1);
    if (last) store_outputs(L, lo, hi, 0);
    ready = DEEPLOY_DMA_NONE;
    if (!last) {
      for (int d = 0; d < L->ndims; d++) nlo[d] = lo[d], nhi[d] = hi[d];
      changed = walk_next(L, w, lo2, hi2, nlo, nhi);
      cls = walk_class(L, w);
      ready = load_inputs(L, nlo, nhi, PREFETCH, changed);
    }
    DEEPLOY_MARKER(DEEPLOY_MARK_TILE_END);
    for (int d = 0; d < L->ndims; d++) {
      plo[d] = lo[d];
      phi[d] = hi[d];
      lo[d] = nlo[d];
      hi[d] = nhi[d];
    }
  }
  deeploy_dma_wait_all(DEEPLOY_DMA_CLUSTER);
}

static void run_l1_tiles(const deeploy_tiled_layer_t *L, const int32_t *lo2, const int32_t *hi2, const int32_t *j) {
  int32_t lo[DEEPLOY_TILE_MAX_DIMS], hi[DEEPLOY_TILE_MAX_DIMS];
  walk_t w;
  const uint32_t tiles = walk_start(L, &w, lo2, hi2, j, lo, hi);
  if (deferrable(L, tiles)) {
    run_deferred_tiles(L, &w, tiles, lo2, hi2, lo, hi);
    return;
  }
  int32_t nlo[DEEPLOY_TILE_MAX_DIMS], nhi[DEEPLOY_TILE_MAX_DIMS];
  deeploy_tile_t tile;
  uint32_t cls = walk_class(L, &w), seen = 0;
  deeploy_dma_t ready = DEEPLOY_DMA_NONE;
  uint32_t changed = ~0u, next_changed = 0;   /* dims whose range differs from the previous tile */
  if (L->double_buffer) ready = load_inputs(L, lo, hi, LOAD_ALL, changed);
  for (uint32_t q = 0; q < tiles; q++) {
    DEEPLOY_MARKER(DEEPLOY_MARK_TILE_INPUT);
    ready = later(ready, load_inputs(L, lo, hi, L->double_buffer ? LOAD_SINGLE : LOAD_ALL, changed));
    deeploy_dma_wait(DEEPLOY_DMA_CLUSTER, ready);
    ready = DEEPLOY_DMA_NONE;
    bind_slots(L, &tile);
    tile.cls = cls;
    tile.fill = first_of_class(cls, &seen);
    kernel_start(L, &tile);
    uint32_t ncls = 0;
    if (q + 1 < tiles) {
      for (int d = 0; d < L->ndims; d++) nlo[d] = lo[d], nhi[d] = hi[d];
      next_changed = walk_next(L, &w, lo2, hi2, nlo, nhi);
      ncls = walk_class(L, &w);
      if (L->double_buffer) ready = load_inputs(L, nlo, nhi, PREFETCH, next_changed);
    }
    kernel_end(L, &tile);
    DEEPLOY_MARKER(DEEPLOY_MARK_TILE_OUTPUT);
    store_outputs(L, lo, hi, 0);
    if (!L->double_buffer) deeploy_dma_wait_all(DEEPLOY_DMA_CLUSTER);
    DEEPLOY_MARKER(DEEPLOY_MARK_TILE_END);
    for (int d = 0; d < L->ndims; d++) {
      lo[d] = nlo[d];
      hi[d] = nhi[d];
    }
    cls = ncls;
    changed = next_changed;
  }
  deeploy_dma_wait_all(DEEPLOY_DMA_CLUSTER);
}

#ifdef DEEPLOY_DM_CORE
static void run_tiled(const void *layer);

void deeploy_run_tiled(const deeploy_tiled_layer_t *layer) {
  deeploy_dm_call(run_tiled, layer); /* the data mover runs the loop; core 0 computes */
}

static void run_tiled(const void *layer) {
#else
void deeploy_run_tiled(const deeploy_tiled_layer_t *layer) {
#endif
  const deeploy_tiled_layer_t *L = to_l1(layer);
  int staged = 0, staged_out = 0;
  for (int o = 0; o < L->noperands; o++) {
    op_state_t *s = &state[o];
    s->l2valid = s->valid[0] = s->valid[1] = 0;
    s->cur = 0;
    s->pending[0] = s->pending[1] = DEEPLOY_DMA_NONE;
    s->l1geom.valid = s->l3geom.valid = 0;
    s->dims = 0;
    for (int k = 0; k < L->operands[o].rank; k++)
      if (L->operands[o].axes[k].dim >= 0) s->dims |= 1u << L->operands[o].axes[k].dim;
    staged |= L->operands[o].in_l3;
    staged_out |= L->operands[o].in_l3 && L->operands[o].output;
  }
  /* the L2 tiles, walked like the L1 tiles: j is the L2 tile's index along each dim */
  uint32_t outer = 1, n2[DEEPLOY_TILE_MAX_DIMS];
  int32_t lo2[DEEPLOY_TILE_MAX_DIMS], hi2[DEEPLOY_TILE_MAX_DIMS], j[DEEPLOY_TILE_MAX_DIMS];
  for (int d = 0; d < L->ndims; d++) {
    const int32_t t2 = L->l2_tile[d];
    n2[d] = (uint32_t)((L->size[d] + t2 - 1) / t2);
    per_l2_l1[d] = (uint32_t)((t2 + L->l1_tile[d] - 1) / L->l1_tile[d]);
    outer *= n2[d];
    j[d] = lo2[d] = 0;
    hi2[d] = t2 < L->size[d] ? t2 : L->size[d];
  }
  for (uint32_t q2 = 0; q2 < outer; q2++) {
    for (int k = L->ndims - 1; q2 && k >= 0; k--) {
      const int d = L->order[k];
      const int32_t t2 = L->l2_tile[d];
      const int wrap = (uint32_t)++j[d] == n2[d];
      if (wrap) j[d] = 0;
      lo2[d] = j[d] * t2;
      hi2[d] = lo2[d] + t2 < L->size[d] ? lo2[d] + t2 : L->size[d];
      if (!wrap) break;
    }
    if (staged) {
      DEEPLOY_MARKER(DEEPLOY_MARK_STAGE_INPUT);
      for (int o = 0; o < L->noperands; o++) {
        const deeploy_tile_operand_t *op = &L->operands[o];
        op_state_t *s = &state[o];
        if (!op->in_l3) continue;
        box_t box;
        operand_box(op, lo2, hi2, &box);
        if (s->l2valid && same_box(&s->l2box, &box, op->rank)) continue;
        set_box(&s->l2box, &box, op->rank);
        s->l2valid = 1;
        s->valid[0] = s->valid[1] = 0;
        if (!op->output) {  /* an empty box issues nothing */
          int32_t shape[DEEPLOY_TILE_MAX_RANK];
          home_shape(op, shape);
          copy_box(DEEPLOY_DMA_L3, op->home, shape, &box, op->rank, op->elem, op->staging, 1, &s->l3geom);
        }
      }
      deeploy_dma_wait_all(DEEPLOY_DMA_L3);
      DEEPLOY_MARKER(DEEPLOY_MARK_STAGE_INNER);
    }
    run_l1_tiles(L, lo2, hi2, j);
    if (staged) {
      DEEPLOY_MARKER(DEEPLOY_MARK_STAGE_OUTPUT);
      for (int o = 0; staged_out && o < L->noperands; o++) {
        const deeploy_tile_operand_t *op = &L->operands[o];
        if (!op->in_l3 || !op->output) continue;
        int32_t shape[DEEPLOY_TILE_MAX_RANK];
        home_shape(op, shape);
        copy_box(DEEPLOY_DMA_L3, op->home, shape, &state[o].l2box, op->rank, op->elem, op->staging, 0,
                 &state[o].l3geom);
        state[o].l2valid = 0;
      }
      deeploy_dma_wait_all(DEEPLOY_DMA_L3);
      DEEPLOY_MARKER(DEEPLOY_MARK_STAGE_END);
    }
  }
}

/* ---- a planned tile loop: every copy's addresses and shape worked out by the compiler ---- */

static deeploy_tile_geometry_t geometry_l1[DEEPLOY_TILE_MAX_GEOMETRIES] DEEPLOY_L1;
static uint8_t *slots_l1[2 * DEEPLOY_TILE_MAX_OPERANDS] DEEPLOY_L1;

/* Issues `n` copies from `c` on, each handle into its entry of `h`; returns the copy after them.
 * Inlined: most tiles issue none in some phases, which then costs one test. */
static inline __attribute__((always_inline)) const deeploy_tile_copy_t *issue_copies(const deeploy_tile_copy_t *c,
                                                                                      uint32_t n, deeploy_dma_t *h) {
  for (; n; n--, c++) {
    const deeploy_tile_geometry_t *g = &geometry_l1[c->geometry];
    h[c->handle] = deeploy_dma_copy_3d(DEEPLOY_DMA_CLUSTER, c->dst, c->src, g->row, g->rows, g->dst_stride,
                                       g->src_stride, g->planes, g->dst_plane_stride, g->src_plane_stride);
  }
  return c;
}

/* A planned loop's steps and copies when they fit (read per tile: L2 reads cost every tile). */
static uint32_t plan_l1[DEEPLOY_TILE_PLAN_L1_BYTES / sizeof(uint32_t)] DEEPLOY_L1;

void deeploy_run_planned(const deeploy_tile_plan_t *plan) {
  const uint32_t tiles = plan->ntiles, m = plan->noperands, wait_all = plan->wait_all;
  const uint32_t steps = tiles * sizeof(deeploy_tile_step_t), copies = plan->ncopies * sizeof(deeploy_tile_copy_t);
  const deeploy_tile_step_t *step = plan->steps;
  const deeploy_tile_copy_t *c = plan->copies;
  fetch(geometry_l1, plan->geometries, plan->ngeometries * sizeof(deeploy_tile_geometry_t));
  fetch(slots_l1, plan->slots, 2 * m * sizeof(uint8_t *));
  if (steps + copies <= sizeof plan_l1) {
    fetch(plan_l1, step, steps);
    fetch((uint8_t *)plan_l1 + steps, c, copies);
    step = (const deeploy_tile_step_t *)plan_l1;
    c = (const deeploy_tile_copy_t *)((const uint8_t *)plan_l1 + steps);
  }
  deeploy_dma_wait_all(DEEPLOY_DMA_CLUSTER);
  deeploy_dma_t h[1 + 2 * DEEPLOY_TILE_MAX_OPERANDS];
  c = issue_copies(c, plan->before, h);
  void (*const kernel)(void *) = plan->kernel;
  deeploy_tile_t tile;
  uint32_t seen = 0, slots = 0; /* slots: the slot bits tile.buf holds */
  for (uint32_t o = 0; o < m; o++) tile.buf[o] = slots_l1[2 * o];
  for (uint32_t q = 0; q < tiles; q++, step++) {
    const deeploy_tile_step_t s = *step;
    DEEPLOY_MARKER(DEEPLOY_MARK_TILE_INPUT);
    c = issue_copies(c, s.loads, h);
    if (s.wait) deeploy_dma_wait(DEEPLOY_DMA_CLUSTER, h[0]);
    for (uint32_t reuse = s.reuse, k = 1; reuse; reuse >>= 1, k++)
      if (reuse & 1) deeploy_dma_wait(DEEPLOY_DMA_CLUSTER, h[k]);
    tile.cls = s.cls;
    tile.fill = first_of_class(s.cls, &seen);
    for (uint32_t moved = s.slots ^ slots, o = 0; moved; moved >>= 1, o++) /* only the operands that switch slot */
      if (moved & 1) tile.buf[o] = slots_l1[2 * o + ((s.slots >> o) & 1)];
    slots = s.slots;
    c = issue_copies(c, s.prefetch, h);
    DEEPLOY_MARKER(DEEPLOY_MARK_TILE_KERNEL);
    deeploy_cluster_fork(kernel, &tile);
    DEEPLOY_MARKER(DEEPLOY_MARK_TILE_OUTPUT);
    c = issue_copies(c, s.stores, h);
    if (wait_all) deeploy_dma_wait_all(DEEPLOY_DMA_CLUSTER);
    DEEPLOY_MARKER(DEEPLOY_MARK_TILE_END);
  }
  deeploy_dma_wait_all(DEEPLOY_DMA_CLUSTER);
}
