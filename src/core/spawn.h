/* Running a command with its output captured and a time limit (spawn.c):
 * the executors' sbatch, squeue, ssh and scp, and the build's external
 * quantiser (NNCF). */
#ifndef MB_CORE_SPAWN_H
#define MB_CORE_SPAWN_H

#include "core/internal.h"

/* Runs argv (argv[0] found on PATH) with stdin from /dev/null, waits at most
 * timeout_s (<= 0: no limit), and returns its exit status in *exit_out (-1
 * when killed or it could not start). *out_text: stdout and stderr
 * together (malloc, NUL-terminated, may be NULL). Fails with
 * MB_STATUS_NOT_FOUND when argv[0] cannot be run. */
mb_status mb__exec_capture(char *const *argv, double timeout_s, int *exit_out,
                           char **out_text, mb_error *err);
/* The last non-empty line of a tool's output, trimmed, into buf ("" for
 * NULL): what its error message usually is. */
void mb__exec_last_line(const char *text, char *buf, size_t size);
/* "a 'b c' d": argv as a POSIX shell takes it back, word for word: a word
 * that needs it is single-quoted by mb__exec_shell_quote, so that pasting
 * the line into a shell runs argv and nothing else (logs, messages).
 * malloc; NULL when out of memory. */
char *mb__exec_argv_quoted(char *const *argv);
/* mb__exec_argv_quoted for messages, in a static buffer: a line past 2 KiB
 * is cut between two words and ends in " [...]". */
const char *mb__exec_argv_string(char *const *argv);
/* Appends s single-quoted for a POSIX shell to buf (grown with realloc):
 * 'a'\''b' for a'b, the one quoting every command line we write or send
 * goes through. false when out of memory. */
bool mb__exec_shell_quote(char **buf, size_t *len, size_t *cap, const char *s);

#endif /* MB_CORE_SPAWN_H */
