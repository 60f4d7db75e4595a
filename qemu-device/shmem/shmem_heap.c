/* The symmetric heap: a first-fit allocator over [heap base, + SHMEM_SYMMETRIC_SIZE) of the
 * symmetric memory. Every PE makes the same calls in the same order (the spec requires it), so
 * every PE's allocator makes the same choices and an object has the same offset everywhere.
 * The block list lives in ordinary memory: it is this PE's bookkeeping, not shared. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shmem_core.h"
#include "shmem_layout.h"

enum { kDefaultAlignment = 64 }; /* a cache line: no two objects share one */

typedef struct block {
  size_t offset; /* from the heap's base */
  size_t bytes;
  int used;
} block;

static block* g_blocks;
static size_t g_block_count;
static size_t g_block_capacity;
static size_t g_used_bytes;

void ethx_shmem_heap_init(uint64_t offset, size_t bytes) {
  ethx_shmem_state* state = &ethx_shmem_g_state;
  state->heap.base = (uintptr_t)(state->memory + offset);
  state->heap.bytes = bytes;
  state->heap.offset = offset;
  g_block_capacity = 64;
  g_blocks = calloc(g_block_capacity, sizeof *g_blocks);
  if (g_blocks == NULL) ethx_shmem_fatal("out of memory for the heap's block list");
  g_blocks[0] = (block){0, bytes, 0};
  g_block_count = bytes > 0 ? 1 : 0;
}

static void insert_block(size_t index, block value) {
  if (g_block_count == g_block_capacity) {
    g_block_capacity *= 2;
    g_blocks = realloc(g_blocks, g_block_capacity * sizeof *g_blocks);
    if (g_blocks == NULL) ethx_shmem_fatal("out of memory for the heap's block list");
  }
  memmove(&g_blocks[index + 1], &g_blocks[index], (g_block_count - index) * sizeof *g_blocks);
  g_blocks[index] = value;
  ++g_block_count;
}

/* Carves [aligned, aligned + bytes) out of free block `index`, keeping the rest free. */
static size_t carve(size_t index, size_t aligned, size_t bytes) {
  const block free_block = g_blocks[index];
  const size_t head = aligned - free_block.offset;
  const size_t tail = free_block.bytes - head - bytes;
  g_blocks[index] = (block){aligned, bytes, 1};
  if (tail > 0) insert_block(index + 1, (block){aligned + bytes, tail, 0});
  if (head > 0) {
    insert_block(index, (block){free_block.offset, head, 0});
    ++index;
  }
  g_used_bytes += bytes;
  return index;
}

/* The offset of a new block, or SIZE_MAX if no free block fits. */
static size_t allocate(size_t bytes, size_t alignment) {
  for (size_t i = 0; i < g_block_count; ++i) {
    if (g_blocks[i].used) continue;
    const size_t aligned = (g_blocks[i].offset + alignment - 1) / alignment * alignment;
    const size_t end = g_blocks[i].offset + g_blocks[i].bytes;
    if (aligned > end || end - aligned < bytes) continue;
    return g_blocks[carve(i, aligned, bytes)].offset;
  }
  return SIZE_MAX;
}

static void merge_with_next(size_t index) {
  if (index + 1 >= g_block_count || g_blocks[index].used || g_blocks[index + 1].used) return;
  g_blocks[index].bytes += g_blocks[index + 1].bytes;
  memmove(&g_blocks[index + 1], &g_blocks[index + 2],
          (g_block_count - index - 2) * sizeof *g_blocks);
  --g_block_count;
}

/* Frees the block at `offset`; 0 if there is no used block there. */
static int release(size_t offset) {
  for (size_t i = 0; i < g_block_count; ++i) {
    if (g_blocks[i].offset != offset || !g_blocks[i].used) continue;
    g_blocks[i].used = 0;
    g_used_bytes -= g_blocks[i].bytes;
    merge_with_next(i);
    if (i > 0) merge_with_next(i - 1);
    return 1;
  }
  return 0;
}

