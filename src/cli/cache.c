/* modelbench cache: the build cache (src/cache/build_cache.h) and a CSV of
 * the latest results per model x conversion beside their builds. */
#include "bench/bench.h"
#include "cache/build_cache.h"
#include "cli/cli_common.h"
#include "core/cache_dir.h"
#include "core/json_write.h"
#include "db/results_db.h"
#include "report/report_util.h"

#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static const char cache_help[] =
    "Usage: modelbench cache COMMAND [OPTIONS]\n"
    "\n"
    "The build cache keeps the prepared artifact of each conversion of each\n"
    "model (converted ONNX files, a runtime's optimised model, quantisation\n"
    "parameters, a partition plan), so the next bench of the same model\n"
    "skips the build. A build is keyed by the model's sha256, the input\n"
    "shapes, the conversion and its options, the modelbench and runtime\n"
    "versions and the machine; a change of any of them builds again.\n"
    "\n"
    "Commands:\n"
    "  list [--json]          every build: id, model, conversion, status,\n"
    "                         hits, size, last use, and why it is stale\n"
    "  stats BUILD [--json]   everything recorded about one build\n"
    "  delete BUILD...|--all  remove builds\n"
    "  clean [--dry-run]      remove failed builds, builds of another\n"
    "                         modelbench version and orphans (no state, a\n"
    "                         model file that is gone or changed, ...)\n"
    "  report [-o FILE.csv]   CSV of the latest result of every model x\n"
    "                         conversion with its build\n"
    "  location               print the cache folder\n"
    "\n"
    "BUILD is a build id as 'cache list' prints it\n"
    "(MODEL-SHA12/CONVERSION-HASH12), or a prefix that only one id has.\n"
    "\n"
    "Options of every command:\n"
    "      --cache-dir DIR  the cache folder (default: $MODELBENCH_CACHE_DIR,\n"
    "                       else ~/.cache/modelbench)\n"
    "  -h, --help           show help\n"
    "\n"
    "Exit status: 0 success, 1 failure (a build in use or not removable, an\n"
    "unreadable cache), 2 usage error.\n";

enum { OPT_CACHE_DIR = 256, OPT_JSON, OPT_ALL, OPT_DRY_RUN };

/* Options every subcommand parses. */
typedef struct sub_args {
  const char *cmd; /* "cache list", for messages */
  const char *cache_dir;
  bool json, all, dry_run, help;
  const char *output;
  int n_operands;
  char **operands; /* into argv */
} sub_args;

/* What one subcommand accepts besides --cache-dir and --help. */
enum { ACCEPT_JSON = 1, ACCEPT_ALL = 2, ACCEPT_DRY_RUN = 4, ACCEPT_OUTPUT = 8 };

/* Parses argv (argv[0] is the subcommand). Returns an exit code; help
 * sets a->help. */
static int parse_sub(int argc, char **argv, int accept, int min_operands,
                     int max_operands, sub_args *a) {
  static const struct option options[] = {
      {"cache-dir", required_argument, NULL, OPT_CACHE_DIR},
      {"json", no_argument, NULL, OPT_JSON},
      {"all", no_argument, NULL, OPT_ALL},
      {"dry-run", no_argument, NULL, OPT_DRY_RUN},
      {"output", required_argument, NULL, 'o'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  static const struct {
    int opt, flag;
    const char *name;
  } gated[] = {
      {OPT_JSON, ACCEPT_JSON, "--json"},
      {OPT_ALL, ACCEPT_ALL, "--all"},
      {OPT_DRY_RUN, ACCEPT_DRY_RUN, "--dry-run"},
      {'o', ACCEPT_OUTPUT, "--output"},
  };
  int c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":o:h", options, NULL)) != -1) {
    for (size_t i = 0; i < MB_ARRAY_COUNT(gated); i++)
      if (c == gated[i].opt && !(accept & gated[i].flag))
        return mb__cli_usage_error(a->cmd, "unknown option '%s'",
                                   argv[optind - 1]);
    switch (c) {
    case OPT_CACHE_DIR:
      if (!optarg[0])
        return mb__cli_usage_error(a->cmd, "--cache-dir: empty folder name");
      a->cache_dir = optarg;
      break;
    case OPT_JSON:
      a->json = true;
      break;
    case OPT_ALL:
      a->all = true;
      break;
    case OPT_DRY_RUN:
      a->dry_run = true;
      break;
    case 'o':
      if (!optarg[0])
        return mb__cli_usage_error(a->cmd, "--output: empty file name");
      a->output = optarg;
      break;
    case 'h':
      a->help = true;
      return MB_EXIT_OK;
    default:
      return mb__cli_bad_option(a->cmd, c, argv);
    }
  }
  a->operands = argv + optind;
  a->n_operands = argc - optind;
  if (a->n_operands > max_operands)
    return mb__cli_usage_error(a->cmd, "unexpected argument '%s'",
                               a->operands[max_operands]);
  if (a->n_operands < min_operands)
    return mb__cli_usage_error(a->cmd, "missing BUILD argument");
  return MB_EXIT_OK;
}

/* Resolves (and creates) the cache folder. Returns an exit code. */
static int resolve_dir(const sub_args *a, char *buf, size_t size) {
  mb_error err;
  memset(&err, 0, sizeof err);
  if (mb__cache_dir(a->cache_dir, buf, size, &err) != MB_STATUS_OK)
    return mb__cli_fail(NULL, &err);
  return MB_EXIT_OK;
}

static int load_list(const char *dir, mb_build_list **list) {
  mb_error err;
  memset(&err, 0, sizeof err);
  if (mb__cache_list(dir, list, &err) != MB_STATUS_OK)
    return mb__cli_fail(NULL, &err);
  return MB_EXIT_OK;
}

