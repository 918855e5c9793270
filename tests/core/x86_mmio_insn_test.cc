// Tests for lib/core's decoder of the x86-64 instructions a BAR access compiles to. The bytes
// come from the assembler (each case is an instruction written in AT&T syntax between two
// labels), so what is checked is the decoder's reading of real encodings against what the
// instruction means, not a table of bytes against itself.
#include "core/x86_mmio_insn.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <span>

// NAME: TEXT assembled between labels NAME and NAME_end in a read-only data section.
#define X86_INSN(name, text)                                                           \
  asm(".pushsection .rodata.dxpu_x86_insn_test, \"a\"\n" #name ":\n\t" text "\n" #name \
      "_end:\n.popsection\n");                                                         \
  extern "C" const uint8_t name[], name##_end[];

X86_INSN(load_b_al, "movb (%rdi), %al")
X86_INSN(load_w_cx, "movw 4(%rdi), %cx")
X86_INSN(load_l_r9d, "movl 0x100(%rsi), %r9d")
X86_INSN(load_q_r15_sib, "movq (%rax,%rbx,8), %r15")
X86_INSN(load_l_rip, "movl 0x12345678(%rip), %edx")
X86_INSN(load_l_disp32_nobase, "movl 0x1000(,%rcx,4), %esi")
X86_INSN(load_b_ah, "movb (%rdi), %ah")
X86_INSN(load_b_sil, "movb (%rdi), %sil")
X86_INSN(load_l_ds_prefix, "movl %ds:(%rdi), %eax")
X86_INSN(store_b_ah, "movb %ah, (%rdi)")
X86_INSN(store_b_sil, "movb %sil, (%rdi)")
X86_INSN(store_w_r10w, "movw %r10w, 2(%r11)")
X86_INSN(store_l_ebx, "movl %ebx, -8(%rbp)")
X86_INSN(store_q_rax_disp32, "movq %rax, 0x1000(%rdi)")
X86_INSN(store_imm_b, "movb $0xA5, 1(%rdi)")
X86_INSN(store_imm_w, "movw $0x1234, (%rdi)")
X86_INSN(store_imm_l, "movl $0x80000000, (%rdi)")
X86_INSN(store_imm_q_neg, "movq $-2, (%rdi)")
X86_INSN(movzbl, "movzbl (%rdi), %eax")
X86_INSN(movzwq, "movzwq 6(%rdi), %r8")
X86_INSN(movzbw, "movzbw (%rdi), %dx")
X86_INSN(movsbl, "movsbl (%rdi), %ecx")
X86_INSN(movswq, "movswq (%rdi), %rbx")
X86_INSN(movslq, "movslq (%rdi), %r12")
X86_INSN(movnti_q, "movnti %r13, (%rdi)")
X86_INSN(movnti_l, "movnti %eax, (%rdi)")
X86_INSN(rep_movsl, "rep movsl")
X86_INSN(rep_movsq, "rep movsq")
X86_INSN(movsb, "movsb")
X86_INSN(movsw, "movsw")
X86_INSN(rep_stosb, "rep stosb")
X86_INSN(stosw, "stosw")
X86_INSN(rep_stosq, "rep stosq")
X86_INSN(reg_to_reg, "movl %eax, %ebx")
X86_INSN(lock_xadd, "lock xaddl %eax, (%rdi)")
X86_INSN(movdqu, "movdqu (%rdi), %xmm0")
X86_INSN(vmovdqu, "vmovdqu (%rdi), %ymm0")
X86_INSN(fs_load, "movl %fs:(%rdi), %eax")
X86_INSN(addr32, "movl (%edi), %eax")
X86_INSN(add_mem, "addl %eax, (%rdi)")
X86_INSN(mov_imm_bad_reg_field, ".byte 0xC7, 0x0F, 0, 0, 0, 0")

