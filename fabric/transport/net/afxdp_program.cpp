#include "fabric/transport/net/afxdp_program.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <unistd.h>
#include <xdp/libxdp.h>

#include <array>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace ethx {
namespace {

constexpr const char* kObjectName = "ethx_xdp.bpf.o";

std::string xdp_error_text(int error) {
  std::array<char, 256> text{};
  libxdp_strerror(error, text.data(), text.size());
  return text.data();
}

// libbpf/libxdp print warnings to stderr. Keep them, minus the debug chatter and the one
// harmless line every object without an .xdp_run_config section produces.
__attribute__((format(printf, 2, 0))) int quiet_print(enum libbpf_print_level level,
                                                      const char* format, va_list args) {
  if (level == LIBBPF_DEBUG) return 0;
  std::array<char, 512> line{};
  std::vsnprintf(line.data(), line.size(), format, args);
  // Expected here and harmless: no .xdp_run_config section in our object, and no bpffs for
  // libxdp's multi-program dispatcher (it then attaches our program alone, which is all ethx
  // wants: one program per interface).
  for (const char* harmless : {"skipping unrecognized data section", "No bpffs found",
                               "Can't use dispatcher without a working bpffs",
                               "Falling back to loading single prog without dispatcher"}) {
    if (std::strstr(line.data(), harmless) != nullptr) return 0;
  }
  return std::fputs(line.data(), stderr);
}
__attribute__((format(printf, 2, 0))) int quiet_xdp_print(enum libxdp_print_level level,
                                                          const char* format, va_list args) {
  if (level == LIBXDP_DEBUG) return 0;
  return quiet_print(LIBBPF_WARN, format, args);
}

void install_print_filters() {
  static std::once_flag once;
  std::call_once(once, [] {
    libbpf_set_print(quiet_print);
    libxdp_set_print(quiet_xdp_print);
  });
}

bool is_ethx_interface(const std::string& name) {
  return name.rfind("ethx-", 0) == 0;
}

}  // namespace

std::string find_xdp_object() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("ETHX_XDP_OBJECT"); env != nullptr && *env != '\0') {
    candidates.emplace_back(env);
  }
  std::error_code error;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) candidates.push_back((exe.parent_path() / kObjectName).string());
#ifdef ETHX_XDP_OBJECT_BUILD_PATH
  candidates.emplace_back(ETHX_XDP_OBJECT_BUILD_PATH);
#endif
  std::string looked;
  for (const auto& path : candidates) {
    if (::access(path.c_str(), R_OK) == 0) return path;
    looked += (looked.empty() ? "" : ", ") + path;
  }
  throw std::runtime_error("ethx XDP program object " + std::string(kObjectName) +
                           " not found (looked at: " + looked +
                           "); build with -DETHX_WITH_XDP=ON or set ETHX_XDP_OBJECT");
}

