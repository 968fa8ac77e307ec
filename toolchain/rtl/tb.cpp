// Verilator testbench of the CV32E40P reference core (cv32e40p_top): one core on a zero-wait
// memory. Loads an RV32 ELF, boots at its entry point and runs until the program ends it.
//
//   cv32e40p_sim [--max-cycles N] program.elf
//
// Memory map (toolchain/rtl/link.ld): RAM at 0x0000_0000 (RAM_BYTES), instruction and data
// ports both answer in the cycle after the grant (grant in the request's cycle: no wait states).
// Devices (stores only): 0x1000_0000 prints the byte written to stdout; 0x2000_0000 ends the
// run with exit code 0 (pass); 0x2000_0004 ends it with the value written as exit code.
// At the end the testbench prints "sim cycles N" to stderr. Exit code 124: --max-cycles reached;
// 125: bad ELF or access outside RAM and the devices.
#include <elf.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "Vcv32e40p_top.h"
#include "verilated.h"

static constexpr uint32_t RAM_BYTES = 4u << 20;
static constexpr uint32_t PRINT_ADDR = 0x10000000u, PASS_ADDR = 0x20000000u, EXIT_ADDR = 0x20000004u;
static std::vector<uint8_t> ram(RAM_BYTES);

static int fail(const char *what, const char *arg) {
  std::fprintf(stderr, "cv32e40p_sim: %s%s%s\n", what, arg ? ": " : "", arg ? arg : "");
  return 125;
}

static bool load_elf(const char *path, uint32_t *entry) {
  FILE *f = std::fopen(path, "rb");
  if (!f) return false;
  std::vector<uint8_t> img;
  uint8_t buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) img.insert(img.end(), buf, buf + n);
  std::fclose(f);
  if (img.size() < sizeof(Elf32_Ehdr)) return false;
  Elf32_Ehdr eh;
  std::memcpy(&eh, img.data(), sizeof eh);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS32 || eh.e_machine != EM_RISCV)
    return false;
  for (unsigned i = 0; i < eh.e_phnum; i++) {
    Elf32_Phdr ph;
    if (eh.e_phoff + (i + 1) * sizeof ph > img.size()) return false;
    std::memcpy(&ph, img.data() + eh.e_phoff + i * sizeof ph, sizeof ph);
    if (ph.p_type != PT_LOAD || !ph.p_memsz) continue;
    if (ph.p_paddr + ph.p_memsz > RAM_BYTES || ph.p_offset + ph.p_filesz > img.size()) return false;
    std::memcpy(&ram[ph.p_paddr], img.data() + ph.p_offset, ph.p_filesz);
    std::memset(&ram[ph.p_paddr + ph.p_filesz], 0, ph.p_memsz - ph.p_filesz);
  }
  *entry = eh.e_entry;
  return true;
}

static uint32_t read32(uint32_t addr) {
  uint32_t w;
  std::memcpy(&w, &ram[addr & ~3u], 4);
  return w;
}

int main(int argc, char **argv) {
  uint64_t max_cycles = 100000000;
  const char *elf = nullptr;
  for (int i = 1; i < argc; i++) {
    if (!std::strcmp(argv[i], "--max-cycles") && i + 1 < argc) max_cycles = std::strtoull(argv[++i], nullptr, 0);
    else if (argv[i][0] != '+') elf = argv[i];
  }
  if (!elf) return fail("usage: cv32e40p_sim [--max-cycles N] program.elf", nullptr);
  uint32_t entry;
  if (!load_elf(elf, &entry)) return fail("cannot load the RV32 ELF", elf);

  auto ctx = std::make_unique<VerilatedContext>();
  ctx->commandArgs(argc, argv);
  auto top = std::make_unique<Vcv32e40p_top>(ctx.get());
  top->clk_i = 0;
  top->rst_ni = 0;
  top->pulp_clock_en_i = 1;
  top->scan_cg_en_i = 0;
  top->boot_addr_i = entry;
  top->mtvec_addr_i = entry & ~0xffu;
  top->dm_halt_addr_i = 0;
  top->dm_exception_addr_i = 0;
  top->hart_id_i = 0;
  top->irq_i = 0;
  top->debug_req_i = 0;
  top->fetch_enable_i = 1;
  top->instr_gnt_i = top->instr_rvalid_i = 0;
  top->data_gnt_i = top->data_rvalid_i = 0;
  for (int i = 0; i < 10; i++) {
    top->clk_i = !top->clk_i;
    top->eval();
  }
  top->rst_ni = 1;

  int code = -1;
  uint64_t cycle = 0;
  while (code < 0 && cycle < max_cycles) {
    top->clk_i = 0;
    top->eval();
    top->instr_gnt_i = top->instr_req_o; // zero wait states: grant in the request's cycle
    top->data_gnt_i = top->data_req_o;
    top->eval();
    const bool ireq = top->instr_req_o, dreq = top->data_req_o, dwe = top->data_we_o;
    const uint32_t iaddr = top->instr_addr_o, daddr = top->data_addr_o, dwdata = top->data_wdata_o,
                   dbe = top->data_be_o;
    top->clk_i = 1;
    top->eval();
    cycle++;
    // the granted requests answer in this cycle (until the next rising edge)
    top->instr_rvalid_i = ireq;
    if (ireq) {
      if (iaddr >= RAM_BYTES) return fail("instruction fetch outside RAM", nullptr);
      top->instr_rdata_i = read32(iaddr);
    }
    top->data_rvalid_i = dreq;
    if (dreq) {
      uint32_t a = daddr & ~3u;
      if (a < RAM_BYTES) {
        if (dwe)
          for (int b = 0; b < 4; b++)
            if (dbe >> b & 1) ram[a + b] = (uint8_t)(dwdata >> (8 * b));
        top->data_rdata_i = read32(a);
      } else if (dwe && a == PRINT_ADDR) {
        std::putchar((int)(dwdata & 0xff));
        top->data_rdata_i = 0;
      } else if (dwe && a == PASS_ADDR) {
        code = 0;
      } else if (dwe && a == EXIT_ADDR) {
        code = (int)(dwdata & 0xff);
      } else {
        char where[32];
        std::snprintf(where, sizeof where, "0x%08x", daddr);
        return fail("data access outside RAM and the devices", where);
      }
    }
    top->eval();
  }
  std::fflush(stdout);
  std::fprintf(stderr, "sim cycles %llu\n", (unsigned long long)cycle);
  top->final();
  return code < 0 ? 124 : code;
}
