// KVM or TCG for the VMs: KVM only where it really boots the guest (a probe boot), because a
// /dev/kvm can exist and still not run stock kernels (this project's build machines expose a
// paravirtual KVM that fails with "failed to set MSR"). The probe's verdict is cached per QEMU
// binary, guest kernel and host kernel in ${ETHX_CACHE:-~/.cache/ethx}/kvm-probe.
#pragma once

#include <string>

#include "fabric/vm/vm_plan.hpp"

namespace ethx {

struct AcceleratorChoice {
  std::string accel;   // "kvm" or "tcg"
  std::string reason;  // one line: why
};

// ETHX_ACCEL=kvm|tcg forces the choice; otherwise probes (once, then cached).
AcceleratorChoice choose_accelerator(const VmPlan& plan);

}  // namespace ethx
