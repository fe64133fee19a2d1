//===- Modules.cpp - modules, twins and launches of the emulated GPU ------===//
//
// cuModuleLoadDataEx takes what a real driver takes, a PTX text or a cubin
// (ELF), and refuses anything else. Its kernels run as their SIMT twins:
// the same kernels compiled by `fbtc --target=simt` for this CPU (the same
// spec, storage and tune space as the GPU bundle), from the bundle
// FBT_EMU_CUDA_TWIN names, or else from FBT_EMU_CUDA_TWINS/<hash>.fbtb, the
// hash being the image's FNV-1a (the blob's checksum in the GPU bundle's
// manifest, so that a folder of twins serves many GPU bundles:
// bench/gpu_prepare.py --emulated writes one). The twin's launch table says which of its entry
// points a cuLaunchKernel name is, how many buffers it takes (from the
// twin's step plans) and whether its threads meet at barriers; the launch
// itself runs with the grid, block and parameters the caller passed,
// through the SIMT emulator of the program that loaded this driver
// (runtime/hal/simt, exported by fbt and the test binaries), so that the
// twin's callbacks (fbt_simt_*) reach the same emulator.
//
//===----------------------------------------------------------------------===//

#include "EmuDevice.h"

#include "runtime/base/Error.h"
#include "runtime/base/Hash.h"
#include "runtime/format/Bundle.h"
#include "runtime/hal/cpu/KernelLibrary.h"
#include "runtime/hal/simt/Emulator.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <elf.h>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace fbt::emucuda {
struct Twin;
}

struct CUmod_st {
  bool ptx = false;
  std::string image; ///< the PTX text, or the cubin's bytes
  const fbt::emucuda::Twin *twin = nullptr;
};

struct CUfunc_st {
  std::string name;
  fbt::KernelFn fn = nullptr;
  size_t buffers = 0;
  bool cooperative = false;
  uint32_t sharedBytes = 0;
};

