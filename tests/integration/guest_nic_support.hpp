// For suites whose VMs need guest NICs (Soft-RoCE, the OpenSHMEM rdma backend): the image check.
#pragma once

#include <exception>
#include <string>

#include "fabric/vm/vm_plan.hpp"

namespace ethx::test {

// What is missing for a VM with guest NICs (the --rdma guest image), or empty when nothing is.
// Everything but root is a failure naming what to build: these tests exist to run.
inline std::string missing_guest_nic_image() {
  VmPlan plan;
  plan.guest_nics = true;
  try {
    locate_vm_image(plan);
  } catch (const std::exception& error) {
    return error.what();
  }
  return {};
}

}  // namespace ethx::test
