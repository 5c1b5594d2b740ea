/* TensorProto <-> mb_tensor, external data files, and the TensorProto files
 * of the ONNX test data (input_0.pb, output_0.pb). */
#include "core/sequence.h"
#include "onnx/onnx_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- storage forms ---- */

/* The typed repeated fields of TensorProto. */
typedef enum pb_field {
  PB_NONE = 0,
  PB_FLOAT,
  PB_INT32,
  PB_INT64,
  PB_DOUBLE,
  PB_UINT64,
  PB_STRING,
  PB_FIELD_COUNT
} pb_field;

static const char *const pb_field_names[] = {
    "no data",     "float_data",  "int32_data", "int64_data",
    "double_data", "uint64_data", "string_data"};
_Static_assert(MB_ARRAY_COUNT(pb_field_names) == PB_FIELD_COUNT,
               "one name per field");

/* Which typed field carries each element type (ONNX IR spec, TensorProto
 * comments), and how many field entries make one element (complex: 2). */
static const struct {
  pb_field field;
  int per_element;
} k_typed_storage[MB_DTYPE_COUNT] = {
    [MB_DTYPE_FLOAT] = {PB_FLOAT, 1},
    [MB_DTYPE_UINT8] = {PB_INT32, 1},
    [MB_DTYPE_INT8] = {PB_INT32, 1},
    [MB_DTYPE_UINT16] = {PB_INT32, 1},
    [MB_DTYPE_INT16] = {PB_INT32, 1},
    [MB_DTYPE_INT32] = {PB_INT32, 1},
    [MB_DTYPE_INT64] = {PB_INT64, 1},
    [MB_DTYPE_STRING] = {PB_STRING, 1},
    [MB_DTYPE_BOOL] = {PB_INT32, 1},
    [MB_DTYPE_FLOAT16] = {PB_INT32, 1},
    [MB_DTYPE_DOUBLE] = {PB_DOUBLE, 1},
    [MB_DTYPE_UINT32] = {PB_UINT64, 1},
    [MB_DTYPE_UINT64] = {PB_UINT64, 1},
    [MB_DTYPE_COMPLEX64] = {PB_FLOAT, 2},
    [MB_DTYPE_COMPLEX128] = {PB_DOUBLE, 2},
    [MB_DTYPE_BFLOAT16] = {PB_INT32, 1},
};

static size_t typed_count(const Onnx__TensorProto *tp, pb_field field) {
  switch (field) {
  case PB_FLOAT:
    return tp->n_float_data;
  case PB_INT32:
    return tp->n_int32_data;
  case PB_INT64:
    return tp->n_int64_data;
  case PB_DOUBLE:
    return tp->n_double_data;
  case PB_UINT64:
    return tp->n_uint64_data;
  case PB_STRING:
    return tp->n_string_data;
  default:
    return 0;
  }
}

/* Copies `count` typed entries into dst, narrowing int32/uint64 fields to
 * the element size as the ONNX spec prescribes. */
static void copy_typed(const Onnx__TensorProto *tp, pb_field field,
                       mb_dtype dtype, size_t count, void *dst) {
  size_t elem = mb_dtype_size(dtype);
  if (count == 0)
    return;
  switch (field) {
  case PB_FLOAT:
    memcpy(dst, tp->float_data, count * sizeof(float));
    break;
  case PB_DOUBLE:
    memcpy(dst, tp->double_data, count * sizeof(double));
    break;
  case PB_INT64:
    memcpy(dst, tp->int64_data, count * sizeof(int64_t));
    break;
  case PB_UINT64:
    if (elem == sizeof(uint64_t)) {
      memcpy(dst, tp->uint64_data, count * sizeof(uint64_t));
      break;
    }
    for (size_t i = 0; i < count; i++)
      ((uint32_t *)dst)[i] = (uint32_t)tp->uint64_data[i];
    break;
  case PB_INT32:
    if (dtype == MB_DTYPE_BOOL) {
      for (size_t i = 0; i < count; i++)
        ((uint8_t *)dst)[i] = tp->int32_data[i] != 0;
    } else if (elem == 1) {
      for (size_t i = 0; i < count; i++)
        ((uint8_t *)dst)[i] = (uint8_t)tp->int32_data[i];
    } else if (elem == 2) {
      /* float16/bfloat16 travel as their bit patterns. */
      for (size_t i = 0; i < count; i++)
        ((uint16_t *)dst)[i] = (uint16_t)tp->int32_data[i];
    } else {
      memcpy(dst, tp->int32_data, count * sizeof(int32_t));
    }
    break;
  default:
    break;
  }
}

