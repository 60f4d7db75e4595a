#include "fabric/transport/net/netns_topology.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <sched.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <random>
#include <set>

extern char** environ;

namespace ethx::netns {
namespace {

constexpr const char* kNetnsDir = "/var/run/netns";

std::string checked_name(std::string name) {
  if (name.size() > kInterfaceNameMax) {
    throw std::invalid_argument("name '" + name + "' is longer than " +
                                std::to_string(kInterfaceNameMax) + " characters (IFNAMSIZ)");
  }
  return name;
}

std::string join(const std::vector<std::string>& argv) {
  std::string text;
  for (const auto& arg : argv) text += (text.empty() ? "" : " ") + arg;
  return text;
}

std::string errno_text(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

// Writes "1" to a sysctl of the calling thread's network namespace; a kernel without IPv6
// has no such file, which is fine.
void write_sysctl(const std::string& path, const char* value) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return;
    throw NetnsError(errno_text("open " + path));
  }
  const ssize_t written = ::write(fd, value, std::strlen(value));
  const int saved = errno;
  ::close(fd);
  if (written < 0) {
    errno = saved;
    throw NetnsError(errno_text("write " + path));
  }
}

void create_all(const TopologySpec& spec, std::vector<std::string>& created) {
  for (const auto& ns : spec.namespaces) {
    // Fails if the name exists (another run with the same tag): nothing of it is touched.
    run_checked({"ip", "netns", "add", ns});
    created.push_back(ns);
    // IPv6 off before any interface arrives: no link-local addresses, no neighbour discovery
    // frames on the fabric's links.
    run_in_namespace(ns, [] {
      write_sysctl("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1");
      write_sysctl("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1");
    });
  }
  for (const auto& link : spec.links) {
    std::string mtu = std::to_string(spec.mtu);
    for (const auto& [name, bytes] : spec.link_mtus) {
      if (name == link.interface_a) mtu = std::to_string(bytes);
    }
    // Both ends are created directly in their namespaces: the names never appear in the root
    // namespace, so they cannot collide with anything there.
    run_checked({"ip",
                 "link",
                 "add",
                 link.interface_a,
                 "netns",
                 link.namespace_a,
                 "numtxqueues",
                 "1",
                 "numrxqueues",
                 "1",
                 "mtu",
                 mtu,
                 "type",
                 "veth",
                 "peer",
                 "name",
                 link.interface_b,
                 "netns",
                 link.namespace_b,
                 "numtxqueues",
                 "1",
                 "numrxqueues",
                 "1",
                 "mtu",
                 mtu});
  }
  for (const auto& link : spec.links) {
    run_checked({"ip", "-n", link.namespace_a, "link", "set", "dev", link.interface_a, "up"});
    run_checked({"ip", "-n", link.namespace_b, "link", "set", "dev", link.interface_b, "up"});
  }
  for (const auto& tap : spec.taps) {
    // Persistent: it outlives the QEMU that attaches to it, and goes with its namespace.
    run_checked({"ip", "-n", tap.netns, "tuntap", "add", "dev", tap.name, "mode", "tap"});
    run_checked({"ip", "-n", tap.netns, "link", "set", "dev", tap.name, "mtu",
                 std::to_string(tap.mtu), "up"});
  }
}

}  // namespace

bool valid_tag(std::string_view tag) {
  if (tag.empty() || tag.size() > kTagMax) return false;
  return std::all_of(tag.begin(), tag.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); });
}

std::string random_tag() {
  std::random_device device;
  std::uint64_t seed =
      (static_cast<std::uint64_t>(device()) << 32) ^ static_cast<std::uint64_t>(::getpid()) ^
      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  constexpr std::string_view kAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string tag;
  for (std::size_t i = 0; i < 4; ++i) {
    tag += kAlphabet[seed % kAlphabet.size()];
    seed /= kAlphabet.size();
  }
  return tag;
}

std::string run_prefix(std::string_view tag) {
  if (!valid_tag(tag)) {
    throw std::invalid_argument("tag '" + std::string(tag) + "' is not 1-" +
                                std::to_string(kTagMax) + " characters of [a-z0-9]");
  }
  return std::string(kNamePrefix) + std::string(tag) + "-";
}

