/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * tlp.h - PCIe Transaction Layer Packet header layout, as the PCI Express Base
 * Specification (rev. 4.0 onward, non-Flit mode) defines it.
 *
 * Shared by dxpu.ko and userspace. A TLP header is 3 or 4 doublewords (DW) in
 * PCIe's own big-endian byte order: byte 0 of the header is the first byte on
 * the wire and bit 7 is the most significant bit of that byte. The accessors
 * below read and write raw header bytes; lib/core/tlp_codec.h turns a header
 * into a validated struct and back.
 *
 * DW0, common to every TLP:
 *
 *        +0                +1                +2                +3
 *   7 6 5 4 3 2 1 0 7 6 5 4 3 2 1 0 7 6 5 4 3 2 1 0 7 6 5 4 3 2 1 0
 *  +-----+---------+-+-----+-+-+-+-+-+-+---+---+---+---------------+
 *  | Fmt |  Type   |T| TC  |T|A|L|T|T|E|Att| AT|Len|   Length      |
 *  |     |         |9|     |8|2|N|H|D|P|1 0|   |9:8|    [7:0]      |
 *  +-----+---------+-+-----+-+-+-+-+-+-+---+---+---+---------------+
 *   A2 = Attr[2] (ID-based ordering), Attr[1] = Relaxed Ordering,
 *   Attr[0] = No Snoop. Length 0 encodes 1024 DW.
 *
 * DW1 of requests (memory, configuration, message):
 *  +0..+1 Requester ID   +2 Tag[7:0]   +3 Last DW BE[7:4] | First DW BE[3:0]
 *  (messages carry the Message Code in byte +3 instead of the byte enables)
 *
 * Memory request, 3DW: DW2 = Address[31:2] | PH[1:0]
 * Memory request, 4DW: DW2 = Address[63:32], DW3 = Address[31:2] | PH[1:0]
 *
 * Configuration request DW2:
 *  +8 Bus   +9 Device[7:3] Function[2:0]   +10 Ext Register Number[3:0]
 *  +11 Register Number[7:2] | reserved[1:0]
 *
 * Completion DW1, DW2:
 *  +4..+5 Completer ID  +6 Status[7:5] BCM[4] Byte Count[11:8] (3:0)
 *  +7 Byte Count[7:0]   +8..+9 Requester ID   +10 Tag[7:0]
 *  +11 reserved[7] | Lower Address[6:0]
 *
 * Message DW2, DW3 (+8..+15): meaning set by the message code and routing
 * (address, target ID, vendor ID and vendor data, or reserved).
 */
#ifndef DXPU_TLP_H
#define DXPU_TLP_H

#include "compat.h"

DXPU_EXTERN_C_BEGIN

/* Sizes */
#define DXPU_TLP_HDR3_SIZE 12u
#define DXPU_TLP_HDR4_SIZE 16u
#define DXPU_TLP_DIGEST_SIZE 4u
#define DXPU_TLP_MAX_PAYLOAD 4096u /* 1024 DW */
#define DXPU_TLP_MAX_SIZE (DXPU_TLP_HDR4_SIZE + DXPU_TLP_MAX_PAYLOAD + DXPU_TLP_DIGEST_SIZE)
#define DXPU_TLP_MAX_LENGTH_DW 1024u
#define DXPU_TLP_PAGE_SIZE 4096u /* requests must not cross a 4 KiB boundary */
#define DXPU_TLP_MIN_RCB 64u	 /* smallest Read Completion Boundary */

/* Fmt[2:0] (byte 0, bits 7:5) */
enum dxpu_tlp_fmt {
	DXPU_TLP_FMT_3DW = 0x0,	     /* 3 DW header, no data */
	DXPU_TLP_FMT_4DW = 0x1,	     /* 4 DW header, no data */
	DXPU_TLP_FMT_3DW_DATA = 0x2, /* 3 DW header, with data */
	DXPU_TLP_FMT_4DW_DATA = 0x3, /* 4 DW header, with data */
	DXPU_TLP_FMT_PREFIX = 0x4,   /* TLP Prefix; 101b..111b are reserved */
};

#define DXPU_TLP_FMT_4DW_BIT 0x1u
#define DXPU_TLP_FMT_DATA_BIT 0x2u