/* ---- external data ---- */

bool mb__external_location_ok(const char *location) {
  if (!location || !location[0] || location[0] == '/')
    return false;
  for (const char *p = location; *p;) {
    const char *slash = strchr(p, '/');
    size_t len = slash ? (size_t)(slash - p) : strlen(p);
    if (len == 2 && p[0] == '.' && p[1] == '.')
      return false;
    p += len;
    while (*p == '/')
      p++;
  }
  return true;
}

char *mb__path_dirname(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash)
    return mb__strdup(".");
  if (slash == path)
    return mb__strdup("/");
  size_t len = (size_t)(slash - path);
  char *dir = malloc(len + 1);
  if (dir) {
    memcpy(dir, path, len);
    dir[len] = '\0';
  }
  return dir;
}

void mb__external_data_close(mb_external_data *ext) {
  if (!ext)
    return;
  for (int i = 0; i < ext->n_files; i++) {
    mb_external_file *f = &ext->files[i];
    if (f->map)
      munmap((void *)f->map, f->size);
    free(f->location);
    free(f->path);
  }
  free(ext->files);
  ext->files = NULL;
  ext->n_files = ext->cap_files = 0;
}

static const char *skip_dot_slash(const char *location) {
  while (location[0] == '.' && location[1] == '/') {
    location += 2;
    while (*location == '/')
      location++;
  }
  return location;
}

/* Returns the mapped file for `location`, opening, mapping and hashing it
 * on first reference. */
static mb_status external_open(mb_external_data *ext, const char *location,
                               const char *label, mb_external_file **file_out,
                               mb_error *err) {
  mb_external_file file = {0};
  struct stat st;
  int fd = -1;
  char *real_base = NULL, *real_file = NULL;
  mb_status status;
  location = skip_dot_slash(location);
  for (int i = 0; i < ext->n_files; i++)
    if (strcmp(ext->files[i].location, location) == 0) {
      *file_out = &ext->files[i];
      return MB_STATUS_OK;
    }
  size_t path_len = strlen(ext->base_dir) + 1 + strlen(location) + 1;
  file.location = mb__strdup(location);
  file.path = malloc(path_len);
  if (!file.location || !file.path) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                       "%s: cannot open external data", label);
    goto fail;
  }
  snprintf(file.path, path_len, "%s/%s", ext->base_dir, location);
  /* The location is relative and has no "..", but a symlink on its way
   * (weights.bin -> /etc/hostname, or data/ -> ~/.ssh) would still lead
   * out of the model's folder: the resolved file must lie inside the
   * resolved folder. Symlinks within the folder are fine. */
  real_base = realpath(ext->base_dir, NULL);
  real_file = realpath(file.path, NULL);
  if (!real_base || !real_file) {
    status = mb__error(err, MB_STATUS_IO, "%s: external data file '%s': %s",
                       label, file.path, strerror(errno));
    goto fail;
  }
  size_t base_len = strlen(real_base);
  if (strcmp(real_base, "/") != 0 &&
      (strncmp(real_file, real_base, base_len) != 0 ||
       real_file[base_len] != '/')) {
    status = mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "%s: external data file '%s' resolves to '%s', outside "
                       "the model's folder %s: symbolic links out of the "
                       "folder are not followed (copy the file into it)",
                       label, file.path, real_file, real_base);
    goto fail;
  }
  /* O_NOFOLLOW: the resolved path has no symlink left at its end; one
   * swapped in since is refused. */
  fd = open(real_file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 || fstat(fd, &st) != 0) {
    status = mb__error(err, MB_STATUS_IO, "%s: external data file '%s': %s",
                       label, file.path, strerror(errno));
    goto fail;
  }
  if (!S_ISREG(st.st_mode)) {
    status = mb__error(err, MB_STATUS_IO,
                       "%s: external data file '%s' is not a regular file",
                       label, file.path);
    goto fail;
  }
  if ((uint64_t)st.st_size > SIZE_MAX) {
    status =
        mb__error(err, MB_STATUS_OVERFLOW,
                  "%s: external data file '%s' is too large", label, file.path);
    goto fail;
  }
  file.size = (size_t)st.st_size;
  if (file.size) {
    /* Mapped rather than read: the data is copied into aligned tensors once
     * and large files need no second whole-file buffer. */
    void *map = mmap(NULL, file.size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      status = mb__error(err, MB_STATUS_IO,
                         "%s: cannot map external data file '%s': %s", label,
                         file.path, strerror(errno));
      goto fail;
    }
    file.map = map;
  }
  close(fd);
  fd = -1;
  free(real_base);
  free(real_file);
  real_base = real_file = NULL;
  if (ext->n_files == ext->cap_files) {
    int cap = ext->cap_files ? ext->cap_files * 2 : 4;
    mb_external_file *grown =
        realloc(ext->files, sizeof(mb_external_file) * (size_t)cap);
    if (!grown) {
      status = mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                         "%s: cannot open external data", label);
      goto fail;
    }
    ext->files = grown;
    ext->cap_files = cap;
  }
  if (ext->hash && file.size)
    mb__sha256_update(ext->hash, file.map, file.size);
  ext->files[ext->n_files] = file;
  *file_out = &ext->files[ext->n_files++];
  return MB_STATUS_OK;