/* "2025-01-31T12:00:00Z" as "2025-01-31 12:00:00"; "-" when unknown. */
static const char *show_time(const char *utc, char *buf, size_t size) {
  if (!utc)
    return "-";
  snprintf(buf, size, "%s", utc);
  if (strlen(buf) == 20 && buf[10] == 'T') {
    buf[10] = ' ';
    buf[19] = '\0';
  }
  return buf;
}

/* "ok", "ok (lean)", "failed", "building", or "-" without a state. */
static const char *show_status(const mb_build_info *b, char *buf, size_t size) {
  if (!b->has_state)
    return b->in_use ? "building" : "-";
  snprintf(buf, size, "%s%s", mb__build_status_name(b->state.status),
           b->state.lean ? " (lean)" : "");
  return buf;
}

/* The end of s when it is longer than width (the file name is there). */
static const char *tail(const char *s, int width) {
  int n = (int)strlen(s);
  return n > width ? s + n - width : s;
}

/* ---- list ---- */

static const char list_help[] =
    "Usage: modelbench cache list [MODEL...] [--json] [--cache-dir DIR]\n"
    "\n"
    "Lists every build in the cache (with MODEL, only that model's: a prefix\n"
    "of the hash 'modelbench script' shows or of the model's sha256, or the\n"
    "model file's or the script's path; MODEL/CONVERSION one conversion's):\n"
    "its id (give it, or MODEL/CONVERSION, to 'cache stats' or 'cache\n"
    "delete'), the model file (or the script) it was built from, the\n"
    "conversion, its status (ok, failed, building; 'lean' when --lean-cache\n"
    "removed its artifacts), how often it was reused, its size on disk, its\n"
    "last use (UTC) and, when 'cache clean' would remove it, why.\n";

/* Whether build b is listed: no MODEL given, or b is of one of them. */
static bool selected(const sub_args *a, const mb_build_info *b) {
  for (int i = 0; i < a->n_operands; i++)
    if (mb__build_of_model(b, a->operands[i]))
      return true;
  return a->n_operands == 0;
}

/* Where a build's model came from: its script (a script's model) or its
 * model file. */
static const char *model_shown(const mb_build_info *b) {
  const mb_build_key *k = &b->state.key;
  if (!b->has_state)
    return "-";
  return k->source_script ? k->source_script
         : k->model_path  ? k->model_path
                          : "-";
}

static void json_info(mb_json *j, const mb_build_info *b, bool full) {
  const mb_build_state *s = &b->state;
  mb__json_object_begin(j);
  mb__json_kv_string(j, "id", b->id);
  mb__json_kv_string(j, "folder", b->folder);
  mb__json_key(j, "model");
  mb__json_object_begin(j);
  mb__json_kv_string(j, "path", b->has_state ? s->key.model_path : NULL);
  mb__json_kv_string(j, "sha256", b->has_state ? s->key.model_sha256 : NULL);
  if (full && s->model_bytes >= 0)
    mb__json_kv_int(j, "bytes", s->model_bytes);
  mb__json_object_end(j);
  mb__json_key(j, "source"); /* a script's model, else null */
  if (b->has_state && s->key.source_script) {
    mb__json_object_begin(j);
    mb__json_kv_string(j, "script", s->key.source_script);
    mb__json_kv_string(j, "class", s->key.source_class);
    mb__json_kv_string(j, "model_hash", s->key.source_hash);
    mb__json_object_end(j);
  } else {
    mb__json_null(j);
  }
  mb__json_kv_string(j, "conversion", b->has_state ? s->key.conversion : NULL);
  mb__json_kv_string(j, "status",
                     b->has_state ? mb__build_status_name(s->status) : NULL);
  mb__json_kv_string(j, "error", b->has_state ? s->error : NULL);
  mb__json_kv_bool(j, "in_use", b->in_use);
  mb__json_kv_bool(j, "lean", b->has_state && s->lean);
  mb__json_kv_int(j, "hits", b->has_state ? s->hits : 0);
  mb__json_kv_int(j, "disk_bytes", b->disk_bytes);
  mb__json_kv_string(j, "last_used", b->has_state ? s->last_used : NULL);
  mb__json_key(j, "stale");
  if (b->stale == MB_BUILD_STALE_NONE) {
    mb__json_null(j);
  } else {
    mb__json_object_begin(j);
    mb__json_kv_string(j, "kind", mb__build_stale_name(b->stale));
    mb__json_kv_string(j, "reason", b->stale_reason);
    mb__json_object_end(j);
  }
  if (full && b->has_state) {
    mb__json_key(j, "key");
    mb__json_object_begin(j);
    for (int i = 0; i < MB_BUILD_KEY_PART_COUNT; i++)
      mb__json_kv_string(j, mb__build_key_part_json((mb_build_key_part)i),
                         mb__build_key_get(&s->key, (mb_build_key_part)i));
    mb__json_object_end(j);
    mb__json_kv_string(j, "key_hash", s->key_hash);
    mb__json_kv_double(j, "build_ms", s->build_ms);
    mb__json_key(j, "stages");
    mb__json_array_begin(j);
    for (int i = 0; i < s->n_stages; i++) {
      mb__json_object_begin(j);
      mb__json_kv_string(j, "name", s->stages[i].name);
      mb__json_kv_double(j, "ms", s->stages[i].ms);
      mb__json_object_end(j);
    }
    mb__json_array_end(j);
    mb__json_key(j, "artifacts");
    mb__json_array_begin(j);
    for (int i = 0; i < s->n_artifacts; i++) {
      mb__json_object_begin(j);
      mb__json_kv_string(j, "name", s->artifacts[i].name);
      mb__json_kv_int(j, "bytes", s->artifacts[i].bytes);
      mb__json_object_end(j);
    }
    mb__json_array_end(j);
    mb__json_kv_string(j, "created", s->created);
    mb__json_kv_string(j, "updated", s->updated);
    mb__json_kv_int(j, "builds", s->builds);
  }
  mb__json_object_end(j);
}

