// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * x86_mmio_insn.c - the x86-64 instructions a BAR access compiles to, decoded (see the header
 * for which). The encodings are the Intel SDM's (Vol. 2, chapter 2: prefixes, REX, ModRM,
 * SIB, displacement, immediate).
 */
#include "x86_mmio_insn.h"

#define REX_W 0x8
#define REX_R 0x4

struct dxpu_x86_cursor {
	const uint8_t *code;
	size_t avail;
	size_t pos;
};

static bool dxpu_x86_take(struct dxpu_x86_cursor *c, uint8_t *b)
{
	if (c->pos >= c->avail || c->pos >= DXPU_X86_INSN_MAX)
		return false;
	*b = c->code[c->pos++];
	return true;
}

/* Little-endian immediate of n bytes (1, 2 or 4), sign-extended to 64 bits. */
static bool dxpu_x86_take_imm(struct dxpu_x86_cursor *c, unsigned int n, uint64_t *imm)
{
	uint64_t v = 0;
	unsigned int i;
	uint8_t b;

	for (i = 0; i < n; i++) {
		if (!dxpu_x86_take(c, &b))
			return false;
		v |= (uint64_t)b << (8 * i);
	}
	if (v & ((uint64_t)1 << (8 * n - 1)))
		v |= ~(uint64_t)0 << (8 * n);
	*imm = v;
	return true;
}

/*
 * Steps over ModRM, SIB and displacement; *reg gets ModRM.reg (REX.R applied by the caller).
 * A register operand (mod 3) addresses no memory.
 */
static enum dxpu_x86_decode_err dxpu_x86_modrm(struct dxpu_x86_cursor *c, uint8_t *reg)
{
	uint8_t modrm, sib, mod, rm;
	size_t disp = 0;

	if (!dxpu_x86_take(c, &modrm))
		return DXPU_X86_DECODE_TRUNCATED;
	mod = modrm >> 6;
	rm = modrm & 7;
	*reg = (modrm >> 3) & 7;
	if (mod == 3)
		return DXPU_X86_DECODE_NOT_MEMORY;
	if (rm == 4) {
		if (!dxpu_x86_take(c, &sib))
			return DXPU_X86_DECODE_TRUNCATED;
		if (mod == 0 && (sib & 7) == 5)
			disp = 4;
	} else if (mod == 0 && rm == 5) {
		disp = 4; /* RIP-relative */
	}
	if (mod == 1)
		disp = 1;
	else if (mod == 2)
		disp = 4;
	c->pos += disp;
	if (c->pos > c->avail || c->pos > DXPU_X86_INSN_MAX)
		return DXPU_X86_DECODE_TRUNCATED;
	return DXPU_X86_DECODE_OK;
}

/* The operand size of a non-byte form: 8 with REX.W, else 2 with 66, else 4. */
static uint8_t dxpu_x86_opsize(uint8_t rex, bool opsize16)
{
	if (rex & REX_W)
		return 8;
	return opsize16 ? 2 : 4;
}

/* A byte register operand: without REX, numbers 4..7 are AH, CH, DH, BH. */
static void dxpu_x86_set_reg(struct dxpu_x86_mmio_insn *out, uint8_t reg, uint8_t rex, bool byte)
{
	if (byte && !rex && reg >= 4 && reg <= 7) {
		out->reg = reg - 4;
		out->high_byte = true;
		return;
	}
	out->reg = reg | ((rex & REX_R) ? 8 : 0);
}

