// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * tlp_text.c - names and one-line descriptions of TLPs and codec errors, for
 * logs (kernel and userspace alike), counters and the dxpu CLI.
 */
#include "tlp_codec.h"

struct err_desc {
	const char *name;
	const char *text;
};

static const struct err_desc err_descs[DXPU_TLP_ERR_COUNT] = {
	[DXPU_TLP_OK] = { "ok", "valid TLP" },
	[DXPU_TLP_ERR_SHORT_HEADER] = { "short-header", "buffer ends inside the TLP header" },
	[DXPU_TLP_ERR_SHORT_PAYLOAD] = { "short-payload",
					 "buffer ends inside the payload or digest that Length announces" },
	[DXPU_TLP_ERR_LENGTH_MISMATCH] = { "length-mismatch",
					   "bytes remain after the header, Length DW and digest" },
	[DXPU_TLP_ERR_RESERVED_FMT] = { "reserved-fmt", "Fmt is a reserved encoding (101b-111b)" },
	[DXPU_TLP_ERR_RESERVED_TYPE] = { "reserved-type", "Fmt/Type is a reserved combination" },
	[DXPU_TLP_ERR_UNSUPPORTED] = { "unsupported",
				       "TLP type defined by PCIe but not carried by DxPU" },
	[DXPU_TLP_ERR_RESERVED_AT] = { "reserved-at", "memory request with AT = 11b (reserved)" },
	[DXPU_TLP_ERR_ADDR64_BELOW_4G] = { "addr64-below-4g",
					   "4DW memory request header carries an address below 4 GiB" },
	[DXPU_TLP_ERR_LAST_BE_1DW] = { "last-be-1dw", "1-DW request with Last DW BE not 0000b" },
	[DXPU_TLP_ERR_FIRST_BE_ZERO] = { "first-be-zero",
					 "multi-DW request with First DW BE 0000b" },
	[DXPU_TLP_ERR_LAST_BE_ZERO] = { "last-be-zero", "multi-DW request with Last DW BE 0000b" },
	[DXPU_TLP_ERR_BE_NONCONTIG] = { "be-noncontiguous",
					"non-contiguous byte enables in a request that must be contiguous" },
	[DXPU_TLP_ERR_CROSSES_4K] = { "crosses-4k", "memory request crosses a 4 KiB boundary" },
	[DXPU_TLP_ERR_CFG_LENGTH] = { "cfg-length", "configuration request with Length not 1 DW" },
	[DXPU_TLP_ERR_CFG_ATTR] = { "cfg-attr",
				    "configuration request with TC not 0 or Relaxed Ordering/No Snoop set" },
	[DXPU_TLP_ERR_RESERVED_STATUS] = { "reserved-status",
					   "completion status is a reserved encoding" },
	[DXPU_TLP_ERR_CPLD_STATUS] = { "cpld-status",
				       "completion with data has a status other than SC" },
	[DXPU_TLP_ERR_CPL_BYTE_COUNT] = { "cpl-byte-count",
					  "completion Byte Count/Lower Address disagree with Length" },
	[DXPU_TLP_ERR_CPL_SPLIT_ALIGN] = { "cpl-split-align",
					   "partial completion does not end on a 64-byte RCB boundary" },
	[DXPU_TLP_ERR_RESERVED_ROUTING] = { "reserved-routing",
					    "message routing is a reserved encoding (110b/111b)" },
	[DXPU_TLP_ERR_MSG_FORM] = { "msg-form",
				    "message code used with the wrong routing, data or traffic class" },
	[DXPU_TLP_ERR_FIELD_RANGE] = { "field-range",
				       "a field is out of range or set on a kind it does not apply to" },
	[DXPU_TLP_ERR_NO_SPACE] = { "no-space", "output buffer too small for the TLP" },
	[DXPU_TLP_ERR_BAD_PARAM] = { "bad-param",
				     "invalid MPS/MRRS/RCB or byte range given to a split helper" },
};

const char *dxpu_tlp_err_name(enum dxpu_tlp_err err)
{
	if ((unsigned int)err >= DXPU_TLP_ERR_COUNT)
		return "unknown";
	return err_descs[err].name;
}

const char *dxpu_tlp_err_text(enum dxpu_tlp_err err)
{
	if ((unsigned int)err >= DXPU_TLP_ERR_COUNT)
		return "unknown error";
	return err_descs[err].text;
}

static const char *const kind_names[DXPU_TLP_KIND_COUNT] = {
	[DXPU_TLP_INVALID] = "?",     [DXPU_TLP_MRD] = "MRd",	    [DXPU_TLP_MWR] = "MWr",
	[DXPU_TLP_CFGRD0] = "CfgRd0", [DXPU_TLP_CFGWR0] = "CfgWr0", [DXPU_TLP_CFGRD1] = "CfgRd1",
	[DXPU_TLP_CFGWR1] = "CfgWr1", [DXPU_TLP_CPL] = "Cpl",	    [DXPU_TLP_CPLD] = "CplD",
	[DXPU_TLP_MSG] = "Msg",	      [DXPU_TLP_MSGD] = "MsgD",
};

