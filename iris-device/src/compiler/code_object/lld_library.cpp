// lld's ELF linker called as a library: the same `ld.lld` the command line runs, without
// starting a process for every code object. Built by iris-device's build script (feature
// `compiler`) into a shared object of its own when the LLVM it found has lld's libraries
// (Debian/Ubuntu: liblld-N-dev), loaded beside that LLVM; the Rust side is lld_library.rs.

#include "lld/Common/Driver.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstring>
#include <string>

LLD_HAS_DRIVER(elf)

// Runs `ld.lld argv[1..argc]` (argv[0] must be "ld.lld"). Returns lld's exit code; writes
// what lld printed (stdout, then stderr; truncated, NUL-terminated) into `messages`, and
// whether lld can be run again in this process into `can_run_again`.
extern "C" int iris_lld_elf_link(const char *const *argv, size_t argc, char *messages,
                                 size_t messages_len, int *can_run_again) {
  std::string out_text, err_text;
  llvm::raw_string_ostream out(out_text), err(err_text);
  llvm::ArrayRef<const char *> args(argv, argc);
  lld::Result result = lld::lldMain(args, out, err, {{lld::Gnu, &lld::elf::link}});
  out.flush();
  err.flush();
  std::string all = out_text + err_text;
  if (messages_len > 0) {
    size_t n = all.size() < messages_len - 1 ? all.size() : messages_len - 1;
    std::memcpy(messages, all.data(), n);
    messages[n] = '\0';
  }
  *can_run_again = result.canRunAgain ? 1 : 0;
  return result.retCode;
}
