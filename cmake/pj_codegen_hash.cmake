# pj_codegen_hash.cmake — run at build time (cmake -P, from CMakeLists.txt's custom command):
# writes OUT (pj_codegen_hash.h) with PJ_BUILD_HASH, the SHA-256 of the code generator's
# sources (LIST: a file of absolute paths, one a line, each hashed with its name relative to
# ROOT), shortened to 32 hex digits. The header is rewritten only when the hash changed, so an
# edit elsewhere recompiles nothing.
file(STRINGS "${LIST}" SOURCES)
set(acc "")
foreach(f ${SOURCES})
  file(SHA256 "${f}" h)
  file(RELATIVE_PATH rel "${ROOT}" "${f}")
  string(APPEND acc "${rel} ${h}\n")
endforeach()
string(SHA256 hash "${acc}")
string(SUBSTRING "${hash}" 0 32 hash)
set(text "/* pj_codegen_hash.h — generated at build time by cmake/pj_codegen_hash.cmake. */\n#define PJ_BUILD_HASH \"${hash}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE "${OUT}" "${text}")
endif()
