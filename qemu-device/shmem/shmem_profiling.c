/* The profiling interface: no profiling library is attached to this one, so
 * every level is accepted and changes nothing, which the spec allows. */
#include "shmem_api.h"

void shmem_pcontrol(int level, ...) {
  ethx_shmem_require_init(__func__);
  (void)level;
}