/* The two-byte opcodes (0F xx) this decoder knows. */
static enum dxpu_x86_decode_err dxpu_x86_decode_0f(struct dxpu_x86_cursor *c, uint8_t rex,
						   bool opsize16, struct dxpu_x86_mmio_insn *out)
{
	enum dxpu_x86_decode_err err;
	uint8_t op, reg;

	if (!dxpu_x86_take(c, &op))
		return DXPU_X86_DECODE_TRUNCATED;
	switch (op) {
	case 0xB6: /* MOVZX r, r/m8 */
	case 0xB7: /* MOVZX r, r/m16 */
		out->kind = DXPU_X86_MMIO_LOAD_ZX;
		out->size = op == 0xB6 ? 1 : 2;
		break;
	case 0xBE: /* MOVSX r, r/m8 */
	case 0xBF: /* MOVSX r, r/m16 */
		out->kind = DXPU_X86_MMIO_LOAD_SX;
		out->size = op == 0xBE ? 1 : 2;
		break;
	case 0xC3: /* MOVNTI m32/m64, r */
		if (opsize16)
			return DXPU_X86_DECODE_UNSUPPORTED;
		out->kind = DXPU_X86_MMIO_STORE;
		out->size = dxpu_x86_opsize(rex, false);
		break;
	default:
		return DXPU_X86_DECODE_UNSUPPORTED;
	}
	err = dxpu_x86_modrm(c, &reg);
	if (err)
		return err;
	out->dst_size = out->kind == DXPU_X86_MMIO_STORE ? 0 : dxpu_x86_opsize(rex, opsize16);
	dxpu_x86_set_reg(out, reg, rex, false);
	return DXPU_X86_DECODE_OK;
}

/* MOV between memory and a register: 88, 89 (stores), 8A, 8B (loads); MOVSXD 63. */
static enum dxpu_x86_decode_err dxpu_x86_decode_mov(struct dxpu_x86_cursor *c, uint8_t op,
						    uint8_t rex, bool opsize16,
						    struct dxpu_x86_mmio_insn *out)
{
	bool byte = op == 0x88 || op == 0x8A;
	enum dxpu_x86_decode_err err;
	uint8_t reg;

	err = dxpu_x86_modrm(c, &reg);
	if (err)
		return err;
	out->size = byte ? 1 : dxpu_x86_opsize(rex, opsize16);
	if (op == 0x88 || op == 0x89) {
		out->kind = DXPU_X86_MMIO_STORE;
	} else if (op == 0x63 && (rex & REX_W)) {
		out->kind = DXPU_X86_MMIO_LOAD_SX;
		out->size = 4;
		out->dst_size = 8;
	} else {
		out->kind = DXPU_X86_MMIO_LOAD;
		out->dst_size = out->size;
	}
	dxpu_x86_set_reg(out, reg, rex, byte);
	return DXPU_X86_DECODE_OK;
}

/* MOV r/m, imm: C6 /0 ib, C7 /0 iw or id (sign-extended with REX.W). */
static enum dxpu_x86_decode_err dxpu_x86_decode_mov_imm(struct dxpu_x86_cursor *c, uint8_t op,
							uint8_t rex, bool opsize16,
							struct dxpu_x86_mmio_insn *out)
{
	enum dxpu_x86_decode_err err;
	unsigned int imm_bytes;
	uint8_t reg;

	err = dxpu_x86_modrm(c, &reg);
	if (err)
		return err;
	if (reg != 0)
		return DXPU_X86_DECODE_UNSUPPORTED;
	out->kind = DXPU_X86_MMIO_STORE_IMM;
	out->size = op == 0xC6 ? 1 : dxpu_x86_opsize(rex, opsize16);
	imm_bytes = out->size > 4 ? 4 : out->size;
	if (!dxpu_x86_take_imm(c, imm_bytes, &out->imm))
		return DXPU_X86_DECODE_TRUNCATED;
	if (out->size < 8)
		out->imm &= ((uint64_t)1 << (8 * out->size)) - 1;
	return DXPU_X86_DECODE_OK;
}

/* A legacy prefix: 1 taken, 0 not a prefix (the opcode), -1 one this decoder refuses. */
static int dxpu_x86_prefix(uint8_t b, bool *opsize16, bool *rep)
{
	switch (b) {
	case 0x66:
		*opsize16 = true;
		return 1;
	case 0xF3:
		*rep = true;
		return 1;
	case 0x2E: /* CS, SS, DS, ES: no effect on addresses in 64-bit mode */
	case 0x36:
	case 0x3E:
	case 0x26:
		return 1;
	case 0xF0: /* LOCK, REPNE, address size, FS, GS */
	case 0xF2:
	case 0x67:
	case 0x64:
	case 0x65:
		return -1;
	default:
		return 0;
	}
}

