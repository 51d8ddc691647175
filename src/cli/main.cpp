// kopt: the command line. Every command, its options and its handler are in the command table
// (command_table.hpp, made from the cmd_*.cpp files).
#include <csignal>

#include "command_table.hpp"

int main(int argc, char** argv) {
  // A write past the file-size limit fails with EFBIG (an environment error that says so)
  // instead of killing kopt or its worker without a word.
  std::signal(SIGXFSZ, SIG_IGN);
  return kopt::cli::run_command_line(argc, argv);
}