/* Type[4:0] (byte 0, bits 4:0) */
enum dxpu_tlp_type {
	DXPU_TLP_TYPE_MEM = 0x00,      /* MRd / MWr */
	DXPU_TLP_TYPE_MEM_LK = 0x01,   /* MRdLk (not carried) */
	DXPU_TLP_TYPE_IO = 0x02,       /* IORd / IOWr (not carried) */
	DXPU_TLP_TYPE_CFG0 = 0x04,     /* CfgRd0 / CfgWr0 */
	DXPU_TLP_TYPE_CFG1 = 0x05,     /* CfgRd1 / CfgWr1 */
	DXPU_TLP_TYPE_CPL = 0x0a,      /* Cpl / CplD */
	DXPU_TLP_TYPE_CPL_LK = 0x0b,   /* CplLk / CplDLk (not carried) */
	DXPU_TLP_TYPE_FETCHADD = 0x0c, /* AtomicOps (not carried) */
	DXPU_TLP_TYPE_SWAP = 0x0d,
	DXPU_TLP_TYPE_CAS = 0x0e,
	DXPU_TLP_TYPE_MSG = 0x10,  /* 1 0 r2 r1 r0: Msg / MsgD, r = routing */
	DXPU_TLP_TYPE_TCFG = 0x1b, /* deprecated trusted configuration (not carried) */
};

#define DXPU_TLP_TYPE_MSG_MASK 0x18u
#define DXPU_TLP_TYPE_ROUTING_MASK 0x07u

/* Attr[2:0] as the specification numbers them */
#define DXPU_TLP_ATTR_NS 0x1u  /* Attr[0]: No Snoop */
#define DXPU_TLP_ATTR_RO 0x2u  /* Attr[1]: Relaxed Ordering */
#define DXPU_TLP_ATTR_IDO 0x4u /* Attr[2]: ID-based Ordering */

/* AT[1:0] */
enum dxpu_tlp_at {
	DXPU_TLP_AT_UNTRANSLATED = 0x0,
	DXPU_TLP_AT_TRANSLATION_REQ = 0x1,
	DXPU_TLP_AT_TRANSLATED = 0x2,
	DXPU_TLP_AT_RESERVED = 0x3,
};

/* Completion Status[2:0] */
enum dxpu_tlp_cpl_status {
	DXPU_TLP_CPL_SC = 0x0,	/* Successful Completion */
	DXPU_TLP_CPL_UR = 0x1,	/* Unsupported Request */
	DXPU_TLP_CPL_CRS = 0x2, /* Configuration Request Retry Status */
	DXPU_TLP_CPL_CA = 0x4,	/* Completer Abort; 011b, 101b..111b reserved */
};

/* Message routing r[2:0] (low bits of Type) */
enum dxpu_tlp_msg_routing {
	DXPU_TLP_ROUTE_TO_RC = 0x0,
	DXPU_TLP_ROUTE_BY_ADDR = 0x1,
	DXPU_TLP_ROUTE_BY_ID = 0x2,
	DXPU_TLP_ROUTE_BROADCAST = 0x3,
	DXPU_TLP_ROUTE_LOCAL = 0x4,
	DXPU_TLP_ROUTE_GATHER = 0x5, /* 110b, 111b reserved */
};

/* Message codes DxPU interprets (others are carried opaquely) */
enum dxpu_tlp_msg_code {
	DXPU_TLP_MSG_ASSERT_INTA = 0x20,
	DXPU_TLP_MSG_ASSERT_INTB = 0x21,
	DXPU_TLP_MSG_ASSERT_INTC = 0x22,
	DXPU_TLP_MSG_ASSERT_INTD = 0x23,
	DXPU_TLP_MSG_DEASSERT_INTA = 0x24,
	DXPU_TLP_MSG_DEASSERT_INTB = 0x25,
	DXPU_TLP_MSG_DEASSERT_INTC = 0x26,
	DXPU_TLP_MSG_DEASSERT_INTD = 0x27,
	DXPU_TLP_MSG_VENDOR_TYPE0 = 0x7e, /* unsupported -> UR at the receiver */
	DXPU_TLP_MSG_VENDOR_TYPE1 = 0x7f, /* unsupported -> silently dropped */
};

/* Routing IDs: Bus[15:8] Device[7:3] Function[2:0] */
#define DXPU_BDF(bus, dev, fn)                                                                     \
	((uint16_t)((((bus)&0xffu) << 8) | (((dev)&0x1fu) << 3) | ((fn)&0x7u)))