namespace fbt::emucuda {

/// The twin: its entry points, loaded once.
struct Twin {
  std::string path;
  std::string error; ///< why there is none
  std::unique_ptr<Bundle> bundle;
  std::unique_ptr<KernelLibrary> library;
  std::map<std::string, CUfunc_st> entries;
};

namespace {

/// The twin at `path`, loaded once; its error says why it does not load.
Twin loadTwin(const std::string &path) {
  Twin t;
  t.path = path;
  {
    try {
      t.bundle = std::make_unique<Bundle>(Bundle::load(path));
      if (!t.bundle->target().emulated())
        throw RuntimeError(path + " is not a SIMT bundle (fbtc --target=simt)");
      // How many buffers each kernel (and each variant) takes.
      std::map<std::string, size_t> buffers;
      for (const auto &[name, plan] : t.bundle->steps())
        for (const PlanOp &op : plan.ops)
          if (op.isKernel())
            buffers[op.kernel] = op.args.size();
      for (const auto &[kernel, variants] : t.bundle->variants())
        for (const KernelVariant &b : variants.builds)
          buffers[b.symbol] = variants.args.size();
      std::vector<std::string> symbols;
      for (const std::string &k : t.bundle->kernels())
        for (const KernelLaunch &l : t.bundle->launches(k)) {
          CUfunc_st f;
          f.name = l.entry;
          f.buffers = buffers.count(k) ? buffers[k] : 0;
          f.cooperative = l.cooperative;
          f.sharedBytes = l.sharedBytes;
          t.entries[l.entry] = f;
          symbols.push_back(l.entry);
        }
      t.library = std::make_unique<KernelLibrary>(t.bundle->kernelLibrary(), symbols, path);
      for (auto &[entry, f] : t.entries)
        f.fn = t.library->lookup(entry);
    } catch (const std::exception &e) {
      t.error = std::string("the SIMT twin does not load: ") + e.what();
      t.entries.clear();
    }
  }
  return t;
}

/// The twin of a module whose image hashes to `hash`.
const Twin &twinOf(uint64_t hash) {
  static std::mutex m;
  static std::map<std::string, std::unique_ptr<Twin>> loaded;
  std::string path;
  if (const char *one = std::getenv("FBT_EMU_CUDA_TWIN"); one && *one) {
    path = one;
  } else if (const char *dir = std::getenv("FBT_EMU_CUDA_TWINS"); dir && *dir) {
    path = std::string(dir) + "/" + hexDigits(hash) + ".fbtb";
  }
  std::lock_guard<std::mutex> g(m);
  std::unique_ptr<Twin> &t = loaded[path];
  if (!t) {
    t = std::make_unique<Twin>();
    if (path.empty())
      t->error = "neither FBT_EMU_CUDA_TWIN nor FBT_EMU_CUDA_TWINS names a SIMT twin "
                 "(fbtc SPEC --target=simt)";
    else
      *t = loadTwin(path);
  }
  return *t;
}

/// A cubin's size, from its ELF headers: the end of whatever lies furthest,
/// the header tables, a section's contents or a segment's.
size_t cubinBytes(const void *image) {
  const char *p = static_cast<const char *>(image);
  Elf64_Ehdr h;
  std::memcpy(&h, p, sizeof h);
  if (h.e_ident[EI_CLASS] != ELFCLASS64)
    return 0;
  size_t end = std::max<size_t>({sizeof h, h.e_shoff + size_t(h.e_shnum) * h.e_shentsize,
                                 h.e_phoff + size_t(h.e_phnum) * h.e_phentsize});
  for (unsigned i = 0; i < h.e_shnum; ++i) {
    Elf64_Shdr s;
    std::memcpy(&s, p + h.e_shoff + size_t(i) * h.e_shentsize, sizeof s);
    if (s.sh_type != SHT_NOBITS)
      end = std::max<size_t>(end, s.sh_offset + s.sh_size);
  }
  for (unsigned i = 0; i < h.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, p + h.e_phoff + size_t(i) * h.e_phentsize, sizeof ph);
    end = std::max<size_t>(end, ph.p_offset + ph.p_filesz);
  }
  return end;
}

/// Whether the module declares kernel `name`.
bool declares(const CUmod_st &m, const std::string &name) {
  if (!m.ptx)
    return m.image.find(name) != std::string::npos; // the symbol's string
  for (size_t at = m.image.find(".entry"); at != std::string::npos;
       at = m.image.find(".entry", at + 6)) {
    size_t start = m.image.find_first_not_of(" \t", at + 6);
    if (start != std::string::npos && m.image.compare(start, name.size(), name) == 0 &&
        (m.image[start + name.size()] == '(' || std::isspace((unsigned char)m.image[start + name.size()])))
      return true;
  }
  return false;
}

std::mutex &modulesLock() {
  static std::mutex m;
  return m;
}
} // namespace

CUresult loadModule(CUmodule *module, const void *image) {
  const char *call = "cuModuleLoadDataEx";
  if (!module || !image)
    return refuse(call, "a null module or image", CUDA_ERROR_INVALID_VALUE);
  auto m = std::make_unique<CUmod_st>();
  const char *bytes = static_cast<const char *>(image);
  if (std::memcmp(bytes, ELFMAG, SELFMAG) == 0) {
    size_t n = cubinBytes(image);
    if (n == 0)
      return refuse(call, "a cubin that is not 64-bit ELF", CUDA_ERROR_INVALID_IMAGE);
    m->image.assign(bytes, n);
  } else {
    std::string text(bytes); // PTX is NUL-terminated
    if (text.find(".version") == std::string::npos || text.find(".target") == std::string::npos)
      return refuse(call, "the image is neither PTX nor a cubin", CUDA_ERROR_INVALID_IMAGE);
    size_t sm = text.find("sm_", text.find(".target"));
    if (sm != std::string::npos && std::atoi(text.c_str() + sm + 3) > identity().sm)
      return refuse(call, "PTX for " + text.substr(sm, 6) + " on an sm_" +
                              std::to_string(identity().sm) + " device",
                    CUDA_ERROR_INVALID_PTX);
    m->ptx = true;
    m->image = std::move(text);
  }
  m->twin = &twinOf(fnv1a64(m->image.data(), m->image.size()));
  std::lock_guard<std::mutex> g(modulesLock());
  *module = m.release();
  return CUDA_SUCCESS;
}

