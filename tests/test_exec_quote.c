/* The command lines the executors write and send (src/core/spawn.c) and
 * the SSH host names they accept (src/exec/ssh.c): a quoted line, given
 * to /bin/sh, gives back the very words it was made of and runs nothing
 * they hold ($(...), backquotes, quotes, globs, newlines); a line too long
 * for a message is cut between words, never inside a quote; a host that
 * ssh would take as an option, or a shell as words, is refused with a
 * message naming it. */
#include "exec/exec.h"
#include "test.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* A scratch folder for the marker files a pasted command must not make. */
static char scratch[64];

static bool marker_made(void) {
  char path[128];
  snprintf(path, sizeof path, "%s/PASTED", scratch);
  return access(path, F_OK) == 0;
}

/* Runs sh -c "printf '%s\1' LINE" and compares the words it printed with
 * argv; 0 when they are the same. */
static int check_round_trip(char *const *argv) {
  char *quoted = mb__exec_argv_quoted(argv);
  if (!quoted)
    TEST_FAIL_("mb__exec_argv_quoted: out of memory");
  char *script = malloc(strlen(quoted) + 32);
  sprintf(script, "printf '%%s\\001' %s", quoted);
  char *sh[] = {"sh", "-c", script, NULL};
  char *out = NULL;
  int code = -1;
  mb_error err;
  mb_status status = mb__exec_capture(sh, 10, &code, &out, &err);
  free(script);
  if (status || code != 0) {
    fprintf(stderr, "  line: %s\n", quoted);
    free(quoted);
    free(out);
    TEST_FAIL_("sh -c failed (%d, exit %d): %s", (int)status, code,
               status ? err.message : "");
  }
  size_t want = 0;
  for (int i = 0; argv[i]; i++)
    want += strlen(argv[i]) + 1;
  char *expected = malloc(want + 1), *p = expected;
  for (int i = 0; argv[i]; i++)
    p += sprintf(p, "%s\001", argv[i]);
  int rc = strcmp(out ? out : "", expected) != 0;
  if (rc)
    fprintf(stderr, "  line: %s\n  gave: %s\n", quoted, out ? out : "");
  free(expected);
  free(out);
  free(quoted);
  return rc;
}

TEST(quoted_line_gives_back_its_words) {
  char touch[160], backquote[160];
  snprintf(touch, sizeof touch, "m'$(touch %s/PASTED)' x.onnx", scratch);
  snprintf(backquote, sizeof backquote, "`touch %s/PASTED`", scratch);
  char *argv[] = {"ssh",    "plain-word_1.2:/x,y@z%+",
                  touch,    backquote,
                  "it's",   "'",
                  "''",     "a b",
                  "",       "$HOME",
                  "*",      "~",
                  "a\nb",   "\\",
                  "\"q\"",  "!x",
                  "a;b|c&", "x=1",
                  NULL};
  if (check_round_trip(argv))
    TEST_FAIL_("the quoted line gave other words");
  ASSERT(!marker_made());
  /* The first word: NAME=VALUE there would be an assignment. */
  char *assign[] = {"X=1", "a", NULL};
  if (check_round_trip(assign))
    TEST_FAIL_("a first word with '=' was not quoted");
  char *quoted = mb__exec_argv_quoted(argv);
  ASSERT_CONTAINS(quoted, "'it'\\''s'");
  ASSERT_CONTAINS(quoted, " plain-word_1.2:/x,y@z%+ ");
  free(quoted);
  return 0;
}

