# fbt_use_header_library(TARGET SCOPE PACKAGE VERSION IMPORTED HEADER DEBIAN)
# Links TARGET (SCOPE: PUBLIC or PRIVATE) to a header-only library: its CMake
# package where installed (Debian's DEBIAN), else the folder FBT_HEADERS
# names (a GPU host gets the headers there from bench/gpu_prepare.py).
# Sets PACKAGE_FOUND in the caller when the package was used.
function(fbt_use_header_library target scope package version imported header debian)
  find_package(${package} ${version} QUIET)
  if(${package}_FOUND)
    target_link_libraries(${target} ${scope} ${imported})
    set(${package}_FOUND ON PARENT_SCOPE) # the installed package depends on it
    return()
  endif()
  find_path(FBT_${package}_INCLUDE ${header} HINTS ${FBT_HEADERS})
  if(NOT FBT_${package}_INCLUDE)
    message(FATAL_ERROR "fbt: ${header} not found: install ${debian}, or set FBT_HEADERS")
  endif()
  target_include_directories(${target} SYSTEM ${scope}
                             $<BUILD_INTERFACE:${FBT_${package}_INCLUDE}>)
endfunction()
