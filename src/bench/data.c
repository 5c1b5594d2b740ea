/* Input sources of a benchmark: generated, a folder of ONNX test sets,
 * .npy files or .npz archives (one .npy or .npz file alone too; NumPy's
 * formats are npy.c's), or the C API's loader callback. Every sample is
 * materialised when the source opens, so that every conversion sees the same
 * bytes and a bad file fails the run before any worker starts.
 *
 * n_samples caps the number of samples taken from every source (the first
 * ones, in natural name order for folders); a folder or loader with fewer
 * samples gives fewer. Shapes of real data come from the data itself: the
 * --shape / --batch-size settings only apply to generated inputs. */
#include "bench/data.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

struct mb_input_source {
  const mb_model *model;
  int n_inputs;
  int64_t count;
  int64_t cap;
  mb_tensor **samples;    /* count * n_inputs, sample-major */
  mb_input_shape *shapes; /* of sample 0; names borrowed from the model */
  char first[PATH_MAX];   /* where sample 0 came from, for messages */
};

/* ---- small helpers ---- */

static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static bool ends_with(const char *s, const char *suffix) {
  size_t ls = strlen(s), lx = strlen(suffix);
  return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

static int compare_names(const void *a, const void *b) {
  return mb__natural_compare(*(char *const *)a, *(char *const *)b);
}

typedef struct name_list {
  char **names;
  int count;
} name_list;

static void name_list_free(name_list *list) {
  for (int i = 0; i < list->count; i++)
    free(list->names[i]);
  free(list->names);
  memset(list, 0, sizeof *list);
}

/* Entries of dir that are folders (want_dirs) or files ending in suffix,
 * in natural order. */
static mb_status list_dir(const char *dir, bool want_dirs, const char *prefix,
                          const char *suffix, name_list *out, mb_error *err) {
  name_list list = {NULL, 0};
  int cap = 0;
  char path[PATH_MAX];
  DIR *d = opendir(dir);
  if (!d)
    return mb__error(err, MB_STATUS_IO, "%s: %s", dir, strerror(errno));
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.' ||
        strncmp(e->d_name, prefix, strlen(prefix)) != 0 ||
        !ends_with(e->d_name, suffix))
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (want_dirs ? !is_dir(path) : !is_file(path))
      continue;
    if (list.count == cap) {
      cap = cap ? cap * 2 : 16;
      char **grown = realloc(list.names, sizeof *grown * (size_t)cap);
      if (!grown)
        goto oom;
      list.names = grown;
    }
    if (!(list.names[list.count] = mb__strdup(e->d_name)))
      goto oom;
    list.count++;
  }
  closedir(d);
  if (list.count > 1)
    qsort(list.names, (size_t)list.count, sizeof *list.names, compare_names);
  *out = list;
  return MB_STATUS_OK;

oom:
  closedir(d);
  name_list_free(&list);
  return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory", dir);
}

static const char *declared_shape(const mb_value_info *info, char *buf,
                                  size_t size) {
  size_t used = 0;
  if (info->rank < 0)
    return "(unknown rank)";
  used += (size_t)snprintf(buf, size, "[");
  for (int d = 0; d < info->rank && used < size; d++) {
    int w = info->dims[d] >= 0
                ? snprintf(buf + used, size - used, "%s%lld", d ? "," : "",
                           (long long)info->dims[d])
                : snprintf(buf + used, size - used, "%s%s", d ? "," : "",
                           info->dim_params[d] ? info->dim_params[d] : "?");
    if (w < 0)
      break;
    used += (size_t)w;
  }
  if (used < size)
    snprintf(buf + used, size - used, "]");
  return buf;
}

/* Checks a tensor against the model's declaration of input `index`; where
 * names the file (or loader sample) it came from. Also names the tensor
 * after the input, as generated inputs are. */
