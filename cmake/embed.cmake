# cmake -DIN=file -DOUT=file.h -DNAME=symbol -P embed.cmake
# Writes a C header holding IN's bytes plus a NUL, as `static const char NAME[]`.
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE ${OUT} "/* generated from ${IN}; do not edit */\nstatic const char ${NAME}[] = {\n${bytes}0x00};\n")
