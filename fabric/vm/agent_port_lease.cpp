#include "fabric/vm/agent_port_lease.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "fabric/platform/clock.hpp"
#include "fabric/platform/process_signals.hpp"
#include "fabric/vm/vm_plan.hpp"

namespace ethx {
namespace {

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd = -1) : fd_(fd) {}
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  FileDescriptor& operator=(FileDescriptor&&) = delete;
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// Waits for the VM's sockets while QEMU starts; then the port count.
std::size_t wait_for_ports(const std::string& log_directory, std::size_t vm,
                           std::int64_t deadline_ms) {
  for (;;) {
    const std::size_t ports = count_agent_ports(log_directory, vm);
    if (ports > 0) return ports;
    if (std::filesystem::exists(vm_agent_path(log_directory, vm))) {
      throw std::runtime_error("VM " + std::to_string(vm) + " has no ethx-agent ports (" +
                               vm_agent_port_path(log_directory, vm, 0) +
                               "): an older ethx started its QEMU; `ethx down` and `ethx up` "
                               "again");
    }
    if (g_stop_requested.load()) throw Interrupted();
    if (monotonic_ms() > deadline_ms) {
      throw std::runtime_error("VM " + std::to_string(vm) + " has no agent socket " +
                               vm_agent_port_path(log_directory, vm, 0) +
                               " (is its QEMU running?)");
    }
    // QEMU creates the sockets while it starts; nothing to wait on but time.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string holders(const std::string& log_directory, std::size_t vm, std::size_t ports) {
  std::string text;
  for (std::size_t port = 0; port < ports; ++port) {
    const std::string holder = describe_lock_holder(vm_agent_lock_path(log_directory, vm, port));
    if (holder.empty()) continue;
    text += (text.empty() ? "" : ", ") + holder;
  }
  return text.empty() ? "holders unknown" : "held by " + text;
}

}  // namespace

std::size_t count_agent_ports(const std::string& log_directory, std::size_t vm) {
  std::size_t ports = 0;
  std::error_code error;
  while (std::filesystem::exists(vm_agent_port_path(log_directory, vm, ports), error)) ++ports;
  return ports;
}

AgentPortLease AgentPortLease::acquire(const std::string& log_directory, std::size_t vm,
                                       std::int64_t timeout_ms) {
  const std::int64_t deadline_ms = monotonic_ms() + timeout_ms;
  const std::size_t ports = wait_for_ports(log_directory, vm, deadline_ms);
  // Each lock file is opened once and kept open while we wait: our own closes would otherwise
  // wake the inotify watch below.
  FileDescriptor changes(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
  std::vector<FileDescriptor> locks;
  for (std::size_t port = 0; port < ports; ++port) {
    const std::string path = vm_agent_lock_path(log_directory, vm, port);
    locks.emplace_back(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (locks.back().get() < 0) {
      throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
    }
    // A holder that ends (or releases its lease) closes the file: IN_CLOSE_WRITE.
    ::inotify_add_watch(changes.get(), path.c_str(), IN_CLOSE_WRITE);
  }
  for (;;) {
    for (std::size_t port = 0; port < ports; ++port) {
      if (::flock(locks[port].get(), LOCK_EX | LOCK_NB) != 0) continue;
      const std::string pid = std::to_string(::getpid()) + "\n";
      if (::ftruncate(locks[port].get(), 0) != 0 ||
          ::pwrite(locks[port].get(), pid.data(), pid.size(), 0) < 0) {
        throw std::runtime_error("cannot write " + vm_agent_lock_path(log_directory, vm, port));
      }
      return {locks[port].release(), port, vm_agent_port_path(log_directory, vm, port)};
    }
    const std::int64_t left_ms = deadline_ms - monotonic_ms();
    if (left_ms <= 0) {
      throw std::runtime_error("all " + std::to_string(ports) + " agent ports of VM " +
                               std::to_string(vm) + " are busy (" +
                               holders(log_directory, vm, ports) + ") after " +
                               std::to_string(timeout_ms / 1000) + " s");
    }
    if (g_stop_requested.load()) throw Interrupted();
    // Bounded, to notice a stop request (Ctrl-C, a process of the fabric exiting).
    pollfd wait{changes.get(), POLLIN, 0};
    if (::poll(&wait, 1, static_cast<int>(std::min<std::int64_t>(left_ms, 200))) > 0) {
      char events[4096];
      while (::read(changes.get(), events, sizeof events) > 0) {
      }
    }
  }
}

AgentPortLease::AgentPortLease(AgentPortLease&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      port_(other.port_),
      socket_path_(std::move(other.socket_path_)) {}

AgentPortLease& AgentPortLease::operator=(AgentPortLease&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    port_ = other.port_;
    socket_path_ = std::move(other.socket_path_);
  }
  return *this;
}

AgentPortLease::~AgentPortLease() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

std::string describe_lock_holder(const std::string& lock_path) {
  std::ifstream in(lock_path);
  long pid = 0;
  if (!(in >> pid) || pid <= 0) return "";
  std::ifstream cmdline_file("/proc/" + std::to_string(pid) + "/cmdline");
  std::string cmdline{std::istreambuf_iterator<char>(cmdline_file), {}};
  std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
  while (!cmdline.empty() && cmdline.back() == ' ') cmdline.pop_back();
  if (cmdline.size() > 60) cmdline = cmdline.substr(0, 57) + "...";
  return "pid " + std::to_string(pid) + (cmdline.empty() ? "" : " (" + cmdline + ")");
}

}  // namespace ethx
