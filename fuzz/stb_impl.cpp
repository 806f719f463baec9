// The fuzz build compiles stb's decoder and resizer from Debian's headers, so that they are
// instrumented (coverage, AddressSanitizer) like our code; these definitions take precedence
// over the same functions in the prebuilt libstb the loader links.
// NDEBUG as in Debian's libstb: stb's internal asserts (e.g. in stbi__jpeg_huff_decode, hit by
// a corrupt Huffman code) are off in the library the product runs; the sanitizers still
// check what those paths do.
#ifndef NDEBUG
#define NDEBUG
#endif
#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_RESIZE_IMPLEMENTATION
#include <stb/stb_image.h>
#include <stb/stb_image_resize.h>
