// dxpu_tlp_classify - TLP header parse and classify, the first stage of the bridge's data
// path (docs/rtl.md). Every TLP that enters the bridge, from a host's DxFP session or from the
// box's PCIe, is checked here against the rules lib/core's decoder applies
// (lib/core/tlp_codec.c, docs/protocol.md sections 5-9), in the same order, so that the first
// rule broken, and its number, is the decoder's: its kind (enum dxpu_tlp_kind), its
// flow-control class (posted, non-posted, completion) and its error (enum dxpu_tlp_err, 0 when
// the TLP is good) travel beside the header to the stages after.
//
// Stream: header beside payload. The header (16 bytes as on the wire, DW0 in [127:96]; a 3 DW
// header leaves [31:0] to be ignored) and the record's length in bytes come with the first beat
// (sop); the payload follows in DATA_WIDTH-bit beats, eop on the last. A TLP without payload
// is one beat with sop and eop. One register stage: a beat is accepted every cycle the output
// is free or taken (one header per cycle unstalled), classified on the way through.
`resetall
`default_nettype none

module dxpu_tlp_classify
  import dxpu_tlp_pkg::*;
#(
    parameter int DATA_WIDTH = 64,
    parameter int KEEP_WIDTH = DATA_WIDTH / 32,
    parameter int USER_WIDTH = 1  // sideband carried with each beat, untouched
) (
    input wire logic clk,
    input wire logic rst,

    input  wire logic [             127:0] s_tlp_hdr,
    input  wire logic [TLP_LEN_WIDTH-1:0]  s_tlp_len,
    input  wire logic [  DATA_WIDTH-1:0]   s_tlp_data,
    input  wire logic [  KEEP_WIDTH-1:0]   s_tlp_keep,
    input  wire logic [  USER_WIDTH-1:0]   s_tlp_user,
    input  wire logic                      s_tlp_sop,
    input  wire logic                      s_tlp_eop,
    input  wire logic                      s_tlp_valid,
    output wire logic                      s_tlp_ready,

    output wire logic [             127:0] m_tlp_hdr,
    output wire logic [TLP_LEN_WIDTH-1:0]  m_tlp_len,
    output wire logic [  DATA_WIDTH-1:0]   m_tlp_data,
    output wire logic [  KEEP_WIDTH-1:0]   m_tlp_keep,
    output wire logic [  USER_WIDTH-1:0]   m_tlp_user,
    output wire logic                      m_tlp_sop,
    output wire logic                      m_tlp_eop,
    output wire logic                      m_tlp_valid,
    input  wire logic                      m_tlp_ready,
    // Beside the header, valid with m_tlp_sop:
    output wire kind_t                     m_tlp_kind,   // KIND_INVALID when not classified
    output wire class_t                    m_tlp_class,
    output wire err_t                      m_tlp_err,    // ERR_OK: a good TLP
    output wire logic                      m_tlp_hdr4    // a 4 DW header
);

  // Parameters checked at elaboration.
  if (DATA_WIDTH < 64 || DATA_WIDTH > 512 || (DATA_WIDTH & (DATA_WIDTH - 1)) != 0) begin : g_bad_width
    $error("dxpu_tlp_classify: DATA_WIDTH %0d must be a power of two, 64..512", DATA_WIDTH);
  end
  if (KEEP_WIDTH * 32 != DATA_WIDTH) begin : g_bad_keep
    $error("dxpu_tlp_classify: KEEP_WIDTH must be DATA_WIDTH / 32");
  end
  if (USER_WIDTH < 1) begin : g_bad_user
    $error("dxpu_tlp_classify: USER_WIDTH must be at least 1");
  end

  typedef struct packed {
    kind_t  kind;
    class_t cls;
    err_t   err;
    logic   hdr4;
  } verdict_t;

  // ---- rules (each as lib/core/tlp_codec.c writes it) ----

  function automatic logic be_contiguous_high(input logic [3:0] be);
    return be == 4'hf || be == 4'he || be == 4'hc || be == 4'h8;
  endfunction

  function automatic logic be_contiguous_low(input logic [3:0] be);
    return be == 4'h1 || be == 4'h3 || be == 4'h7 || be == 4'hf;
  endfunction

  function automatic err_t check_byte_enables(input logic [10:0] length_dw,
                                              input logic [3:0] first_be,
                                              input logic [3:0] last_be, input logic addr_bit2);
    if (length_dw == 11'd1) return last_be != 4'h0 ? ERR_LAST_BE_1DW : ERR_OK;
    if (first_be == 4'h0) return ERR_FIRST_BE_ZERO;
    if (last_be == 4'h0) return ERR_LAST_BE_ZERO;
    if (length_dw == 11'd2 && !addr_bit2) return ERR_OK;  // QW-aligned 2 DW: any pattern
    if (!be_contiguous_high(first_be) || !be_contiguous_low(last_be)) return ERR_BE_NONCONTIG;
    return ERR_OK;
  endfunction

  function automatic err_t check_mem(input kind_t kind, input logic hdr4,
                                     input logic [31:0] addr_hi, input logic [11:2] addr_lo,
                                     input logic [1:0] at, input logic th,
                                     input logic [3:0] first_be_field,
                                     input logic [3:0] last_be_field,
                                     input logic [10:0] length_dw);
    logic [3:0] first_be = first_be_field, last_be = last_be_field;
    err_t err;
    if (hdr4 && addr_hi == 32'h0) return ERR_ADDR64_BELOW_4G;
    if (at == 2'b11) return ERR_RESERVED_AT;
    if (th && kind == KIND_MRD) begin  // TH: the byte enables are implied
      first_be = 4'hf;
      last_be  = length_dw > 11'd1 ? 4'hf : 4'h0;
    end
    err = check_byte_enables(length_dw, first_be, last_be, addr_lo[2]);
    if (err != ERR_OK) return err;
    if ({2'b00, addr_lo, 2'b00} + {1'b0, length_dw, 2'b00} > 14'd4096) return ERR_CROSSES_4K;
    return ERR_OK;
  endfunction

  function automatic err_t check_cfg(input logic [2:0] tc, input logic [1:0] attr_ro_ns,
                                     input logic [3:0] first_be, input logic [3:0] last_be,
                                     input logic [10:0] length_dw);
    if (length_dw != 11'd1) return ERR_CFG_LENGTH;
    if (tc != 3'b000 || attr_ro_ns != 2'b00) return ERR_CFG_ATTR;
    return check_byte_enables(length_dw, first_be, last_be, 1'b0);
  endfunction

  function automatic err_t check_cpl(input kind_t kind, input logic [2:0] status,
                                     input logic bcm, input logic [11:0] byte_count_field,
                                     input logic [5:0] lower_addr, input logic [10:0] length_dw);
    logic [12:0] byte_count = byte_count_field == 12'h0 ? 13'd4096 : {1'b0, byte_count_field};
    logic [12:0] covered = {length_dw, 2'b00} - {11'd0, lower_addr[1:0]};
    // DWs the remaining bytes touch from Lower Address; where this completion ends, mod 64.
    logic [11:0] touched_dw = 12'((14'(lower_addr[1:0]) + 14'(byte_count) + 14'd3) >> 2);
    logic [5:0] end_mod_rcb = {lower_addr[5:2], 2'b00} + {length_dw[3:0], 2'b00};
    // A Cpl with a reserved Completion Status is taken as Unsupported Request (PCIe; lib/core
    // decodes it so); data needs Successful Completion, so a CplD with one is refused.
    if (kind == KIND_CPL) return ERR_OK;
    if (!(status == 3'd0 || status == 3'd1 || status == 3'd2 || status == 3'd4))
      return ERR_RESERVED_STATUS;
    if (status != 3'd0) return ERR_CPLD_STATUS;
    if (bcm) return byte_count <= covered ? ERR_OK : ERR_CPL_BYTE_COUNT;
    if (byte_count <= covered)
      return touched_dw != {1'b0, length_dw} ? ERR_CPL_BYTE_COUNT : ERR_OK;
    if (end_mod_rcb != 6'd0) return ERR_CPL_SPLIT_ALIGN;
    return ERR_OK;
  endfunction

  function automatic err_t check_msg(input kind_t kind, input logic [2:0] routing,
                                     input logic [7:0] code, input logic [2:0] tc);
    if (routing > 3'd5) return ERR_RESERVED_ROUTING;
    if (code >= 8'h20 && code <= 8'h27) begin  // INTx: Msg, local, TC 0
      if (kind != KIND_MSG || routing != 3'd4 || tc != 3'b000) return ERR_MSG_FORM;
    end else if (code == 8'h7e || code == 8'h7f) begin  // vendor-defined
      if (!(routing == 3'd0 || routing == 3'd2 || routing == 3'd3 || routing == 3'd4))
        return ERR_MSG_FORM;
    end
    return ERR_OK;
  endfunction

  // The whole decision, as dxpu_tlp_decode() takes it for a record of len bytes. Header
  // bytes: b0 = h[127:120] ... b15 = h[7:0]. IDs, tags and message bytes are carried, not
  // judged: those bits of h are unused here.
  /* verilator lint_off UNUSEDSIGNAL */
  function automatic verdict_t judge(input logic [127:0] h, input logic [TLP_LEN_WIDTH-1:0] len);
    /* verilator lint_on UNUSEDSIGNAL */
    verdict_t v;
    logic [2:0] fmt = h[127:125], tc = h[118:116];
    logic [10:0] length_dw = h[105:96] == 10'd0 ? 11'd1024 : {1'b0, h[105:96]};
    logic [3:0] first_be = h[67:64], last_be = h[71:68];
    logic [TLP_LEN_WIDTH:0] hdr_len, total;
    kind_t kind;
    err_t err;
    v.kind = KIND_INVALID;
    v.cls  = CLASS_POSTED;
    v.hdr4 = fmt[0];
    v.err  = ERR_OK;
    if (len < TLP_LEN_WIDTH'(4)) begin
      v.err = ERR_SHORT_HEADER;
      return v;
    end
    err = fmt_type_kind(fmt, h[124:120], kind);
    if (err != ERR_OK) begin
      v.err = err;
      return v;
    end
    v.kind = kind;
    case (kind)
      KIND_MRD, KIND_CFGRD0, KIND_CFGWR0, KIND_CFGRD1, KIND_CFGWR1: v.cls = CLASS_NON_POSTED;
      KIND_CPL, KIND_CPLD: v.cls = CLASS_COMPLETION;
      default: v.cls = CLASS_POSTED;
    endcase
    hdr_len = fmt[0] ? (TLP_LEN_WIDTH + 1)'(16) : (TLP_LEN_WIDTH + 1)'(12);
    total = hdr_len + (fmt[1] ? (TLP_LEN_WIDTH + 1)'({length_dw, 2'b00}) : '0) +
        (h[111] ? (TLP_LEN_WIDTH + 1)'(4) : '0);
    if ({1'b0, len} < hdr_len) v.err = ERR_SHORT_HEADER;
    else if ({1'b0, len} < total) v.err = ERR_SHORT_PAYLOAD;
    else if ({1'b0, len} > total) v.err = ERR_LENGTH_MISMATCH;
    else if (kind == KIND_MRD || kind == KIND_MWR)
      v.err = check_mem(kind, fmt[0], h[63:32], fmt[0] ? h[11:2] : h[43:34], h[107:106],
                        h[112], first_be, last_be, length_dw);
    else if (kind == KIND_CPL || kind == KIND_CPLD)
      v.err = check_cpl(kind, h[79:77], h[76], h[75:64], h[37:32], length_dw);
    else if (kind == KIND_MSG || kind == KIND_MSGD)
      v.err = check_msg(kind, h[122:120], h[71:64], tc);
    else v.err = check_cfg(tc, h[109:108], first_be, last_be, length_dw);
    return v;
  endfunction

  // ---- one register stage ----

  logic [127:0] hdr_reg = '0;
  logic [TLP_LEN_WIDTH-1:0] len_reg = '0;
  logic [DATA_WIDTH-1:0] data_reg = '0;
  logic [KEEP_WIDTH-1:0] keep_reg = '0;
  logic [USER_WIDTH-1:0] user_reg = '0;
  logic sop_reg = 1'b0, eop_reg = 1'b0, valid_reg = 1'b0, valid_next;
  verdict_t verdict_reg = '0;

  assign s_tlp_ready = !valid_reg || m_tlp_ready;

  always_comb begin
    valid_next = valid_reg && !m_tlp_ready;
    if (s_tlp_valid && s_tlp_ready) valid_next = 1'b1;
  end

  always_ff @(posedge clk) begin
    valid_reg <= valid_next;
    if (s_tlp_valid && s_tlp_ready) begin
      hdr_reg  <= s_tlp_hdr;
      len_reg  <= s_tlp_len;
      data_reg <= s_tlp_data;
      keep_reg <= s_tlp_keep;
      user_reg <= s_tlp_user;
      sop_reg  <= s_tlp_sop;
      eop_reg  <= s_tlp_eop;
      if (s_tlp_sop) verdict_reg <= judge(s_tlp_hdr, s_tlp_len);
    end
    if (rst) valid_reg <= 1'b0;
  end

  assign m_tlp_hdr   = hdr_reg;
  assign m_tlp_len   = len_reg;
  assign m_tlp_data  = data_reg;
  assign m_tlp_keep  = keep_reg;
  assign m_tlp_user  = user_reg;
  assign m_tlp_sop   = sop_reg;
  assign m_tlp_eop   = eop_reg;
  assign m_tlp_valid = valid_reg;
  assign m_tlp_kind  = verdict_reg.kind;
  assign m_tlp_class = verdict_reg.cls;
  assign m_tlp_err   = verdict_reg.err;
  assign m_tlp_hdr4  = verdict_reg.hdr4;

endmodule

`resetall
