//===- LoadSpec.cpp - A spec read whole: fields, then figures -------------===//

#include "frontend/LoadSpec.h"
#include "frontend/Describe.h"

#include "llvm/Support/MemoryBuffer.h"

using namespace fbt;
using llvm::StringRef;

llvm::Expected<ModelSpec> fbt::parseSpec(StringRef text, StringRef source,
                                         std::optional<Recipe> recipe) {
  llvm::Expected<ModelSpec> spec = readSpec(text, source, recipe);
  if (!spec)
    return spec.takeError();
  llvm::Expected<Description> figures = tryDescribe(*spec);
  if (!figures)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        (source + ": " + llvm::toString(figures.takeError())).str());
  return spec;
}

llvm::Expected<ModelSpec> fbt::loadSpec(StringRef path, std::optional<Recipe> recipe) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!buffer)
    return llvm::createStringError(buffer.getError(), "cannot open '%s': %s",
                                   path.str().c_str(),
                                   buffer.getError().message().c_str());
  return parseSpec((*buffer)->getBuffer(), path, recipe);
}
