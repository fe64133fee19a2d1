# The compiler's rooms, declared as the runtime's are (runtime/CMakeLists.txt):
# each folder a library that states the rooms it builds on, in one line of
# ${FBT_COMPILER_ROOMS_FILE}, which the include check (test/layout/
# includes.test) reads, so the build and the rule cannot drift apart:
#
#   dialect <- frontend
#   dialect <- codegen/kernels <- passes
#              codegen/kernels <- codegen/plan, cpu <- nvptx <- simt <- bundle
#   frontend, passes, codegen/* <- driver            (fbtc, fbt-opt on top)
#
# fbt_compiler_room(ROOM TARGET [SOURCES src...] [ROOMS room...] [LIBS lib...])
#   ROOM     the folder from the source root ("codegen/cpu")
#   SOURCES  make TARGET a library of these; without, TARGET exists already
#            (a dialect library that MLIR's functions made)
#   ROOMS    the rooms it builds on (their targets are linked PUBLIC)
#   LIBS     other libraries it links (the runtime's base and format, MLIR)
set(FBT_COMPILER_ROOMS_FILE ${PROJECT_BINARY_DIR}/compiler-rooms.txt)
file(WRITE ${FBT_COMPILER_ROOMS_FILE} "")

function(fbt_compiler_room room target)
  cmake_parse_arguments(ARG "" "" "SOURCES;ROOMS;LIBS" ${ARGN})
  if(ARG_SOURCES)
    add_library(${target} ${ARG_SOURCES})
  endif()
  foreach(dep ${ARG_ROOMS})
    get_property(dep_target GLOBAL PROPERTY FBT_COMPILER_ROOM_${dep})
    if(NOT dep_target)
      message(FATAL_ERROR "${room}: ${dep} is not a room of the compiler (yet)")
    endif()
    target_link_libraries(${target} PUBLIC ${dep_target})
  endforeach()
  target_link_libraries(${target} PUBLIC ${ARG_LIBS} MLIR LLVM)
  # Position independent, so that the Python module (a shared object) can
  # link the driver.
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  set_property(GLOBAL PROPERTY FBT_COMPILER_ROOM_${room} ${target})
  string(REPLACE ";" " " deps "${ARG_ROOMS}")
  file(APPEND ${FBT_COMPILER_ROOMS_FILE} "${room}: ${deps}\n")
endfunction()
