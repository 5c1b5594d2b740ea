/* modelbench list-ops: the operators the reference interpreter implements,
 * one line per (domain, op type) with the opset versions it covers. */
#include "cli/cli_common.h"
#include "core/json_write.h"
#include "ops/op.h"

#include <stdlib.h>

static const char list_ops_help[] =
    "Usage: modelbench list-ops [--json]\n"
    "\n"
    "Lists the operators the reference interpreter implements, with the\n"
    "opset versions (since_version) of each implementation.\n"
    "\n"
    "Options:\n"
    "  --json      print JSON instead of text\n"
    "  -h, --help  show this help\n";

typedef struct op_list {
  const mb_op_def **defs;
  size_t count, cap;
  bool oom;
} op_list;

static void collect(const mb_op_def *def, void *user) {
  op_list *list = user;
  if (list->oom || !def->op_type || !def->op_type[0])
    return;
  if (list->count == list->cap) {
    size_t cap = list->cap ? list->cap * 2 : 256;
    const mb_op_def **grown = realloc(list->defs, sizeof *grown * cap);
    if (!grown) {
      list->oom = true;
      return;
    }
    list->defs = grown;
    list->cap = cap;
  }
  list->defs[list->count++] = def;
}

static const char *domain_name(const char *domain) {
  return domain && domain[0] ? domain : "ai.onnx";
}

static int compare_defs(const void *pa, const void *pb) {
  const mb_op_def *a = *(const mb_op_def *const *)pa;
  const mb_op_def *b = *(const mb_op_def *const *)pb;
  int c = strcmp(domain_name(a->domain), domain_name(b->domain));
  if (c == 0)
    c = strcmp(a->op_type, b->op_type);
  if (c == 0)
    c = (a->since_version > b->since_version) -
        (a->since_version < b->since_version);
  return c;
}

static bool same_op(const mb_op_def *a, const mb_op_def *b) {
  return strcmp(domain_name(a->domain), domain_name(b->domain)) == 0 &&
         strcmp(a->op_type, b->op_type) == 0;
}

static void print_text(const op_list *list) {
  size_t n_ops = 0;
  for (size_t i = 0; i < list->count;) {
    const mb_op_def *first = list->defs[i];
    printf("%-14s %-28s since", domain_name(first->domain), first->op_type);
    size_t j = i;
    for (; j < list->count && same_op(first, list->defs[j]); j++)
      printf("%s %d", j > i ? "," : "", list->defs[j]->since_version);
    printf("\n");
    n_ops++;
    i = j;
  }
  printf("%zu operators, %zu versions\n", n_ops, list->count);
}

static void print_json(const op_list *list) {
  mb_json j;
  mb__json_init(&j, stdout, true);
  mb__json_array_begin(&j);
  for (size_t i = 0; i < list->count;) {
    const mb_op_def *first = list->defs[i];
    mb__json_object_begin(&j);
    mb__json_kv_string(&j, "domain", domain_name(first->domain));
    mb__json_kv_string(&j, "op_type", first->op_type);
    mb__json_key(&j, "since_versions");
    mb__json_array_begin(&j);
    size_t k = i;
    for (; k < list->count && same_op(first, list->defs[k]); k++)
      mb__json_int(&j, list->defs[k]->since_version);
    mb__json_array_end(&j);
    mb__json_object_end(&j);
    i = k;
  }
  mb__json_array_end(&j);
}

int mb__cli_list_ops(int argc, char **argv) {
  static const struct option options[] = {
      {"json", no_argument, NULL, 'j'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  const char *cmd = "list-ops";
  bool json = false;
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
    switch (c) {
    case 'j':
      json = true;
      break;
    case 'h':
      fputs(list_ops_help, stdout);
      return MB_EXIT_OK;
    default:
      return mb__cli_bad_option(cmd, c, argv);
    }
  }
  if (optind < argc)
    return mb__cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
  op_list list = {NULL, 0, 0, false};
  mb__op_foreach(collect, &list);
  if (list.oom) {
    free(list.defs);
    mb__cli_error(NULL, "out of memory");
    return MB_EXIT_FAILURE;
  }
  if (list.count > 1)
    qsort(list.defs, list.count, sizeof *list.defs, compare_defs);
  if (json)
    print_json(&list);
  else
    print_text(&list);
  free(list.defs);
  return MB_EXIT_OK;
}