fail:
  if (fd >= 0)
    close(fd);
  if (file.map)
    munmap((void *)file.map, file.size);
  free(real_base);
  free(real_file);
  free(file.location);
  free(file.path);
  return status;
}

/* Parses a non-negative decimal integer; false when malformed. */
static bool parse_u64(const char *s, uint64_t *out) {
  char *end = NULL;
  if (!s || !s[0] || s[0] == '-')
    return false;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end)
    return false;
  *out = v;
  return true;
}

/* Allocates a tensor's data once its stored size has been checked against
 * its shape, so a tiny file declaring huge dims cannot make us allocate. */
static mb_status alloc_checked(mb_tensor *t, const char *label, mb_error *err) {
  mb_status status = mb__tensor_reset(t, t->dtype, t->rank, t->dims, err);
  if (status)
    mb__error_prefix(err, status, "%s", label);
  return status;
}

static mb_status read_external(const Onnx__TensorProto *tp, const char *label,
                               mb_external_data *ext, mb_tensor *t,
                               mb_error *err) {
  const char *location = NULL;
  uint64_t offset = 0, length = 0;
  bool has_length = false;
  mb_external_file *file = NULL;
  mb_status status;
  for (size_t i = 0; i < tp->n_external_data; i++) {
    const Onnx__StringStringEntryProto *kv = tp->external_data[i];
    const char *key = kv->key ? kv->key : "";
    bool ok = true;
    if (strcmp(key, "location") == 0)
      location = kv->value;
    else if (strcmp(key, "offset") == 0)
      ok = parse_u64(kv->value, &offset);
    else if (strcmp(key, "length") == 0)
      ok = has_length = parse_u64(kv->value, &length);
    if (!ok)
      return mb__error(err, MB_STATUS_PARSE,
                       "%s: external data %s '%s' is not a byte count", label,
                       key, kv->value ? kv->value : "");
  }
  if (!location || !location[0])
    return mb__error(err, MB_STATUS_PARSE, "%s: external data has no location",
                     label);
  if (!mb__external_location_ok(location))
    return mb__error(err, MB_STATUS_PARSE,
                     "%s: external data location '%s' must be a relative "
                     "path inside the model's folder (no '/' prefix, no '..')",
                     label, location);
  if (!ext || !ext->base_dir)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "%s: stored in external file '%s', but the model was "
                     "loaded from memory without a base directory",
                     label, location);
  status = external_open(ext, location, label, &file, err);
  if (status)
    return status;
  if (offset > file->size)
    return mb__error(err, MB_STATUS_PARSE,
                     "%s: external data offset %llu is past the end of '%s' "
                     "(%zu bytes)",
                     label, (unsigned long long)offset, file->path, file->size);
  if (!has_length)
    length = file->size - offset;
  if (length > file->size - offset)
    return mb__error(err, MB_STATUS_PARSE,
                     "%s: external data [%llu, +%llu) extends past the end "
                     "of '%s' (%zu bytes)",
                     label, (unsigned long long)offset,
                     (unsigned long long)length, file->path, file->size);
  if (length != t->nbytes)
    return mb__error(err, MB_STATUS_PARSE,
                     "%s: external data in '%s' has %llu bytes, but the "
                     "shape needs %zu",
                     label, file->path, (unsigned long long)length, t->nbytes);
  if ((status = alloc_checked(t, label, err)))
    return status;
  if (t->nbytes)
    memcpy(t->data, file->map + offset, t->nbytes);
  return MB_STATUS_OK;
}