EthxXdpProgram::EthxXdpProgram(const std::string& interface, const XdpProgramOptions& options)
    : interface_(interface) {
  install_print_filters();
  ifindex_ = static_cast<int>(::if_nametoindex(interface.c_str()));
  if (ifindex_ == 0) {
    throw std::runtime_error("XDP: no interface '" + interface + "' in this network namespace");
  }
  const std::string path = options.object_path.empty() ? find_xdp_object() : options.object_path;
  program_ = xdp_program__open_file(path.c_str(), "xdp", nullptr);
  if (const long error = libxdp_get_error(program_); error != 0) {
    program_ = nullptr;
    throw std::runtime_error("XDP: cannot open " + path + ": " +
                             xdp_error_text(static_cast<int>(error)));
  }

  std::vector<xdp_attach_mode> modes;
  if (options.mode != XdpAttachMode::kSkb) modes.push_back(XDP_MODE_NATIVE);
  if (options.mode != XdpAttachMode::kNative) modes.push_back(XDP_MODE_SKB);
  std::string failures;
  for (const xdp_attach_mode mode : modes) {
    int result = xdp_program__attach(program_, ifindex_, mode, 0);
    if ((result == -EEXIST || result == -EBUSY) && options.replace_stale &&
        is_ethx_interface(interface)) {
      // A killed ethx process left its program behind; nothing else uses ethx-* interfaces.
      bpf_xdp_detach(ifindex_, XDP_FLAGS_DRV_MODE, nullptr);
      bpf_xdp_detach(ifindex_, XDP_FLAGS_SKB_MODE, nullptr);
      result = xdp_program__attach(program_, ifindex_, mode, 0);
    }
    if (result == 0) {
      attached_mode_ = mode;
      break;
    }
    std::string why = xdp_error_text(-result);
    if (mode == XDP_MODE_NATIVE && result == -ERANGE) {
      why += " (native XDP on veth needs MTU <= 3506)";
    } else if (result == -EPERM) {
      why += " (needs CAP_NET_ADMIN and CAP_BPF or CAP_SYS_ADMIN)";
    }
    failures += std::string(failures.empty() ? "" : "; ") +
                (mode == XDP_MODE_NATIVE ? "native: " : "skb: ") + why;
  }
  if (attached_mode_ == 0) {
    xdp_program__close(program_);
    throw std::runtime_error("XDP: cannot attach " + path + " to " + interface + ": " + failures);
  }

  bpf_object* object = xdp_program__bpf_obj(program_);
  xsks_map_fd_ = bpf_object__find_map_fd_by_name(object, "ethx_xsks");
  config_map_fd_ = bpf_object__find_map_fd_by_name(object, "ethx_config");
  stats_map_fd_ = bpf_object__find_map_fd_by_name(object, "ethx_stats");
  const std::uint32_t flags = (options.switch_port ? kXdpFlagSwitchPort : 0u) |
                              (options.accept_rocev2 ? kXdpFlagRocev2 : 0u);
  const std::uint32_t max_frame = options.max_frame_bytes;
  if (xsks_map_fd_ < 0 || config_map_fd_ < 0 || stats_map_fd_ < 0 ||
      bpf_map_update_elem(config_map_fd_, &kXdpConfigFlags, &flags, BPF_ANY) != 0 ||
      bpf_map_update_elem(config_map_fd_, &kXdpConfigMaxFrame, &max_frame, BPF_ANY) != 0) {
    const int saved = errno;
    xdp_program__detach(program_, ifindex_, static_cast<xdp_attach_mode>(attached_mode_), 0);
    xdp_program__close(program_);
    throw std::runtime_error("XDP: " + path +
                             " lacks the ethx maps or they cannot be set: " + std::strerror(saved));
  }
}

EthxXdpProgram::~EthxXdpProgram() {
  if (program_ == nullptr) return;
  // Needs the interface's namespace: the socket's owner destroys it from the thread (or with
  // the namespace guard) it was created in. If the namespace is gone, so is the program.
  if (detach_on_destroy_) {
    xdp_program__detach(program_, ifindex_, static_cast<xdp_attach_mode>(attached_mode_), 0);
  }
  xdp_program__close(program_);
}

const char* EthxXdpProgram::mode_name() const {
  return attached_mode_ == XDP_MODE_NATIVE ? "native" : "skb";
}

XdpProgramStats EthxXdpProgram::stats() const {
  XdpProgramStats stats;
  const int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return stats;
  std::vector<std::uint64_t> values(static_cast<std::size_t>(cpus));
  auto sum = [&](std::uint32_t key) {
    std::uint64_t total = 0;
    if (bpf_map_lookup_elem(stats_map_fd_, &key, values.data()) == 0) {
      for (const std::uint64_t value : values) total += value;
    }
    return total;
  };
  stats.redirected = sum(0);
  stats.passed = sum(1);
  stats.oversize = sum(2);
  return stats;
}

}  // namespace ethx
