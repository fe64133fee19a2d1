# A CTest fixture's bundle: the tiny spec with a decode batch of BATCH.
#   cmake -DFBTC=fbtc -DSPEC=tiny.json -DBATCH=4 -DOUT=tiny.fbtb -P CompileTinyBundle.cmake
file(READ ${SPEC} spec)
string(JSON spec SET "${spec}" inference batch_size ${BATCH})
file(WRITE ${OUT}.json "${spec}")
execute_process(COMMAND ${FBTC} ${OUT}.json --target=cpu -o ${OUT}
  RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "fbtc ${OUT}.json failed")
endif()