static int cmd_list(const sub_args *a) {
  char dir[PATH_MAX];
  mb_build_list *list = NULL;
  int rc = resolve_dir(a, dir, sizeof dir);
  if (rc || (rc = load_list(dir, &list)))
    return rc;
  if (a->json) {
    mb_json j;
    mb__json_init(&j, stdout, true);
    mb__json_object_begin(&j);
    mb__json_kv_string(&j, "cache_dir", dir);
    mb__json_key(&j, "builds");
    mb__json_array_begin(&j);
    for (int i = 0; i < list->n_builds; i++)
      if (selected(a, &list->builds[i]))
        json_info(&j, &list->builds[i], false);
    mb__json_array_end(&j);
    mb__json_object_end(&j);
    goto done;
  }
  int id_w = 5, model_w = 5, conv_w = 10, status_w = 6, shown = 0;
  int64_t total = 0;
  for (int i = 0; i < list->n_builds; i++) {
    const mb_build_info *b = &list->builds[i];
    char status[32];
    if (!selected(a, b))
      continue;
    shown++;
    id_w = MB_MAX(id_w, (int)strlen(b->id));
    model_w = MB_MAX(model_w, (int)strlen(model_shown(b)));
    if (b->has_state && b->state.key.conversion)
      conv_w = MB_MAX(conv_w, (int)strlen(b->state.key.conversion));
    status_w = MB_MAX(status_w, (int)strlen(show_status(b, status, 32)));
    total += b->disk_bytes;
  }
  if (shown == 0) {
    if (a->n_operands)
      printf("no builds of %s in %s\n", a->operands[0], dir);
    else
      printf("no builds in %s\n", dir);
    goto done;
  }
  model_w = MB_MIN(model_w, 40);
  char size[32];
  printf("%d build%s in %s (%s)\n", shown, shown == 1 ? "" : "s", dir,
         mb__cli_bytes((double)total, size, sizeof size));
  printf("%-*s  %-*s  %-*s  %-*s  %6s  %10s  %-19s  %s\n", id_w, "BUILD",
         model_w, "MODEL", conv_w, "CONVERSION", status_w, "STATUS", "HITS",
         "SIZE", "LAST USED (UTC)", "STALE");
  for (int i = 0; i < list->n_builds; i++) {
    const mb_build_info *b = &list->builds[i];
    const mb_build_state *s = &b->state;
    char status[32], time[32], hits[24];
    const char *model = model_shown(b);
    if (!selected(a, b))
      continue;
    snprintf(hits, sizeof hits, "%lld",
             (long long)(b->has_state ? s->hits : 0));
    printf("%-*s  %-*s  %-*s  %-*s  %6s  %10s  %-19s  %s\n", id_w,
           mb__cli_text(b->id), model_w, tail(mb__cli_text(model), model_w),
           conv_w,
           mb__cli_text(b->has_state && s->key.conversion ? s->key.conversion
                                                          : "-"),
           status_w, show_status(b, status, sizeof status), hits,
           mb__cli_bytes((double)b->disk_bytes, size, sizeof size),
           show_time(b->has_state ? s->last_used : NULL, time, sizeof time),
           mb__cli_text(b->stale_reason));
  }
done:
  mb__build_list_free(list);
  return MB_EXIT_OK;
}

/* ---- stats ---- */

static const char stats_help[] =
    "Usage: modelbench cache stats BUILD [--json] [--cache-dir DIR]\n"
    "\n"
    "Shows everything the cache recorded about one build: status and error,\n"
    "every part of its key, the time of each build stage, the artifacts and\n"
    "their sizes, when it was made and last used, and how often it was\n"
    "reused. BUILD is an id from 'cache list', a prefix only one id has, or\n"
    "MODEL/CONVERSION (MODEL: a model hash prefix or path, as 'cache list'\n"
    "takes it).\n";

/* Resolves one BUILD operand: an id or a prefix only one id has, else the
 * builds of MODEL[/CONVERSION] (mb__build_of_model). With `many`, every
 * build of the model goes into found[] (size list->n_builds); without,
 * one must. Returns how many were found, -1 after printing why none. */
static int resolve_builds(const mb_build_list *list, const char *operand,
                          bool many, const mb_build_info **found) {
  mb_error err;
  memset(&err, 0, sizeof err);
  mb_status status = mb__build_list_find(list, operand, &found[0], &err);
  if (status == MB_STATUS_OK)
    return 1;
  if (status != MB_STATUS_NOT_FOUND) {
    mb__cli_fail(NULL, &err);
    return -1;
  }
  int n = 0;
  char names[256] = "";
  size_t used = 0;
  for (int i = 0; i < list->n_builds; i++) {
    const mb_build_info *b = &list->builds[i];
    if (!mb__build_of_model(b, operand))
      continue;
    if (many || n == 0)
      found[many ? n : 0] = b;
    if (n < 4) {
      int w =
          snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "",
                   b->state.key.conversion ? b->state.key.conversion : b->id);
      if (w > 0)
        used = MB_MIN(sizeof names - 1, used + (size_t)w);
    }
    n++;
  }
  if (n == 0) {
    mb__cli_fail(NULL, &err);
    return -1;
  }
  if (n > 1 && !many) {
    mb__cli_error(NULL,
                  "'%s' is a model with %d builds (%s%s): give "
                  "MODEL/CONVERSION or a build id",
                  operand, n, names, n > 4 ? ", ..." : "");
    return -1;
  }
  return n;
}