#define DXPU_BDF_BUS(id) (((id) >> 8) & 0xffu)
#define DXPU_BDF_DEV(id) (((id) >> 3) & 0x1fu)
#define DXPU_BDF_FN(id) ((id)&0x7u)

/* DW0 bit positions */
#define DXPU_TLP_B1_T9 0x80u
#define DXPU_TLP_B1_TC_SHIFT 4
#define DXPU_TLP_B1_T8 0x08u
#define DXPU_TLP_B1_ATTR2 0x04u
#define DXPU_TLP_B1_LN 0x02u
#define DXPU_TLP_B1_TH 0x01u
#define DXPU_TLP_B2_TD 0x80u
#define DXPU_TLP_B2_EP 0x40u
#define DXPU_TLP_B2_ATTR_SHIFT 4 /* Attr[1:0] in bits 5:4 */
#define DXPU_TLP_B2_AT_SHIFT 2

/* ---- raw DW0 accessors (h points at >= 4 header bytes) ---- */

static inline uint8_t dxpu_tlp_hdr_fmt(const uint8_t *h)
{
	return (uint8_t)(h[0] >> 5);
}

static inline uint8_t dxpu_tlp_hdr_type(const uint8_t *h)
{
	return (uint8_t)(h[0] & 0x1fu);
}

static inline uint8_t dxpu_tlp_hdr_tc(const uint8_t *h)
{
	return (uint8_t)((h[1] >> DXPU_TLP_B1_TC_SHIFT) & 0x7u);
}

static inline uint8_t dxpu_tlp_hdr_attr(const uint8_t *h)
{
	return (uint8_t)(((h[2] >> DXPU_TLP_B2_ATTR_SHIFT) & 0x3u) |
			 ((h[1] & DXPU_TLP_B1_ATTR2) ? DXPU_TLP_ATTR_IDO : 0u));
}

static inline uint8_t dxpu_tlp_hdr_at(const uint8_t *h)
{
	return (uint8_t)((h[2] >> DXPU_TLP_B2_AT_SHIFT) & 0x3u);
}

/* Length field in DW, 1..1024 (the encoding 0 means 1024). */
static inline uint16_t dxpu_tlp_hdr_length_dw(const uint8_t *h)
{
	uint16_t len = (uint16_t)(((h[2] & 0x3u) << 8) | h[3]);

	return len ? len : (uint16_t)DXPU_TLP_MAX_LENGTH_DW;
}

/* 10-bit tag of a request (DW1 byte 2) or a completion (DW2 byte 2). */
static inline uint16_t dxpu_tlp_hdr_tag10(const uint8_t *h, uint8_t tag_lo)
{
	return (uint16_t)(((h[1] & DXPU_TLP_B1_T9) ? 0x200u : 0u) |
			  ((h[1] & DXPU_TLP_B1_T8) ? 0x100u : 0u) | tag_lo);
}

/* Writes Fmt, Type, TC, T9/T8, Attr, LN, TH, TD, EP, AT and Length (1..1024). */
static inline void dxpu_tlp_hdr_put_dw0(uint8_t *h, uint8_t fmt, uint8_t type, uint8_t tc,
					uint16_t tag, uint8_t attr, bool ln, bool th, bool td,
					bool ep, uint8_t at, uint16_t length_dw)
{
	uint16_t len = (uint16_t)(length_dw & 0x3ffu); /* 1024 -> 0 */

	h[0] = (uint8_t)((fmt << 5) | (type & 0x1fu));
	h[1] = (uint8_t)(((tag & 0x200u) ? DXPU_TLP_B1_T9 : 0u) | ((tc & 0x7u) << 4) |
			 ((tag & 0x100u) ? DXPU_TLP_B1_T8 : 0u) |
			 ((attr & DXPU_TLP_ATTR_IDO) ? DXPU_TLP_B1_ATTR2 : 0u) |
			 (ln ? DXPU_TLP_B1_LN : 0u) | (th ? DXPU_TLP_B1_TH : 0u));
	h[2] = (uint8_t)((td ? DXPU_TLP_B2_TD : 0u) | (ep ? DXPU_TLP_B2_EP : 0u) |
			 ((attr & 0x3u) << DXPU_TLP_B2_ATTR_SHIFT) |
			 ((at & 0x3u) << DXPU_TLP_B2_AT_SHIFT) | ((len >> 8) & 0x3u));
	h[3] = (uint8_t)len;
}

DXPU_EXTERN_C_END

#endif /* DXPU_TLP_H */
