// kopt: the command line. Every command, its options and its handler are in the command table
// (command_table.hpp, made from the cmd_*.cpp files).
#include "command_table.hpp"

int main(int argc, char** argv) {
  return kopt::cli::run_command_line(argc, argv);
}