TEST(long_line_is_cut_between_words) {
  char word[700];
  memset(word, 'a', sizeof word - 1);
  word[sizeof word - 1] = '\0';
  word[10] = '\''; /* every word needs quotes, with an escaped ' inside */
  word[300] = ' '; /* and a blank where no cut may be */
  char *argv[] = {"ssh", word, word, word, word, word, NULL};
  const char *line = mb__exec_argv_string(argv);
  size_t len = strlen(line);
  ASSERT(len < 2048);
  ASSERT_STR_EQ(line + len - 6, " [...]");
  /* Whole words only: an even count of quotes, and the text before the
   * cut is the start of the full line. */
  int quotes = 0;
  for (const char *p = line; *p; p++)
    quotes += *p == '\'';
  ASSERT_EQ(quotes % 2, 0);
  char *full = mb__exec_argv_quoted(argv);
  ASSERT(strncmp(full, line, len - 6) == 0);
  ASSERT_EQ(full[len - 6], ' ');
  free(full);
  return 0;
}

TEST(ssh_hosts_accepted) {
  static const char *const good[] = {"hosta", "user@host.example.com",
                                     "node-1_b", "10.0.0.7", "a.b-c@d"};
  mb_error err;
  for (size_t i = 0; i < sizeof good / sizeof *good; i++)
    ASSERT_OK(mb__exec_ssh_host_check(good[i], &err), &err);
  return 0;
}

TEST(ssh_hosts_refused_with_their_name) {
  static const struct {
    const char *host, *needle;
  } bad[] = {
      {"-oProxyCommand=touch X",
       "ssh host '-oProxyCommand=touch X' starts with '-'"},
      {"user@-oProxyCommand=x", "starts with '-'"},
      {"a b", "ssh host 'a b': a space is not allowed"},
      {"a;touch x", "';' is not allowed"},
      {"a$(touch x)", "'$' is not allowed"},
      {"a`x`", "'`' is not allowed"},
      {"a'b", "''' is not allowed"},
      {"host:22", "a port or an IPv6 address"},
      {"[::1]", "a port or an IPv6 address"},
      {"a\tb", "ssh host 'a\\x09b': byte 0x09 is not allowed"},
      {"a\033[31mb", "'a\\x1b[31mb'"},
      {"@host", "expected HOST or USER@HOST"},
      {"a@b@c", "expected HOST or USER@HOST"},
      {"user@", "expected HOST or USER@HOST"},
      {"", "expected HOST or USER@HOST"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    mb_error err = {0};
    ASSERT_EQ(mb__exec_ssh_host_check(bad[i].host, &err),
              MB_STATUS_INVALID_ARGUMENT);
    ASSERT_CONTAINS(err.message, bad[i].needle);
  }
  return 0;
}

TEST(executor_spec_refuses_a_bad_host) {
  mb_exec_run run;
  memset(&run, 0, sizeof run);
  mb_error err = {0};
  ASSERT_EQ(mb__exec_parse_spec(&run, "ssh:hosta,-oProxyCommand=x", &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "'-oProxyCommand=x'");
  mb__exec_run_free(&run);
  memset(&run, 0, sizeof run);
  ASSERT_OK(mb__exec_parse_spec(&run, "ssh:hosta,me@hostb", &err), &err);
  ASSERT_EQ(run.n_hosts, 2);
  ASSERT_STR_EQ(run.hosts[1], "me@hostb");
  mb__exec_run_free(&run);
  return 0;
}

static int run_all(int argc, char **argv);

int main(int argc, char **argv) {
  snprintf(scratch, sizeof scratch, "/tmp/mb-test-quote-XXXXXX");
  if (!mkdtemp(scratch)) {
    perror("mkdtemp");
    return 1;
  }
  int rc = run_all(argc, argv);
  char path[128];
  snprintf(path, sizeof path, "%s/PASTED", scratch);
  unlink(path);
  rmdir(scratch);
  return rc;
}

static int run_all(int argc, char **argv) {
  static const mb_test_case cases[] = {
      TEST_ENTRY(quoted_line_gives_back_its_words),
      TEST_ENTRY(long_line_is_cut_between_words),
      TEST_ENTRY(ssh_hosts_accepted),
      TEST_ENTRY(ssh_hosts_refused_with_their_name),
      TEST_ENTRY(executor_spec_refuses_a_bad_host),
  };
  return mb_test_main(argc, argv, cases, sizeof cases / sizeof *cases);
}