static mb_status check_input(const mb_model *model, int index, mb_tensor *t,
                             const char *where, mb_error *err) {
  mb_value_info info;
  char want[160], got[160];
  mb_status status = mb_model_input_info(model, index, &info, err);
  if (status != MB_STATUS_OK)
    return status;
  if (info.dtype != MB_DTYPE_UNDEFINED && t->dtype != info.dtype)
    return mb__error(err, MB_STATUS_SHAPE,
                     "%s: input '%s' has type %s but the model declares %s",
                     where, info.name, mb_dtype_name(t->dtype),
                     mb_dtype_name(info.dtype));
  bool ok = info.rank < 0 || info.rank == t->rank;
  for (int d = 0; ok && info.rank >= 0 && d < info.rank; d++)
    if (info.dims[d] >= 0 && info.dims[d] != t->dims[d])
      ok = false;
  if (!ok)
    return mb__error(err, MB_STATUS_SHAPE,
                     "%s: input '%s' has shape %s but the model declares %s",
                     where, info.name,
                     mb__shape_str(t->rank, t->dims, got, sizeof got),
                     declared_shape(&info, want, sizeof want));
  if (!t->name || strcmp(t->name, info.name) != 0) {
    char *name = mb__strdup(info.name);
    if (!name)
      return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    free(t->name);
    t->name = name;
  }
  return MB_STATUS_OK;
}

static void free_tensors(mb_tensor **tensors, int n) {
  for (int i = 0; i < n; i++) {
    mb_tensor_free(tensors[i]);
    tensors[i] = NULL;
  }
}

/* Takes ownership of tensors[0..n_inputs) (also on failure), after checking
 * that every sample has the shapes of the first. */
static mb_status add_sample(mb_input_source *src, mb_tensor **tensors,
                            const char *where, mb_error *err) {
  mb_status status = MB_STATUS_OK;
  int n = src->n_inputs;
  if (src->count > 0) {
    const mb_tensor *const *first = (const mb_tensor *const *)src->samples;
    for (int i = 0; i < n; i++) {
      const mb_tensor *a = first[i], *b = tensors[i];
      if (a->rank == b->rank &&
          memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank) == 0)
        continue;
      char sa[160], sb[160];
      status = mb__error(
          err, MB_STATUS_SHAPE,
          "%s: input '%s' has shape %s but %s gave %s; every sample must "
          "have the same shapes",
          where, src->shapes[i].name,
          mb__shape_str(b->rank, b->dims, sb, sizeof sb), src->first,
          mb__shape_str(a->rank, a->dims, sa, sizeof sa));
      goto fail;
    }
  }
  if (src->count == src->cap) {
    int64_t cap = src->cap ? src->cap * 2 : 4;
    mb_tensor **grown = realloc(src->samples, sizeof *grown * (size_t)cap *
                                                  (size_t)(n > 0 ? n : 1));
    if (!grown) {
      status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
      goto fail;
    }
    src->samples = grown;
    src->cap = cap;
  }
  memcpy(src->samples + src->count * n, tensors, sizeof *tensors * (size_t)n);
  if (src->count == 0) {
    snprintf(src->first, sizeof src->first, "%s", where);
    for (int i = 0; i < n; i++) {
      src->shapes[i].rank = tensors[i]->rank;
      memcpy(src->shapes[i].dims, tensors[i]->dims,
             sizeof(int64_t) * (size_t)tensors[i]->rank);
    }
  }
  src->count++;
  return MB_STATUS_OK;

fail:
  free_tensors(tensors, n);
  return status;
}

/* ---- folders ---- */

