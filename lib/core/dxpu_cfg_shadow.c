// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * dxpu_cfg_shadow.c - a remote function's configuration space, kept by the host
 * (see dxpu_cfg_shadow.h). Each byte of a write goes through that byte's attributes: the
 * bits software may set (wmask) and the bits a 1 clears (w1c). The header is the type 0
 * header as PCI Express narrows it for its functions (Base 6.0, 7.5.1): the Command bits
 * PCIe leaves writable, Latency Timer read-only 0.
 */
#include "dxpu_cfg_shadow.h"

/* Type 0 header offsets and bits this file needs (PCI Local Bus 3.0, 6.1). */
#define CFG_COMMAND 0x04u
#define CFG_STATUS_HI 0x07u /* Status bits 15:8 */
#define CFG_CACHE_LINE 0x0cu
#define CFG_BAR0 0x10u
#define CFG_ROM 0x30u
#define CFG_CAP_PTR 0x34u
#define CFG_INT_LINE 0x3cu
#define CFG_HEADER_END 0x40u
#define CFG_STATUS_CAP_LIST 0x10u /* Status bit 4, in the low byte at 0x06 */

#define CAP_ID_EXP 0x10u
#define CAP_ID_MSIX 0x11u
/* Offsets in the PCI Express capability. */
#define EXP_DEVSTA 0x0au
#define EXP_LNKSTA_HI 0x13u
#define EXP_END 0x3cu
/* Offsets in the MSI-X capability. */
#define MSIX_CTRL_HI 0x03u
#define MSIX_END 0x0cu

#define MAX_CAPS 48u /* a list longer than fits in 192 bytes loops */

struct byte_attr {
	uint8_t wmask; /* bits a write sets to the value written */
	uint8_t w1c;   /* bits a written 1 clears */
};

static const struct byte_attr ATTR_RO = { 0x00, 0x00 };
static const struct byte_attr ATTR_RW = { 0xff, 0x00 };

bool dxpu_cfg_access_ok(uint32_t where, uint32_t size)
{
	if (size != 1 && size != 2 && size != 4)
		return false;
	return where < DXPU_CFG_SPACE_SIZE && (where & (size - 1u)) == 0;
}

/* The writable bits a BAR's all-ones read-back shows: the address bits, not the type. */
static uint32_t bar_writable(uint32_t readback, bool upper_half)
{
	if (upper_half)
		return readback;
	if (readback & 0x1u) /* I/O space */
		return readback & ~0x3u;
	return readback & ~0xfu;
}

uint64_t dxpu_cfg_bar_size(uint32_t readback, uint32_t upper)
{
	uint64_t mask;

	if (readback == 0 || readback == 0xffffffffu)
		return 0;
	if (readback & 0x1u) {
		mask = readback & ~0x3u;
		mask |= 0xffff0000u; /* I/O BARs may implement only 16 bits */
		return (uint64_t)(~mask + 1u) & 0xffffffffu;
	}
	mask = readback & ~0xfu;
	if ((readback & 0x6u) == 0x4u) /* 64-bit */
		mask |= (uint64_t)upper << 32;
	else
		mask |= 0xffffffff00000000ull;
	if (mask == 0)
		return 0;
	return ~mask + 1u;
}

bool dxpu_cfg_shadow_init(struct dxpu_cfg_shadow *sh, const uint8_t *space, uint32_t size,
			  const uint32_t bar_readback[DXPU_CFG_BARS], uint32_t rom_readback)
{
	uint32_t i;

	if (size != DXPU_CFG_LEGACY_SIZE && size != DXPU_CFG_SPACE_SIZE)
		return false;
	memset(sh, 0, sizeof(*sh));
	memcpy(sh->space, space, size);
	sh->size = size;
	for (i = 0; i < DXPU_CFG_BARS; i++) {
		sh->bar_mask[i] = bar_writable(bar_readback[i], false);
		if (sh->bar_mask[i] && (bar_readback[i] & 0x1u))
			sh->has_io_bar = true;
		/* A 64-bit memory BAR: the next register is its upper half, all of it address. */
		if ((bar_readback[i] & 0x7u) == 0x4u && i + 1 < DXPU_CFG_BARS) {
			i++;
			sh->bar_mask[i] = bar_writable(bar_readback[i], true);
		}
	}
	sh->rom_mask = rom_readback ? (rom_readback & 0xfffff800u) | 0x1u : 0;
	return true;
}

static uint32_t get16(const struct dxpu_cfg_shadow *sh, uint32_t off)
{
	return sh->space[off] | (uint32_t)sh->space[off + 1] << 8;
}

/* The attributes of a byte inside the PCI Express or MSI-X capability at cap. */
static struct byte_attr cap_body_attr(uint8_t id, uint32_t rel)
{
	struct byte_attr a = ATTR_RW;

