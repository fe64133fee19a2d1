//===- AlignedBuffer.h - zeroed, 64-byte aligned host memory ------*- C++ -*-===//
//
// Host memory for the CPU backend's buffers and for what the runtime reads
// back from a device (logits, gradients): 64-byte aligned so that generated
// CPU kernels may use aligned vector loads, and zeroed so that nothing
// depends on what the allocator left behind.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_BASE_ALIGNEDBUFFER_H
#define FBT_RUNTIME_BASE_ALIGNEDBUFFER_H

#include <cstdlib>
#include <memory>

#include <string>

namespace fbt {

/// `bytes` (at least 1) of zeroed host memory, 64-byte aligned, for
/// std::free; a RuntimeError naming `what` when there is none.
void *allocateAligned(size_t bytes, const std::string &what);

class AlignedBuffer {
public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes);
  void *data() { return ptr_.get(); }
  const void *data() const { return ptr_.get(); }
  size_t size() const { return size_; }
  template <typename T> T *as() { return static_cast<T *>(data()); }
  template <typename T> const T *as() const { return static_cast<const T *>(data()); }

private:
  struct Free {
    void operator()(void *p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> ptr_;
  size_t size_ = 0;
};

} // namespace fbt

#endif // FBT_RUNTIME_BASE_ALIGNEDBUFFER_H