/* ---- TensorProto -> mb_tensor ---- */

/* Finds the single typed field in use; *n_used counts the fields in use. */
static pb_field typed_field_in_use(const Onnx__TensorProto *tp, int *n_used) {
  pb_field found = PB_NONE;
  *n_used = 0;
  for (int f = PB_FLOAT; f < PB_FIELD_COUNT; f++)
    if (typed_count(tp, (pb_field)f)) {
      if (found == PB_NONE)
        found = (pb_field)f;
      (*n_used)++;
    }
  return found;
}

static mb_status fill_tensor(const Onnx__TensorProto *tp, const char *label,
                             mb_external_data *ext, mb_tensor *t,
                             mb_error *err) {
  char shape[128];
  int n_typed = 0;
  pb_field field = typed_field_in_use(tp, &n_typed);
  bool has_raw = tp->has_raw_data && tp->raw_data.len > 0;
  mb__shape_str(t->rank, t->dims, shape, sizeof shape);

  if (tp->has_data_location &&
      tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
    if (has_raw || n_typed)
      return mb__error(err, MB_STATUS_PARSE,
                       "%s: has both external and inline data", label);
    return read_external(tp, label, ext, t, err);
  }
  if ((has_raw && n_typed) || n_typed > 1)
    return mb__error(err, MB_STATUS_PARSE,
                     "%s: holds data in more than one field (%s%s)", label,
                     has_raw ? "raw_data, " : "", pb_field_names[field]);
  if (n_typed) {
    pb_field want = k_typed_storage[t->dtype].field;
    size_t expected =
        (size_t)t->numel * (size_t)k_typed_storage[t->dtype].per_element;
    size_t count = typed_count(tp, field);
    if (field != want)
      return mb__error(err, MB_STATUS_PARSE,
                       "%s: element type %s must be stored in %s, not %s",
                       label, mb_dtype_name(t->dtype), pb_field_names[want],
                       pb_field_names[field]);
    if (count != expected)
      return mb__error(err, MB_STATUS_PARSE,
                       "%s: %s has %zu entries, but shape %s of %s needs %zu",
                       label, pb_field_names[field], count, shape,
                       mb_dtype_name(t->dtype), expected);
    mb_status status = alloc_checked(t, label, err);
    if (status)
      return status;
    copy_typed(tp, field, t->dtype, count, t->data);
    return MB_STATUS_OK;
  }
  size_t raw_len = tp->has_raw_data ? tp->raw_data.len : 0;
  if (raw_len != t->nbytes) {
    if (!tp->has_raw_data)
      return mb__error(err, MB_STATUS_PARSE,
                       "%s: has no data, but shape %s of %s needs %zu bytes",
                       label, shape, mb_dtype_name(t->dtype), t->nbytes);
    return mb__error(err, MB_STATUS_PARSE,
                     "%s: raw_data has %zu bytes, but shape %s of %s needs "
                     "%zu",
                     label, raw_len, shape, mb_dtype_name(t->dtype), t->nbytes);
  }
  mb_status status = alloc_checked(t, label, err);
  if (status)
    return status;
  /* raw_data is little-endian and byte-aligned: copy, never cast. */
  if (raw_len)
    memcpy(t->data, tp->raw_data.data, raw_len);
  return MB_STATUS_OK;
}