std::string switch_namespace(std::string_view tag) {
  return checked_name(run_prefix(tag) + "sw");
}
std::string node_namespace(std::string_view tag, std::size_t node) {
  return checked_name(run_prefix(tag) + "n" + std::to_string(node));
}
std::string node_interface(std::string_view tag, std::size_t node) {
  return node_namespace(tag, node);
}
std::string switch_interface(std::string_view tag, std::size_t node) {
  return checked_name(run_prefix(tag) + "s" + std::to_string(node));
}

std::string tap_interface(std::string_view tag, std::size_t vm) {
  return checked_name(run_prefix(tag) + "t" + std::to_string(vm));
}
std::string host_port_namespace(std::string_view tag) {
  return checked_name(run_prefix(tag) + "h");
}
std::string host_port_interface(std::string_view tag) {
  return host_port_namespace(tag);
}
std::string host_port_switch_interface(std::string_view tag) {
  return checked_name(run_prefix(tag) + "sh");
}

void add_guest_nics(TopologySpec& spec, std::size_t vms, unsigned nic_mtu) {
  const std::string switch_ns = switch_namespace(spec.tag);
  for (std::size_t vm = 0; vm < vms; ++vm) {
    spec.taps.push_back(TapDevice{switch_ns, tap_interface(spec.tag, vm), nic_mtu});
  }
  spec.namespaces.push_back(host_port_namespace(spec.tag));
  spec.links.push_back(VethLink{host_port_namespace(spec.tag), host_port_interface(spec.tag),
                                switch_ns, host_port_switch_interface(spec.tag)});
  spec.link_mtus.emplace_back(host_port_interface(spec.tag), nic_mtu);
}

int open_tap(const std::string& netns, const std::string& name) {
  int fd = -1;
  std::string error;
  run_in_namespace(netns, [&] {
    fd = ::open("/dev/net/tun", O_RDWR | O_CLOEXEC);
    if (fd < 0) {
      error = errno_text("open /dev/net/tun (module tun; needs CAP_NET_ADMIN)");
      return;
    }
    ifreq request{};
    request.ifr_flags = IFF_TAP | IFF_NO_PI;
    std::strncpy(request.ifr_name, name.c_str(), IFNAMSIZ - 1);
    if (::ioctl(fd, TUNSETIFF, &request) != 0) {
      error = errno_text("TUNSETIFF " + name + " in " + netns);
      ::close(fd);
      fd = -1;
    }
  });
  if (fd < 0) throw NetnsError(error);
  return fd;
}

TopologySpec star_topology(std::string_view tag, std::size_t nodes, unsigned mtu) {
  if (nodes == 0 || nodes > kMaxNodes) {
    throw std::invalid_argument("a star topology needs 1.." + std::to_string(kMaxNodes) + " nodes");
  }
  TopologySpec spec;
  spec.tag = std::string(tag);
  spec.mtu = mtu;
  spec.namespaces.push_back(switch_namespace(tag));
  for (std::size_t node = 0; node < nodes; ++node) {
    spec.namespaces.push_back(node_namespace(tag, node));
    spec.links.push_back(VethLink{node_namespace(tag, node), node_interface(tag, node),
                                  switch_namespace(tag), switch_interface(tag, node)});
  }
  return spec;
}

TopologySpec pair_topology(std::string_view tag, unsigned mtu) {
  TopologySpec spec;
  spec.tag = std::string(tag);
  spec.mtu = mtu;
  spec.namespaces = {node_namespace(tag, 0), node_namespace(tag, 1)};
  spec.links.push_back(VethLink{node_namespace(tag, 0), node_interface(tag, 0),
                                node_namespace(tag, 1), node_interface(tag, 1)});
  return spec;
}

