/* A tiny test harness in the style of libuv's: TEST(name) defines a test,
 * ASSERT_* report the failing expression with file and line and end the
 * test. Each test file is one executable registered with ctest; its main
 * runs every test (or the one named in argv[1]) and prints a summary. */
#ifndef MB_TEST_H
#define MB_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct mb_test_case {
  const char *name;
  int (*fn)(void);
} mb_test_case;

#define TEST(name) static int test_##name(void)
#define TEST_ENTRY(name)                                                       \
  { #name, test_##name }

#define TEST_FAIL_(...)                                                        \
  do {                                                                         \
    fprintf(stderr, "  %s:%d: ", __FILE__, __LINE__);                          \
    fprintf(stderr, __VA_ARGS__);                                              \
    fprintf(stderr, "\n");                                                     \
    return 1;                                                                  \
  } while (0)

#define ASSERT(cond)                                                           \
  do {                                                                         \
    if (!(cond))                                                               \
      TEST_FAIL_("assertion failed: %s", #cond);                               \
  } while (0)
#define ASSERT_EQ(a, b)                                                        \
  do {                                                                         \
    long long a_ = (long long)(a), b_ = (long long)(b);                        \
    if (a_ != b_)                                                              \
      TEST_FAIL_("%s == %s failed: %lld != %lld", #a, #b, a_, b_);             \
  } while (0)
#define ASSERT_NE(a, b)                                                        \
  do {                                                                         \
    long long a_ = (long long)(a), b_ = (long long)(b);                        \
    if (a_ == b_)                                                              \
      TEST_FAIL_("%s != %s failed: both %lld", #a, #b, a_);                    \
  } while (0)
#define ASSERT_NEAR(a, b, tol)                                                 \
  do {                                                                         \
    double a_ = (double)(a), b_ = (double)(b);                                 \
    if (!(fabs(a_ - b_) <= (tol)))                                             \
      TEST_FAIL_("%s ~= %s failed: %g vs %g (tol %g)", #a, #b, a_, b_,         \
                 (double)(tol));                                               \
  } while (0)
#define ASSERT_STR_EQ(a, b)                                                    \
  do {                                                                         \
    const char *a_ = (a), *b_ = (b);                                           \
    if (!a_ || !b_ || strcmp(a_, b_) != 0)                                     \
      TEST_FAIL_("%s == %s failed: \"%s\" vs \"%s\"", #a, #b,                  \
                 a_ ? a_ : "(null)", b_ ? b_ : "(null)");                      \
  } while (0)
#define ASSERT_CONTAINS(haystack, needle)                                      \
  do {                                                                         \
    const char *h_ = (haystack), *n_ = (needle);                               \
    if (!h_ || !strstr(h_, n_))                                                \
      TEST_FAIL_("\"%s\" does not contain \"%s\"", h_ ? h_ : "(null)", n_);    \
  } while (0)
/* Asserts a call returned MB_STATUS_OK, printing the error otherwise. */
#define ASSERT_OK(call, errp)                                                  \
  do {                                                                         \
    const mb_error *e_ = (errp);                                               \
    mb_status s_ = (call);                                                     \
    if (s_ != MB_STATUS_OK)                                                    \
      TEST_FAIL_("%s failed: %s: %s", #call, mb_status_string(s_),             \
                 e_ ? e_->message : "");                                       \
  } while (0)

static inline int mb_test_main(int argc, char **argv, const mb_test_case *cases,
                               size_t n) {
  int passed = 0, failed = 0;
  for (size_t i = 0; i < n; i++) {
    if (argc > 1 && strcmp(argv[1], cases[i].name) != 0)
      continue;
    int rc = cases[i].fn();
    printf("%s %s\n", rc ? "FAIL" : "ok  ", cases[i].name);
    if (rc)
      failed++;
    else
      passed++;
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
#define TEST_MAIN(...)                                                         \
  int main(int argc, char **argv) {                                            \
    static const mb_test_case cases_[] = {__VA_ARGS__};                        \
    return mb_test_main(argc, argv, cases_,                                    \
                        sizeof(cases_) / sizeof(cases_[0]));                   \
  }

#endif