mb_status mb__tensor_from_proto(const Onnx__TensorProto *tp, const char *label,
                                mb_external_data *ext, mb_tensor **tensor_out,
                                mb_error *err) {
  int64_t dims[MB_MAX_RANK];
  int64_t numel = 0;
  size_t nbytes = 0;
  mb_tensor *t = NULL;
  mb_status status;
  char shape[128];

  if (!tp->has_data_type || tp->data_type == MB_DTYPE_UNDEFINED)
    return mb__error(err, MB_STATUS_PARSE, "%s: has no element type", label);
  if (tp->data_type == MB_DTYPE_STRING)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "%s: string tensors are not supported", label);
  if (tp->data_type < 0 || tp->data_type >= MB_DTYPE_COUNT ||
      mb_dtype_size((mb_dtype)tp->data_type) == 0)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "%s: element type %d is not supported", label,
                     (int)tp->data_type);
  if (tp->n_dims > MB_MAX_RANK)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "%s: rank %zu is above the supported maximum %d", label,
                     tp->n_dims, MB_MAX_RANK);
  if (tp->segment)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "%s: segmented tensors are not supported", label);
  mb_dtype dtype = (mb_dtype)tp->data_type;
  int rank = (int)tp->n_dims;
  for (int i = 0; i < rank; i++) {
    dims[i] = tp->dims[i];
    if (dims[i] < 0)
      return mb__error(err, MB_STATUS_PARSE, "%s: dimension %d is negative",
                       label, i);
  }
  mb__shape_str(rank, dims, shape, sizeof shape);
  if (!mb__numel(rank, dims, &numel) ||
      !mb__mul_size((size_t)numel, mb_dtype_size(dtype), &nbytes) ||
      nbytes > MB_MAX_TENSOR_BYTES)
    return mb__error(err, MB_STATUS_OVERFLOW,
                     "%s: shape %s of %s is larger than the %llu-byte limit",
                     label, shape, mb_dtype_name(dtype),
                     (unsigned long long)MB_MAX_TENSOR_BYTES);

  t = calloc(1, sizeof *t);
  if (!t)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory", label);
  /* Shape only: fill_tensor allocates after checking the data's size. */
  status = mb__tensor_set_shape(t, dtype, rank, dims, err);
  if (status) {
    mb__error_prefix(err, status, "%s", label);
    goto fail;
  }
  if (tp->name && tp->name[0] && !(t->name = mb__strdup(tp->name))) {
    status =
        mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory", label);
    goto fail;
  }
  status = fill_tensor(tp, label, ext, t, err);
  if (status)
    goto fail;
  *tensor_out = t;
  return MB_STATUS_OK;
fail:
  mb_tensor_free(t);
  return status;
}

/* ---- mb_tensor -> TensorProto ---- */

mb_status mb__tensor_to_proto(const mb_tensor *t, const char *name,
                              Onnx__TensorProto *tp, mb_error *err) {
  /* protobuf-c packs from a non-NULL pointer even for empty data. */
  static const uint8_t empty[1];
  if ((unsigned)t->dtype >= MB_DTYPE_COUNT || mb_dtype_size(t->dtype) == 0)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "tensor '%s': element type %s cannot be written",
                     name ? name : "", mb_dtype_name(t->dtype));
  if (t->rank < 0 || t->rank > MB_MAX_RANK || (t->nbytes && !t->data))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "tensor '%s': malformed tensor (rank %d, %zu bytes)",
                     name ? name : "", t->rank, t->nbytes);
  tp->n_dims = (size_t)t->rank;
  tp->dims = (int64_t *)t->dims;
  tp->has_data_type = 1;
  tp->data_type = (int32_t)t->dtype;
  tp->name = name && name[0] ? (char *)name : NULL;
  tp->has_raw_data = 1;
  tp->raw_data.len = t->nbytes;
  tp->raw_data.data = t->nbytes ? (uint8_t *)t->data : (uint8_t *)empty;
  return MB_STATUS_OK;
}

/* ---- TensorProto files ---- */

bool mb__pb_read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64 && *p < end; shift += 7) {
    uint8_t byte = *(*p)++;
    result |= (uint64_t)(byte & 0x7f) << shift;
    if (!(byte & 0x80)) {
      *v = result;
      return true;
    }
  }
  return false;
}

/* SequenceProto and OptionalProto (onnx-data.proto) share a layout: name =
 * 1 (a string), elem_type = 2 (0..5), and the values in field elem_type + 2
 * (3 tensor, 4 sparse tensor, 5 sequence, 6 map, 7 optional). Parsed as a
 * TensorProto they can "succeed" with garbage dims, so recognise them on the
 * wire first: a TensorProto never has a printable string in field 1 (packed
 * dims), and real ones carry fields >= 8 (name, raw_data) that these lack. */
