/* Which models a command runs on: files, folders (their *.onnx files;
 * sub-folders with --recursive) and FILE::HASH / FOLDER::HASH filters that
 * keep only models whose sha256 starts with HASH. */
#include "cli/cli_common.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

typedef struct path_list {
  char **paths;
  int n, cap;
} path_list;

static bool push(path_list *l, const char *path) {
  if (l->n == l->cap) {
    int cap = l->cap ? l->cap * 2 : 16;
    char **grown = realloc(l->paths, sizeof *grown * (size_t)cap);
    if (!grown)
      return false;
    l->paths = grown;
    l->cap = cap;
  }
  if (!(l->paths[l->n] = mb__strdup(path)))
    return false;
  l->n++;
  return true;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool has_onnx_suffix(const char *name) {
  size_t len = strlen(name);
  return len > 5 && strcmp(name + len - 5, ".onnx") == 0;
}

/* Appends dir's *.onnx files (sorted), then with `recursive` those of its
 * sub-folders (sorted, depth first). Hidden entries are skipped. Returns
 * an exit code. */
static int scan_dir(const char *cmd, const char *dir, bool recursive, int depth,
                    path_list *out) {
  path_list files = {0}, dirs = {0};
  char path[PATH_MAX];
  int rc = MB_EXIT_OK;
  DIR *d = opendir(dir);
  if (!d) {
    mb__cli_error(dir, "cannot read the folder: %s", strerror(errno));
    return MB_EXIT_FAILURE;
  }
  if (depth > 32) {
    closedir(d);
    mb__cli_error(dir, "folders nested deeper than 32 levels");
    return MB_EXIT_FAILURE;
  }
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    int n = snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (n < 0 || (size_t)n >= sizeof path)
      continue;
    bool is_dir = mb__cli_is_dir(path);
    if (is_dir && recursive && !push(&dirs, path))
      goto oom;
    if (!is_dir && has_onnx_suffix(e->d_name) && !push(&files, path))
      goto oom;
  }
  if (files.n > 1)
    qsort(files.paths, (size_t)files.n, sizeof *files.paths, by_name);
  if (dirs.n > 1)
    qsort(dirs.paths, (size_t)dirs.n, sizeof *dirs.paths, by_name);
  for (int i = 0; i < files.n; i++)
    if (!push(out, files.paths[i]))
      goto oom;
  for (int i = 0; i < dirs.n && rc == MB_EXIT_OK; i++)
    rc = scan_dir(cmd, dirs.paths[i], recursive, depth + 1, out);
  goto done;
oom:
  mb__cli_error(NULL, "out of memory listing %s", dir);
  rc = MB_EXIT_FAILURE;
done:
  closedir(d);
  mb__cli_free_names(files.paths, files.n);
  mb__cli_free_names(dirs.paths, dirs.n);
  return rc;
}

/* Does the model at path have a sha256 starting with prefix (lower-case
 * hex)? A model that cannot be loaded does not match (it is kept out of a
 * filtered selection; unfiltered, bench reports its error). */
static bool hash_matches(const char *path, const char *prefix) {
  mb_model *model = NULL;
  bool match = false;
  if (mb_model_load(path, &model, NULL) == MB_STATUS_OK)
    match = strncmp(mb_model_sha256(model), prefix, strlen(prefix)) == 0;
  mb_model_free(model);
  return match;
}

int mb__cli_expand_models(const char *cmd, char *const *specs, int n_specs,
                          bool recursive, char ***paths_out, int *n_out) {
  path_list all = {0};
  int rc = MB_EXIT_OK;
  *paths_out = NULL;
  *n_out = 0;
  for (int s = 0; s < n_specs && rc == MB_EXIT_OK; s++) {
    char path[PATH_MAX], hash[65] = "";
    const char *sep = strstr(specs[s], "::");
    size_t len = sep ? (size_t)(sep - specs[s]) : strlen(specs[s]);
    if (len == 0 || len >= sizeof path) {
      rc = mb__cli_usage_error(cmd,
                               "'%s': expected MODEL, FOLDER or "
                               "MODEL::HASH",
                               specs[s]);
      break;
    }
    memcpy(path, specs[s], len);
    path[len] = '\0';
    if (sep) {
      const char *h = sep + 2;
      size_t hl = strlen(h);
      bool hex = hl >= 4 && hl <= 64;
      for (size_t i = 0; hex && i < hl; i++)
        hex = isxdigit((unsigned char)h[i]) != 0;
      if (!hex) {
        rc = mb__cli_usage_error(cmd,
                                 "'%s': HASH after '::' must be 4 to 64 hex "
                                 "digits of the model's sha256 (see "
                                 "'modelbench analyze')",
                                 specs[s]);
        break;
      }
      for (size_t i = 0; i <= hl; i++)
        hash[i] = (char)tolower((unsigned char)h[i]);
    }
    path_list found = {0};
    if (mb__cli_is_dir(path)) {
      rc = scan_dir(cmd, path, recursive, 0, &found);
      if (rc == MB_EXIT_OK && found.n == 0)
        rc =
            mb__cli_usage_error(cmd, "%s: no .onnx files in the folder%s", path,
                                recursive ? " or below"
                                          : " (--recursive searches "
                                            "sub-folders)");
    } else if (!push(&found, path)) {
      mb__cli_error(NULL, "out of memory");
      rc = MB_EXIT_FAILURE;
    }
    int kept = 0;
    for (int i = 0; i < found.n && rc == MB_EXIT_OK; i++) {
      if (hash[0] && !hash_matches(found.paths[i], hash))
        continue;
      kept++;
      if (!push(&all, found.paths[i])) {
        mb__cli_error(NULL, "out of memory");
        rc = MB_EXIT_FAILURE;
      }
    }
    if (rc == MB_EXIT_OK && hash[0] && kept == 0)
      rc = mb__cli_usage_error(cmd,
                               "%s: no model with a sha256 starting "
                               "with %s",
                               path, hash);
    mb__cli_free_names(found.paths, found.n);
  }
  if (rc != MB_EXIT_OK) {
    mb__cli_free_names(all.paths, all.n);
    return rc;
  }
  *paths_out = all.paths;
  *n_out = all.n;
  return MB_EXIT_OK;
}
