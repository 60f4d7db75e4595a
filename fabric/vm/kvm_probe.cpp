#include "fabric/vm/kvm_probe.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fabric/platform/child_process.hpp"

namespace ethx {
namespace {

constexpr std::int64_t kProbeTimeoutMs = 15'000;  // a working KVM boots the guest in ~1 s

// Whether KVM runs the guest depends on the host kernel, the QEMU build and the guest kernel,
// not on the ethx device linked into QEMU (relinked often), so the binary's path stands for it.
std::string cache_key(const VmPlan& plan) {
  utsname host{};
  ::uname(&host);
  return plan.qemu + " " + plan.kernel + " " + host.release;
}

std::string cache_path() {
  const char* cache = std::getenv("ETHX_CACHE");
  const char* home = std::getenv("HOME");
  return std::string(cache && *cache ? cache : std::string(home ? home : "/tmp") + "/.cache/ethx") +
         "/kvm-probe";
}

// Boots the guest once with -accel kvm and asks it to list its GPUs (it has none): a kernel
// that really runs under this KVM prints the ETHX-END 0 marker and powers off.
AcceleratorChoice probe(const VmPlan& plan) {
  const std::string console =
      (std::filesystem::temp_directory_path() / ("ethx-kvm-probe-" + std::to_string(::getpid())))
          .string();
  ChildProcess::SpawnOptions options;
  options.log_path = console + ".log";
  ChildProcess qemu = ChildProcess::spawn({plan.qemu,
                                           "-L",
                                           "/usr/share/qemu",
                                           "-L",
                                           "/usr/share/seabios",
                                           "-L",
                                           "/usr/lib/ipxe/qemu",
                                           "-accel",
                                           "kvm",
                                           "-machine",
                                           "q35",
                                           "-m",
                                           "256",
                                           "-nodefaults",
                                           "-no-user-config",
                                           "-display",
                                           "none",
                                           "-monitor",
                                           "none",
                                           "-serial",
                                           "file:" + console,
                                           "-no-reboot",
                                           "-kernel",
                                           plan.kernel,
                                           "-initrd",
                                           plan.initrd,
                                           "-append",
                                           "console=ttyS0 quiet panic=-1 ethx.run=list"},
                                          options);
  const bool exited = qemu.wait_exit(kProbeTimeoutMs);
  if (!exited) qemu.terminate(1000);
  std::ifstream in(console);
  std::stringstream text;
  text << in.rdbuf();
  std::ifstream log_in(console + ".log");
  std::string first_error;
  std::getline(log_in, first_error);
  std::filesystem::remove(console);
  std::filesystem::remove(console + ".log");
  if (exited && text.str().find("ETHX-END 0") != std::string::npos) {
    return {"kvm", "a KVM probe boot of the guest succeeded"};
  }
  return {"tcg", "a KVM probe boot did not reach the guest's tools (" +
                     (first_error.empty() ? std::string(exited ? "no output" : "timed out")
                                          : first_error) +
                     ")"};
}

}  // namespace

AcceleratorChoice choose_accelerator(const VmPlan& plan) {
  if (const char* forced = std::getenv("ETHX_ACCEL"); forced && *forced) {
    return {forced, std::string("ETHX_ACCEL=") + forced};
  }
  if (::access("/dev/kvm", R_OK | W_OK) != 0) return {"tcg", "no usable /dev/kvm"};
  const std::string key = cache_key(plan);
  {
    std::ifstream cached(cache_path());
    std::string line;
    while (std::getline(cached, line)) {
      if (line.rfind(key + " | ", 0) == 0) {
        const std::string rest = line.substr(key.size() + 3);
        const std::size_t space = rest.find(' ');
        return {rest.substr(0, space), rest.substr(space + 1) + " (cached)"};
      }
    }
  }
  AcceleratorChoice choice = probe(plan);
  std::error_code error;
  std::filesystem::create_directories(std::filesystem::path(cache_path()).parent_path(), error);
  std::ofstream(cache_path(), std::ios::app)
      << key << " | " << choice.accel << " " << choice.reason << "\n";
  return choice;
}

}  // namespace ethx