/* One test set folder: input_0.pb .. input_{n-1}.pb. */
static mb_status load_pb_sample(mb_input_source *src, const char *dir,
                                mb_error *err) {
  int n = src->n_inputs;
  mb_tensor **tensors = calloc((size_t)(n > 0 ? n : 1), sizeof *tensors);
  char path[PATH_MAX];
  mb_status status = MB_STATUS_OK;
  if (!tensors)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  int files = 0;
  for (;; files++) {
    snprintf(path, sizeof path, "%s/input_%d.pb", dir, files);
    if (!is_file(path))
      break;
  }
  if (files != n) {
    status = mb__error(err, MB_STATUS_SHAPE,
                       "%s: has %d input_N.pb file(s) but the model has %d "
                       "input(s)",
                       dir, files, n);
    goto fail;
  }
  for (int i = 0; i < n; i++) {
    snprintf(path, sizeof path, "%s/input_%d.pb", dir, i);
    if ((status = mb_tensor_load_pb(path, &tensors[i], err)) != MB_STATUS_OK) {
      mb__error_prefix(err, status, "%s", path);
      goto fail;
    }
    if ((status = check_input(src->model, i, tensors[i], path, err)))
      goto fail;
  }
  status = add_sample(src, tensors, dir, err);
  free(tensors);
  return status;

fail:
  free_tensors(tensors, n);
  free(tensors);
  return status;
}

/* A file name can hold an input's name unless it has a path separator. */
static bool usable_file_name(const char *name) {
  return name[0] && name[0] != '.' && !strchr(name, '/');
}

/* Which of n_keys arrays feeds each graph input: the one named like the
 * input, else input_N, else arr_N (numpy.savez's name for its N-th
 * positional array). keys: an array's name without ".npy". An input no
 * key matches, or a key that feeds nothing (most likely a misspelt input
 * name), is an error naming `where` and the key. match_out: n_inputs
 * entries. */
static mb_status match_arrays(const mb_input_source *src, const char *where,
                              char *const *keys, int n_keys, int *match_out,
                              mb_error *err) {
  bool *used = calloc((size_t)n_keys + 1, sizeof *used);
  mb_status status = MB_STATUS_OK;
  if (!used)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; i < src->n_inputs; i++) {
    mb_value_info info;
    char by_index[32], by_position[32];
    if ((status = mb_model_input_info(src->model, i, &info, err)))
      goto done;
    snprintf(by_index, sizeof by_index, "input_%d", i);
    snprintf(by_position, sizeof by_position, "arr_%d", i);
    const char *forms[3] = {usable_file_name(info.name) ? info.name : NULL,
                            by_index, by_position};
    int match = -1;
    for (int k = 0; k < 3 && match < 0; k++)
      for (int f = 0; forms[k] && f < n_keys && match < 0; f++)
        if (strcmp(keys[f], forms[k]) == 0)
          match = f;
    if (match < 0) {
      status = mb__error(err, MB_STATUS_NOT_FOUND,
                         "%s: no '%s', '%s' or '%s' array (.npy) for model "
                         "input '%s'",
                         where, info.name, by_index, by_position, info.name);
      goto done;
    }
    used[match] = true;
    match_out[i] = match;
  }
  for (int f = 0; f < n_keys; f++)
    if (!used[f]) {
      status = mb__error(err, MB_STATUS_NOT_FOUND,
                         "%s: '%s.npy' matches no model input (expected "
                         "NAME.npy, input_N.npy or arr_N.npy)",
                         where, keys[f]);
      goto done;
    }
done:
  free(used);
  return status;
}

/* One folder of .npy files: NAME.npy, input_N.npy or arr_N.npy per graph
 * input. */
