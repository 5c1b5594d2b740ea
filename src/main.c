/* The modelbench executable: the CLI of the library (src/cli/). */
#include "modelbench.h"

int main(int argc, char **argv) {
  return mb_cli_main(argc, argv);
}
