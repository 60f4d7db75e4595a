#include "fabric/control/switch_launch.hpp"

#include "fabric/platform/child_process.hpp"
#include "fabric/transport/net/socket_transport.hpp"

namespace ethx {

std::vector<std::string> switch_arguments(const SwitchLaunch& launch) {
  std::vector<std::string> args = {executable_directory() + "/ethx-switch",
                                   "--fabric",
                                   launch.fabric,
                                   "--gpus",
                                   std::to_string(launch.gpus),
                                   "--stats-file",
                                   launch.stats_path};
  if (!launch.config_path.empty()) args.insert(args.end(), {"--config", launch.config_path});
  if (is_socket_transport(launch.transport)) {
    args.insert(args.end(), {"--transport", launch.transport, "--netns-tag", launch.netns_tag});
    for (const std::string& port : launch.extra_ports) {
      args.insert(args.end(), {"--extra-port", port});
    }
  }
  args.insert(args.end(), {"--ready-fd", std::to_string(launch.ready_fd)});
  if (launch.detached) {
    args.insert(args.end(), {"--stats-interval-ms", "250", "--persistent-region"});
  } else {
    args.push_back("--stop-with-parent");
  }
  return args;
}

}  // namespace ethx
