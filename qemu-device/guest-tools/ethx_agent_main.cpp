// ethx-agent: runs the host's commands in this guest, one per virtio-serial port
// org.ethx.agent.<N> at a time, all ports at once (docs/agent-protocol.md). Static; started
// by the guest's /init before it reports ready.
//
//   ethx-agent [--background] [--ports N] [--wait-ms MS]
//     --background  return once every port is open (the agent goes on in its own session)
//     --ports N     ports to wait for (default: ethx.agent_ports= on the kernel command line,
//                   else 4); the kernel adds and names them shortly after modprobe
//     --wait-ms MS  how long to wait for them (default 10000); then it serves those found
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>

#include "qemu-device/guest-tools/agent_ports.hpp"
#include "qemu-device/guest-tools/agent_server.hpp"

namespace {

struct Arguments {
  bool background = false;
  std::size_t ports = 0;  // 0: from the kernel command line
  std::int64_t wait_ms = 10'000;
};

Arguments parse_arguments(int argc, char** argv) {
  Arguments arguments;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--background") {
      arguments.background = true;
    } else if (arg == "--ports" && has_value) {
      arguments.ports = std::strtoul(argv[++i], nullptr, 10);
    } else if (arg == "--wait-ms" && has_value) {
      arguments.wait_ms = std::strtoll(argv[++i], nullptr, 10);
    } else {
      std::fprintf(stderr,
                   "ethx-agent: unknown argument '%s' (see the top of ethx_agent_main.cpp)\n",
                   arg.c_str());
      std::exit(2);
    }
  }
  if (arguments.ports == 0) {
    std::ifstream in("/proc/cmdline");
    std::string cmdline;
    std::getline(in, cmdline);
    arguments.ports = ethx::guest::agent_ports_from_cmdline(cmdline, 4);
  }
  return arguments;
}

// --background: the parent waits until the child has opened its ports (one byte on `ready`),
// so the guest reports ready only with the agent listening.
int fork_background(int& ready_fd) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid > 0) {
    ::close(fds[1]);
    char byte = 0;
    std::_Exit(::read(fds[0], &byte, 1) == 1 ? 0 : 1);
  }
  ::close(fds[0]);
  ::setsid();
  ready_fd = fds[1];
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ethx::guest;
  const Arguments arguments = parse_arguments(argc, argv);
  if (!has_virtio_console(kSysfsVirtioDevices)) {  // run-vm.sh, a probe boot: nothing to serve
    std::printf("ethx-agent: this VM has no virtio-serial device; not started\n");
    return 0;
  }
  int ready_fd = -1;
  if (arguments.background && fork_background(ready_fd) != 0) {
    std::perror("ethx-agent: fork");
    return 1;
  }
  try {
    const std::vector<AgentPortInfo> ports =
        wait_for_agent_ports(arguments.ports, arguments.wait_ms);
    if (ports.empty()) {
      std::fprintf(stderr,
                   "ethx-agent: no virtio-serial port named %s<N> (module virtio_console loaded? "
                   "QEMU -device virtserialport,name=...)\n",
                   ethx::agent::kPortNamePrefix);
      return 1;
    }
    if (ports.size() < arguments.ports) {
      std::fprintf(stderr, "ethx-agent: %zu of %zu ports appeared within %lld ms; serving those\n",
                   ports.size(), arguments.ports, static_cast<long long>(arguments.wait_ms));
    }
    link_port_names(ports);
    AgentServer server(ports, AgentConfig{});
    std::printf("ethx-agent: serving %zu virtio-serial ports (%s0..%zu)\n", ports.size(),
                ethx::agent::kPortNamePrefix, ports.size() - 1);
    std::fflush(stdout);
    if (ready_fd >= 0) {
      [[maybe_unused]] const ssize_t wrote = ::write(ready_fd, "1", 1);
      ::close(ready_fd);
    }
    server.run();
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ethx-agent: %s\n", error.what());
    return 1;
  }
}
