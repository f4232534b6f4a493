# SPDX-License-Identifier: Apache-2.0
# Writes OUT: the schema IN as the C byte array NAME (and NAME_len), or an empty one when IN
# does not exist.
if(EXISTS "${IN}")
  file(READ "${IN}" hex HEX)
  string(LENGTH "${hex}" n)
  math(EXPR n "${n} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
  string(REGEX REPLACE "((0x..,){32})" "\\1\n" hex "${hex}")
else()
  set(hex "0")
  set(n 0)
endif()
file(WRITE "${OUT}.tmp" "/* SPDX-License-Identifier: Apache-2.0 */\n/* Generated from ${IN}. */\nconst unsigned char ${NAME}[] = {\n${hex}};\nconst unsigned long ${NAME}_len = ${n};\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
