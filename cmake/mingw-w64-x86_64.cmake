# mingw-w64-x86_64.cmake — a Windows (x86-64) build from Linux with Debian's mingw-w64:
#   cmake -S . -B build-win -DCMAKE_TOOLCHAIN_FILE=cmake/mingw-w64-x86_64.cmake
# (scripts/test-windows.sh does this and runs the tests under Wine; docs/portability.md).
# The programs run on the build machine too, through Wine: CMAKE_CROSSCOMPILING_EMULATOR
# makes ctest start each test .exe with it.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(EMBER_MINGW_PREFIX x86_64-w64-mingw32)
# The "posix" compilers: C11 <threads.h>-free, winpthreads for the C runtime's own needs.
set(CMAKE_C_COMPILER ${EMBER_MINGW_PREFIX}-gcc-posix)
set(CMAKE_CXX_COMPILER ${EMBER_MINGW_PREFIX}-g++-posix)
set(CMAKE_RC_COMPILER ${EMBER_MINGW_PREFIX}-windres)
# Libraries for Windows, not the build machine's (mingw-w64-tools' wrapper looks in the
# mingw root only; Debian has few there, so optional ones are simply not found).
set(PKG_CONFIG_EXECUTABLE ${EMBER_MINGW_PREFIX}-pkg-config)
set(CMAKE_FIND_ROOT_PATH /usr/${EMBER_MINGW_PREFIX})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)   # glslc, python3: the build machine's
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
find_program(EMBER_WINE NAMES wine64 wine)
if(EMBER_WINE)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${EMBER_WINE})
endif()
