/* oshrun's failure handling: PE 1 exits with status 3 right after shmem_init while the others
 * wait in a barrier that can never complete. oshrun must stop them and name PE 1
 * (tests/integration/vm_shmem_test.cpp). */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  shmem_init();
  if (shmem_my_pe() == 1) {
    fprintf(stderr, "PE 1 leaves on purpose\n");
    exit(3);
  }
  shmem_barrier_all(); /* never completes: PE 1 is gone */
  printf("PE %d passed a barrier PE 1 never entered\n", shmem_my_pe());
  shmem_finalize();
  return 0;
}
