// The Soft-RoCE section of `ethx compare`: two VMs with rdma_rxe on the same switch, perftest
// between them (softroce_suite.hpp). The suite itself says when it cannot run here (no root,
// no QEMU or RDMA image) with "available": false and a reason, which the report shows. Its
// details.same_vms_load_store (`ethx-guest bench` in the same two VMs) is pushed by
// run_compare as the next system.
#include "fabric/compare/compare_options.hpp"
#include "fabric/compare/softroce_suite.hpp"

namespace ethx {

std::optional<nlohmann::json> softroce_results(const CompareOptions& options) {
  SoftRoceOptions softroce;
  softroce.quick = options.quick;
  // The guests' NICs are AF_PACKET sockets on taps whatever the GPUs use; their GPUs take the
  // fastest socket transport this machine allows (a shared-memory fabric has no taps).
  softroce.transport = options.transport == "shm" ? "auto" : options.transport;
  // softroce.fabric stays "default": VMs `ethx up --vms 2 --guest-nics` left running are used,
  // else two temporary ones are booted and removed.
  softroce.time_budget_s = options.quick ? 240 : 900;
  softroce.quiet = options.quiet;
  return run_softroce_suite(softroce);
}

}  // namespace ethx
