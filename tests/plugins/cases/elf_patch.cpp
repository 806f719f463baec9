// mlhost-test-elf-patch: copies an ELF file, replacing its e_machine field (offset 18, two
// bytes in the file's byte order). Used at build time to make the wrong-arch test plugin
// from a real one, with no dependency on Python or binutils.
//
//   mlhost-test-elf-patch <in> <out> [machine]
//
// Without [machine]: EM_X86_64 (62) becomes EM_AARCH64 (183); anything else becomes 62.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::cerr << "usage: " << argv[0] << " <in> <out> [machine]\n";
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::cerr << argv[1] << ": cannot open\n";
    return 1;
  }
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 20 || bytes[0] != 0x7f || bytes[1] != 'E' || bytes[2] != 'L' || bytes[3] != 'F') {
    std::cerr << argv[1] << ": not an ELF file\n";
    return 1;
  }
  const bool little = bytes[5] == 1;  // EI_DATA: 1 little-endian, 2 big-endian
  if (bytes[5] != 1 && bytes[5] != 2) {
    std::cerr << argv[1] << ": unknown ELF byte order " << int(bytes[5]) << "\n";
    return 1;
  }
  const unsigned old_machine =
      little ? bytes[18] | (bytes[19] << 8) : (bytes[18] << 8) | bytes[19];
  unsigned machine = old_machine == 62 ? 183 : 62;
  if (argc == 4) machine = static_cast<unsigned>(std::strtoul(argv[3], nullptr, 0));
  if (machine == old_machine || machine > 0xffff) {
    std::cerr << "e_machine " << old_machine << " -> " << machine << ": nothing to patch\n";
    return 1;
  }
  bytes[little ? 18 : 19] = static_cast<unsigned char>(machine & 0xff);
  bytes[little ? 19 : 18] = static_cast<unsigned char>(machine >> 8);
  std::ofstream out(argv[2], std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::cerr << argv[2] << ": cannot write\n";
    return 1;
  }
  std::cout << "e_machine " << old_machine << " -> " << machine << ": " << argv[2] << "\n";
  return 0;
}
