/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * x86_mmio_insn.h - decodes the x86-64 instruction that touched a BAR's kernel mapping, so
 * that dxpu.ko can perform it on the remote device and step past it (transparent MMIO,
 * docs/kernel-module.md). Bytes in, a description out; no register file, no memory: the
 * caller reads and writes its pt_regs by the register numbers given here.
 *
 * What the kernel's MMIO accessors and the string helpers compile to, and nothing else:
 *   MOV r/m <- r (88, 89), MOV r <- r/m (8A, 8B), MOV r/m <- imm (C6 /0, C7 /0),
 *   MOVZX (0F B6, 0F B7), MOVSX (0F BE, 0F BF), MOVSXD (63 with REX.W), MOVNTI (0F C3),
 *   MOVS (A4, A5) and STOS (AA, AB), each with REP (F3);
 * with the operand-size prefix (66), REX, segment overrides CS/SS/DS/ES (no effect in 64-bit
 * mode) and any ModRM/SIB/displacement form that addresses memory. Refused (the caller lets
 * the fault take its ordinary course, an oops that names the instruction): a LOCK prefix,
 * REPNE, the address-size prefix, FS/GS overrides, a register operand (ModRM mod 3), VEX/EVEX
 * and SSE moves, and anything longer than an x86 instruction may be (15 bytes).
 */
#ifndef DXPU_CORE_X86_MMIO_INSN_H
#define DXPU_CORE_X86_MMIO_INSN_H

#include <dxpu/compat.h>

DXPU_EXTERN_C_BEGIN

#define DXPU_X86_INSN_MAX 15

enum dxpu_x86_mmio_kind {
	DXPU_X86_MMIO_LOAD,	 /* reg <- mem (size bytes; a 4-byte load zero-extends) */
	DXPU_X86_MMIO_LOAD_ZX,	 /* reg <- zero-extended mem (size 1 or 2; dst_size 2, 4, 8) */
	DXPU_X86_MMIO_LOAD_SX,	 /* reg <- sign-extended mem (size 1, 2 or 4; dst_size 2, 4, 8) */
	DXPU_X86_MMIO_STORE,	 /* mem <- reg (size bytes) */
	DXPU_X86_MMIO_STORE_IMM, /* mem <- imm (size bytes) */
	DXPU_X86_MMIO_MOVS,	 /* [rdi] <- [rsi], either side the mapping */
	DXPU_X86_MMIO_STOS,	 /* [rdi] <- the low size bytes of rax */
};

/* General-purpose registers by their x86 encoding number. */
enum dxpu_x86_reg {
	DXPU_X86_RAX,
	DXPU_X86_RCX,
	DXPU_X86_RDX,
	DXPU_X86_RBX,
	DXPU_X86_RSP,
	DXPU_X86_RBP,
	DXPU_X86_RSI,
	DXPU_X86_RDI,
	DXPU_X86_R8,
	DXPU_X86_R9,
	DXPU_X86_R10,
	DXPU_X86_R11,
	DXPU_X86_R12,
	DXPU_X86_R13,
	DXPU_X86_R14,
	DXPU_X86_R15,
};

struct dxpu_x86_mmio_insn {
	enum dxpu_x86_mmio_kind kind;
	uint8_t len;	  /* the instruction's bytes: the caller's RIP moves on by this much */
	uint8_t size;	  /* bytes of memory accessed (per element for MOVS and STOS) */
	uint8_t dst_size; /* LOAD*: bytes of the register written (4 clears its upper half) */
	uint8_t reg;	  /* LOAD* and STORE: enum dxpu_x86_reg */
	bool high_byte;	  /* the operand is bits 8..15 of reg (0..3): AH, CH, DH, BH */
	bool rep;	  /* MOVS, STOS: repeated RCX times */
	uint64_t imm;	  /* STORE_IMM: the value, already sign-extended to size */
};

enum dxpu_x86_decode_err {
	DXPU_X86_DECODE_OK,
	DXPU_X86_DECODE_TRUNCATED,   /* the bytes end before the instruction does */
	DXPU_X86_DECODE_UNSUPPORTED, /* an instruction or prefix this decoder does not handle */
	DXPU_X86_DECODE_NOT_MEMORY,  /* a register operand: it cannot have faulted on memory */
};

/* Decodes the instruction at code[0..avail); avail may exceed the instruction's length. */
enum dxpu_x86_decode_err dxpu_x86_mmio_decode(const uint8_t *code, size_t avail,
					      struct dxpu_x86_mmio_insn *out);

/*
 * What a load of size bytes (value in its low bytes) makes of the register's old value:
 * insn's extension and destination width applied as the CPU would.
 */
uint64_t dxpu_x86_mmio_load_result(const struct dxpu_x86_mmio_insn *insn, uint64_t old,
				   uint64_t value);

/* The low size bytes of a store's source register (old: its 64-bit value). */
uint64_t dxpu_x86_mmio_store_value(const struct dxpu_x86_mmio_insn *insn, uint64_t reg);

DXPU_EXTERN_C_END

#endif /* DXPU_CORE_X86_MMIO_INSN_H */