namespace {

std::span<const uint8_t> Bytes(const uint8_t* begin, const uint8_t* end) {
  return {begin, static_cast<size_t>(end - begin)};
}
#define BYTES(name) Bytes(name, name##_end)

dxpu_x86_mmio_insn Decode(std::span<const uint8_t> code) {
  dxpu_x86_mmio_insn insn{};
  EXPECT_EQ(dxpu_x86_mmio_decode(code.data(), code.size(), &insn), DXPU_X86_DECODE_OK);
  EXPECT_EQ(insn.len, code.size()) << "the decoded length is the assembled instruction's";
  return insn;
}

dxpu_x86_decode_err DecodeError(std::span<const uint8_t> code) {
  dxpu_x86_mmio_insn insn{};
  return dxpu_x86_mmio_decode(code.data(), code.size(), &insn);
}

void ExpectAccess(const dxpu_x86_mmio_insn& insn, dxpu_x86_mmio_kind kind, int size, int reg,
                  bool high = false) {
  EXPECT_EQ(insn.kind, kind);
  EXPECT_EQ(insn.size, size);
  EXPECT_EQ(insn.reg, reg);
  EXPECT_EQ(insn.high_byte, high);
}

TEST(X86MmioDecode, LoadsOfEveryWidthAndAddressingForm) {
  ExpectAccess(Decode(BYTES(load_b_al)), DXPU_X86_MMIO_LOAD, 1, DXPU_X86_RAX);
  ExpectAccess(Decode(BYTES(load_w_cx)), DXPU_X86_MMIO_LOAD, 2, DXPU_X86_RCX);
  ExpectAccess(Decode(BYTES(load_l_r9d)), DXPU_X86_MMIO_LOAD, 4, DXPU_X86_R9);
  ExpectAccess(Decode(BYTES(load_q_r15_sib)), DXPU_X86_MMIO_LOAD, 8, DXPU_X86_R15);
  ExpectAccess(Decode(BYTES(load_l_rip)), DXPU_X86_MMIO_LOAD, 4, DXPU_X86_RDX);
  ExpectAccess(Decode(BYTES(load_l_disp32_nobase)), DXPU_X86_MMIO_LOAD, 4, DXPU_X86_RSI);
  ExpectAccess(Decode(BYTES(load_l_ds_prefix)), DXPU_X86_MMIO_LOAD, 4, DXPU_X86_RAX);
  EXPECT_EQ(Decode(BYTES(load_l_r9d)).dst_size, 4);
  EXPECT_EQ(Decode(BYTES(load_q_r15_sib)).dst_size, 8);
}

TEST(X86MmioDecode, ByteRegistersWithAndWithoutRex) {
  // Without REX, register 4 of a byte operand is AH; with one, it is SPL, and 6 is SIL.
  ExpectAccess(Decode(BYTES(load_b_ah)), DXPU_X86_MMIO_LOAD, 1, DXPU_X86_RAX, true);
  ExpectAccess(Decode(BYTES(load_b_sil)), DXPU_X86_MMIO_LOAD, 1, DXPU_X86_RSI);
  ExpectAccess(Decode(BYTES(store_b_ah)), DXPU_X86_MMIO_STORE, 1, DXPU_X86_RAX, true);
  ExpectAccess(Decode(BYTES(store_b_sil)), DXPU_X86_MMIO_STORE, 1, DXPU_X86_RSI);
}

TEST(X86MmioDecode, StoresFromRegistersAndImmediates) {
  ExpectAccess(Decode(BYTES(store_w_r10w)), DXPU_X86_MMIO_STORE, 2, DXPU_X86_R10);
  ExpectAccess(Decode(BYTES(store_l_ebx)), DXPU_X86_MMIO_STORE, 4, DXPU_X86_RBX);
  ExpectAccess(Decode(BYTES(store_q_rax_disp32)), DXPU_X86_MMIO_STORE, 8, DXPU_X86_RAX);
  ExpectAccess(Decode(BYTES(movnti_q)), DXPU_X86_MMIO_STORE, 8, DXPU_X86_R13);
  ExpectAccess(Decode(BYTES(movnti_l)), DXPU_X86_MMIO_STORE, 4, DXPU_X86_RAX);

  const struct {
    std::span<const uint8_t> code;
    int size;
    uint64_t imm;
  } imms[] = {
      {BYTES(store_imm_b), 1, 0xA5},
      {BYTES(store_imm_w), 2, 0x1234},
      {BYTES(store_imm_l), 4, 0x80000000},
      {BYTES(store_imm_q_neg), 8, 0xFFFFFFFFFFFFFFFEull},  // imm32 sign-extended by REX.W
  };
  for (const auto& c : imms) {
    auto insn = Decode(c.code);
    EXPECT_EQ(insn.kind, DXPU_X86_MMIO_STORE_IMM);
    EXPECT_EQ(insn.size, c.size);
    EXPECT_EQ(insn.imm, c.imm);
  }
}

TEST(X86MmioDecode, ExtendingLoads) {
  auto zbl = Decode(BYTES(movzbl));
  ExpectAccess(zbl, DXPU_X86_MMIO_LOAD_ZX, 1, DXPU_X86_RAX);
  EXPECT_EQ(zbl.dst_size, 4);
  auto zwq = Decode(BYTES(movzwq));
  ExpectAccess(zwq, DXPU_X86_MMIO_LOAD_ZX, 2, DXPU_X86_R8);
  EXPECT_EQ(zwq.dst_size, 8);
  auto zbw = Decode(BYTES(movzbw));
  ExpectAccess(zbw, DXPU_X86_MMIO_LOAD_ZX, 1, DXPU_X86_RDX);
  EXPECT_EQ(zbw.dst_size, 2);
  auto sbl = Decode(BYTES(movsbl));
  ExpectAccess(sbl, DXPU_X86_MMIO_LOAD_SX, 1, DXPU_X86_RCX);
  EXPECT_EQ(sbl.dst_size, 4);
  auto swq = Decode(BYTES(movswq));
  ExpectAccess(swq, DXPU_X86_MMIO_LOAD_SX, 2, DXPU_X86_RBX);
  EXPECT_EQ(swq.dst_size, 8);
  auto slq = Decode(BYTES(movslq));
  ExpectAccess(slq, DXPU_X86_MMIO_LOAD_SX, 4, DXPU_X86_R12);
  EXPECT_EQ(slq.dst_size, 8);
}

TEST(X86MmioDecode, StringMovesAndStores) {
  const struct {
    std::span<const uint8_t> code;
    dxpu_x86_mmio_kind kind;
    int size;
    bool rep;
  } cases[] = {
      {BYTES(rep_movsl), DXPU_X86_MMIO_MOVS, 4, true},
      {BYTES(rep_movsq), DXPU_X86_MMIO_MOVS, 8, true},
      {BYTES(movsb), DXPU_X86_MMIO_MOVS, 1, false},
      {BYTES(movsw), DXPU_X86_MMIO_MOVS, 2, false},
      {BYTES(rep_stosb), DXPU_X86_MMIO_STOS, 1, true},
      {BYTES(stosw), DXPU_X86_MMIO_STOS, 2, false},
      {BYTES(rep_stosq), DXPU_X86_MMIO_STOS, 8, true},
  };
  for (const auto& c : cases) {
    auto insn = Decode(c.code);
    EXPECT_EQ(insn.kind, c.kind);
    EXPECT_EQ(insn.size, c.size);
    EXPECT_EQ(insn.rep, c.rep);
  }
}

TEST(X86MmioDecode, RefusesWhatItCannotPerform) {
  EXPECT_EQ(DecodeError(BYTES(reg_to_reg)), DXPU_X86_DECODE_NOT_MEMORY);
  EXPECT_EQ(DecodeError(BYTES(lock_xadd)), DXPU_X86_DECODE_UNSUPPORTED);
  EXPECT_EQ(DecodeError(BYTES(movdqu)), DXPU_X86_DECODE_UNSUPPORTED);
  EXPECT_EQ(DecodeError(BYTES(vmovdqu)), DXPU_X86_DECODE_UNSUPPORTED);
  EXPECT_EQ(DecodeError(BYTES(fs_load)), DXPU_X86_DECODE_UNSUPPORTED);
  EXPECT_EQ(DecodeError(BYTES(addr32)), DXPU_X86_DECODE_UNSUPPORTED);
  EXPECT_EQ(DecodeError(BYTES(add_mem)), DXPU_X86_DECODE_UNSUPPORTED);
  EXPECT_EQ(DecodeError(BYTES(mov_imm_bad_reg_field)), DXPU_X86_DECODE_UNSUPPORTED);
}

TEST(X86MmioDecode, TruncatedBytesAreSaidSoAtEveryCut) {
  for (auto code : {BYTES(load_q_r15_sib), BYTES(store_q_rax_disp32), BYTES(store_imm_q_neg),
                    BYTES(load_l_rip), BYTES(movzwq), BYTES(rep_stosq)}) {
    for (size_t n = 0; n < code.size(); ++n)
      EXPECT_EQ(DecodeError(code.first(n)), DXPU_X86_DECODE_TRUNCATED) << n << " bytes";
  }
  // Sixteen prefixes: longer than any x86 instruction may be.
  uint8_t prefixes[20];
  for (auto& b : prefixes) b = 0x3E;
  EXPECT_EQ(DecodeError(prefixes), DXPU_X86_DECODE_TRUNCATED);
}

TEST(X86MmioResult, LoadsWriteTheRegisterAsTheCpuDoes) {
  const uint64_t old = 0x1122334455667788ull;
  dxpu_x86_mmio_insn insn{};
  insn.kind = DXPU_X86_MMIO_LOAD;
  insn.size = insn.dst_size = 1;
  EXPECT_EQ(dxpu_x86_mmio_load_result(&insn, old, 0xAB), 0x11223344556677ABull);
  insn.high_byte = true;
  EXPECT_EQ(dxpu_x86_mmio_load_result(&insn, old, 0xAB), 0x112233445566AB88ull);
  insn.high_byte = false;
  insn.size = insn.dst_size = 2;
  EXPECT_EQ(dxpu_x86_mmio_load_result(&insn, old, 0xBEEF), 0x112233445566BEEFull);
  insn.size = insn.dst_size = 4;
  EXPECT_EQ(dxpu_x86_mmio_load_result(&insn, old, 0xDEADBEEF), 0xDEADBEEFull);
  insn.size = insn.dst_size = 8;
  EXPECT_EQ(dxpu_x86_mmio_load_result(&insn, old, 0x0123456789ABCDEFull), 0x0123456789ABCDEFull);

  insn.kind = DXPU_X86_MMIO_LOAD_ZX;
  insn.size = 1;
  insn.dst_size = 2;
  EXPECT_EQ(dxpu_x86_mmio_load_result(&insn, old, 0x80), 0x1122334455660080ull);
  insn.dst_size = 8;
  EXPECT_EQ(dxpu_x86_mmio_load_result(&insn, old, 0x80), 0x80ull);

  insn.kind = DXPU_X86_MMIO_LOAD_SX;
  insn.size = 1;
  insn.dst_size = 4;
  EXPECT_EQ(dxpu_x86_mmio_load_result(&insn, old, 0x80), 0xFFFFFF80ull);
  insn.dst_size = 2;
  EXPECT_EQ(dxpu_x86_mmio_load_result(&insn, old, 0x80), 0x112233445566FF80ull);
  insn.size = 4;
  insn.dst_size = 8;
  EXPECT_EQ(dxpu_x86_mmio_load_result(&insn, old, 0x80000000), 0xFFFFFFFF80000000ull);
  EXPECT_EQ(dxpu_x86_mmio_load_result(&insn, old, 0x7FFFFFFF), 0x7FFFFFFFull);
}

TEST(X86MmioResult, StoresTakeTheOperandsBytes) {
  dxpu_x86_mmio_insn insn{};
  insn.kind = DXPU_X86_MMIO_STORE;
  insn.size = 1;
  EXPECT_EQ(dxpu_x86_mmio_store_value(&insn, 0x1122334455667788ull), 0x88u);
  insn.high_byte = true;
  EXPECT_EQ(dxpu_x86_mmio_store_value(&insn, 0x1122334455667788ull), 0x77u);
  insn.high_byte = false;
  insn.size = 2;
  EXPECT_EQ(dxpu_x86_mmio_store_value(&insn, 0x1122334455667788ull), 0x7788u);
  insn.size = 4;
  EXPECT_EQ(dxpu_x86_mmio_store_value(&insn, 0x1122334455667788ull), 0x55667788u);
  insn.size = 8;
  EXPECT_EQ(dxpu_x86_mmio_store_value(&insn, 0x1122334455667788ull), 0x1122334455667788ull);
}

}  // namespace