static mb_status load_npy_sample(mb_input_source *src, const char *dir,
                                 mb_error *err) {
  int n = src->n_inputs;
  mb_tensor **tensors = calloc((size_t)(n > 0 ? n : 1), sizeof *tensors);
  int *match = calloc((size_t)(n > 0 ? n : 1), sizeof *match);
  name_list files = {NULL, 0};
  char path[PATH_MAX];
  mb_status status;
  if (!tensors || !match) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto fail;
  }
  if ((status = list_dir(dir, false, "", ".npy", &files, err)))
    goto fail;
  for (int f = 0; f < files.count; f++) /* the key: the name less ".npy" */
    files.names[f][strlen(files.names[f]) - 4] = '\0';
  if ((status = match_arrays(src, dir, files.names, files.count, match, err)))
    goto fail;
  for (int i = 0; i < n; i++) {
    snprintf(path, sizeof path, "%s/%s.npy", dir, files.names[match[i]]);
    if ((status = mb__npy_load(path, &tensors[i], err)))
      goto fail;
    if ((status = check_input(src->model, i, tensors[i], path, err)))
      goto fail;
  }
  status = add_sample(src, tensors, dir, err);
  free(tensors);
  free(match);
  name_list_free(&files);
  return status;

fail:
  if (tensors)
    free_tensors(tensors, n);
  free(tensors);
  free(match);
  name_list_free(&files);
  return status;
}

/* One .npz archive (numpy.savez): one sample, its arrays named as the
 * files of a .npy folder are. */
static mb_status load_npz_sample(mb_input_source *src, const char *file,
                                 mb_error *err) {
  int n = src->n_inputs;
  mb_npz npz = {0, NULL, NULL};
  mb_tensor **tensors = calloc((size_t)(n > 0 ? n : 1), sizeof *tensors);
  int *match = calloc((size_t)(n > 0 ? n : 1), sizeof *match);
  mb_status status;
  if (!tensors || !match) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  if ((status = mb__npz_load(file, &npz, err)) ||
      (status = match_arrays(src, file, npz.names, npz.count, match, err)))
    goto done;
  for (int i = 0; i < n; i++) {
    char where[PATH_MAX + 80];
    snprintf(where, sizeof where, "%s: '%s'", file, npz.names[match[i]]);
    tensors[i] = npz.tensors[match[i]];
    npz.tensors[match[i]] = NULL; /* the sample owns it now */
    if ((status = check_input(src->model, i, tensors[i], where, err)))
      goto done;
  }
  status = add_sample(src, tensors, file, err); /* owns them, even failing */
  memset(tensors, 0, (size_t)(n > 0 ? n : 1) * sizeof *tensors);
done:
  if (tensors)
    free_tensors(tensors, n);
  free(tensors);
  free(match);
  mb__npz_free(&npz);
  return status;
}

/* One .npy file as --inputs: the one sample of a model with one input (the
 * commonest case, without a folder around it). */
static mb_status load_npy_file(mb_input_source *src, const char *file,
                               mb_error *err) {
  mb_tensor *tensor = NULL;
  mb_status status;
  if (src->n_inputs != 1)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "%s: one .npy file feeds a model with one input and this "
                     "one has %d: give a .npz archive (numpy.savez) or a "
                     "folder of NAME.npy or input_N.npy files",
                     file, src->n_inputs);
  if ((status = mb__npy_load(file, &tensor, err)))
    return status;
  if ((status = check_input(src->model, 0, tensor, file, err))) {
    mb_tensor_free(tensor);
    return status;
  }
  return add_sample(src, &tensor, file, err);
}