static void print_stats(const mb_build_info *b) {
  const mb_build_state *s = &b->state;
  char buf[64], status[32];
  /* state.json is data (a shared cache is anybody's): its text is printed
   * escaped. */
  printf("build        %s\n", mb__cli_text(b->id));
  printf("folder       %s\n", mb__cli_text(b->folder));
  printf("status       %s%s\n", show_status(b, status, sizeof status),
         b->in_use ? " (in use by another modelbench)" : "");
  printf("stale        %s\n",
         b->stale_reason ? mb__cli_text(b->stale_reason) : "no");
  printf("size         %s\n",
         mb__cli_bytes((double)b->disk_bytes, buf, sizeof buf));
  if (!b->has_state)
    return;
  if (s->error)
    printf("error        %s\n", mb__cli_text(s->error));
  printf("model        %s\n", mb__cli_text(s->key.model_path));
  if (s->key.source_script)
    printf("script       %s (%s, model hash %.12s)\n",
           mb__cli_text(s->key.source_script),
           s->key.source_class ? mb__cli_text(s->key.source_class) : "?",
           mb__cli_text(s->key.source_hash));
  printf("key          %s\n", mb__cli_text(s->key_hash));
  for (int i = 0; i < MB_BUILD_KEY_PART_COUNT; i++) {
    const char *v = mb__build_key_get(&s->key, (mb_build_key_part)i);
    printf("  %-20s %s\n", mb__build_key_part_label((mb_build_key_part)i),
           mb__cli_text(v && v[0] ? v : "-"));
  }
  if (isnan(s->build_ms))
    printf("build time   -\n");
  else
    printf("build time   %.3f ms\n", s->build_ms);
  for (int i = 0; i < s->n_stages; i++)
    printf("  %-20s %.3f ms\n", mb__cli_text(s->stages[i].name),
           s->stages[i].ms);
  printf("artifacts    %d%s\n", s->n_artifacts,
         s->lean ? " (removed: lean cache)" : "");
  for (int i = 0; i < s->n_artifacts; i++)
    printf("  %-20s %s\n", mb__cli_text(s->artifacts[i].name),
           s->artifacts[i].bytes < 0
               ? "missing"
               : mb__cli_bytes((double)s->artifacts[i].bytes, buf, sizeof buf));
  printf("created      %s\n", show_time(s->created, buf, sizeof buf));
  printf("updated      %s\n", show_time(s->updated, buf, sizeof buf));
  printf("last used    %s\n", show_time(s->last_used, buf, sizeof buf));
  printf("hits         %lld\n", (long long)s->hits);
  printf("builds       %lld\n", (long long)s->builds);
}

static int cmd_stats(const sub_args *a) {
  char dir[PATH_MAX];
  mb_build_list *list = NULL;
  const mb_build_info *b = NULL;
  mb_error err;
  memset(&err, 0, sizeof err);
  int rc = resolve_dir(a, dir, sizeof dir);
  if (rc || (rc = load_list(dir, &list)))
    return rc;
  if (resolve_builds(list, a->operands[0], false, &b) < 0) {
    rc = MB_EXIT_FAILURE;
  } else if (a->json) {
    mb_json j;
    mb__json_init(&j, stdout, true);
    json_info(&j, b, true);
  } else {
    print_stats(b);
  }
  mb__build_list_free(list);
  return rc;
}

/* ---- delete ---- */

/* The kept calibrations (<cache>/calibration/<key>.json): all removed with
 * --all, as the builds whose conversions made them. Returns how many. */
static int delete_calibrations(const char *dir, long long *bytes) {
  char folder[PATH_MAX + 32];
  int removed = 0;
  snprintf(folder, sizeof folder, "%s/%s", dir, MB_CALIBRATION_CACHE_SUBDIR);
  DIR *d = opendir(folder);
  if (!d)
    return 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t n = strlen(e->d_name);
    char path[PATH_MAX + NAME_MAX + 64];
    struct stat st;
    if (n < 6 || strcmp(e->d_name + n - 5, ".json") != 0)
      continue;
    snprintf(path, sizeof path, "%s/%s", folder, e->d_name);
    if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && unlink(path) == 0) {
      removed++;
      *bytes += (long long)st.st_size;
    }
  }
  closedir(d);
  rmdir(folder);
  return removed;
}

static const char delete_help[] =
    "Usage: modelbench cache delete BUILD... | --all [--cache-dir DIR]\n"
    "\n"
    "Removes the named builds (ids from 'cache list', or prefixes only one\n"
    "id has; MODEL, a model hash prefix or path as 'cache list' takes it:\n"
    "every build of that model; MODEL/CONVERSION: one), or with --all every\n"
    "build. A build that another modelbench\n"
    "is using is left alone and the command exits 1. The results database\n"
    "is not touched.\n";

static int delete_one(const char *dir, const mb_build_info *b, int *removed,
                      int64_t *bytes) {
  mb_error err;
  memset(&err, 0, sizeof err);
  if (mb__build_remove(dir, b->id, &err) != MB_STATUS_OK)
    return mb__cli_fail(NULL, &err);
  printf("removed %s\n", mb__cli_text(b->id));
  (*removed)++;
  *bytes += b->disk_bytes;
  return MB_EXIT_OK;
}

