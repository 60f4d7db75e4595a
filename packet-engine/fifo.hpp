// A first-in first-out queue in one ring buffer, which allocates nothing until its first push.
//
// std::deque (libstdc++) allocates a map and a 512-byte node when it is constructed, even
// empty: the reliability layer keeps two queues per peer, so 1024 GPUs with 1023 peers each
// spent 1.3 GB and over a second of page faults on queues that never held a frame
// (docs/simulator.md, "Speed"). Here the items sit in one power-of-two array, so the item after
// the front is at a known address (the simulator prefetches it) and a queue that keeps flowing
// never allocates. Popped slots are reset at once, so a frame's buffer is freed when it leaves.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

namespace ethx {

// kFirstCapacity (a power of two): the array's size at the first push; a queue that usually
// holds one or two items (a queue pair's, of which a simulation keeps a million) sets it low.
template <class T, std::size_t kFirstCapacity = 8>
class Fifo {
 public:
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  // Preconditions: index < size() for operator[], !empty() for front(), back(), pop_front().
  T& operator[](std::size_t index) { return items_[(head_ + index) & mask()]; }
  const T& operator[](std::size_t index) const { return items_[(head_ + index) & mask()]; }
  T& front() { return items_[head_]; }
  const T& front() const { return items_[head_]; }
  T& back() { return (*this)[size_ - 1]; }
  const T& back() const { return (*this)[size_ - 1]; }

  void push_back(T item) {
    if (size_ == items_.size()) grow();
    items_[(head_ + size_) & mask()] = std::move(item);
    ++size_;
  }
  // Adds an item at the back and returns it, to be filled in place: no temporary built and
  // moved in (a frame's queue entry, a completion). It holds T() (every slot not in use does).
  T& append() {
    if (size_ == items_.size()) grow();
    T& item = items_[(head_ + size_) & mask()];
    // Plain data is not reset when popped (see pop_front): reset it now.
    if constexpr (std::is_trivially_destructible_v<T>) item = T();
    ++size_;
    return item;
  }
  void pop_front() {
    // Releases what the item owns now; plain data is left alone (its line may be cold).
    if constexpr (!std::is_trivially_destructible_v<T>) items_[head_] = T();
    head_ = (head_ + 1) & mask();
    --size_;
  }
  // Front to back; invalidated by push_back and pop_front.
  template <class Owner, class Item>
  class Iterator {
   public:
    Iterator(Owner* fifo, std::size_t index) : fifo_(fifo), index_(index) {}
    Item& operator*() const { return (*fifo_)[index_]; }
    Item* operator->() const { return &(*fifo_)[index_]; }
    Iterator& operator++() {
      ++index_;
      return *this;
    }
    bool operator==(const Iterator& other) const { return index_ == other.index_; }
    bool operator!=(const Iterator& other) const { return index_ != other.index_; }

   private:
    Owner* fifo_;
    std::size_t index_;
  };
  Iterator<Fifo, T> begin() { return {this, 0}; }
  Iterator<Fifo, T> end() { return {this, size_}; }
  Iterator<const Fifo, const T> begin() const { return {this, 0}; }
  Iterator<const Fifo, const T> end() const { return {this, size_}; }

  void clear() {
    for (std::size_t index = 0; index < size_; ++index) (*this)[index] = T();
    head_ = 0;
    size_ = 0;  // keeps the array: a queue that was used once is likely used again
  }

 private:
  std::size_t mask() const { return items_.size() - 1; }
  void grow() {
    std::vector<T> bigger(items_.empty() ? kFirstCapacity : 2 * items_.size());
    for (std::size_t index = 0; index < size_; ++index) bigger[index] = std::move((*this)[index]);
    items_.swap(bigger);
    head_ = 0;
  }

  static_assert((kFirstCapacity & (kFirstCapacity - 1)) == 0 && kFirstCapacity > 0);
  std::vector<T> items_;  // capacity: 0 or a power of two
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace ethx
