/* The rdma backend (shmem_backend.h): not written yet. */
#include "shmem_core.h"
#include "shmem_layout.h"

static void rdma_init(ethx_shmem_state* state) {
  (void)state;
  ethx_shmem_fatal("ETHX_SHMEM_BACKEND=rdma: not available yet");
}

const ethx_shmem_backend ethx_shmem_backend_rdma = {.name = "rdma", .init = rdma_init};