enum dxpu_x86_decode_err dxpu_x86_mmio_decode(const uint8_t *code, size_t avail,
					      struct dxpu_x86_mmio_insn *out)
{
	struct dxpu_x86_cursor c = { code, avail, 0 };
	enum dxpu_x86_decode_err err;
	bool opsize16 = false;
	bool rep = false;
	uint8_t rex = 0;
	int prefix;
	uint8_t op;

	*out = (struct dxpu_x86_mmio_insn){ 0 };
	for (;;) {
		if (!dxpu_x86_take(&c, &op))
			return DXPU_X86_DECODE_TRUNCATED;
		if (op >= 0x40 && op <= 0x4F) {
			rex = op; /* in effect only right before the opcode */
			continue;
		}
		prefix = dxpu_x86_prefix(op, &opsize16, &rep);
		if (prefix < 0)
			return DXPU_X86_DECODE_UNSUPPORTED;
		if (prefix == 0)
			break;
		rex = 0;
	}
	if (rep && op != 0xA4 && op != 0xA5 && op != 0xAA && op != 0xAB)
		rep = false; /* F3 before another opcode selects an SSE form or means nothing */
	switch (op) {
	case 0x0F:
		err = dxpu_x86_decode_0f(&c, rex, opsize16, out);
		break;
	case 0x88:
	case 0x89:
	case 0x8A:
	case 0x8B:
	case 0x63:
		err = dxpu_x86_decode_mov(&c, op, rex, opsize16, out);
		break;
	case 0xC6:
	case 0xC7:
		err = dxpu_x86_decode_mov_imm(&c, op, rex, opsize16, out);
		break;
	case 0xA4:
	case 0xA5:
	case 0xAA:
	case 0xAB:
		out->kind = op <= 0xA5 ? DXPU_X86_MMIO_MOVS : DXPU_X86_MMIO_STOS;
		out->size = (op & 1) ? dxpu_x86_opsize(rex, opsize16) : 1;
		out->rep = rep;
		err = DXPU_X86_DECODE_OK;
		break;
	default:
		return DXPU_X86_DECODE_UNSUPPORTED;
	}
	if (err)
		return err;
	out->len = (uint8_t)c.pos;
	return DXPU_X86_DECODE_OK;
}

static uint64_t dxpu_x86_low(uint64_t v, unsigned int size)
{
	return size >= 8 ? v : v & (((uint64_t)1 << (8 * size)) - 1);
}

/* v (size bytes) sign-extended to 64 bits. */
static uint64_t dxpu_x86_sext(uint64_t v, unsigned int size)
{
	v = dxpu_x86_low(v, size);
	if (size < 8 && (v & ((uint64_t)1 << (8 * size - 1))))
		v |= ~(uint64_t)0 << (8 * size);
	return v;
}

uint64_t dxpu_x86_mmio_load_result(const struct dxpu_x86_mmio_insn *insn, uint64_t old,
				   uint64_t value)
{
	uint64_t v;

	if (insn->high_byte)
		return (old & ~(uint64_t)0xFF00) | (dxpu_x86_low(value, 1) << 8);
	if (insn->kind == DXPU_X86_MMIO_LOAD_SX)
		v = dxpu_x86_sext(value, insn->size);
	else
		v = dxpu_x86_low(value, insn->size);
	switch (insn->dst_size) {
	case 1:
		return (old & ~(uint64_t)0xFF) | dxpu_x86_low(v, 1);
	case 2:
		return (old & ~(uint64_t)0xFFFF) | dxpu_x86_low(v, 2);
	case 4:
		return dxpu_x86_low(v, 4); /* a 32-bit destination clears bits 32..63 */
	default:
		return v;
	}
}

uint64_t dxpu_x86_mmio_store_value(const struct dxpu_x86_mmio_insn *insn, uint64_t reg)
{
	if (insn->high_byte)
		return (reg >> 8) & 0xFF;
	return dxpu_x86_low(reg, insn->size);
}
