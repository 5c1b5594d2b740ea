/* The wire format between the benchmark's parent and its workers: typed,
 * length-prefixed messages over a pipe carrying results, progress and
 * reference outputs (wire.c). Private to src/bench/. */
#ifndef MB_BENCH_WIRE_H
#define MB_BENCH_WIRE_H

#include "core/internal.h"

/* Every message is a header {u32 type, u32 payload length} followed by the
 * payload; numbers are in host byte order (both ends are the same binary
 * after fork). Strings are u32 length + bytes (0xffffffff for NULL). */
typedef enum mb_msg_type {
  MB_MSG_PROGRESS = 1, /* str phase, i64 iterations, f64 elapsed */
  MB_MSG_RESULT = 2,   /* an mb_bench_result */
  MB_MSG_TENSORS = 3,  /* u32 count, then each tensor */
  MB_MSG_ERROR = 4,    /* u32 status, str message */
} mb_msg_type;

#define MB_MSG_MAX_PAYLOAD ((uint32_t)1 << 31)

typedef struct mb_wire {
  unsigned char *data;
  size_t size, cap;
  int failed; /* allocation failed or a read ran past the end */
  size_t pos; /* read cursor */
} mb_wire;

void mb__wire_free(mb_wire *w);
void mb__wire_put(mb_wire *w, const void *p, size_t n);
void mb__wire_put_u32(mb_wire *w, uint32_t v);
void mb__wire_put_i64(mb_wire *w, int64_t v);
void mb__wire_put_f64(mb_wire *w, double v);
void mb__wire_put_str(mb_wire *w, const char *s);
int mb__wire_get(mb_wire *w, void *p, size_t n);
uint32_t mb__wire_get_u32(mb_wire *w);
int64_t mb__wire_get_i64(mb_wire *w);
double mb__wire_get_f64(mb_wire *w);
/* New malloc'd string (NULL for a NULL string or on failure). */
char *mb__wire_get_str(mb_wire *w);
/* Copies into buf (truncating); returns 0 on failure. */
int mb__wire_get_str_buf(mb_wire *w, char *buf, size_t size);

void mb__wire_put_result(mb_wire *w, const mb_bench_result *r);
/* Fills r (zeroed first) with new owned pointers; conversion stays NULL
 * (the parent sets it from the registry). */
mb_status mb__wire_get_result(mb_wire *w, mb_bench_result *r, mb_error *err);
void mb__wire_put_tensors(mb_wire *w, int n, mb_tensor *const *tensors);
/* tensors_out: n slots. Fails unless exactly n tensors are in the payload. */
mb_status mb__wire_get_tensors(mb_wire *w, int n, mb_tensor **tensors_out,
                               mb_error *err);

/* Writes one framed message, retrying on EINTR and short writes. Returns 0
 * on success. Safe to call with fd < 0 (does nothing, returns -1). */
int mb__msg_send(int fd, mb_msg_type type, const void *payload, uint32_t n);

#endif /* MB_BENCH_WIRE_H */
