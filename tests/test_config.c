/* Tests of the benchmark's configuration layer: the strict JSON parser, the
 * config file, the conversion registry (lookup, suggestions, lists), the
 * .npy reader and every input source (generated, test-set folders, .npy
 * folders, the loader callback), including each error a user can reach. */
/* nftw() for removing the temporary folders. */
#define _XOPEN_SOURCE 700

#include "bench/bench_internal.h"
#include "bench/data.h"
#include "conversions/conversion.h"
#include "core/json_parse.h"
#include "test.h"

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- helpers ---- */

static char tmp_root[256];

static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static void cleanup(void) {
  if (tmp_root[0])
    nftw(tmp_root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  tmp_root[0] = '\0';
}

/* A fresh temporary folder per test; the previous one is removed, the last
 * one at exit (also when a test failed half-way). */
static const char *fresh_dir(void) {
  static bool registered;
  if (!registered)
    registered = atexit(cleanup) == 0;
  if (tmp_root[0])
    nftw(tmp_root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  snprintf(tmp_root, sizeof tmp_root, "/tmp/mb-test-config-XXXXXX");
  if (!mkdtemp(tmp_root))
    tmp_root[0] = '\0';
  return tmp_root;
}

/* Returns "dir/name" in one of four rotating buffers (callers nest it, so
 * dir may itself be an earlier result: build in a local copy first). */
static const char *path_in(const char *dir, const char *name) {
  static char buf[4][1024];
  static int next;
  char joined[2048];
  char *p = buf[next++ % 4];
  snprintf(joined, sizeof joined, "%s/%s", dir, name);
  memcpy(p, joined, sizeof buf[0] - 1);
  p[sizeof buf[0] - 1] = '\0';
  return p;
}

static int write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  if (!f)
    return -1;
  fputs(text, f);
  return fclose(f);
}

static mb_status parse(const char *text, mb_json_doc **doc, mb_error *err) {
  return mb__json_parse(text, strlen(text), "t.json", doc, err);
}

/* ---- JSON parser ---- */

TEST(json_valid_document) {
  mb_error err;
  mb_json_doc *doc = NULL;
  const char *text =
      "\xef\xbb\xbf { \"a\": [1, -0, 2.5e3, true, false, null, {}, []],\n"
      "  \"s\": \"q\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\",\n"
      "  \"nul\": \"a\\u0000b\", \"big\": 9007199254740993,\n"
      "  \"neg\": -12, \"frac\": 1.0 }\n";
  ASSERT_OK(parse(text, &doc, &err), &err);
  const mb_json_value *root = &doc->root;
  ASSERT_EQ(root->type, MB_JSON_OBJECT);
  ASSERT_EQ(root->count, 6);
  const mb_json_value *a = mb__json_find(root, "a");
  ASSERT(a && a->type == MB_JSON_ARRAY);
  ASSERT_EQ(a->count, 8);
  ASSERT(a->items[0].is_integer && a->items[0].integer == 1);
  ASSERT_EQ(a->items[1].type, MB_JSON_NUMBER);
  ASSERT_NEAR(a->items[2].number, 2500.0, 0);
  ASSERT(!a->items[2].is_integer);
  ASSERT(a->items[3].type == MB_JSON_BOOL && a->items[3].boolean);
  ASSERT(a->items[4].type == MB_JSON_BOOL && !a->items[4].boolean);
  ASSERT_EQ(a->items[5].type, MB_JSON_NULL);
  ASSERT(a->items[6].type == MB_JSON_OBJECT && a->items[6].count == 0);
  ASSERT(a->items[7].type == MB_JSON_ARRAY && a->items[7].count == 0);
  const mb_json_value *s = mb__json_find(root, "s");
  ASSERT_STR_EQ(s->string, "q\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80");
  const mb_json_value *nul = mb__json_find(root, "nul");
  ASSERT_EQ(nul->string_len, 3);
  ASSERT(memcmp(nul->string, "a\0b", 3) == 0);
  const mb_json_value *big = mb__json_find(root, "big");
  ASSERT(big->is_integer);
  ASSERT(big->integer == 9007199254740993LL); /* beyond double precision */
  ASSERT_EQ(mb__json_find(root, "neg")->integer, -12);
  ASSERT(!mb__json_find(root, "frac")->is_integer);
  ASSERT(mb__json_find(root, "missing") == NULL);
  ASSERT(mb__json_find(a, "a") == NULL); /* not an object */
  /* Positions: the value of "s" starts on line 2. */
  ASSERT_EQ(s->line, 2);
  ASSERT_EQ(s->column, 8);
  ASSERT_STR_EQ(mb__json_type_name(MB_JSON_STRING), "string");
  mb__json_doc_free(doc);

  ASSERT_OK(parse("  42  ", &doc, &err), &err);
  ASSERT_EQ(doc->root.integer, 42);
  mb__json_doc_free(doc);
  return 0;
}

TEST(json_errors_name_line_and_column) {
  static const struct {
    const char *text;
    const char *message; /* expected substring */
  } cases[] = {
      {"", "t.json:1:1: empty document"},
      {"   \n  ", "t.json:2:3: empty document"},
      {"{", "1:2: unexpected end of input, expected a string key"},
      {"[1,]", "1:4: trailing comma before ']'"},
      {"{\"a\":1,}", "1:8: trailing comma before '}'"},
      {"{\"a\" 1}", "1:6: unexpected '1', expected ':' after key 'a'"},
      {"{\"a\":1 \"b\":2}",
       "1:8: unexpected '\"', expected ',' or '}' after the value of key 'a'"},
      {"[1 2]", "1:4: unexpected '2', expected ',' or ']'"},
      {"[1", "1:3: unexpected end of input, expected ',' or ']'"},
      {"tru", "1:1: invalid literal, expected true, false or null"},
      {"01", "1:1: invalid number: leading zeros"},
      {"1.", "1:3: unexpected end of input, expected a digit after the "
             "decimal point"},
      {"1e+", "1:4: unexpected end of input, expected a digit in the "
              "exponent"},
      {"-x", "1:2: unexpected 'x', expected a digit"},
      {"1e999", "1:1: number 1e999 is out of range"},
      {"\"abc", "1:5: unterminated string (it starts at 1:1)"},
      {"\"a\tb\"", "1:3: control character 0x09 in string"},
      {"\"\\x\"", "1:2: invalid escape \\'x' in string"},
      {"\"\\u12G4\"", "1:6: unexpected 'G', expected 4 hex digits"},
      {"\"\\udc00\"", "1:2: lone low surrogate \\uDC00"},
      {"\"\\ud800x\"", "1:2: high surrogate \\uD800 is not followed"},
      {"\"\\ud800\\u0041\"", "is followed by \\u0041, not a low surrogate"},
      {"\"\xff\"", "1:2: invalid UTF-8 byte 0xff in string"},
      {"\"\xc0\xaf\"", "1:2: invalid UTF-8 byte 0xc0"},
      {"\"\xed\xa0\x80\"", "invalid UTF-8 byte 0xed"}, /* a surrogate */
      {"{\"a\":1,\n \"a\":2}", "2:2: duplicate key 'a' (first at 1:2)"},
      {"1 2", "1:3: unexpected '2', expected end of input after the JSON "
              "value"},
      {"{1:2}", "1:2: unexpected '1', expected a string key"},
      {"'a'", "1:1: strings need double quotes"},
      {"// c\n1", "1:1: comments are not allowed"},
      {"NaN", "1:1: NaN and Infinity are not JSON numbers"},
      {"[\n  1,\n  x\n]", "3:3: unexpected 'x', expected a JSON value"},
      {"[\"\xc3\xa9\", x]", "1:7: unexpected 'x'"}, /* columns count chars */
      {"[\x01]", "1:2: unexpected byte 0x01"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mb_error err;
    mb_json_doc *doc = NULL;
    mb_status status = parse(cases[i].text, &doc, &err);
    if (status != MB_STATUS_PARSE)
      TEST_FAIL_("case %zu (%s): status %d, expected PARSE", i, cases[i].text,
                 (int)status);
    ASSERT(doc == NULL);
    ASSERT_CONTAINS(err.message, cases[i].message);
  }
  /* Nesting is bounded so that hostile input cannot exhaust the stack. */
  char deep[600];
  memset(deep, '[', 300);
  deep[300] = '\0';
  mb_error err;
  mb_json_doc *doc = NULL;
  ASSERT_EQ(parse(deep, &doc, &err), MB_STATUS_PARSE);
  ASSERT_CONTAINS(err.message, "nesting deeper than 256 levels");
  /* Text need not be NUL-terminated: only `size` bytes are read. */
  ASSERT_OK(mb__json_parse("[1]xyz", 3, "t.json", &doc, &err), &err);
  ASSERT_EQ(doc->root.count, 1);
  mb__json_doc_free(doc);
  return 0;
}

TEST(json_parse_file) {
  const char *dir = fresh_dir();
  mb_error err;
  mb_json_doc *doc = NULL;
  ASSERT_EQ(write_text(path_in(dir, "a.json"), "{\"k\": [1, 2]}"), 0);
  ASSERT_OK(mb__json_parse_file(path_in(dir, "a.json"), &doc, &err), &err);
  ASSERT_EQ(mb__json_find(&doc->root, "k")->count, 2);
  mb__json_doc_free(doc);
  ASSERT_EQ(mb__json_parse_file(path_in(dir, "missing.json"), &doc, &err),
            MB_STATUS_IO);
  ASSERT_CONTAINS(err.message, "missing.json");
  ASSERT_EQ(write_text(path_in(dir, "b.json"), "{\n\"k\": }"), 0);
  ASSERT_EQ(mb__json_parse_file(path_in(dir, "b.json"), &doc, &err),
            MB_STATUS_PARSE);
  ASSERT_CONTAINS(err.message, "b.json:2:6: unexpected '}'");
  return 0;
}

/* ---- conversion registry ---- */

static int index_of(const char *name) {
  for (int i = 0; i < mb_conversion_count(); i++)
    if (strcmp(mb__conversion_def(i)->name, name) == 0)
      return i;
  return -1;
}

TEST(conversion_table) {
  static const struct {
    int id;
    const char *name;
    const char *runtime;
    int in_default_set;
  } expected[] = {{1, "REFERENCE", "reference", 1},
                  {2, "ORT_CPU", "onnxruntime", 1},
                  {3, "ORT_CPU_NO_OPT", "onnxruntime", 1},
                  {4, "ORT_CPU_BASIC", "onnxruntime", 0},
                  {5, "ORT_CPU_EXTENDED", "onnxruntime", 0}};
  ASSERT(mb_conversion_count() >= 5);
  for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
    int index = index_of(expected[i].name);
    ASSERT(index >= 0);
    mb_conversion_info info;
    mb_error err;
    ASSERT_OK(mb_conversion_get(index, &info, &err), &err);
    ASSERT_EQ(info.id, expected[i].id);
    ASSERT_STR_EQ(info.runtime, expected[i].runtime);
    ASSERT_EQ(info.in_default_set, expected[i].in_default_set);
    ASSERT_EQ(info.device, MB_DEVICE_CPU);
    ASSERT_EQ(info.precision, MB_PRECISION_FP32);
    ASSERT(info.description[0]);
    /* Either available or it says why not. */
    ASSERT(info.available ? info.reason[0] == '\0' : info.reason[0] != '\0');
  }
  mb_conversion_info info;
  mb_error err;
  ASSERT_OK(mb_conversion_get(index_of("REFERENCE"), &info, &err), &err);
  ASSERT_EQ(info.available, 1);
  ASSERT_EQ(mb__conversion_def(index_of("ORT_CPU_NO_OPT"))->opt_level,
            MB_GRAPH_OPT_DISABLED);
  ASSERT_EQ(mb__conversion_def(index_of("ORT_CPU"))->opt_level,
            MB_GRAPH_OPT_ALL);
  ASSERT_EQ(mb_conversion_get(-1, &info, &err), MB_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(mb_conversion_get(mb_conversion_count(), &info, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT(mb__conversion_def(mb_conversion_count()) == NULL);
  /* Ids are unique. */
  for (int i = 0; i < mb_conversion_count(); i++)
    for (int j = i + 1; j < mb_conversion_count(); j++)
      ASSERT_NE(mb__conversion_def(i)->id, mb__conversion_def(j)->id);
  return 0;
}

TEST(enum_names) {
  ASSERT_STR_EQ(mb_device_name(MB_DEVICE_CPU), "cpu");
  ASSERT_STR_EQ(mb_device_name(MB_DEVICE_CUDA), "cuda");
  ASSERT_STR_EQ(mb_device_name(MB_DEVICE_AUTO), "auto");
  ASSERT_STR_EQ(mb_device_name(MB_DEVICE_COUNT), "invalid");
  ASSERT_STR_EQ(mb_precision_name(MB_PRECISION_BF16), "bf16");
  ASSERT_STR_EQ(mb_precision_name((mb_precision)-1), "invalid");
  ASSERT_STR_EQ(mb_bench_status_name(MB_BENCH_TIMEOUT), "timeout");
  ASSERT_STR_EQ(mb_bench_status_name(MB_BENCH_UNAVAILABLE), "unavailable");
  ASSERT_STR_EQ(mb_bench_status_name(MB_BENCH_STATUS_COUNT), "invalid");
  return 0;
}

TEST(conversion_find) {
  mb_error err;
  int index = -1;
  ASSERT_OK(mb_conversion_find("ORT_CPU", &index, &err), &err);
  ASSERT_EQ(index, index_of("ORT_CPU"));
  ASSERT_OK(mb_conversion_find("ort_cpu_no_opt", &index, &err), &err);
  ASSERT_EQ(index, index_of("ORT_CPU_NO_OPT"));
  ASSERT_OK(mb_conversion_find("1", &index, &err), &err);
  ASSERT_EQ(index, index_of("REFERENCE"));
  ASSERT_OK(mb_conversion_find("5", &index, &err), &err);
  ASSERT_EQ(index, index_of("ORT_CPU_EXTENDED"));

  index = 77;
  ASSERT_EQ(mb_conversion_find("ORT_CUP", &index, &err), MB_STATUS_NOT_FOUND);
  ASSERT_EQ(index, 77); /* untouched on failure */
  ASSERT_CONTAINS(err.message,
                  "unknown conversion 'ORT_CUP'; did you mean ORT_CPU, ");
  ASSERT_CONTAINS(err.message, "ORT_CPU_NO_OPT");
  ASSERT_CONTAINS(err.message, "(modelbench list shows all)");
  ASSERT_EQ(mb_conversion_find("REFERENSE", &index, &err), MB_STATUS_NOT_FOUND);
  ASSERT_CONTAINS(err.message, "did you mean REFERENCE?");
  ASSERT_EQ(mb_conversion_find("NO_OPT", &index, &err), MB_STATUS_NOT_FOUND);
  ASSERT_CONTAINS(err.message, "did you mean ORT_CPU_NO_OPT?");
  ASSERT_EQ(mb_conversion_find("TENSORRT_INT4", &index, &err),
            MB_STATUS_NOT_FOUND);
  ASSERT_CONTAINS(err.message, "unknown conversion 'TENSORRT_INT4' (modelbench "
                               "list shows all)");
  ASSERT_EQ(mb_conversion_find("999", &index, &err), MB_STATUS_NOT_FOUND);
  ASSERT_CONTAINS(err.message, "unknown conversion id 999");
  ASSERT_EQ(mb_conversion_find("99999999999999999999", &index, &err),
            MB_STATUS_NOT_FOUND);
  ASSERT_EQ(mb_conversion_find("", &index, &err), MB_STATUS_INVALID_ARGUMENT);

  ASSERT_EQ(mb__edit_distance("ORT_CUP", "ORT_CPU"), 1);
  ASSERT_EQ(mb__edit_distance("kitten", "sitting"), 3);
  ASSERT_EQ(mb__edit_distance("reference", "REFERENCE"), 0);
  ASSERT_EQ(mb__edit_distance("", "abc"), 3);
  return 0;
}

TEST(conversion_parse_list) {
  mb_error err;
  int list[8], count = 0;
  ASSERT_OK(mb_conversion_parse_list("REFERENCE,2,ORT_CPU_NO_OPT", list, 8,
                                     &count, &err),
            &err);
  ASSERT_EQ(count, 3);
  ASSERT_EQ(list[0], index_of("REFERENCE"));
  ASSERT_EQ(list[1], index_of("ORT_CPU"));
  ASSERT_EQ(list[2], index_of("ORT_CPU_NO_OPT"));
  /* Order is kept, whitespace trimmed. */
  ASSERT_OK(
      mb_conversion_parse_list(" ort_cpu ,\tREFERENCE ", list, 8, &count, &err),
      &err);
  ASSERT_EQ(count, 2);
  ASSERT_EQ(list[0], index_of("ORT_CPU"));
  ASSERT_EQ(list[1], index_of("REFERENCE"));

  static const struct {
    const char *list;
    const char *message;
  } bad[] = {
      {"", "empty conversion list"},
      {"  ", "empty conversion list"},
      {"REFERENCE,,2", "conversion list 'REFERENCE,,2': entry 2 is empty"},
      {"REFERENCE,", "entry 2 is empty"},
      {",REFERENCE", "entry 1 is empty"},
      {"REFERENCE,1", "REFERENCE is listed twice"},
      {"ORT_CPU,ort_cpu", "ORT_CPU is listed twice"},
      {"REFERENCE,ORT_CUP", "unknown conversion 'ORT_CUP'; did you mean"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    list[0] = -5;
    count = -5;
    ASSERT_NE(mb_conversion_parse_list(bad[i].list, list, 8, &count, &err),
              MB_STATUS_OK);
    ASSERT_CONTAINS(err.message, bad[i].message);
    ASSERT_EQ(list[0], -5); /* outputs untouched on failure */
    ASSERT_EQ(count, -5);
  }
  ASSERT_EQ(mb_conversion_parse_list("1,2,3", list, 2, &count, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "more than 2 entries");
  return 0;
}

static int no_avx9000(char *reason, size_t size) {
  snprintf(reason, size, "needs AVX9000");
  return 0;
}

TEST(conversion_register) {
  static const mb_conversion_def missing_runtime = {1001,
                                                    "TEST_NO_RUNTIME",
                                                    "no_such_runtime",
                                                    MB_DEVICE_CPU,
                                                    MB_PRECISION_FP32,
                                                    MB_GRAPH_OPT_DISABLED,
                                                    0,
                                                    "test row",
                                                    NULL};
  static const mb_conversion_def checked = {1002,
                                            "TEST+REFERENCE",
                                            "reference",
                                            MB_DEVICE_CPU,
                                            MB_PRECISION_FP16,
                                            MB_GRAPH_OPT_DISABLED,
                                            0,
                                            "test row",
                                            no_avx9000};
  static const mb_conversion_def clash_id = {1,
                                             "TEST_CLASH",
                                             "reference",
                                             MB_DEVICE_CPU,
                                             MB_PRECISION_FP32,
                                             MB_GRAPH_OPT_DISABLED,
                                             0,
                                             "",
                                             NULL};
  static const mb_conversion_def clash_name = {1003,
                                               "reference",
                                               "reference",
                                               MB_DEVICE_CPU,
                                               MB_PRECISION_FP32,
                                               MB_GRAPH_OPT_DISABLED,
                                               0,
                                               "",
                                               NULL};
  static const mb_conversion_def bad_name = {1004,
                                             "Bad__Name",
                                             "reference",
                                             MB_DEVICE_CPU,
                                             MB_PRECISION_FP32,
                                             MB_GRAPH_OPT_DISABLED,
                                             0,
                                             "",
                                             NULL};
  mb_error err;
  int before = mb_conversion_count();
  int a = mb__conversion_register(&missing_runtime, &err);
  ASSERT_EQ(a, before);
  int b = mb__conversion_register(&checked, &err);
  ASSERT_EQ(b, before + 1);
  ASSERT_EQ(mb__conversion_register(&clash_id, &err), -1);
  ASSERT_CONTAINS(err.message, "clashes with 'REFERENCE' (id 1)");
  ASSERT_EQ(mb__conversion_register(&clash_name, &err), -1);
  ASSERT_EQ(mb__conversion_register(&bad_name, &err), -1);
  ASSERT_CONTAINS(err.message, "Bad__Name");
  ASSERT_EQ(mb_conversion_count(), before + 2);

  mb_conversion_info info;
  ASSERT_OK(mb_conversion_get(a, &info, &err), &err);
  ASSERT_EQ(info.available, 0);
  ASSERT_CONTAINS(info.reason, "runtime 'no_such_runtime' is not built");
  ASSERT_OK(mb_conversion_get(b, &info, &err), &err);
  ASSERT_EQ(info.available, 0);
  ASSERT_STR_EQ(info.reason, "needs AVX9000");
  int index;
  ASSERT_OK(mb_conversion_find("test+reference", &index, &err), &err);
  ASSERT_EQ(index, b);
  ASSERT_OK(mb_conversion_find("1002", &index, &err), &err);
  ASSERT_EQ(index, b);
  return 0;
}

/* ---- config ---- */

TEST(config_defaults) {
  mb_bench_config c;
  memset(&c, 0xab, sizeof c);
  mb_bench_config_init(&c);
  ASSERT_EQ(c.batch_size, 1);
  ASSERT_EQ(c.n_samples, 1);
  ASSERT_EQ(c.device, MB_DEVICE_CPU);
  ASSERT_EQ(c.allow_device_override, 0);
  ASSERT_EQ(c.isolate, 1);
  ASSERT_EQ(c.fail_fast, 0);
  ASSERT_EQ(c.threads, 1);
  ASSERT_EQ(c.warmup_iterations, 5);
  ASSERT_NEAR(c.warmup_seconds, 0.5, 0);
  ASSERT_EQ(c.min_iterations, 20);
  ASSERT_NEAR(c.min_seconds, 2, 0);
  ASSERT_NEAR(c.max_seconds, 30, 0);
  ASSERT_NEAR(c.timeout_seconds, 300, 0);
  ASSERT_EQ(c.seed, 0);
  ASSERT_NEAR(c.rtol, 1e-3, 0);
  ASSERT_NEAR(c.atol, 1e-4, 0);
  ASSERT_EQ(c.n_conversions, 0);
  ASSERT(c.conversions == NULL);
  ASSERT_EQ(c.baseline, -1);
  ASSERT_EQ(c.shapes.n_shapes, 0);
  ASSERT_EQ(c.n_ranges, 0);
  ASSERT(c.inputs_dir == NULL && c.log_dir == NULL && c.loader == NULL);
  ASSERT(c.on_progress == NULL && c.on_result == NULL);
  return 0;
}

TEST(config_every_key) {
  const char *dir = fresh_dir();
  const char *path = path_in(dir, "config.json");
  ASSERT_EQ(write_text(path,
                       "{\n"
                       "  \"batch_size\": 8, \"n_samples\": 3,\n"
                       "  \"device\": \"auto\", \"allow_device_override\": "
                       "true,\n"
                       "  \"isolate\": false, \"fail_fast\": true,\n"
                       "  \"threads\": 4, \"warmup\": 2, \"warmup_time\": "
                       "0.25,\n"
                       "  \"min_iterations\": 7, \"min_time\": 1.5,\n"
                       "  \"max_time\": 9, \"timeout\": 60, \"seed\": "
                       "12345678901,\n"
                       "  \"conversions\": [\"ORT_CPU\", 1, "
                       "\"ort_cpu_no_opt\"],\n"
                       "  \"baseline\": \"REFERENCE\",\n"
                       "  \"shapes\": {\"x\": [1, 3, 224, 224], \"ids\": "
                       "[2, 128]},\n"
                       "  \"input_ranges\": {\"ids\": [0, 30000], \"*\": "
                       "[-2, 2]},\n"
                       "  \"inputs\": \"data/in\", \"rtol\": 0.01, \"atol\": "
                       "0,\n"
                       "  \"log_dir\": \"logs\", \"log_level\": \"debug\"\n"
                       "}\n"),
            0);
  mb_bench_config c;
  mb_bench_config_init(&c);
  void *storage = NULL;
  mb_error err;
  ASSERT_OK(mb_bench_config_load_json(path, &c, &storage, &err), &err);
  ASSERT(storage != NULL);
  ASSERT_EQ(c.batch_size, 8);
  ASSERT_EQ(c.n_samples, 3);
  ASSERT_EQ(c.device, MB_DEVICE_AUTO);
  ASSERT_EQ(c.allow_device_override, 1);
  ASSERT_EQ(c.isolate, 0);
  ASSERT_EQ(c.fail_fast, 1);
  ASSERT_EQ(c.threads, 4);
  ASSERT_EQ(c.warmup_iterations, 2);
  ASSERT_NEAR(c.warmup_seconds, 0.25, 0);
  ASSERT_EQ(c.min_iterations, 7);
  ASSERT_NEAR(c.min_seconds, 1.5, 0);
  ASSERT_NEAR(c.max_seconds, 9, 0);
  ASSERT_NEAR(c.timeout_seconds, 60, 0);
  ASSERT(c.seed == 12345678901ULL);
  ASSERT_EQ(c.n_conversions, 3);
  ASSERT_EQ(c.conversions[0], index_of("ORT_CPU"));
  ASSERT_EQ(c.conversions[1], index_of("REFERENCE"));
  ASSERT_EQ(c.conversions[2], index_of("ORT_CPU_NO_OPT"));
  ASSERT_EQ(c.baseline, 1); /* a position in the run list */
  ASSERT_EQ(c.shapes.n_shapes, 2);
  ASSERT_STR_EQ(c.shapes.shapes[0].name, "x");
  ASSERT_EQ(c.shapes.shapes[0].rank, 4);
  ASSERT_EQ(c.shapes.shapes[0].dims[3], 224);
  ASSERT_STR_EQ(c.shapes.shapes[1].name, "ids");
  ASSERT_EQ(c.shapes.shapes[1].dims[1], 128);
  ASSERT_EQ(c.n_ranges, 2);
  ASSERT_STR_EQ(c.ranges[0].name, "ids");
  ASSERT_NEAR(c.ranges[0].hi, 30000, 0);
  ASSERT(c.ranges[1].name == NULL); /* "*": every other input */
  ASSERT_NEAR(c.ranges[1].lo, -2, 0);
  ASSERT_STR_EQ(c.inputs_dir, "data/in");
  ASSERT_NEAR(c.rtol, 0.01, 0);
  ASSERT_NEAR(c.atol, 0, 0);
  ASSERT_STR_EQ(c.log_dir, "logs");
  ASSERT_EQ(c.log_level, 3);
  /* Everything the config points to lives in the one storage block. */
  const char *lo = storage;
  ASSERT((const char *)c.inputs_dir > lo && (const char *)c.conversions >= lo);
  free(storage);

  /* A file that sets nothing needing storage returns NULL storage; keys
   * it does not name keep the caller's values. */
  ASSERT_EQ(write_text(path, "{\"threads\": 2, \"conversions\": "
                             "\"REFERENCE, 3\"}"),
            0);
  mb_bench_config_init(&c);
  c.warmup_iterations = 99;
  c.log_dir = "caller";
  ASSERT_OK(mb_bench_config_load_json(path, &c, &storage, &err), &err);
  ASSERT_EQ(c.threads, 2);
  ASSERT_EQ(c.warmup_iterations, 99);
  ASSERT_STR_EQ(c.log_dir, "caller");
  ASSERT_EQ(c.n_conversions, 2);
  ASSERT_EQ(c.conversions[1], index_of("ORT_CPU_NO_OPT"));
  free(storage);
  ASSERT_EQ(write_text(path, "{\"threads\": 2}"), 0);
  ASSERT_OK(mb_bench_config_load_json(path, &c, &storage, &err), &err);
  ASSERT(storage == NULL);
  /* A baseline without a conversion list is a position in the default
   * set. */
  ASSERT_EQ(write_text(path, "{\"baseline\": \"ORT_CPU_NO_OPT\"}"), 0);
  mb_bench_config_init(&c);
  ASSERT_OK(mb_bench_config_load_json(path, &c, &storage, &err), &err);
  ASSERT_EQ(c.baseline, 2);
  free(storage);
  return 0;
}

/* keep_float: an array or the CLI's comma-separated string, kept in the
 * config's storage; and its build key is the set, not the list. */
TEST(config_keep_float) {
  const char *dir = fresh_dir();
  const char *path = path_in(dir, "config.json");
  mb_bench_config c;
  void *storage = NULL;
  mb_error err;
  ASSERT_EQ(write_text(path, "{\"keep_float\": [\"conv_1\", \"/fc/Gemm\"]}"),
            0);
  mb_bench_config_init(&c);
  ASSERT_OK(mb_bench_config_load_json(path, &c, &storage, &err), &err);
  ASSERT_EQ(c.n_keep_float, 2);
  ASSERT_STR_EQ(c.keep_float[0], "conv_1");
  ASSERT_STR_EQ(c.keep_float[1], "/fc/Gemm");
  ASSERT((const char *)c.keep_float >= (const char *)storage);
  free(storage);
  ASSERT_EQ(write_text(path, "{\"keep_float\": \"a,b,,c\"}"), 0);
  mb_bench_config_init(&c);
  ASSERT_OK(mb_bench_config_load_json(path, &c, &storage, &err), &err);
  ASSERT_EQ(c.n_keep_float, 3);
  ASSERT_STR_EQ(c.keep_float[2], "c");
  free(storage);

  /* The key: the same set in another order (or repeated) is the same
   * build; another set is another. */
  static const char *const ab[] = {"a", "b"}, *const ba[] = {"b", "a", "b"},
                           *const ac[] = {"a", "c"};
  char k_ab[64], k_ba[64], k_ac[64], k_none[64];
  mb_bench_config_init(&c);
  mb__keep_float_key(&c, k_none, sizeof k_none);
  ASSERT_STR_EQ(k_none, "");
  c.keep_float = ab;
  c.n_keep_float = 2;
  mb__keep_float_key(&c, k_ab, sizeof k_ab);
  c.keep_float = ba;
  c.n_keep_float = 3;
  mb__keep_float_key(&c, k_ba, sizeof k_ba);
  c.keep_float = ac;
  c.n_keep_float = 2;
  mb__keep_float_key(&c, k_ac, sizeof k_ac);
  ASSERT_STR_EQ(k_ab, k_ba);
  ASSERT(strcmp(k_ab, k_ac) != 0);
  ASSERT_CONTAINS(k_ab, ";keep_float=2 ");
  return 0;
}

TEST(config_errors_name_the_key) {
  static const struct {
    const char *text;
    const char *message;
  } cases[] = {
      {"{\n  \"batchsize\": 2\n}",
       "config.json:2:3: unknown key 'batchsize' (did you mean batch_size?)"},
      {"{\"warmup-time\": 1}", "unknown key 'warmup-time' (did you mean "
                               "warmup_time?)"},
      {"{\"frobnicate_all_the_things\": 1}",
       "unknown key 'frobnicate_all_the_things' (see 'modelbench bench "
       "--help'"},
      {"{\"threads\": \"4\"}",
       "config.json:1:13: key 'threads' must be an integer, got string"},
      {"{\"threads\": 2.5}",
       "key 'threads' must be an integer, got number 2.5"},
      {"{\"threads\": 0}", "key 'threads' must be between 1 and 1024, got 0"},
      {"{\"batch_size\": -1}", "key 'batch_size' must be between 1 and"},
      {"{\"min_time\": -1}", "key 'min_time' must be >= 0 seconds, got -1"},
      {"{\"warmup_time\": -0.5}", "key 'warmup_time' must be >= 0 seconds"},
      {"{\"timeout\": 0}", "key 'timeout' must be > 0 seconds, got 0"},
      {"{\"max_time\": 0}", "key 'max_time' must be > 0 seconds"},
      {"{\"min_time\": \"1\"}", "key 'min_time' must be a number, got string"},
      {"{\"rtol\": -1}", "key 'rtol' must be >= 0, got -1"},
      {"{\"isolate\": 1}", "key 'isolate' must be true or false, got number 1"},
      {"{\"seed\": -3}", "key 'seed' must be >= 0, got -3"},
      {"{\"seed\": 1.5}", "key 'seed' must be an integer"},
      {"{\"device\": \"gpu\"}",
       "key 'device' must be \"cpu\", \"cuda\" or \"auto\", got string 'gpu'"},
      {"{\"log_level\": \"verbose\"}", "key 'log_level' must be \"error\""},
      {"{\"conversions\": 5}", "key 'conversions' must be an array of "
                               "conversion names"},
      {"{\"conversions\": []}", "key 'conversions' is empty"},
      {"{\"conversions\": [\"ORT_CUP\"]}",
       "1:18: key 'conversions': unknown conversion 'ORT_CUP'; did you mean "
       "ORT_CPU"},
      {"{\"conversions\": [\"REFERENCE\", 1]}",
       "1:31: key 'conversions': REFERENCE is listed twice"},
      {"{\"conversions\": [true]}", "a conversion is a name or an id, got "
                                    "boolean"},
      {"{\"conversions\": \"REFERENCE,,2\"}",
       "key 'conversions': conversion list 'REFERENCE,,2': entry 2 is empty"},
      {"{\"conversions\": [\"REFERENCE\"], \"baseline\": \"ORT_CPU\"}",
       "key 'baseline': ORT_CPU is not among the conversions run"},
      {"{\"baseline\": \"ORT_CPU_BASIC\"}", "ORT_CPU_BASIC is not among"},
      {"{\"baseline\": \"NOPE\"}", "key 'baseline': unknown conversion"},
      {"{\"shapes\": [1, 2]}", "key 'shapes' must be an object"},
      {"{\"shapes\": {\"x\": [1, -2]}}",
       "key 'shapes': input 'x' must have an array of at most 8 non-negative "
       "integers"},
      {"{\"shapes\": {\"x\": [1,1,1,1,1,1,1,1,1]}}", "input 'x' must have"},
      {"{\"input_ranges\": {\"ids\": [5, 1]}}",
       "key 'input_ranges': input 'ids' must have [LO, HI] with LO <= HI"},
      {"{\"input_ranges\": {\"ids\": [\"a\", 1]}}", "input 'ids' must have"},
      {"{\"inputs\": 3}", "key 'inputs' must be a string, got number 3"},
      {"{\"keep_float\": 3}",
       "key 'keep_float' must be an array of node names or a "
       "comma-separated string, got number 3"},
      {"{\"keep_float\": [\"conv_1\", 2]}",
       "1:27: key 'keep_float': entry 1 must be a node name, got number 2"},
      {"{\"keep_float\": [\"\"]}", "entry 0 must be a node name"},
      {"{\"log_dir\": \"\"}", "key 'log_dir' must be a non-empty path"},
      {"[1]", "config.json:1:1: a config file holds one JSON object, got "
              "array"},
      {"{\"threads\": 1,}", "config.json:1:15: trailing comma before '}'"},
  };
  const char *dir = fresh_dir();
  char path[512];
  snprintf(path, sizeof path, "%s/config.json", dir);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ASSERT_EQ(write_text(path, cases[i].text), 0);
    mb_bench_config c;
    mb_bench_config_init(&c);
    mb_bench_config before = c;
    void *storage = (void *)&c; /* must stay untouched */
    mb_error err;
    mb_status status = mb_bench_config_load_json(path, &c, &storage, &err);
    if (status != MB_STATUS_INVALID_ARGUMENT)
      TEST_FAIL_("case %zu (%s): status %d, expected INVALID_ARGUMENT", i,
                 cases[i].text, (int)status);
    ASSERT_EQ(err.status, MB_STATUS_INVALID_ARGUMENT);
    ASSERT_CONTAINS(err.message, cases[i].message);
    ASSERT(storage == (void *)&c);
    ASSERT(memcmp(&before, &c, sizeof c) == 0); /* all or nothing */
  }
  /* A file set before a bad key changes nothing either. */
  ASSERT_EQ(write_text(path, "{\"threads\": 4, \"shapes\": {\"x\": [1]}, "
                             "\"nope\": 1}"),
            0);
  mb_bench_config c;
  mb_bench_config_init(&c);
  void *storage = NULL;
  mb_error err;
  ASSERT_EQ(mb_bench_config_load_json(path, &c, &storage, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(c.threads, 1);
  ASSERT_EQ(c.shapes.n_shapes, 0);
  ASSERT_EQ(mb_bench_config_load_json(path_in(dir, "missing.json"), &c,
                                      &storage, &err),
            MB_STATUS_IO);
  ASSERT_CONTAINS(err.message, "missing.json");
  return 0;
}

/* ---- .npy ---- */

/* Writes a .npy file with the given header fields and raw data. */
static int write_npy(const char *path, int version, const char *descr,
                     const char *fortran, const char *shape, const void *data,
                     size_t nbytes) {
  char header[256];
  int len = snprintf(header, sizeof header,
                     "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }",
                     descr, fortran, shape);
  size_t prefix = version == 1 ? 10 : 12;
  /* numpy pads with spaces to a multiple of 64 and ends with '\n'. */
  size_t total = prefix + (size_t)len + 1;
  size_t padded = (total + 63) / 64 * 64;
  size_t header_len = padded - prefix;
  memset(header + len, ' ', header_len - (size_t)len - 1);
  header[header_len - 1] = '\n';
  FILE *f = fopen(path, "wb");
  if (!f)
    return -1;
  unsigned char magic[12] = {
      0x93, 'N', 'U', 'M', 'P', 'Y', (unsigned char)version, 0};
  magic[8] = (unsigned char)(header_len & 0xff);
  magic[9] = (unsigned char)(header_len >> 8);
  magic[10] = 0;
  magic[11] = 0;
  fwrite(magic, 1, prefix, f);
  fwrite(header, 1, header_len, f);
  if (nbytes)
    fwrite(data, 1, nbytes, f);
  return fclose(f);
}

TEST(npy_reader) {
  const char *dir = fresh_dir();
  mb_error err;
  mb_tensor *t = NULL;
  const float f4[6] = {1, 2, 3, 4, 5, 6.5f};
  ASSERT_EQ(write_npy(path_in(dir, "a.npy"), 1, "<f4", "False", "(2, 3)", f4,
                      sizeof f4),
            0);
  ASSERT_OK(mb__npy_load(path_in(dir, "a.npy"), &t, &err), &err);
  ASSERT_EQ(t->dtype, MB_DTYPE_FLOAT);
  ASSERT_EQ(t->rank, 2);
  ASSERT_EQ(t->dims[0], 2);
  ASSERT_EQ(t->dims[1], 3);
  ASSERT_NEAR(((float *)t->data)[5], 6.5, 0);
  mb_tensor_free(t);

  const int64_t i8[4] = {-1, 0, 30000, INT64_MAX};
  ASSERT_EQ(write_npy(path_in(dir, "b.npy"), 2, "<i8", "False", "(4,)", i8,
                      sizeof i8),
            0);
  ASSERT_OK(mb__npy_load(path_in(dir, "b.npy"), &t, &err), &err);
  ASSERT_EQ(t->dtype, MB_DTYPE_INT64);
  ASSERT_EQ(t->rank, 1);
  ASSERT(((int64_t *)t->data)[3] == INT64_MAX);
  mb_tensor_free(t);

  const uint8_t u1 = 200;
  ASSERT_EQ(write_npy(path_in(dir, "c.npy"), 1, "|u1", "False", "()", &u1, 1),
            0);
  ASSERT_OK(mb__npy_load(path_in(dir, "c.npy"), &t, &err), &err);
  ASSERT_EQ(t->dtype, MB_DTYPE_UINT8);
  ASSERT_EQ(t->rank, 0);
  ASSERT_EQ(((uint8_t *)t->data)[0], 200);
  mb_tensor_free(t);

  static const struct {
    const char *descr;
    mb_dtype dtype;
    size_t size;
  } types[] = {{"<f2", MB_DTYPE_FLOAT16, 2}, {"<f8", MB_DTYPE_DOUBLE, 8},
               {"|i1", MB_DTYPE_INT8, 1},    {"<i4", MB_DTYPE_INT32, 4},
               {"|b1", MB_DTYPE_BOOL, 1},    {"<u2", MB_DTYPE_UINT16, 2}};
  const char zeros[16] = {0};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    ASSERT_EQ(write_npy(path_in(dir, "d.npy"), 1, types[i].descr, "False",
                        "(2,)", zeros, 2 * types[i].size),
              0);
    ASSERT_OK(mb__npy_load(path_in(dir, "d.npy"), &t, &err), &err);
    ASSERT_EQ(t->dtype, types[i].dtype);
    ASSERT_EQ(t->numel, 2);
    mb_tensor_free(t);
  }

  /* Errors name the file and say what is wrong. */
  static const struct {
    const char *descr, *fortran, *shape;
    size_t nbytes;
    mb_status status;
    const char *message;
  } bad[] = {
      {"<f4", "True", "(2, 3)", 24, MB_STATUS_UNSUPPORTED,
       "Fortran-order arrays are not supported"},
      {">f4", "False", "(2,)", 8, MB_STATUS_UNSUPPORTED,
       "big-endian data ('>f4') is not supported"},
      {"<c8", "False", "(2,)", 16, MB_STATUS_UNSUPPORTED,
       ".npy dtype '<c8' is not supported"},
      {"<U3", "False", "(2,)", 24, MB_STATUS_UNSUPPORTED, "dtype '<U3'"},
      {"<f4", "False", "(2, 3)", 20, MB_STATUS_PARSE,
       "holds 20 data bytes but shape [2,3] of float32 needs 24"},
      {"<f4", "Maybe", "(2,)", 8, MB_STATUS_PARSE, "malformed .npy header"},
      {"<f4", "False", "[2]", 8, MB_STATUS_PARSE, "malformed .npy header"},
  };
  const char big[64] = {0};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *p = path_in(dir, "bad.npy");
    ASSERT_EQ(write_npy(p, 1, bad[i].descr, bad[i].fortran, bad[i].shape, big,
                        bad[i].nbytes),
              0);
    t = NULL;
    ASSERT_EQ(mb__npy_load(p, &t, &err), bad[i].status);
    ASSERT(t == NULL);
    ASSERT_CONTAINS(err.message, "bad.npy");
    ASSERT_CONTAINS(err.message, bad[i].message);
  }
  ASSERT_EQ(write_text(path_in(dir, "text.npy"), "hello, not numpy"), 0);
  ASSERT_EQ(mb__npy_load(path_in(dir, "text.npy"), &t, &err), MB_STATUS_PARSE);
  ASSERT_CONTAINS(err.message, "not a .npy file");
  ASSERT_EQ(mb__npy_load(path_in(dir, "none.npy"), &t, &err), MB_STATUS_IO);
  return 0;
}

/* ---- input sources ---- */

/* x: float32 [batch, 3]; ids: int64 [2]; each passed through Identity. */
static mb_model *two_input_model(void) {
  static const int64_t x_dims[] = {-1, 3}, ids_dims[] = {2};
  static const char *const x_params[] = {"batch", NULL};
  static const char *const names[][2] = {{"x", "x_out"}, {"ids", "ids_out"}};
  mb_error err;
  mb_model *m = mb__model_create();
  if (!m)
    return NULL;
  mb_graph *g = m->graph;
  if (mb__model_set_opset(m, "", 17, &err) ||
      mb__graph_add_input(g, "x", MB_DTYPE_FLOAT, 2, x_dims, x_params, &err) <
          0 ||
      mb__graph_add_input(g, "ids", MB_DTYPE_INT64, 1, ids_dims, NULL, &err) <
          0)
    goto fail;
  for (int i = 0; i < 2; i++)
    if (mb__graph_add_node(g, "Identity", "", names[i][1], 1, &names[i][0], 1,
                           &names[i][1], &err) < 0 ||
        mb__graph_add_output(g, names[i][1], MB_DTYPE_UNDEFINED, -1, NULL, NULL,
                             &err) < 0)
      goto fail;
  if (mb__graph_finalize(g, &err))
    goto fail;
  return m;
fail:
  fprintf(stderr, "  cannot build the test model: %s\n", err.message);
  mb_model_free(m);
  return NULL;
}

static int save_tensor(const char *path, mb_dtype dtype, int rank,
                       const int64_t *dims, double fill) {
  mb_tensor *t = NULL;
  mb_error err;
  if (mb_tensor_create(dtype, rank, dims, &t, &err))
    return -1;
  for (int64_t i = 0; i < t->numel; i++)
    mb__tensor_set_f64(t, i, fill + (double)i);
  int rc = mb_tensor_save_pb(t, path, &err) == MB_STATUS_OK ? 0 : -1;
  mb_tensor_free(t);
  return rc;
}

/* DIR/NAME/input_0.pb (x) and input_1.pb (ids) with the given shapes. */
static int make_test_set(const char *dir, const char *name, int64_t batch,
                         int64_t ids_len, mb_dtype ids_dtype, double fill) {
  char sub[512], file[600];
  const int64_t x_dims[] = {batch, 3}, ids_dims[] = {ids_len};
  snprintf(sub, sizeof sub, "%s/%s", dir, name);
  if (mkdir(sub, 0755) != 0)
    return -1;
  snprintf(file, sizeof file, "%s/input_0.pb", sub);
  if (save_tensor(file, MB_DTYPE_FLOAT, 2, x_dims, fill))
    return -1;
  snprintf(file, sizeof file, "%s/input_1.pb", sub);
  return save_tensor(file, ids_dtype, 1, ids_dims, fill);
}

/* Opens a source on `dir` and returns its status (source closed). */
/* mb__npy_save writes what mb__npy_load (and numpy) read back: dtypes,
 * shapes of rank 0, 1 and 4, the 64-byte aligned header. */
TEST(npy_writer_round_trip) {
  const char *dir = fresh_dir();
  mb_error err;
  struct {
    mb_dtype dtype;
    int rank;
    int64_t dims[4];
  } cases[] = {{MB_DTYPE_FLOAT, 4, {2, 3, 1, 2}},
               {MB_DTYPE_INT64, 1, {5}},
               {MB_DTYPE_UINT8, 0, {0}},
               {MB_DTYPE_BOOL, 2, {1, 3}}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    mb_tensor *t = NULL, *back = NULL;
    ASSERT_OK(mb_tensor_create(cases[c].dtype, cases[c].rank, cases[c].dims, &t,
                               &err),
              &err);
    for (size_t b = 0; b < t->nbytes; b++)
      ((unsigned char *)t->data)[b] = cases[c].dtype == MB_DTYPE_BOOL
                                          ? (unsigned char)(b & 1)
                                          : (unsigned char)(b * 7 + c);
    const char *path = path_in(dir, "w.npy");
    ASSERT_OK(mb__npy_save(path, t, &err), &err);
    FILE *f = fopen(path, "rb");
    ASSERT(f != NULL);
    unsigned char head[10];
    ASSERT_EQ(fread(head, 1, sizeof head, f), sizeof head);
    fclose(f);
    ASSERT_EQ((10 + (head[8] | head[9] << 8)) % 64, 0);
    ASSERT_OK(mb__npy_load(path, &back, &err), &err);
    ASSERT_EQ(back->dtype, t->dtype);
    ASSERT_EQ(back->rank, t->rank);
    for (int d = 0; d < t->rank; d++)
      ASSERT_EQ(back->dims[d], t->dims[d]);
    ASSERT_EQ(back->nbytes, t->nbytes);
    ASSERT(t->nbytes == 0 || memcmp(back->data, t->data, t->nbytes) == 0);
    mb_tensor_free(t);
    mb_tensor_free(back);
  }
  return 0;
}

static mb_status open_dir(const mb_model *m, const char *dir, int n_samples,
                          int64_t *count_out, mb_error *err) {
  mb_bench_config c;
  mb_bench_config_init(&c);
  c.inputs_dir = dir;
  c.n_samples = n_samples;
  mb_input_source *src = NULL;
  mb_status status = mb__input_source_open(m, &c, &src, err);
  if (status == MB_STATUS_OK) {
    *count_out = mb__input_source_count(src);
    mb__input_source_close(src);
  }
  return status;
}

TEST(inputs_generated) {
  mb_model *m = two_input_model();
  ASSERT(m);
  mb_bench_config c;
  mb_bench_config_init(&c);
  c.batch_size = 4;
  c.n_samples = 3;
  c.seed = 7;
  mb_input_range range = {"ids", 10, 12};
  c.ranges = &range;
  c.n_ranges = 1;
  mb_input_source *src = NULL;
  mb_error err;
  ASSERT_OK(mb__input_source_open(m, &c, &src, &err), &err);
  ASSERT_EQ(mb__input_source_count(src), 3);
  const mb_input_shape *shapes = mb__input_source_shapes(src);
  ASSERT_STR_EQ(shapes[0].name, "x");
  ASSERT_EQ(shapes[0].rank, 2);
  ASSERT_EQ(shapes[0].dims[0], 4);
  ASSERT_EQ(shapes[1].dims[0], 2);
  mb_tensor *a[2], *b[2];
  ASSERT_OK(mb__input_source_get(src, 0, a, &err), &err);
  ASSERT_OK(mb__input_source_get(src, 1, b, &err), &err);
  ASSERT_STR_EQ(a[0]->name, "x");
  ASSERT(memcmp(a[0]->data, b[0]->data, a[0]->nbytes) != 0); /* per sample */
  for (int i = 0; i < 2; i++) {
    int64_t id = ((int64_t *)a[1]->data)[i];
    ASSERT(id >= 10 && id <= 12);
  }
  /* The same seed gives the same bytes: sample 0 is seed 7 itself. */
  mb_tensor *direct[2];
  mb_shape_spec spec = {4, 0, NULL};
  ASSERT_OK(mb_inputs_generate(m, &spec, 7, 1, &range, direct, &err), &err);
  ASSERT(memcmp(direct[0]->data, a[0]->data, a[0]->nbytes) == 0);
  for (int i = 0; i < 2; i++) {
    mb_tensor_free(a[i]);
    mb_tensor_free(b[i]);
    mb_tensor_free(direct[i]);
  }
  ASSERT_EQ(mb__input_source_get(src, 3, a, &err), MB_STATUS_INVALID_ARGUMENT);
  mb__input_source_close(src);

  /* A range naming no input is a typo, not something to ignore. */
  range.name = "idz";
  ASSERT_EQ(mb__input_source_open(m, &c, &src, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "the model has no input 'idz'");
  /* A shape override naming no input, too (from the shape resolver). */
  range.name = "ids";
  mb_input_shape bad = {"nope", 1, {3}};
  c.shapes.shapes = &bad;
  c.shapes.n_shapes = 1;
  ASSERT_EQ(mb__input_source_open(m, &c, &src, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "nope");
  mb_model_free(m);
  return 0;
}

TEST(inputs_test_sets) {
  mb_model *m = two_input_model();
  ASSERT(m);
  const char *dir = fresh_dir();
  mb_error err;
  int64_t count = 0;
  ASSERT_EQ(make_test_set(dir, "test_data_set_0", 2, 2, MB_DTYPE_INT64, 0), 0);
  ASSERT_EQ(make_test_set(dir, "test_data_set_1", 2, 2, MB_DTYPE_INT64, 5), 0);
  ASSERT_EQ(make_test_set(dir, "test_data_set_10", 2, 2, MB_DTYPE_INT64, 9), 0);
  ASSERT_OK(open_dir(m, dir, 10, &count, &err), &err);
  ASSERT_EQ(count, 3);
  ASSERT_OK(open_dir(m, dir, 1, &count, &err), &err); /* n_samples caps */
  ASSERT_EQ(count, 1);

  /* Samples come in natural order: test_data_set_10 is the last. */
  mb_bench_config c;
  mb_bench_config_init(&c);
  c.inputs_dir = dir;
  c.n_samples = 3;
  mb_input_source *src = NULL;
  ASSERT_OK(mb__input_source_open(m, &c, &src, &err), &err);
  mb_tensor *t[2];
  ASSERT_OK(mb__input_source_get(src, 2, t, &err), &err);
  ASSERT_NEAR(((float *)t[0]->data)[0], 9, 0);
  ASSERT_STR_EQ(t[1]->name, "ids");
  ASSERT_EQ(mb__input_source_shapes(src)[0].dims[0], 2);
  mb_tensor_free(t[0]);
  mb_tensor_free(t[1]);
  mb__input_source_close(src);

  /* A set whose ids have the wrong length: the error names input and
   * file. */
  ASSERT_EQ(make_test_set(dir, "test_data_set_2", 2, 3, MB_DTYPE_INT64, 0), 0);
  ASSERT_EQ(open_dir(m, dir, 10, &count, &err), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(err.message, "test_data_set_2/input_1.pb: input 'ids' has "
                               "shape [3] but the model declares [2]");

  /* Wrong dtype. */
  dir = fresh_dir();
  ASSERT_EQ(make_test_set(dir, "test_data_set_0", 1, 2, MB_DTYPE_INT32, 0), 0);
  ASSERT_EQ(open_dir(m, dir, 1, &count, &err), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(err.message, "input 'ids' has type int32 but the model "
                               "declares int64");

  /* Every sample must have the same shapes (the dynamic batch may differ
   * from the declaration, not between samples). */
  dir = fresh_dir();
  ASSERT_EQ(make_test_set(dir, "test_data_set_0", 1, 2, MB_DTYPE_INT64, 0), 0);
  ASSERT_EQ(make_test_set(dir, "test_data_set_1", 2, 2, MB_DTYPE_INT64, 0), 0);
  ASSERT_EQ(open_dir(m, dir, 5, &count, &err), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(err.message, "test_data_set_1: input 'x' has shape [2,3] "
                               "but");
  ASSERT_CONTAINS(err.message, "every sample must have the same shapes");

  /* A missing input file. */
  dir = fresh_dir();
  ASSERT_EQ(make_test_set(dir, "test_data_set_0", 1, 2, MB_DTYPE_INT64, 0), 0);
  ASSERT_EQ(remove(path_in(dir, "test_data_set_0/input_1.pb")), 0);
  ASSERT_EQ(open_dir(m, dir, 1, &count, &err), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(err.message, "has 1 input_N.pb file(s) but the model has 2 "
                               "input(s)");

  /* A single test set folder given directly. */
  ASSERT_EQ(make_test_set(dir, "single", 1, 2, MB_DTYPE_INT64, 0), 0);
  ASSERT_OK(open_dir(m, path_in(dir, "single"), 1, &count, &err), &err);
  ASSERT_EQ(count, 1);

  /* Nothing usable, or not a folder at all. */
  dir = fresh_dir();
  ASSERT_EQ(open_dir(m, dir, 1, &count, &err), MB_STATUS_NOT_FOUND);
  ASSERT_CONTAINS(err.message, "holds no test_data_set_* folders, input_N.pb, "
                               ".npy or .npz files");
  ASSERT_EQ(open_dir(m, path_in(dir, "nowhere"), 1, &count, &err),
            MB_STATUS_IO);
  ASSERT_CONTAINS(err.message, "nowhere: not a directory");
  mb_model_free(m);
  return 0;
}

TEST(inputs_npy_folders) {
  mb_model *m = two_input_model();
  ASSERT(m);
  const char *dir = fresh_dir();
  mb_error err;
  int64_t count = 0;
  const float x[6] = {1, 2, 3, 4, 5, 6};
  const int64_t ids[2] = {7, 8};
  /* One sample: NAME.npy for x, input_N.npy for ids. */
  ASSERT_EQ(write_npy(path_in(dir, "x.npy"), 1, "<f4", "False", "(2, 3)", x,
                      sizeof x),
            0);
  ASSERT_EQ(write_npy(path_in(dir, "input_1.npy"), 1, "<i8", "False", "(2,)",
                      ids, sizeof ids),
            0);
  ASSERT_OK(open_dir(m, dir, 4, &count, &err), &err);
  ASSERT_EQ(count, 1);

  /* A file that feeds no input is reported, as a likely misspelling. */
  ASSERT_EQ(write_npy(path_in(dir, "idz.npy"), 1, "<i8", "False", "(2,)", ids,
                      sizeof ids),
            0);
  ASSERT_EQ(open_dir(m, dir, 1, &count, &err), MB_STATUS_NOT_FOUND);
  ASSERT_CONTAINS(err.message, "'idz.npy' matches no model input");
  ASSERT_EQ(remove(path_in(dir, "idz.npy")), 0);

  /* A missing input. */
  ASSERT_EQ(remove(path_in(dir, "input_1.npy")), 0);
  ASSERT_EQ(open_dir(m, dir, 1, &count, &err), MB_STATUS_NOT_FOUND);
  ASSERT_CONTAINS(err.message,
                  "no 'ids', 'input_1' or 'arr_1' array (.npy) for model input "
                  "'ids'");

  /* A wrong dtype names the file and input. */
  const int32_t ids32[2] = {1, 2};
  ASSERT_EQ(write_npy(path_in(dir, "ids.npy"), 1, "<i4", "False", "(2,)", ids32,
                      sizeof ids32),
            0);
  ASSERT_EQ(open_dir(m, dir, 1, &count, &err), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(err.message, "ids.npy: input 'ids' has type int32");

  /* One sub-folder per sample. */
  dir = fresh_dir();
  const char *subs[] = {"s1", "s2", "s3"};
  for (int i = 0; i < 3; i++) {
    char sub[512];
    snprintf(sub, sizeof sub, "%s/%s", dir, subs[i]);
    ASSERT_EQ(mkdir(sub, 0755), 0);
    ASSERT_EQ(write_npy(path_in(sub, "x.npy"), 1, "<f4", "False", "(2, 3)", x,
                        sizeof x),
              0);
    ASSERT_EQ(write_npy(path_in(sub, "ids.npy"), 2, "<i8", "False", "(2,)", ids,
                        sizeof ids),
              0);
  }
  ASSERT_OK(open_dir(m, dir, 10, &count, &err), &err);
  ASSERT_EQ(count, 3);
  /* A Fortran-order file in one sample fails the source. */
  ASSERT_EQ(write_npy(path_in(path_in(dir, "s2"), "x.npy"), 1, "<f4", "True",
                      "(2, 3)", x, sizeof x),
            0);
  ASSERT_EQ(open_dir(m, dir, 10, &count, &err), MB_STATUS_UNSUPPORTED);
  ASSERT_CONTAINS(err.message, "s2/x.npy: Fortran-order");
  mb_model_free(m);
  return 0;
}

/* A loader that gives `limit` samples, then says there are no more. */
typedef struct loader_state {
  int64_t limit;
  int64_t calls;
  int fail_at;   /* sample that fails with an error, or -1 */
  int leave_ids; /* leave the ids slot NULL */
} loader_state;

static mb_status test_loader(void *user, int64_t sample, const mb_model *model,
                             mb_tensor **inputs_out, mb_error *err) {
  loader_state *s = user;
  s->calls++;
  if (sample >= s->limit)
    return MB_STATUS_NOT_FOUND;
  if (sample == s->fail_at) {
    snprintf(err->message, sizeof err->message, "disk on fire");
    return MB_STATUS_IO;
  }
  mb_shape_spec spec = {2, 0, NULL};
  mb_status status = mb_inputs_generate(model, &spec, (uint64_t)sample, 0, NULL,
                                        inputs_out, err);
  if (status == MB_STATUS_OK && s->leave_ids) {
    mb_tensor_free(inputs_out[1]);
    inputs_out[1] = NULL;
  }
  return status;
}

TEST(inputs_loader) {
  mb_model *m = two_input_model();
  ASSERT(m);
  mb_bench_config c;
  mb_bench_config_init(&c);
  loader_state state = {2, 0, -1, 0};
  c.loader = test_loader;
  c.loader_user = &state;
  c.n_samples = 5;
  mb_input_source *src = NULL;
  mb_error err;
  ASSERT_OK(mb__input_source_open(m, &c, &src, &err), &err);
  ASSERT_EQ(mb__input_source_count(src), 2);
  ASSERT_EQ(state.calls, 3);
  ASSERT_EQ(mb__input_source_shapes(src)[0].dims[0], 2);
  mb__input_source_close(src);

  state = (loader_state){0, 0, -1, 0};
  ASSERT_EQ(mb__input_source_open(m, &c, &src, &err), MB_STATUS_NOT_FOUND);
  ASSERT_CONTAINS(err.message, "the data loader gave no samples");

  state = (loader_state){5, 0, 1, 0};
  ASSERT_EQ(mb__input_source_open(m, &c, &src, &err), MB_STATUS_IO);
  ASSERT_CONTAINS(err.message, "data loader, sample 1: disk on fire");

  state = (loader_state){5, 0, -1, 1};
  ASSERT_EQ(mb__input_source_open(m, &c, &src, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "data loader, sample 0: input 'ids' was not "
                               "filled");

  c.inputs_dir = "/tmp";
  state = (loader_state){5, 0, -1, 0};
  ASSERT_EQ(mb__input_source_open(m, &c, &src, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "not both");
  mb_model_free(m);
  return 0;
}

TEST_MAIN(TEST_ENTRY(json_valid_document),
          TEST_ENTRY(json_errors_name_line_and_column),
          TEST_ENTRY(json_parse_file), TEST_ENTRY(conversion_table),
          TEST_ENTRY(enum_names), TEST_ENTRY(conversion_find),
          TEST_ENTRY(conversion_parse_list), TEST_ENTRY(conversion_register),
          TEST_ENTRY(config_defaults), TEST_ENTRY(config_every_key),
          TEST_ENTRY(config_keep_float), TEST_ENTRY(config_errors_name_the_key),
          TEST_ENTRY(npy_reader), TEST_ENTRY(npy_writer_round_trip),
          TEST_ENTRY(inputs_generated), TEST_ENTRY(inputs_test_sets),
          TEST_ENTRY(inputs_npy_folders), TEST_ENTRY(inputs_loader))