static int cmd_delete(const sub_args *a) {
  char dir[PATH_MAX], size[32];
  mb_build_list *list = NULL;
  mb_error err;
  int removed = 0;
  int64_t bytes = 0;
  memset(&err, 0, sizeof err);
  if (a->all == (a->n_operands > 0))
    return mb__cli_usage_error(a->cmd,
                               a->all ? "give BUILD ids or --all, not both"
                                      : "missing BUILD argument (or --all)");
  int rc = resolve_dir(a, dir, sizeof dir);
  if (rc || (rc = load_list(dir, &list)))
    return rc;
  if (a->all) {
    for (int i = 0; i < list->n_builds; i++)
      if (delete_one(dir, &list->builds[i], &removed, &bytes))
        rc = MB_EXIT_FAILURE;
  } else {
    /* Every operand is resolved before anything is removed, so a typo in
     * the second one does not leave the first one half done; a build named
     * twice (by id and by its model) is removed once. */
    size_t n = (size_t)MB_MAX(list->n_builds, 1);
    const mb_build_info **found = calloc(n, sizeof *found);
    bool *marked = calloc(n, sizeof *marked);
    if (!found || !marked) {
      free(found);
      free(marked);
      mb__cli_error(NULL, "out of memory");
      rc = MB_EXIT_FAILURE;
      goto done;
    }
    for (int i = 0; i < a->n_operands && !rc; i++) {
      int k = resolve_builds(list, a->operands[i], true, found);
      if (k < 0)
        rc = MB_EXIT_FAILURE;
      while (k-- > 0)
        marked[found[k] - list->builds] = true;
    }
    for (int i = 0; i < list->n_builds && rc == MB_EXIT_OK; i++)
      if (marked[i] && delete_one(dir, &list->builds[i], &removed, &bytes))
        rc = MB_EXIT_FAILURE;
    free(found);
    free(marked);
  }
  if (a->all && list->n_builds == 0)
    printf("no builds in %s\n", dir);
  else if (removed)
    printf("removed %d build%s (%s)\n", removed, removed == 1 ? "" : "s",
           mb__cli_bytes((double)bytes, size, sizeof size));
  if (a->all) {
    long long calibration_bytes = 0;
    int calibrations = delete_calibrations(dir, &calibration_bytes);
    if (calibrations)
      printf("removed %d kept calibration%s (%s)\n", calibrations,
             calibrations == 1 ? "" : "s",
             mb__cli_bytes((double)calibration_bytes, size, sizeof size));
    /* Model folders that held no build are removed too. */
    char builds_dir[PATH_MAX + 16];
    snprintf(builds_dir, sizeof builds_dir, "%s/%s", dir,
             MB_BUILD_CACHE_SUBDIR);
    for (int i = 0; i < list->n_empty_models; i++) {
      char path[PATH_MAX + NAME_MAX + 32];
      snprintf(path, sizeof path, "%s/%s", builds_dir, list->empty_models[i]);
      rmdir(path);
    }
  }
done:
  mb__build_list_free(list);
  return rc;
}

/* ---- clean ---- */

static const char clean_help[] =
    "Usage: modelbench cache clean [--dry-run] [--cache-dir DIR]\n"
    "\n"
    "Removes the builds that are no use any more, saying which and why:\n"
    "failed builds, builds made by another modelbench version, and orphans\n"
    "(no or unreadable state.json, a leftover temporary file, a build that\n"
    "was interrupted, or a model file that is gone or no longer has the\n"
    "recorded sha256), and model folders without builds. Builds in use by\n"
    "another modelbench are skipped. With --dry-run, only says what it\n"
    "would remove.\n";

static void on_clean(void *user, const mb_cache_clean_item *item) {
  int *failures = user;
  char size[32];
  mb__cli_bytes((double)item->bytes, size, sizeof size);
  switch (item->action) {
  case MB_CLEAN_REMOVED:
    printf("removed %s (%s): %s\n", mb__cli_text(item->id), size,
           mb__cli_text(item->reason));
    break;
  case MB_CLEAN_WOULD_REMOVE:
    printf("would remove %s (%s): %s\n", mb__cli_text(item->id), size,
           mb__cli_text(item->reason));
    break;
  case MB_CLEAN_SKIPPED:
    printf("skipped %s: %s (stale: %s)\n", mb__cli_text(item->id),
           mb__cli_text(item->error), mb__cli_text(item->reason));
    break;
  case MB_CLEAN_FAILED:
    (*failures)++;
    mb__cli_error(item->id, "cannot remove: %s (stale: %s)", item->error,
                  item->reason);
    break;
  }
}

static int cmd_clean(const sub_args *a) {
  char dir[PATH_MAX], size[32];
  int removed = 0, failures = 0;
  int64_t bytes = 0;
  mb_error err;
  memset(&err, 0, sizeof err);
  int rc = resolve_dir(a, dir, sizeof dir);
  if (rc)
    return rc;
  mb_status status = mb__cache_clean(dir, a->dry_run, on_clean, &failures,
                                     &removed, &bytes, &err);
  if (status != MB_STATUS_OK && !failures)
    return mb__cli_fail(NULL, &err);
  mb__cli_bytes((double)bytes, size, sizeof size);
  if (removed == 0 && !failures)
    printf("nothing to clean in %s\n", dir);
  else if (a->dry_run)
    printf("would remove %d item%s (%s)\n", removed, removed == 1 ? "" : "s",
           size);
  else
    printf("removed %d item%s (%s)\n", removed, removed == 1 ? "" : "s", size);
  return failures ? MB_EXIT_FAILURE : MB_EXIT_OK;
}

/* ---- report ---- */