static mb_status load_dir(mb_input_source *src, const char *dir, int64_t max,
                          mb_error *err) {
  typedef mb_status (*sample_fn)(mb_input_source *, const char *, mb_error *);
  name_list subdirs = {NULL, 0}, npy = {NULL, 0};
  char path[PATH_MAX];
  sample_fn load = NULL;
  mb_status status;
  size_t len = strlen(dir);
  if (is_file(dir) && len > 4 && strcmp(dir + len - 4, ".npy") == 0)
    return load_npy_file(src, dir, err);
  if (is_file(dir) && len > 4 && strcmp(dir + len - 4, ".npz") == 0)
    return load_npz_sample(src, dir, err);
  if (!is_dir(dir))
    return mb__error(err, MB_STATUS_IO,
                     "%s: not a directory (nor a .npy or .npz file)", dir);
  if ((status = list_dir(dir, true, "test_data_set_", "", &subdirs, err)))
    goto done;
  if (subdirs.count > 0) {
    load = load_pb_sample;
  } else {
    snprintf(path, sizeof path, "%s/input_0.pb", dir);
    if (is_file(path)) {
      status = load_pb_sample(src, dir, err);
      goto done;
    }
    if ((status = list_dir(dir, false, "", ".npy", &npy, err)))
      goto done;
    if (npy.count > 0) {
      status = load_npy_sample(src, dir, err);
      goto done;
    }
    /* A folder of .npz archives: one sample each, in name order. */
    if ((status = list_dir(dir, false, "", ".npz", &subdirs, err)))
      goto done;
    for (int i = 0; i < subdirs.count && src->count < max; i++) {
      snprintf(path, sizeof path, "%s/%s", dir, subdirs.names[i]);
      if ((status = load_npz_sample(src, path, err)))
        goto done;
    }
    if (subdirs.count > 0)
      goto done;
    /* Otherwise one sub-folder of .npy files per sample. */
    if ((status = list_dir(dir, true, "", "", &subdirs, err)))
      goto done;
    load = load_npy_sample;
    if (subdirs.count == 0) {
      status = mb__error(err, MB_STATUS_NOT_FOUND,
                         "%s: holds no test_data_set_* folders, input_N.pb, "
                         ".npy or .npz files",
                         dir);
      goto done;
    }
  }
  for (int i = 0; i < subdirs.count && src->count < max; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, subdirs.names[i]);
    if ((status = load(src, path, err)))
      goto done;
  }

done:
  name_list_free(&subdirs);
  name_list_free(&npy);
  return status;
}

/* ---- the loader callback and generated data ---- */

static mb_status load_callback(mb_input_source *src,
                               const mb_bench_config *config, int64_t max,
                               mb_error *err) {
  int n = src->n_inputs;
  mb_tensor **tensors = calloc((size_t)(n > 0 ? n : 1), sizeof *tensors);
  mb_status status = MB_STATUS_OK;
  char where[64];
  if (!tensors)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  for (int64_t s = 0; s < max; s++) {
    mb_error loader_err;
    memset(&loader_err, 0, sizeof loader_err);
    snprintf(where, sizeof where, "data loader, sample %lld", (long long)s);
    for (int i = 0; i < n; i++)
      tensors[i] = NULL;
    status = config->loader(config->loader_user, s, src->model, tensors,
                            &loader_err);
    if (status == MB_STATUS_NOT_FOUND && s > 0) {
      free_tensors(tensors, n); /* the engine owns whatever was filled */
      status = MB_STATUS_OK;
      break;
    }
    if (status != MB_STATUS_OK) {
      free_tensors(tensors, n);
      status =
          status == MB_STATUS_NOT_FOUND
              ? mb__error(err, MB_STATUS_NOT_FOUND,
                          "the data loader gave no samples")
              : mb__error(err, status, "%s: %s", where,
                          loader_err.message[0] ? loader_err.message
                                                : mb_status_string(status));
      break;
    }
    for (int i = 0; i < n && status == MB_STATUS_OK; i++) {
      mb_value_info info;
      if (!tensors[i] &&
          mb_model_input_info(src->model, i, &info, err) == MB_STATUS_OK)
        status = mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                           "%s: input '%s' was not filled", where, info.name);
      else if (tensors[i])
        status = check_input(src->model, i, tensors[i], where, err);
    }
    if (status != MB_STATUS_OK) {
      free_tensors(tensors, n);
      break;
    }
    if ((status = add_sample(src, tensors, where, err)))
      break;
  }
  free(tensors);
  return status;
}

