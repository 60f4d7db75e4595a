// Namespaced veth topologies for the real-interface transports: one network namespace per node
// and one for the switch, joined by veth pairs (one queue each, IPv6 off, MTU set to fit the
// AF_XDP frame buffers). Every name starts with "ethx-<tag>-" so that a cleanup can find
// exactly what one run made, also after its processes were killed with SIGKILL, and nothing
// else on the machine is touched. Uses iproute2 (`ip`) through posix_spawn.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ethx::netns {

inline constexpr std::string_view kNamePrefix = "ethx-";
inline constexpr std::size_t kInterfaceNameMax = 15;  // IFNAMSIZ - 1
inline constexpr std::size_t kTagMax = 5;
inline constexpr std::size_t kMaxNodes = 1000;  // "n999" keeps names within kInterfaceNameMax

class NetnsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---- names ----

// A tag is 1..kTagMax characters of [a-z0-9].
bool valid_tag(std::string_view tag);
// A fresh tag from the pid, the clock and a random device: unique per run in practice.
std::string random_tag();
// "ethx-<tag>-"; throws std::invalid_argument for an invalid tag.
std::string run_prefix(std::string_view tag);
// "ethx-<tag>-sw", "ethx-<tag>-n<i>" (namespace and the node's veth end), "ethx-<tag>-s<i>" (the
// switch's veth end). Throws std::invalid_argument if a name would exceed kInterfaceNameMax.
std::string switch_namespace(std::string_view tag);
std::string node_namespace(std::string_view tag, std::size_t node);
std::string node_interface(std::string_view tag, std::size_t node);
std::string switch_interface(std::string_view tag, std::size_t node);

// Guest NICs (`ethx up --vms --guest-nics`, docs/softroce.md): VM v's NIC is the tap
// "ethx-<tag>-t<v>" in the switch namespace; the host's RDMA port (a RoCE engine on the same
// switch) is the veth "ethx-<tag>-h" in namespace "ethx-<tag>-h", whose switch end is
// "ethx-<tag>-sh".
std::string tap_interface(std::string_view tag, std::size_t vm);
std::string host_port_namespace(std::string_view tag);
std::string host_port_interface(std::string_view tag);
std::string host_port_switch_interface(std::string_view tag);

// ---- topology description ----

struct TapDevice {
  std::string netns;  // created there (persistent, IPv6 off like every interface of the run)
  std::string name;
  unsigned mtu = 1500;
};

struct VethLink {
  std::string namespace_a, interface_a;
  std::string namespace_b, interface_b;
};

struct TopologySpec {
  std::string tag;
  std::vector<std::string> namespaces;
  std::vector<VethLink> links;
  unsigned mtu = 1778;  // 1792 B frames (2 KiB chunks - 256 B) minus the 14 B Ethernet header
  std::vector<TapDevice> taps;
  // Links whose MTU is not `mtu` (the host RDMA port: the guests' 1500), by interface_a.
  std::vector<std::pair<std::string, unsigned>> link_mtus;
};

// `nodes` node namespaces, each joined to the switch namespace by one veth pair.
TopologySpec star_topology(std::string_view tag, std::size_t nodes, unsigned mtu);
// Adds the guest NICs of `vms` VMs and the host RDMA port to a star topology (names above).
void add_guest_nics(TopologySpec& spec, std::size_t vms, unsigned nic_mtu = 1500);
// Opens the tap `name` of namespace `netns` for a QEMU `-netdev tap,fd=N` (IFF_TAP, no packet
// information, no virtio header: the guest computes its own checksums). The caller owns the
// descriptor (close-on-exec set).
int open_tap(const std::string& netns, const std::string& name);

// Two node namespaces joined directly: node_interface(tag, 0) <-> node_interface(tag, 1).
TopologySpec pair_topology(std::string_view tag, unsigned mtu);

// ---- running iproute2 ----

struct CommandResult {
  int exit_code = -1;  // -1 if it could not be started or ended by a signal
  std::string output;  // stdout and stderr
};
CommandResult run_command(const std::vector<std::string>& argv);
// Throws NetnsError naming the command and its output if it fails.
void run_checked(const std::vector<std::string>& argv);

// ---- the live topology ----

// Creates everything in `spec` (namespaces, veths, IPv6 off, MTU, links up). If any step fails
// (e.g. a namespace of that name exists already), removes only what it made itself and throws
// NetnsError. The destructor removes everything it made.
class VethTopology {
 public:
  explicit VethTopology(TopologySpec spec);
  ~VethTopology();
  VethTopology(const VethTopology&) = delete;
  VethTopology& operator=(const VethTopology&) = delete;

  const TopologySpec& spec() const { return spec_; }
  // Removes every namespace this object created, with their veths and XDP programs
  // (idempotent). Failures are collected in destroy_error().
  void destroy();
  const std::string& destroy_error() const { return destroy_error_; }
  // Hands the namespaces over to someone else (`ethx up`: the run directory, and `ethx down`
  // removes them); the destructor then leaves them alone.
  void release() { created_namespaces_.clear(); }

 private:
  TopologySpec spec_;
  std::vector<std::string> created_namespaces_;
  std::string destroy_error_;
};

// Removes every network namespace and root-namespace link whose name starts with `prefix`
// (which must start with "ethx-" and name one run, e.g. run_prefix(tag)); deleting a namespace
// deletes its veths and the XDP programs attached to them. Returns the names it removed.
std::vector<std::string> cleanup_by_prefix(std::string_view prefix);

// Named network namespaces (/var/run/netns), and the interfaces of the caller's namespace.
std::vector<std::string> list_namespaces();
std::vector<std::string> list_interfaces();

// Moves the calling thread into the named network namespace until destruction. Sockets
// created meanwhile stay in that namespace after the thread leaves it.
class NetnsGuard {
 public:
  explicit NetnsGuard(const std::string& name);
  ~NetnsGuard();
  NetnsGuard(const NetnsGuard&) = delete;
  NetnsGuard& operator=(const NetnsGuard&) = delete;

 private:
  int original_fd_ = -1;
};

// Runs `fn` on a fresh thread inside namespace `name` (the caller's thread is never moved) and
// rethrows what it throws.
template <class Fn>
void run_in_namespace(const std::string& name, Fn&& fn);

}  // namespace ethx::netns

#include <exception>
#include <thread>

namespace ethx::netns {

template <class Fn>
void run_in_namespace(const std::string& name, Fn&& fn) {
  std::exception_ptr error;
  std::thread worker([&] {
    try {
      NetnsGuard guard(name);
      fn();
    } catch (...) {
      error = std::current_exception();
    }
  });
  worker.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace ethx::netns
