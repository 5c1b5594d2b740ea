/* modelbench script: hands over to the Python front.
 *
 * Finding the models a Python script runs needs the script's own Python:
 * `modelbench script SCRIPT.py ...` is `python3 -m modelbench script ...`
 * (python/modelbench/script.py), run with Debian's /usr/bin/python3 (or
 * $MODELBENCH_PYTHON) in place of this process. From a build tree the
 * package is the source tree's python/ and the library this build's; an
 * installed modelbench finds its installed package. */
#include "cli/cli_common.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#ifndef MB_SOURCE_PYTHON_DIR
#define MB_SOURCE_PYTHON_DIR ""
#endif
#ifndef MB_BUILD_DIR
#define MB_BUILD_DIR ""
#endif

static const char *const cmd = "script";

static const char script_help[] =
    "Usage: modelbench script SCRIPT.py|FOLDER... [OPTIONS] [-- ARGS...]\n"
    "\n"
    "Runs each Python script, finds the PyTorch models it calls and\n"
    "benchmarks each of them (bench's options apply). This command is the\n"
    "Python front's: 'python3 -m modelbench script --help' lists its\n"
    "options; it needs Debian's /usr/bin/python3 with python3-torch.\n";

/* Whether this program runs from the build tree it was built in. */
static bool in_build_tree(void) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  size_t len = strlen(MB_BUILD_DIR);
  if (n <= 0 || len == 0)
    return false;
  exe[n] = '\0';
  return strncmp(exe, MB_BUILD_DIR, len) == 0 && exe[len] == '/';
}

/* PYTHONPATH and MODELBENCH_LIBRARY for a build tree's package. */
static int point_at_build_tree(void) {
  const char *old = getenv("PYTHONPATH");
  size_t n = strlen(MB_SOURCE_PYTHON_DIR) + (old ? strlen(old) : 0) + 2;
  char *path = malloc(n);
  if (!path) {
    mb__cli_error(NULL, "out of memory");
    return MB_EXIT_FAILURE;
  }
  snprintf(path, n, "%s%s%s", MB_SOURCE_PYTHON_DIR, old && old[0] ? ":" : "",
           old ? old : "");
  int rc = setenv("PYTHONPATH", path, 1);
  free(path);
  char lib[PATH_MAX];
  snprintf(lib, sizeof lib, "%s/lib/libmodelbench.so", MB_BUILD_DIR);
  if (rc == 0 && !getenv("MODELBENCH_LIBRARY") && access(lib, R_OK) == 0)
    rc = setenv("MODELBENCH_LIBRARY", lib, 1);
  if (rc != 0) {
    mb__cli_error(NULL, "cannot set the environment: %s", strerror(errno));
    return MB_EXIT_FAILURE;
  }
  return MB_EXIT_OK;
}

int mb__cli_script(int argc, char **argv) {
  const char *python = getenv("MODELBENCH_PYTHON");
  if (!python || !python[0])
    python = "/usr/bin/python3";
  if (access(python, X_OK) != 0) {
    if (argc >= 2 &&
        (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))
      fputs(script_help, stdout);
    mb__cli_error(NULL,
                  "script: %s: %s; 'modelbench script' runs Python scripts "
                  "with Debian's python3 and PyTorch (apt install python3 "
                  "python3-torch)",
                  python, strerror(errno));
    return MB_EXIT_FAILURE;
  }
  if (in_build_tree() && point_at_build_tree() != MB_EXIT_OK)
    return MB_EXIT_FAILURE;
  char **args = calloc((size_t)argc + 4, sizeof *args);
  if (!args) {
    mb__cli_error(NULL, "out of memory");
    return MB_EXIT_FAILURE;
  }
  args[0] = (char *)python;
  args[1] = (char *)"-m";
  args[2] = (char *)"modelbench";
  args[3] = (char *)cmd;
  for (int i = 1; i < argc; i++)
    args[3 + i] = argv[i];
  fflush(stdout);
  fflush(stderr);
  execv(python, args);
  mb__cli_error(NULL, "script: cannot run %s: %s", python, strerror(errno));
  free(args);
  return MB_EXIT_FAILURE;
}
