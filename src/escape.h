/* escape.h -- client-controlled text made safe to show: in the log, in a terminal, in a table.
 *
 * A client chooses its program name, its host name, its certificate's names and its token;
 * shown raw they could forge log lines (a newline, then "gpupoold: info: ...") or drive an
 * operator's terminal (ESC sequences). gp_escape() keeps printable ASCII and well-formed
 * UTF-8 of printable characters, and writes every other byte as \xNN: control bytes (C0,
 * DEL, and the C1 controls U+0080..U+009F, which some terminals obey), bytes that are not
 * well-formed UTF-8 (overlong forms, surrogates, past U+10FFFF, cut sequences), the
 * backslash itself (so "\x1b" in the output always means an escaped byte), and any byte in
 * `also` (a table's column separator).
 */
#ifndef GP_ESCAPE_H
#define GP_ESCAPE_H

#include <stddef.h>

/* Writes src (NULL: "") escaped into dst, always terminated when cap > 0, cut only between
 * whole characters and whole escapes. Returns the length written. */
size_t gp_escape(char *dst, size_t cap, const char *src, const char *also);

/* The length of the well-formed UTF-8 sequence of a printable character at s (of n bytes
 * available), or 0 when s does not start one. */
size_t gp_utf8_char(const unsigned char *s, size_t n);

/* Writes src (NULL: "") as the inside of a JSON string: '"' and '\\' escaped, control
 * characters (C0, DEL, C1) as \u00XX, and bytes that are not well-formed UTF-8 as \ufffd,
 * so that the result is always valid JSON and shows no control character when printed.
 * Always terminated when cap > 0, cut only between whole characters and escapes. Returns
 * the length the whole of it needs (as snprintf): >= cap means it was cut. */
size_t gp_json_escape(char *dst, size_t cap, const char *src);

#endif
