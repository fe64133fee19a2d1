//===- NcclApiTest.cpp - loading NCCL at run time -------------------------===//
//
// The NCCL engine's loader: ncclGetVersion's codes read as versions (the
// scheme changed at 2.9), and an NCCL that cannot be loaded is an error
// that names the file and says what to do. The engine itself runs under
// mpirun on the emulated NCCL (test/emucuda/data-parallel.test).
//
//===----------------------------------------------------------------------===//

#include "runtime/base/Error.h"
#include "runtime/hal/nccl/NcclApi.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

namespace fbt::nccl {
namespace {

TEST(NcclApiTest, ReadsVersionCodes) {
  EXPECT_EQ(versionText(22809), "2.28.9");
  EXPECT_EQ(versionText(21104), "2.11.4");
  EXPECT_EQ(versionText(20903), "2.9.3");
  EXPECT_EQ(versionText(2804), "2.8.4"); // NCCL_VERSION before 2.9
}

// In a child process: the loader remembers its first answer.
TEST(NcclApiTest, SaysWhyNoNcclCanBeLoaded) {
  EXPECT_EXIT(
      {
        setenv("FBT_NCCL", "/nonexistent/libnccl.so.2", 1);
        try {
          api();
        } catch (const RuntimeError &e) {
          std::fprintf(stderr, "%s\n", e.what());
          std::exit(3);
        }
        std::exit(0);
      },
      testing::ExitedWithCode(3),
      "^no NCCL was found \\(FBT_NCCL=/nonexistent/libnccl.so.2\\): "
      "/nonexistent/libnccl.so.2: cannot open shared object file: No such file or "
      "directory; point FBT_NCCL at libnccl.so.2, or unset it to load the one on the "
      "loader's path\n$");
}

} // namespace
} // namespace fbt::nccl
