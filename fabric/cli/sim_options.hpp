// `ethx sim`'s command line, parsed here (not in ethx_main.cpp) so a unit test can check it.
#pragma once

#include <string>

#include "fabric/sim/sim_command.hpp"

namespace ethx {

struct SimCommandLine {
  sim::SimOptions options;
  bool help = false;      // --help: print help_text and run nothing
  std::string help_text;  // the options' description
};

// argv[0] is the subcommand's name. Throws boost::program_options::error on a bad option.
SimCommandLine parse_sim_command_line(int argc, const char* const* argv);

}  // namespace ethx