CUresult unloadModule(CUmodule module) {
  if (!module)
    return refuse("cuModuleUnload", "a null module", CUDA_ERROR_INVALID_HANDLE);
  delete module;
  return CUDA_SUCCESS;
}

CUresult moduleFunction(CUfunction *function, CUmodule module, const char *name) {
  const char *call = "cuModuleGetFunction";
  if (!function || !module || !name)
    return refuse(call, "a null argument", CUDA_ERROR_INVALID_VALUE);
  if (!declares(*module, name))
    return CUDA_ERROR_NOT_FOUND; // the caller names what it looked for
  const Twin &t = *module->twin;
  auto it = t.entries.find(name);
  if (it == t.entries.end())
    return refuse(call,
                  std::string("kernel '") + name + "' has no SIMT twin" +
                      (t.error.empty() ? " in " + t.path : ": " + t.error),
                  CUDA_ERROR_NOT_FOUND);
  *function = const_cast<CUfunc_st *>(&it->second);
  return CUDA_SUCCESS;
}

CUresult launch(CUfunction f, const unsigned grid[3], const unsigned block[3],
                unsigned sharedBytes, CUstream stream, void **params, void **extra) {
  const char *call = "cuLaunchKernel";
  if (!f)
    return refuse(call, "a null function", CUDA_ERROR_INVALID_HANDLE);
  if (extra)
    return refuse(call, "`extra` parameters are not emulated", CUDA_ERROR_INVALID_VALUE);
  uint64_t threads = uint64_t(block[0]) * block[1] * block[2];
  if (grid[0] * grid[1] * grid[2] == 0 || threads == 0)
    return refuse(call, "an empty grid or block", CUDA_ERROR_INVALID_VALUE);
  if (threads > 1024)
    return refuse(call, f->name + ": " + std::to_string(threads) +
                            " threads per block, more than 1024",
                  CUDA_ERROR_INVALID_VALUE);
  if (grid[1] * grid[2] != 1 || block[1] * block[2] != 1)
    return refuse(call, f->name + ": the emulator runs one-dimensional launches",
                  CUDA_ERROR_INVALID_VALUE);
  if (uint64_t(f->sharedBytes) + sharedBytes > (48u << 10))
    return refuse(call, f->name + ": " + std::to_string(f->sharedBytes + sharedBytes) +
                            " bytes of shared memory, more than 48 KiB",
                  CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  if (!params && f->buffers)
    return refuse(call, f->name + ": no parameters", CUDA_ERROR_INVALID_VALUE);
  // Parameters are copied when the launch is made, as the driver does.
  std::vector<CUdeviceptr> pointers(f->buffers);
  for (size_t i = 0; i < f->buffers; ++i)
    std::memcpy(&pointers[i], params[i], sizeof(CUdeviceptr));
  CUfunc_st kernel = *f;
  int64_t blocks = grid[0], width = block[0];
  return enqueue(stream, call, [kernel, pointers, blocks, width]() -> CUresult {
    std::vector<void *> args(pointers.size());
    for (size_t i = 0; i < pointers.size(); ++i) {
      CUresult r;
      args[i] = hostOf(pointers[i], 0, ("cuLaunchKernel " + kernel.name + " buffer " +
                                        std::to_string(i)).c_str(), &r);
      if (!args[i])
        return r;
    }
    simt::launch(kernel.fn, args.data(), args.size(), blocks, width, kernel.cooperative);
    return CUDA_SUCCESS;
  });
}

} // namespace fbt::emucuda
