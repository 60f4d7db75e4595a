// A fully associative least-recently-used set of 64-bit keys: what the RDMA NIC model uses for
// its QPC, MPT and MTT caches. It only answers "was it cached?" (and caches it); it holds no
// values, because the simulator models the time a miss costs, not the context's contents.
// Entries sit in one array linked into a recency list, so a hit or a miss allocates nothing once
// the cache is full.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace ethx::sim {

class LruCache {
 public:
  explicit LruCache(std::size_t capacity) : capacity_(capacity) {
    entries_.reserve(capacity);
    index_.reserve(capacity);
  }

  // True on a hit. On a miss the key is inserted, evicting the least recently used entry when
  // the cache is full; a cache of capacity 0 always misses and keeps nothing.
  bool access(std::uint64_t key) {
    const auto found = index_.find(key);
    if (found != index_.end()) {
      move_to_front(found->second);
      return true;
    }
    if (capacity_ == 0) return false;
    std::uint32_t slot = 0;
    if (entries_.size() < capacity_) {
      slot = static_cast<std::uint32_t>(entries_.size());
      entries_.push_back(Entry{key, kNone, kNone});
    } else {
      slot = tail_;  // the least recently used
      unlink(slot);
      index_.erase(entries_[slot].key);
      entries_[slot].key = key;
    }
    index_.emplace(key, slot);
    push_front(slot);
    return false;
  }

  std::size_t size() const { return index_.size(); }
  std::size_t capacity() const { return capacity_; }

 private:
  static constexpr std::uint32_t kNone = UINT32_MAX;
  struct Entry {
    std::uint64_t key;
    std::uint32_t prev;  // toward the most recently used
    std::uint32_t next;  // toward the least recently used
  };

  void unlink(std::uint32_t slot) {
    Entry& entry = entries_[slot];
    (entry.prev == kNone ? head_ : entries_[entry.prev].next) = entry.next;
    (entry.next == kNone ? tail_ : entries_[entry.next].prev) = entry.prev;
  }
  void push_front(std::uint32_t slot) {
    Entry& entry = entries_[slot];
    entry.prev = kNone;
    entry.next = head_;
    if (head_ != kNone) entries_[head_].prev = slot;
    head_ = slot;
    if (tail_ == kNone) tail_ = slot;
  }
  void move_to_front(std::uint32_t slot) {
    if (slot == head_) return;
    unlink(slot);
    push_front(slot);
  }

  std::size_t capacity_;
  std::vector<Entry> entries_;
  std::unordered_map<std::uint64_t, std::uint32_t> index_;
  std::uint32_t head_ = kNone;
  std::uint32_t tail_ = kNone;
};

}  // namespace ethx::sim