static bool looks_like_sequence_or_optional(const uint8_t *data, size_t size) {
  const uint8_t *p = data, *end = data + size;
  uint64_t elem_type = UINT64_MAX;
  unsigned fields = 0;
  while (p < end) {
    uint64_t key, value;
    if (!mb__pb_read_varint(&p, end, &key))
      return false;
    uint64_t field = key >> 3, wire = key & 7;
    if (field < 1 || field > 7)
      return false;
    if (wire == 0) { /* varint: only elem_type */
      if (field != 2 || !mb__pb_read_varint(&p, end, &elem_type))
        return false;
    } else if (wire == 2) { /* length-delimited: name or values */
      if (field == 2 || !mb__pb_read_varint(&p, end, &value) ||
          value > (uint64_t)(end - p))
        return false;
      for (uint64_t i = 0; field == 1 && i < value; i++)
        if (p[i] < 0x20 || p[i] > 0x7e)
          return false;
      p += value;
    } else {
      return false;
    }
    fields |= 1u << field;
  }
  if (elem_type > 5)
    return false;
  for (unsigned f = 3; f <= 7; f++)
    if ((fields & (1u << f)) && f != elem_type + 2)
      return false;
  return true;
}

mb_status mb_tensor_load_pb(const char *path, mb_tensor **tensor_out,
                            mb_error *err) {
  void *data = NULL;
  size_t size = 0;
  Onnx__TensorProto *tp = NULL;
  mb_external_data ext = {0};
  char *dir = NULL;
  mb_tensor *t = NULL;
  char label[300];
  mb_status status;

  if (!path || !tensor_out)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "mb_tensor_load_pb: path and tensor_out are required");
  status = mb__read_file(path, &data, &size, err);
  if (status)
    return status;
  if (size == 0) {
    status = mb__error(err, MB_STATUS_PARSE,
                       "%s: empty file, not a TensorProto", path);
    goto done;
  }
  if (looks_like_sequence_or_optional(data, size)) {
    status = mb__error(err, MB_STATUS_UNSUPPORTED,
                       "%s: file holds a SequenceProto/OptionalProto, not a "
                       "TensorProto",
                       path);
    goto done;
  }
  tp = onnx__tensor_proto__unpack(NULL, size, data);
  if (!tp) {
    status = mb__error(err, MB_STATUS_PARSE,
                       "%s: not a valid TensorProto file (protobuf parse "
                       "failed)",
                       path);
    goto done;
  }
  if (!(dir = mb__path_dirname(path))) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    goto done;
  }
  ext.base_dir = dir;
  if (tp->name && tp->name[0])
    snprintf(label, sizeof label, "tensor '%s'", tp->name);
  else
    snprintf(label, sizeof label, "tensor");
  status = mb__tensor_from_proto(tp, label, &ext, &t, err);
  if (status) {
    mb__error_prefix(err, status, "%s", path);
    goto done;
  }
  *tensor_out = t;
done:
  mb__external_data_close(&ext);
  free(dir);
  if (tp)
    onnx__tensor_proto__free_unpacked(tp, NULL);
  free(data);
  return status;
}

/* ---- SequenceProto and OptionalProto files ---- */

/* The fields of a SequenceProto or OptionalProto (the same numbers): a
 * TensorProto or a nested SequenceProto per value field. */
typedef struct value_fields {
  uint64_t elem_type;
  const uint8_t
      *tensors[64]; /* field 3: TensorProto (repeated in a sequence) */
  size_t tensor_sizes[64];
  int n_tensors;
  const uint8_t *sequence; /* field 5: SequenceProto of an optional */
  size_t sequence_size;
  bool other; /* sparse tensors, maps, nested optionals */
} value_fields;

static bool value_fields_parse(const uint8_t *data, size_t size,
                               value_fields *f) {
  const uint8_t *p = data, *end = data + size;
  memset(f, 0, sizeof *f);
  while (p < end) {
    uint64_t key, value;
    if (!mb__pb_read_varint(&p, end, &key))
      return false;
    uint64_t field = key >> 3, wire = key & 7;
    if (wire == 0) {
      if (!mb__pb_read_varint(&p, end, &value))
        return false;
      if (field == 2)
        f->elem_type = value;
      continue;
    }
    if (wire != 2 || !mb__pb_read_varint(&p, end, &value) ||
        value > (uint64_t)(end - p))
      return false;
    if (field == 3) {
      if (f->n_tensors == (int)MB_ARRAY_COUNT(f->tensors))
        return false;
      f->tensors[f->n_tensors] = p;
      f->tensor_sizes[f->n_tensors++] = (size_t)value;
    } else if (field == 5) {
      f->sequence = p;
      f->sequence_size = (size_t)value;
    } else if (field >= 4) {
      f->other = true;
    }
    p += value;
  }
  return true;
}