CommandResult run_command(const std::vector<std::string>& argv) {
  CommandResult result;
  if (argv.empty()) return result;
  std::array<int, 2> pipe_fds{};
  if (::pipe2(pipe_fds.data(), O_CLOEXEC) != 0) throw NetnsError(errno_text("pipe2"));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawn_error = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (spawn_error != 0) {
    ::close(pipe_fds[0]);
    result.output = "cannot run " + argv[0] + ": " + std::strerror(spawn_error) +
                    (argv[0] == "ip" ? " (install iproute2)" : "");
    return result;
  }
  std::array<char, 4096> buffer{};
  for (;;) {
    const ssize_t got = ::read(pipe_fds[0], buffer.data(), buffer.size());
    if (got > 0) {
      result.output.append(buffer.data(), static_cast<std::size_t>(got));
    } else if (got == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  while (!result.output.empty() && result.output.back() == '\n') result.output.pop_back();
  return result;
}

void run_checked(const std::vector<std::string>& argv) {
  const CommandResult result = run_command(argv);
  if (result.exit_code != 0) {
    throw NetnsError("`" + join(argv) + "` failed (exit " + std::to_string(result.exit_code) +
                     "): " + result.output);
  }
}

VethTopology::VethTopology(TopologySpec spec) : spec_(std::move(spec)) {
  for (const auto& ns : spec_.namespaces) {
    if (ns.rfind(kNamePrefix, 0) != 0)
      throw std::invalid_argument("namespace '" + ns + "' lacks the ethx- prefix");
  }
  try {
    create_all(spec_, created_namespaces_);
  } catch (...) {
    destroy();
    throw;
  }
}

VethTopology::~VethTopology() {
  try {
    destroy();
  } catch (...) {
    // Destructors must not throw; cleanup_by_prefix() finds leftovers later.
  }
}

void VethTopology::destroy() {
  // Only what this object created: deleting a namespace deletes its veths (both ends of each
  // pair) and the XDP programs attached to them. Veths are only ever created inside these
  // namespaces, so nothing can be left in the root namespace.
  while (!created_namespaces_.empty()) {
    const std::string ns = std::move(created_namespaces_.back());
    created_namespaces_.pop_back();
    const CommandResult result = run_command({"ip", "netns", "delete", ns});
    if (result.exit_code != 0 && !destroy_error_.empty()) destroy_error_ += "; ";
    if (result.exit_code != 0) destroy_error_ += ns + ": " + result.output;
  }
}

std::vector<std::string> cleanup_by_prefix(std::string_view prefix) {
  if (prefix.rfind(kNamePrefix, 0) != 0 || prefix.size() <= kNamePrefix.size()) {
    throw std::invalid_argument("cleanup prefix '" + std::string(prefix) +
                                "' must start with ethx- and name one run");
  }
  std::vector<std::string> removed;
  for (const auto& ns : list_namespaces()) {
    if (ns.rfind(prefix, 0) != 0) continue;
    // Deleting the namespace deletes its veths (both ends) and with them their XDP programs.
    const CommandResult result = run_command({"ip", "netns", "delete", ns});
    if (result.exit_code == 0) removed.push_back(ns);
  }
  // Leftovers in the root namespace (a creation interrupted half-way, or a manual run).
  for (const auto& link : list_interfaces()) {
    if (link.rfind(prefix, 0) != 0) continue;
    const CommandResult result = run_command({"ip", "link", "delete", "dev", link});
    if (result.exit_code == 0) removed.push_back(link);
  }
  return removed;
}

std::vector<std::string> list_namespaces() {
  std::vector<std::string> names;
  DIR* dir = ::opendir(kNetnsDir);
  if (dir == nullptr) return names;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> list_interfaces() {
  std::vector<std::string> names;
  struct if_nameindex* list = ::if_nameindex();
  if (list == nullptr) return names;
  for (const struct if_nameindex* entry = list; entry->if_index != 0; ++entry) {
    names.emplace_back(entry->if_name);
  }
  ::if_freenameindex(list);
  std::sort(names.begin(), names.end());
  return names;
}

NetnsGuard::NetnsGuard(const std::string& name) {
  const std::string self = "/proc/self/task/" + std::to_string(::syscall(SYS_gettid)) + "/ns/net";
  original_fd_ = ::open(self.c_str(), O_RDONLY | O_CLOEXEC);
  if (original_fd_ < 0) throw NetnsError(errno_text("open " + self));
  const std::string path = std::string(kNetnsDir) + "/" + name;
  const int target = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (target < 0) {
    const std::string message = errno_text("open network namespace " + path);
    ::close(original_fd_);
    throw NetnsError(message);
  }
  const int result = ::setns(target, CLONE_NEWNET);
  const int saved = errno;
  ::close(target);
  if (result != 0) {
    ::close(original_fd_);
    errno = saved;
    throw NetnsError(errno_text("setns into " + name + " (needs CAP_SYS_ADMIN)"));
  }
}

NetnsGuard::~NetnsGuard() {
  // Returning to the original namespace cannot reasonably fail; if it did, the thread would
  // stay in the fabric namespace, which only affects sockets it opens later.
  (void)::setns(original_fd_, CLONE_NEWNET);
  ::close(original_fd_);
}

}  // namespace ethx::netns