static const char report_help[] =
    "Usage: modelbench cache report [-o FILE.csv] [--cache-dir DIR]\n"
    "\n"
    "Writes a CSV (RFC 4180) with one row per model x conversion: the latest\n"
    "result recorded in the results database and the conversion's build in\n"
    "the cache. Columns: model, model_sha256, conversion, status, median_ms,\n"
    "p90_ms, throughput_sps, max_abs_err, build_status, build_ms,\n"
    "cache_hits, last_run_time (UTC), script, class, parameters, labels.\n"
    "A model a script ran is one model by the hash 'modelbench script'\n"
    "shows: its results and builds share a row, under its name, with its\n"
    "script, class and parameters and its other labels (key=value;...).\n"
    "Every cell has a value; one that is unknown says so (n/a: ...).\n"
    "A text cell a spreadsheet would run as a formula (starting with =, +,\n"
    "-, @, tab or CR) starts with a single quote; numbers stay numbers.\n"
    "A cell without a number says why:\n"
    "  n/a: not run              a build but no result\n"
    "  n/a: failed (REASON)      the conversion failed\n"
    "  n/a: unavailable (REASON) not usable on the machine it ran on\n"
    "  n/a: not run (skipped)    skipped (fail-fast, ...)\n"
    "  n/a: not measured         ok, but this number is unknown\n"
    "  n/a: no build             a result but no build in the cache\n"
    "\n"
    "  -o, --output FILE    write the CSV to FILE (default: standard output)\n";

/* One row: the latest result and the latest build of a model x conversion.
 * Everything borrowed from the loaded runs and the build list. */
typedef struct report_row {
  const char *model_sha256, *conversion;
  const char *model_path;
  const mb_db_result *result; /* NULL: not run */
  const mb_db_run *run;       /* the result's run (its labels), or NULL */
  const char *run_time;
  const mb_build_info *build; /* NULL: no build */
} report_row;

typedef struct report_data {
  report_row *rows;
  int n_rows, cap;
  mb_db_run **runs; /* loaded, to free */
  int n_runs;
} report_data;

static report_row *find_row(report_data *d, const char *sha,
                            const char *conversion) {
  for (int i = 0; i < d->n_rows; i++)
    if (strcmp(d->rows[i].model_sha256, sha) == 0 &&
        strcmp(d->rows[i].conversion, conversion) == 0)
      return &d->rows[i];
  return NULL;
}

static report_row *add_row(report_data *d, const char *sha,
                           const char *conversion) {
  if (d->n_rows == d->cap) {
    int cap = d->cap ? d->cap * 2 : 32;
    report_row *bigger = realloc(d->rows, (size_t)cap * sizeof *bigger);
    if (!bigger)
      return NULL;
    d->rows = bigger;
    d->cap = cap;
  }
  report_row *r = &d->rows[d->n_rows++];
  memset(r, 0, sizeof *r);
  r->model_sha256 = sha;
  r->conversion = conversion;
  return r;
}

static int compare_rows(const void *pa, const void *pb) {
  const report_row *a = pa, *b = pb;
  const char *ma = a->model_path ? a->model_path : "";
  const char *mb = b->model_path ? b->model_path : "";
  int c = strcmp(ma, mb);
  if (!c)
    c = strcmp(a->model_sha256, b->model_sha256);
  return c ? c : strcmp(a->conversion, b->conversion);
}

/* Fills d from the database (newest run first, so the first result of a
 * model x conversion is its latest) and the builds. Returns an exit code. */
static int collect_report(const sub_args *a, const mb_build_list *list,
                          report_data *d) {
  char db_path[PATH_MAX];
  mb_db *db = NULL;
  mb_db_run_list *runs = NULL;
  mb_error err;
  int rc = MB_EXIT_OK;
  memset(&err, 0, sizeof err);
  if (mb__db_default_path(a->cache_dir, db_path, sizeof db_path, &err))
    return mb__cli_fail(NULL, &err);
  mb_status status = mb__db_open(db_path, false, &db, &err);
  if (status != MB_STATUS_OK && status != MB_STATUS_NOT_FOUND)
    return mb__cli_fail(NULL, &err);
  if (db && mb__db_list_runs(db, NULL, &runs, &err) != MB_STATUS_OK) {
    rc = mb__cli_fail(NULL, &err);
    goto done;
  }
  if (runs && runs->n_runs > 0 &&
      !(d->runs = calloc((size_t)runs->n_runs, sizeof *d->runs)))
    goto oom;
  for (int i = 0; runs && i < runs->n_runs; i++) {
    mb_db_run *run = NULL;
    if (mb__db_load_run(db, runs->runs[i].id, &run, &err) != MB_STATUS_OK) {
      rc = mb__cli_fail(NULL, &err);
      goto done;
    }
    d->runs[d->n_runs++] = run;
    if (!run->model_sha256)
      continue;
    for (int k = 0; k < run->n_results; k++) {
      const mb_db_result *res = &run->results[k];
      if (find_row(d, run->model_sha256, res->conversion))
        continue;
      report_row *row = add_row(d, run->model_sha256, res->conversion);
      if (!row)
        goto oom;
      row->model_path = run->model_path;
      row->result = res;
      row->run = run;
      row->run_time = run->time_utc;
    }
  }
  for (int i = 0; i < list->n_builds; i++) {
    const mb_build_info *b = &list->builds[i];
    const mb_build_key *key = &b->state.key;
    if (!b->has_state || !key->model_sha256 || !key->conversion)
      continue;
    /* A script's model is known by the hash the script front shows (its
     * results carry it); its builds record it beside their content hash. */
    const char *sha = key->source_hash ? key->source_hash : key->model_sha256;
    report_row *row = find_row(d, sha, key->conversion);
    if (!row && !(row = add_row(d, sha, key->conversion)))
      goto oom;
    /* Of several builds (other runtime versions, ...), the latest. */
    const char *when = b->state.updated ? b->state.updated : "";
    if (!row->build ||
        strcmp(when,
               row->build->state.updated ? row->build->state.updated : "") > 0)
      row->build = b;
    if (!row->model_path)
      row->model_path = key->model_path;
  }
  if (d->n_rows > 1)
    qsort(d->rows, (size_t)d->n_rows, sizeof *d->rows, compare_rows);
  goto done;
oom:
  mb__cli_error(NULL, "out of memory");
  rc = MB_EXIT_FAILURE;
done:
  mb__db_run_list_free(runs);
  mb__db_close(db);
  return rc;
}

