/* png.h — writes an RGB image as a PNG file. SDL2 has no PNG writer; this one deflates
 * with LZ77 and the fixed Huffman codes (a screenshot of flat panels and text shrinks
 * about 20x), enough for screenshots without another library. */
#ifndef PNG_H
#define PNG_H

#include <stddef.h>
#include <stdint.h>

/* rgb: height rows of width * 3 bytes, stride bytes apart. 0 on success; -1 with the
 * reason in err. */
int png_write_rgb(const char *path, const uint8_t *rgb, int width, int height, int stride, char *err, size_t err_cap);

#endif
