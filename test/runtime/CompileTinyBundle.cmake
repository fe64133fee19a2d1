# A CTest fixture's bundle: the tiny spec with a decode batch of BATCH, for
# TARGET (default cpu), with fbtc's FLAGS.
#   cmake -DFBTC=fbtc -DSPEC=tiny.json -DBATCH=4 [-DTARGET=simt] [-DFLAGS=...] \
#     -DOUT=tiny.fbtb -P CompileTinyBundle.cmake
file(READ ${SPEC} spec)
string(JSON spec SET "${spec}" inference batch_size ${BATCH})
file(WRITE ${OUT}.json "${spec}")
if(NOT TARGET)
  set(TARGET cpu)
endif()
execute_process(COMMAND ${FBTC} ${OUT}.json --target=${TARGET} ${FLAGS} -o ${OUT}
  RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "fbtc ${OUT}.json failed")
endif()