typedef struct csv_writer {
  FILE *f;
  int n_cells;
} csv_writer;

/* One text field: report_util.h's CSV cell, neutralised when a
 * spreadsheet would take it for a formula. */
static void csv_cell(csv_writer *w, const char *s, mb_csv_cell kind) {
  if (w->n_cells++)
    fputc(',', w->f);
  mb__report_csv_cell(w->f, s, kind);
}

static void csv_field(csv_writer *w, const char *s) {
  csv_cell(w, s, MB_CSV_TEXT);
}

static void csv_end_row(csv_writer *w) {
  fputs("\r\n", w->f);
  w->n_cells = 0;
}

static void csv_number(csv_writer *w, double v, const char *missing) {
  char buf[64];
  if (!isfinite(v)) {
    csv_field(w, missing);
    return;
  }
  snprintf(buf, sizeof buf, "%.6g", v);
  csv_cell(w, buf, MB_CSV_NUMBER);
}

/* Why a result's figures are missing: "n/a: failed (REASON)", ... */
static const char *result_missing(const mb_db_result *r, char *buf,
                                  size_t size) {
  const char *why =
      r->error && r->error[0] ? r->error : mb_bench_status_name(r->status);
  switch (r->status) {
  case MB_BENCH_OK:
    return "n/a: not measured";
  case MB_BENCH_UNAVAILABLE:
    snprintf(buf, size, "n/a: unavailable (%s)", why);
    return buf;
  case MB_BENCH_SKIPPED:
    return "n/a: not run (skipped)";
  case MB_BENCH_BUILT:
    return "n/a: build only";
  default:
    snprintf(buf, size, "n/a: failed (%s)", why);
    return buf;
  }
}

static const char *const report_columns[] = {
    "model",        "model_sha256", "conversion",     "status",
    "median_ms",    "p90_ms",       "throughput_sps", "max_abs_err",
    "build_status", "build_ms",     "cache_hits",     "last_run_time",
    "script",       "class",        "parameters",     "labels",
};

/* The value of label `key` of the row's run ("key=value"), or NULL. */
static const char *run_label(const report_row *row, const char *key) {
  size_t n = strlen(key);
  for (int i = 0; row->run && i < row->run->n_labels; i++)
    if (strncmp(row->run->labels[i], key, n) == 0 &&
        row->run->labels[i][n] == '=')
      return row->run->labels[i] + n + 1;
  return NULL;
}

/* Labels with columns of their own, left out of "labels". */
static bool own_column(const char *label) {
  static const char *const keys[] = {"script", "class", "parameters", "model",
                                     "location"};
  for (size_t i = 0; i < MB_ARRAY_COUNT(keys); i++) {
    size_t n = strlen(keys[i]);
    if (strncmp(label, keys[i], n) == 0 && label[n] == '=')
      return true;
  }
  return false;
}

/* The row's script, class, parameters and other labels. */
static void write_source_fields(csv_writer *w, const report_row *row) {
  const mb_build_key *k = row->build ? &row->build->state.key : NULL;
  const char *script = run_label(row, "script");
  const char *cls = run_label(row, "class");
  const char *params = run_label(row, "parameters");
  csv_field(w, script                  ? script
               : k && k->source_script ? k->source_script
                                       : "n/a: not a script's model");
  csv_field(w, cls                    ? cls
               : k && k->source_class ? k->source_class
                                      : "n/a: unknown");
  csv_field(w, params ? params : "n/a: unknown");
  char labels[2048] = "";
  size_t used = 0;
  for (int i = 0; row->run && i < row->run->n_labels; i++) {
    if (own_column(row->run->labels[i]))
      continue;
    int n = snprintf(labels + used, sizeof labels - used, "%s%s",
                     used ? ";" : "", row->run->labels[i]);
    if (n < 0 || (size_t)n >= sizeof labels - used)
      break;
    used += (size_t)n;
  }
  csv_field(w, used ? labels : "n/a: none");
}

static void write_report_row(csv_writer *w, const report_row *row) {
  const mb_db_result *r = row->result;
  const mb_build_info *b = row->build;
  char missing[MB_ERROR_MESSAGE_SIZE + 32], buf[64];
  const char *why = "n/a: not run";
  if (r)
    why = result_missing(r, missing, sizeof missing);
  /* A script's model by its name (its manifest was a temporary file). */
  const char *name = run_label(row, "script") ? run_label(row, "model") : NULL;
  if (!name && row->build && row->build->state.key.source_script)
    name = row->build->state.key.source_class;
  csv_field(w, name              ? name
               : row->model_path ? row->model_path
                                 : "n/a: unknown");
  csv_field(w, row->model_sha256);
  csv_field(w, row->conversion);
  csv_field(w, r ? mb_bench_status_name(r->status) : "n/a: not run");
  csv_number(w, r ? r->median_ms : NAN, why);
  csv_number(w, r ? r->p90_ms : NAN, why);
  csv_number(w, r ? r->throughput_sps : NAN, why);
  csv_number(w, r ? r->max_abs_err : NAN, why);
  if (!b) {
    for (int i = 0; i < 3; i++)
      csv_field(w, "n/a: no build");
  } else {
    const mb_build_state *s = &b->state;
    char status[32];
    snprintf(status, sizeof status, "%s%s", mb__build_status_name(s->status),
             s->lean ? " (lean)" : "");
    csv_field(w, status);
    csv_number(w, s->build_ms,
               s->status == MB_BUILD_BUILDING ? "n/a: building"
                                              : "n/a: not measured");
    snprintf(buf, sizeof buf, "%lld", (long long)s->hits);
    csv_cell(w, buf, MB_CSV_NUMBER);
  }
  csv_field(w, row->run_time ? row->run_time : "n/a: not run");
  write_source_fields(w, row);
  csv_end_row(w);
}

