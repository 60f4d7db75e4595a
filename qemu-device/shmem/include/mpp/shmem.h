/* <mpp/shmem.h>: the header's old place, deprecated since OpenSHMEM 1.1 and still in 1.5. */
#ifndef ETHX_MPP_SHMEM_H
#define ETHX_MPP_SHMEM_H

#include "../shmem.h"

#endif /* ETHX_MPP_SHMEM_H */
