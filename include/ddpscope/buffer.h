#pragma once
// A 64-byte aligned, zero-initialised float array: the storage for parameters, gradients,
// optimizer state, activations and batches. Move-only; never reallocates. It knows where it
// lives (its Place), so that code given a buffer can pick the kernel for that memory.
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <span>
#include <utility>

#include "ddpscope/error.h"

namespace ddp {

// Where memory lives and kernels run. Host only in this build; a CUDA place comes with the
// CUDA backend, and until then asking for one is our own bug, not a slow fallback.
enum class Place { kHost };

inline void check_place_built(Place place) { DDP_CHECK(place == Place::kHost, "this place is not built"); }

// After a kernel's switch on the place found no backend for it: our own bug.
[[noreturn]] inline void place_not_built(Place place) {
  check_place_built(place);
  std::abort();  // not reached for kHost, which every switch handles
}

template <typename T>
class AlignedBuffer {
 public:
  static constexpr std::size_t kAlignment = 64;

  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t size, Place place = Place::kHost) : size_(size), place_(place) {
    check_place_built(place);
    if (size == 0) return;
    const std::size_t bytes = (size * sizeof(T) + kAlignment - 1) / kAlignment * kAlignment;
    data_ = static_cast<T*>(std::aligned_alloc(kAlignment, bytes));
    if (data_ == nullptr) throw std::bad_alloc();
    std::memset(data_, 0, bytes);
  }
  AlignedBuffer(AlignedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)), place_(other.place_) {}
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(place_, other.place_);
    return *this;
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer() { std::free(data_); }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  Place place() const { return place_; }
  std::span<T> span() { return {data_, size_}; }
  std::span<const T> span() const { return {data_, size_}; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  void zero() {
    if (size_ != 0) std::memset(data_, 0, size_ * sizeof(T));
  }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
  Place place_ = Place::kHost;
};

using Buffer = AlignedBuffer<float>;

}  // namespace ddp