static int cmd_report(const sub_args *a) {
  char dir[PATH_MAX];
  mb_build_list *list = NULL;
  report_data d = {0};
  mb_report_file rf = {0};
  mb_error err;
  memset(&err, 0, sizeof err);
  int rc = resolve_dir(a, dir, sizeof dir);
  if (rc || (rc = load_list(dir, &list)))
    return rc;
  if ((rc = collect_report(a, list, &d)))
    goto done;
  FILE *out = stdout;
  if (a->output) {
    if (mb__report_file_open(&rf, a->output, "CSV report", &err)) {
      rc = mb__cli_fail(NULL, &err);
      goto done;
    }
    out = rf.f;
  }
  csv_writer w = {out, 0};
  for (size_t i = 0; i < MB_ARRAY_COUNT(report_columns); i++)
    csv_field(&w, report_columns[i]);
  csv_end_row(&w);
  for (int i = 0; i < d.n_rows; i++)
    write_report_row(&w, &d.rows[i]);
  if (a->output) {
    if (mb__report_file_commit(&rf, &err))
      rc = mb__cli_fail(NULL, &err);
    else
      fprintf(stderr, "wrote %s (%d row%s)\n", a->output, d.n_rows,
              d.n_rows == 1 ? "" : "s");
  } else if (fflush(stdout) != 0) {
    mb__cli_error(NULL, "cannot write the report to standard output");
    rc = MB_EXIT_FAILURE;
  }
done:
  for (int i = 0; i < d.n_runs; i++)
    mb__db_run_free(d.runs[i]);
  free(d.runs);
  free(d.rows);
  mb__build_list_free(list);
  return rc;
}

/* ---- location ---- */

static const char location_help[] =
    "Usage: modelbench cache location [--cache-dir DIR]\n"
    "\n"
    "Prints the cache folder (holding builds/ and results.db), creating it\n"
    "when missing.\n";

static int cmd_location(const sub_args *a) {
  char dir[PATH_MAX];
  int rc = resolve_dir(a, dir, sizeof dir);
  if (!rc)
    printf("%s\n", dir);
  return rc;
}

/* ---- dispatch ---- */

static const char common_options[] =
    "\n"
    "Options:\n"
    "      --cache-dir DIR  the cache folder (default: $MODELBENCH_CACHE_DIR,\n"
    "                       else ~/.cache/modelbench)\n"
    "  -h, --help           show this help\n";

typedef struct sub_command {
  const char *name, *cmd;
  int accept, min_operands, max_operands;
  const char *help;
  int (*fn)(const sub_args *a);
} sub_command;

static const sub_command sub_commands[] = {
    {"list", "cache list", ACCEPT_JSON, 0, INT_MAX, list_help, cmd_list},
    {"stats", "cache stats", ACCEPT_JSON, 1, 1, stats_help, cmd_stats},
    {"delete", "cache delete", ACCEPT_ALL, 0, INT_MAX, delete_help, cmd_delete},
    {"clean", "cache clean", ACCEPT_DRY_RUN, 0, 0, clean_help, cmd_clean},
    {"report", "cache report", ACCEPT_OUTPUT, 0, 0, report_help, cmd_report},
    {"location", "cache location", 0, 0, 0, location_help, cmd_location},
};

int mb__cli_cache(int argc, char **argv) {
  if (argc < 2)
    return mb__cli_usage_error("cache", "missing command (list, stats, "
                                        "delete, clean, report, location)");
  const char *name = argv[1];
  if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 ||
      strcmp(name, "help") == 0) {
    fputs(cache_help, stdout);
    return MB_EXIT_OK;
  }
  for (size_t i = 0; i < MB_ARRAY_COUNT(sub_commands); i++) {
    const sub_command *sc = &sub_commands[i];
    if (strcmp(name, sc->name) != 0)
      continue;
    sub_args a;
    memset(&a, 0, sizeof a);
    a.cmd = sc->cmd;
    int rc = parse_sub(argc - 1, argv + 1, sc->accept, sc->min_operands,
                       sc->max_operands, &a);
    if (rc == MB_EXIT_OK && a.help) {
      fputs(sc->help, stdout);
      fputs(common_options, stdout);
    } else if (rc == MB_EXIT_OK)
      rc = sc->fn(&a);
    return rc;
  }
  if (name[0] == '-')
    return mb__cli_usage_error("cache",
                               "'%s' before the command: options go after "
                               "it (modelbench cache COMMAND [OPTIONS])",
                               name);
  /* benchit's `cache print` and `cache details`: a build's details. */
  if (strcmp(name, "print") == 0 || strcmp(name, "details") == 0)
    return mb__cli_usage_error("cache",
                               "unknown command '%s': did you mean 'cache "
                               "stats BUILD' (everything about one build) "
                               "or 'cache list'?",
                               name);
  return mb__cli_usage_error("cache",
                             "unknown command '%s' (list, stats, "
                             "delete, clean, report, location)",
                             name);
}