const char *dxpu_tlp_kind_name(uint8_t kind)
{
	return kind < DXPU_TLP_KIND_COUNT ? kind_names[kind] : "?";
}

const char *dxpu_tlp_cpl_status_name(uint8_t status)
{
	switch (status) {
	case DXPU_TLP_CPL_SC:
		return "SC";
	case DXPU_TLP_CPL_UR:
		return "UR";
	case DXPU_TLP_CPL_CRS:
		return "CRS";
	case DXPU_TLP_CPL_CA:
		return "CA";
	default:
		return "reserved";
	}
}

const char *dxpu_tlp_routing_name(uint8_t routing)
{
	switch (routing) {
	case DXPU_TLP_ROUTE_TO_RC:
		return "to-rc";
	case DXPU_TLP_ROUTE_BY_ADDR:
		return "by-address";
	case DXPU_TLP_ROUTE_BY_ID:
		return "by-id";
	case DXPU_TLP_ROUTE_BROADCAST:
		return "broadcast";
	case DXPU_TLP_ROUTE_LOCAL:
		return "local";
	case DXPU_TLP_ROUTE_GATHER:
		return "gather";
	default:
		return "reserved";
	}
}

/* "bb:dd.f" into out[8]. */
static void bdf_text(uint16_t id, char *out)
{
	snprintf(out, 8, "%02x:%02x.%x", DXPU_BDF_BUS(id), DXPU_BDF_DEV(id), DXPU_BDF_FN(id));
}

/* " TD EP TH(ph=.. st=..) LN BCM" for what is set: what a log line needs beyond the fields. */
static void flag_words(const struct dxpu_tlp *t, char *buf, size_t size)
{
	char th[24] = "";

	if (t->flags & DXPU_TLP_F_TH)
		snprintf(th, sizeof(th), " TH(ph=%u st=0x%02x)", t->ph, t->st);
	snprintf(buf, size, "%s%s%s%s%s", (t->flags & DXPU_TLP_F_TD) ? " TD" : "",
		 (t->flags & DXPU_TLP_F_EP) ? " EP" : "", th,
		 (t->flags & DXPU_TLP_F_LN) ? " LN" : "",
		 (t->flags & DXPU_TLP_F_BCM) ? " BCM" : "");
}

int dxpu_tlp_format(const struct dxpu_tlp *t, char *buf, size_t size)
{
	const char *name = dxpu_tlp_kind_name(t->kind);
	char fl[48], req[8], cpl[8], tgt[8];

	flag_words(t, fl, sizeof(fl));
	bdf_text(t->requester_id, req);
	bdf_text(t->completer_id, cpl);
	bdf_text(t->cfg_target, tgt);
	if (dxpu_tlp_kind_is_mem(t->kind))
		return snprintf(
			buf, size,
			"%s%s req=%s tag=0x%03x addr=0x%llx len=%u fbe=0x%x lbe=0x%x tc=%u attr=0x%x at=%u%s",
			name, (t->addr >> 32) ? "64" : "32", req, t->tag,
			(unsigned long long)t->addr, t->length_dw, t->first_be, t->last_be, t->tc,
			t->attr, t->at, fl);
	if (dxpu_tlp_kind_is_cfg(t->kind))
		return snprintf(buf, size,
				"%s req=%s tag=0x%03x target=%s reg=0x%03x fbe=0x%x attr=0x%x%s",
				name, req, t->tag, tgt, t->cfg_reg, t->first_be, t->attr, fl);
	if (t->kind == DXPU_TLP_CPL)
		return snprintf(
			buf, size,
			"Cpl cpl=%s req=%s tag=0x%03x status=%s bc=%u la=0x%02x tc=%u attr=0x%x%s",
			cpl, req, t->tag, dxpu_tlp_cpl_status_name(t->cpl_status), t->byte_count,
			t->lower_addr, t->tc, t->attr, fl);
	if (t->kind == DXPU_TLP_CPLD)
		return snprintf(
			buf, size,
			"CplD cpl=%s req=%s tag=0x%03x status=%s bc=%u la=0x%02x len=%u tc=%u attr=0x%x%s",
			cpl, req, t->tag, dxpu_tlp_cpl_status_name(t->cpl_status), t->byte_count,
			t->lower_addr, t->length_dw, t->tc, t->attr, fl);
	if (t->kind == DXPU_TLP_MSG)
		return snprintf(buf, size, "Msg req=%s code=0x%02x routing=%s tc=%u%s", req,
				t->msg_code, dxpu_tlp_routing_name(t->msg_routing), t->tc, fl);
	if (t->kind == DXPU_TLP_MSGD)
		return snprintf(buf, size, "MsgD req=%s code=0x%02x routing=%s len=%u tc=%u%s", req,
				t->msg_code, dxpu_tlp_routing_name(t->msg_routing), t->length_dw,
				t->tc, fl);
	return snprintf(buf, size, "?");
}
