// ethx-guest: inspects and pokes ethx-gpu devices from inside a VM (static; the guest image
// has no libraries). JSON on stdout; errors on stderr with exit status 1 (cannot run) or 2
// (bad command line).
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "qemu-device/guest-tools/guest_cli.hpp"
#include "qemu-device/guest-tools/guest_commands.hpp"

int main(int argc, char** argv) {
  using namespace ethx::guest;
  try {
    const GuestCommand command =
        parse_command_line(std::vector<std::string>(argv + 1, argv + argc));
    if (command.name == "help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    std::puts(run_command(command).dump().c_str());
    return 0;
  } catch (const CommandFailed& failed) {  // ran: the result, then why it failed
    std::puts(failed.result.dump().c_str());
    std::fflush(stdout);
    std::fprintf(stderr, "ethx-guest: %s\n", failed.what());
    return 1;
  } catch (const UsageError& error) {
    std::fprintf(stderr, "ethx-guest: %s\n%s", error.what(), kUsage);
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ethx-guest: %s\n", error.what());
    return 1;
  }
}