static mb_status check_range_names(const mb_model *model,
                                   const mb_bench_config *config,
                                   mb_error *err) {
  int n = mb_model_input_count(model);
  for (int r = 0; r < config->n_ranges; r++) {
    const char *name = config->ranges[r].name;
    bool found = !name;
    for (int i = 0; i < n && !found; i++) {
      mb_value_info info;
      if (mb_model_input_info(model, i, &info, NULL) == MB_STATUS_OK &&
          strcmp(info.name, name) == 0)
        found = true;
    }
    if (!found)
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "input range %s: the model has no input '%s'", name,
                       name);
  }
  return MB_STATUS_OK;
}

static mb_status generate(mb_input_source *src, const mb_bench_config *config,
                          int64_t max, mb_error *err) {
  int n = src->n_inputs;
  mb_shape_spec spec = config->shapes;
  spec.batch_size = config->batch_size;
  mb_status status = check_range_names(src->model, config, err);
  if (status != MB_STATUS_OK)
    return status;
  mb_tensor **tensors = calloc((size_t)(n > 0 ? n : 1), sizeof *tensors);
  if (!tensors)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  for (int64_t s = 0; s < max && status == MB_STATUS_OK; s++) {
    char where[64];
    snprintf(where, sizeof where, "generated sample %lld", (long long)s);
    /* Consecutive seeds give each sample its own data, reproducibly. */
    status = mb_inputs_generate(src->model, &spec, config->seed + (uint64_t)s,
                                config->n_ranges, config->ranges, tensors, err);
    if (status == MB_STATUS_OK)
      status = add_sample(src, tensors, where, err);
  }
  free(tensors);
  return status;
}

/* ---- the source ---- */

mb_status mb__input_source_open(const mb_model *model,
                                const mb_bench_config *config,
                                mb_input_source **source_out, mb_error *err) {
  mb_input_source *src = calloc(1, sizeof *src);
  int n = mb_model_input_count(model);
  int64_t max = config->n_samples > 0 ? config->n_samples : 1;
  mb_status status;
  if (!src ||
      !(src->shapes = calloc((size_t)(n > 0 ? n : 1), sizeof *src->shapes))) {
    free(src);
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  src->model = model;
  src->n_inputs = n;
  for (int i = 0; i < n; i++) {
    mb_value_info info;
    if ((status = mb_model_input_info(model, i, &info, err)))
      goto fail;
    src->shapes[i].name = info.name;
  }
  if (config->loader && config->inputs_dir) {
    status = mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "inputs come either from a data loader or from a "
                       "folder (%s), not both",
                       config->inputs_dir);
    goto fail;
  }
  if (config->loader)
    status = load_callback(src, config, max, err);
  else if (config->inputs_dir)
    status = load_dir(src, config->inputs_dir, max, err);
  else
    status = generate(src, config, max, err);
  if (status != MB_STATUS_OK)
    goto fail;
  MB_ASSERT(src->count >= 1);
  *source_out = src;
  return MB_STATUS_OK;

fail:
  mb__input_source_close(src);
  return status;
}

int64_t mb__input_source_count(const mb_input_source *source) {
  return source->count;
}

const mb_input_shape *mb__input_source_shapes(const mb_input_source *source) {
  return source->shapes;
}

mb_status mb__input_source_get(mb_input_source *source, int64_t index,
                               mb_tensor **inputs_out, mb_error *err) {
  int n = source->n_inputs;
  if (index < 0 || index >= source->count)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "sample %lld is out of range (0..%lld)", (long long)index,
                     (long long)source->count - 1);
  for (int i = 0; i < n; i++) {
    mb_status status =
        mb_tensor_clone(source->samples[index * n + i], &inputs_out[i], err);
    if (status != MB_STATUS_OK) {
      free_tensors(inputs_out, i);
      return status;
    }
  }
  return MB_STATUS_OK;
}

void mb__input_source_close(mb_input_source *source) {
  if (!source)
    return;
  for (int64_t i = 0; source->samples && i < source->count * source->n_inputs;
       i++)
    mb_tensor_free(source->samples[i]);
  free(source->samples);
  free(source->shapes);
  free(source);
}
