//===- CpuDevice.h - the CPU backend: host memory, BLAS -----------*- C++ -*-===//
//
// "Device" memory is host memory (AlignedBuffer's: aligned and zeroed) and
// the copies are memcpy; the bundle's kernel library is loaded once and
// shared by the step runners.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_HAL_CPU_CPUDEVICE_H
#define FBT_RUNTIME_HAL_CPU_CPUDEVICE_H

#include "runtime/hal/Device.h"

#include <memory>

namespace fbt {

/// A device for `bundle` (a "cpu" bundle), which must outlive it.
std::unique_ptr<Device> openCpuDevice(const Bundle &bundle);

} // namespace fbt

#endif // FBT_RUNTIME_HAL_CPU_CPUDEVICE_H