static mb_status tensor_from_bytes(const uint8_t *data, size_t size,
                                   const char *path, mb_external_data *ext,
                                   mb_tensor **out, mb_error *err) {
  Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, size, data);
  if (!tp)
    return mb__error(err, MB_STATUS_PARSE,
                     "%s: a TensorProto inside does not parse", path);
  mb_status status = mb__tensor_from_proto(tp, "tensor", ext, out, err);
  onnx__tensor_proto__free_unpacked(tp, NULL);
  if (status)
    mb__error_prefix(err, status, "%s", path);
  return status;
}

static mb_status sequence_from_bytes(const uint8_t *data, size_t size,
                                     const char *path, mb_external_data *ext,
                                     mb__sequence *seq, mb_error *err) {
  value_fields f;
  if (!value_fields_parse(data, size, &f))
    return mb__error(err, MB_STATUS_PARSE, "%s: not a SequenceProto", path);
  if (f.other || f.sequence || (f.elem_type != 1 && f.n_tensors))
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "%s: only sequences of dense tensors are supported", path);
  mb__sequence_reset(seq, MB_DTYPE_UNDEFINED);
  for (int i = 0; i < f.n_tensors; i++) {
    mb_tensor *t = NULL;
    mb_status status =
        tensor_from_bytes(f.tensors[i], f.tensor_sizes[i], path, ext, &t, err);
    if (status == MB_STATUS_OK)
      status = mb__sequence_push(seq, t, err);
    if (status)
      return status;
    seq->dtype = t->dtype;
  }
  return MB_STATUS_OK;
}

mb_status mb__value_load_pb(const char *path, int type, mb_tensor **tensor_out,
                            mb__sequence *seq_out, mb_error *err) {
  void *data = NULL;
  size_t size = 0;
  mb_external_data ext = {0};
  char *dir = NULL;
  value_fields f;
  mb_status status;
  *tensor_out = NULL;
  if (type == MB_VALUE_TYPE_TENSOR) {
    seq_out->kind = MB__KIND_TENSOR;
    return mb_tensor_load_pb(path, tensor_out, err);
  }
  if ((status = mb__read_file(path, &data, &size, err)))
    return status;
  if (!(dir = mb__path_dirname(path))) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    goto done;
  }
  ext.base_dir = dir;
  if (type == MB_VALUE_TYPE_SEQUENCE) {
    status = sequence_from_bytes(data, size, path, &ext, seq_out, err);
    goto done;
  }
  /* An optional: a tensor (elem_type 1), a sequence (3), or nothing. */
  if (!value_fields_parse(data, size, &f) || f.n_tensors > 1) {
    status = mb__error(err, MB_STATUS_PARSE, "%s: not an OptionalProto", path);
    goto done;
  }
  if (f.other) {
    status = mb__error(err, MB_STATUS_UNSUPPORTED,
                       "%s: only optionals of tensors and sequences are "
                       "supported",
                       path);
  } else if (f.n_tensors == 1) {
    seq_out->kind = MB__KIND_TENSOR;
    status = tensor_from_bytes(f.tensors[0], f.tensor_sizes[0], path, &ext,
                               tensor_out, err);
  } else if (f.sequence) {
    status = sequence_from_bytes(f.sequence, f.sequence_size, path, &ext,
                                 seq_out, err);
  } else {
    mb__sequence_free(seq_out);
    seq_out->kind = MB__KIND_NONE;
  }
done:
  mb__external_data_close(&ext);
  free(dir);
  free(data);
  return status;
}

mb_status mb_tensor_save_pb(const mb_tensor *tensor, const char *path,
                            mb_error *err) {
  Onnx__TensorProto tp = ONNX__TENSOR_PROTO__INIT;
  uint8_t *buf = NULL;
  mb_status status;
  if (!tensor || !path)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "mb_tensor_save_pb: tensor and path are required");
  status = mb__tensor_to_proto(tensor, tensor->name, &tp, err);
  if (status)
    return mb__error_prefix(err, status, "%s", path);
  size_t size = onnx__tensor_proto__get_packed_size(&tp);
  buf = malloc(size ? size : 1);
  if (!buf)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "%s: cannot allocate %zu bytes", path, size);
  onnx__tensor_proto__pack(&tp, buf);
  status = mb__write_file(path, buf, size, err);
  free(buf);
  return status;
}