	if (id == CAP_ID_EXP && rel < EXP_END) {
		switch (rel) {
		case EXP_DEVSTA: /* Device Status: the four error bits are RW1C */
			a.wmask = 0;
			a.w1c = 0x0f;
			return a;
		case EXP_LNKSTA_HI: /* Link Status: bandwidth management bits 15:14 RW1C */
			a.wmask = 0;
			a.w1c = 0xc0;
			return a;
		}
		/* Capabilities, Device/Link/Slot/Root Capabilities and Capabilities 2. */
		if (rel < 0x08 || (rel >= 0x0b && rel < 0x10) || rel == 0x12 ||
		    (rel >= 0x14 && rel < 0x18) || (rel >= 0x24 && rel < 0x28) ||
		    (rel >= 0x2c && rel < 0x30) || (rel >= 0x34 && rel < 0x38))
			return ATTR_RO;
		return a;
	}
	if (id == CAP_ID_MSIX && rel < MSIX_END) {
		if (rel == MSIX_CTRL_HI) { /* MSI-X Enable and Function Mask */
			a.wmask = 0xc0;
			return a;
		}
		return ATTR_RO; /* table size, table and PBA locations */
	}
	return a;
}

/* The attributes of a byte at off >= 0x40: capability headers are read-only. */
static struct byte_attr capability_attr(const struct dxpu_cfg_shadow *sh, uint32_t off)
{
	uint32_t at, n;

	if (off < DXPU_CFG_LEGACY_SIZE) {
		if (!(sh->space[0x06] & CFG_STATUS_CAP_LIST))
			return ATTR_RW;
		at = sh->space[CFG_CAP_PTR] & 0xfcu;
		for (n = 0; n < MAX_CAPS && at >= CFG_HEADER_END; n++) {
			uint8_t id = sh->space[at];
			uint32_t next = sh->space[at + 1] & 0xfcu;

			if (off == at || off == at + 1)
				return ATTR_RO;
			if (off > at + 1 && (id == CAP_ID_EXP || id == CAP_ID_MSIX)) {
				struct byte_attr a = cap_body_attr(id, off - at);

				if (a.wmask != 0xff || a.w1c)
					return a;
			}
			at = next;
		}
		return ATTR_RW;
	}
	/* Extended capabilities: 4-byte headers, the list starting at 0x100. */
	at = DXPU_CFG_LEGACY_SIZE;
	for (n = 0; n < (DXPU_CFG_SPACE_SIZE - DXPU_CFG_LEGACY_SIZE) / 4u; n++) {
		uint32_t next = (get16(sh, at + 2) >> 4) & 0xffcu;

		if (off >= at && off < at + 4)
			return ATTR_RO;
		if (next <= at || next < DXPU_CFG_LEGACY_SIZE)
			break;
		at = next;
	}
	return ATTR_RW;
}

static struct byte_attr byte_attr_of(const struct dxpu_cfg_shadow *sh, uint32_t off)
{
	struct byte_attr a = ATTR_RO;

	if (off >= CFG_HEADER_END)
		return capability_attr(sh, off);
	if (off >= CFG_BAR0 && off < CFG_BAR0 + 4 * DXPU_CFG_BARS) {
		a.wmask =
			(uint8_t)((sh->bar_mask[(off - CFG_BAR0) / 4] >> (8 * (off & 3u))) & 0xffu);
		return a;
	}
	if (off >= CFG_ROM && off < CFG_ROM + 4) {
		a.wmask = (uint8_t)((sh->rom_mask >> (8 * (off & 3u))) & 0xffu);
		return a;
	}
	switch (off) {
	case CFG_COMMAND: /* Memory Space, Bus Master, Parity Error Response; I/O with an I/O BAR */
		a.wmask = (uint8_t)(0x46u | (sh->has_io_bar ? 0x01u : 0));
		return a;
	case CFG_COMMAND + 1: /* SERR# Enable, Interrupt Disable */
		a.wmask = 0x05;
		return a;
	case CFG_CACHE_LINE: /* no effect in PCIe, RW for software */
	case CFG_INT_LINE:
		return ATTR_RW;
	case CFG_STATUS_HI: /* Master Data Parity Error and the error bits 15:11 */
		a.w1c = 0xf9;
		return a;
	}
	return a;
}

uint32_t dxpu_cfg_shadow_read(const struct dxpu_cfg_shadow *sh, uint32_t where, uint32_t size)
{
	uint32_t v = 0, i;

	if (!dxpu_cfg_access_ok(where, size) || where >= sh->size)
		return 0xffffffffu;
	for (i = 0; i < size; i++)
		v |= (uint32_t)sh->space[where + i] << (8 * i);
	return v;
}

bool dxpu_cfg_shadow_write(struct dxpu_cfg_shadow *sh, uint32_t where, uint32_t size, uint32_t val)
{
	uint8_t next[4];
	uint32_t i;

	if (!dxpu_cfg_access_ok(where, size))
		return false;
	if (where >= sh->size)
		return true;
	/* Attributes from the copy as it was before this write (a header cannot move under it). */
	for (i = 0; i < size; i++) {
		struct byte_attr a = byte_attr_of(sh, where + i);
		uint8_t v = (uint8_t)((val >> (8 * i)) & 0xffu);
		uint8_t old = sh->space[where + i];

		next[i] = (uint8_t)(((old & ~a.wmask) | (v & a.wmask)) & ~(v & a.w1c));
	}
	memcpy(&sh->space[where], next, size);
	return true;
}