static size_t block_bytes(size_t offset) {
  for (size_t i = 0; i < g_block_count; ++i) {
    if (g_blocks[i].offset == offset && g_blocks[i].used) return g_blocks[i].bytes;
  }
  return 0;
}

static void* heap_address(size_t offset) {
  return (void*)(ethx_shmem_g_state.heap.base + offset);
}

/* An allocation every PE makes; NULL (and one line on stderr saying why) if it does not fit. */
static void* symmetric_allocate(const char* function, size_t bytes, size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    fprintf(stderr, "ethx-shmem: PE %d: %s: alignment %zu is not a power of two\n", ethx_shmem_me(),
            function, alignment);
    return NULL;
  }
  const size_t offset =
      allocate(bytes, alignment < kDefaultAlignment ? kDefaultAlignment : alignment);
  if (offset == SIZE_MAX) {
    fprintf(stderr,
            "ethx-shmem: PE %d: %s(%zu bytes): the symmetric heap has %zu of %zu bytes free "
            "(SHMEM_SYMMETRIC_SIZE; at most the GPU's memory, docs/shmem.md)\n",
            ethx_shmem_me(), function, bytes, ethx_shmem_g_state.heap.bytes - g_used_bytes,
            ethx_shmem_g_state.heap.bytes);
    return NULL;
  }
  return heap_address(offset);
}

void* shmem_malloc(size_t size) {
  ethx_shmem_require_init("shmem_malloc");
  if (size == 0) return NULL;
  void* result = symmetric_allocate("shmem_malloc", size, kDefaultAlignment);
  ethx_shmem_world_barrier(1); /* allocated everywhere before anyone uses it */
  return result;
}

void* shmem_calloc(size_t count, size_t size) {
  ethx_shmem_require_init("shmem_calloc");
  if (count == 0 || size == 0) return NULL;
  if (count > SIZE_MAX / size) {
    fprintf(stderr, "ethx-shmem: PE %d: shmem_calloc(%zu, %zu): the size overflows\n",
            ethx_shmem_me(), count, size);
    ethx_shmem_world_barrier(1);
    return NULL;
  }
  void* result = symmetric_allocate("shmem_calloc", count * size, kDefaultAlignment);
  if (result != NULL) memset(result, 0, count * size);
  ethx_shmem_world_barrier(1);
  return result;
}

void* shmem_align(size_t alignment, size_t size) {
  ethx_shmem_require_init("shmem_align");
  if (size == 0) return NULL;
  void* result = symmetric_allocate("shmem_align", size, alignment);
  ethx_shmem_world_barrier(1);
  return result;
}

void shmem_free(void* ptr) {
  ethx_shmem_require_init("shmem_free");
  if (ptr == NULL) return;
  ethx_shmem_world_barrier(1); /* nobody uses it any more */
  const uintptr_t at = (uintptr_t)ptr;
  const ethx_shmem_region* heap = &ethx_shmem_g_state.heap;
  if (at < heap->base || at >= heap->base + heap->bytes || !release(at - heap->base)) {
    ethx_shmem_fatal("shmem_free(%p): not a block of the symmetric heap", ptr);
  }
}

void* shmem_realloc(void* ptr, size_t size) {
  ethx_shmem_require_init("shmem_realloc");
  if (ptr == NULL) return shmem_malloc(size);
  if (size == 0) {
    shmem_free(ptr);
    return NULL;
  }
  ethx_shmem_world_barrier(1);
  const size_t offset = (uintptr_t)ptr - ethx_shmem_g_state.heap.base;
  const size_t old_bytes = block_bytes(offset);
  if (old_bytes == 0) ethx_shmem_fatal("shmem_realloc(%p): not a block of the heap", ptr);
  void* result = symmetric_allocate("shmem_realloc", size, kDefaultAlignment);
  if (result != NULL) {
    memcpy(result, ptr, old_bytes < size ? old_bytes : size);
    release(offset);
  }
  ethx_shmem_world_barrier(1);
  return result;
}
