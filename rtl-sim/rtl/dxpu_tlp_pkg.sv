// dxpu_tlp_pkg - the TLP kinds, classes and decode errors of lib/core's tlp_codec.h, the data
// path's routes and refusals of bridge-fw/datapath.h, with the same numbers (generated from them);
// and a TLP header's
// fields as lib/core's struct dxpu_tlp holds them, with the parse and build functions that
// mirror dxpu_tlp_decode() and dxpu_tlp_encode(). The RTL's decisions are compared with the C
// golden model's bit for bit.
`resetall
`default_nettype none

package dxpu_tlp_pkg;
  // Each module that imports the package uses some of its constants, none uses all.
  // verilator lint_off UNUSEDPARAM

  // The TLP kinds, classes and decode errors, Fmt and Type, the data path's routes and
  // refusals: from lib/core/tlp_codec.h, include/dxpu/tlp.h and bridge-fw/datapath.h, generated
  // at configure time into the build tree by gen_pkg_consts.cc (docs/rtl.md, "Constants").
  `include "dxpu_tlp_consts.svh"

  // ---- a TLP header's fields (struct dxpu_tlp without payload and digest) ----

  typedef struct packed {
    kind_t       kind;
    logic [2:0]  tc;
    logic [2:0]  attr;         // [2] IDO, [1] RO, [0] NS
    logic [1:0]  at;           // memory requests
    logic        td, ep, th, ln, bcm;
    logic [1:0]  ph;           // memory requests with TH
    logic [7:0]  st;           // memory requests with TH
    logic [10:0] length_dw;    // 1..1024; 0 for Cpl and Msg
    logic [15:0] requester;
    logic [9:0]  tag;
    logic [3:0]  first_be;
    logic [3:0]  last_be;
    logic [63:0] addr;         // DW aligned
    logic [15:0] cfg_target;
    logic [11:0] cfg_reg;
    logic [15:0] completer;
    logic [12:0] byte_count;   // 1..4096
    logic [2:0]  status;
    logic [6:0]  lower_addr;
    logic [7:0]  msg_code;
    logic [2:0]  msg_routing;
    logic [63:0] msg_hdr;      // header bytes 8..15
  } tlp_t;

  function automatic logic is_mem(input kind_t k);
    return k == KIND_MRD || k == KIND_MWR;
  endfunction

  function automatic logic is_cfg(input kind_t k);
    return k == KIND_CFGRD0 || k == KIND_CFGWR0 || k == KIND_CFGRD1 || k == KIND_CFGWR1;
  endfunction

  function automatic logic is_cpl(input kind_t k);
    return k == KIND_CPL || k == KIND_CPLD;
  endfunction

  function automatic logic is_msg(input kind_t k);
    return k == KIND_MSG || k == KIND_MSGD;
  endfunction

  function automatic logic has_data(input kind_t k);
    return k == KIND_MWR || k == KIND_CFGWR0 || k == KIND_CFGWR1 || k == KIND_CPLD ||
           k == KIND_MSGD;
  endfunction

  // Fmt/Type to kind, or the error that stops classification (lib/core's decoder's first
  // check; dxpu_tlp_classify and whoever needs a TLP's kind from its header).
  function automatic err_t fmt_type_kind(input logic [2:0] fmt, input logic [4:0] typ,
                                         output kind_t kind);
    kind = KIND_INVALID;
    if (fmt > FMT_PREFIX) return ERR_RESERVED_FMT;
    if (fmt == FMT_PREFIX) return ERR_UNSUPPORTED;
    if (typ[4:3] == 2'b10) begin  // messages: 4 DW headers only
      if (!fmt[0]) return ERR_RESERVED_TYPE;
      kind = fmt[1] ? KIND_MSGD : KIND_MSG;
      return ERR_OK;
    end
    case (typ)
      TYPE_MEM: begin
        kind = fmt[1] ? KIND_MWR : KIND_MRD;
        return ERR_OK;
      end
      TYPE_CFG0, TYPE_CFG1, TYPE_CPL: begin  // 3 DW only
        if (fmt[0]) return ERR_RESERVED_TYPE;
        if (typ == TYPE_CFG0) kind = fmt[1] ? KIND_CFGWR0 : KIND_CFGRD0;
        else if (typ == TYPE_CFG1) kind = fmt[1] ? KIND_CFGWR1 : KIND_CFGRD1;
        else kind = fmt[1] ? KIND_CPLD : KIND_CPL;
        return ERR_OK;
      end
      // Defined by PCIe, not carried; their reserved Fmt forms stay reserved.
      TYPE_MEM_LK: return fmt[1] ? ERR_RESERVED_TYPE : ERR_UNSUPPORTED;
      TYPE_TCFG: return fmt == 3'b001 ? ERR_RESERVED_TYPE : ERR_UNSUPPORTED;
      TYPE_IO, TYPE_CPL_LK: return fmt[0] ? ERR_RESERVED_TYPE : ERR_UNSUPPORTED;
      TYPE_FETCHADD, TYPE_SWAP, TYPE_CAS: return fmt[1] ? ERR_UNSUPPORTED : ERR_RESERVED_TYPE;
      default: return ERR_RESERVED_TYPE;
    endcase
  endfunction

  // DxFP data credits (16-byte units) of a TLP: its payload as the Length field of DW0 gives it
  // (0 meaning 1024 DW; a digest takes none), for a kind with data; lib/core's
  // dxfp_data_credits(dxpu_tlp_payload_len()).
  function automatic logic [31:0] data_credits(input kind_t k, input logic [9:0] length_dw);
    if (!has_data(k)) return 32'd0;
    return ((length_dw == 10'd0 ? 32'd1024 : 32'(length_dw)) + 32'd3) >> 2;
  endfunction

  // dxpu_tlp_kind_class()
  function automatic class_t kind_class(input kind_t k);
    if (is_cpl(k)) return CLASS_COMPLETION;
    if (k == KIND_MWR || is_msg(k)) return CLASS_POSTED;
    return CLASS_NON_POSTED;
  endfunction

  // dxpu_tlp_decode()'s fields of a header the classifier passed (kind and header size are
  // its verdict).
  function automatic tlp_t tlp_parse(input logic [127:0] h, input kind_t kind, input logic hdr4);
    tlp_t t;
    logic [7:0] b[16];
    logic [7:0] b1, b2;
    logic [31:0] lo;
    for (int i = 0; i < 16; i++) b[i] = h[127 - 8 * i -: 8];
    b1 = b[1];
    b2 = b[2];
    t = '0;
    t.kind = kind;
    t.tc = b1[6:4];
    t.attr = {b1[2], b2[5:4]};
    t.td = b2[7];
    t.ep = b2[6];
    if (kind != KIND_CPL && kind != KIND_MSG)
      t.length_dw = {b2[1:0], b[3]} == 10'd0 ? 11'd1024 : {1'b0, b2[1:0], b[3]};
    if (is_mem(kind) || is_cfg(kind) || is_msg(kind)) begin  // request DW1
      t.requester = {b[4], b[5]};
      t.tag = {b1[7], b1[3], b[6]};
      t.last_be = b[7][7:4];
      t.first_be = b[7][3:0];
    end
    if (is_mem(kind)) begin
      lo = hdr4 ? h[31:0] : h[63:32];
      t.at = b2[3:2];
      if (b1[0]) begin
        t.th = 1'b1;
        t.ph = lo[1:0];
        if (kind == KIND_MWR) begin
          t.st = b[6];
          t.tag = {b1[7], b1[3], 8'h00};
        end else begin
          t.st = b[7];
          t.first_be = 4'hf;
          t.last_be = t.length_dw > 11'd1 ? 4'hf : 4'h0;
        end
      end
      t.ln = b1[1];
      t.addr = {hdr4 ? h[63:32] : 32'h0, lo[31:2], 2'b00};
    end else if (is_cfg(kind)) begin
      t.cfg_target = {b[8], b[9]};
      t.cfg_reg = {b[10][3:0], b[11][7:2], 2'b00};
    end else if (is_cpl(kind)) begin
      t.completer = {b[4], b[5]};
      t.status = b[6][7:5];
      t.bcm = b[6][4];
      t.ln = b1[1];
      t.byte_count = {b[6][3:0], b[7]} == 12'd0 ? 13'd4096
                   : {1'b0, b[6][3:0], b[7]};
      t.requester = {b[8], b[9]};
      t.tag = {b1[7], b1[3], b[10]};
      t.lower_addr = b[11][6:0];
    end else begin  // message
      t.msg_code = b[7];
      t.msg_routing = b[0][2:0];
      t.msg_hdr = h[63:0];
      t.first_be = 4'h0;
      t.last_be = 4'h0;
    end
    return t;
  endfunction

  // A 4 DW header: messages, and memory requests above 4 GiB (dxpu_tlp_header_len()).
  function automatic logic tlp_hdr4(input kind_t kind, input logic [31:0] addr_hi);
    return is_msg(kind) || (is_mem(kind) && addr_hi != 32'h0);
  endfunction

  // The header dxpu_tlp_encode() writes for t (bytes past the header length are zero).
  function automatic logic [127:0] tlp_build(input tlp_t t);
    logic [127:0] h;
    logic [2:0] fmt;
    logic [4:0] typ;
    logic [31:0] lo;
    h = '0;
    fmt = {1'b0, has_data(t.kind), tlp_hdr4(t.kind, t.addr[63:32])};
    case (t.kind)
      KIND_MRD, KIND_MWR: typ = TYPE_MEM;
      KIND_CFGRD0, KIND_CFGWR0: typ = TYPE_CFG0;
      KIND_CFGRD1, KIND_CFGWR1: typ = TYPE_CFG1;
      KIND_CPL, KIND_CPLD: typ = TYPE_CPL;
      default: typ = {2'b10, t.msg_routing};
    endcase
    h[127:120] = {fmt, typ};
    h[119:112] = {t.tag[9], t.tc, t.tag[8], t.attr[2], t.ln, t.th};
    h[111:104] = {t.td, t.ep, t.attr[1:0], t.at, t.length_dw[9:8]};
    h[103:96] = t.length_dw[7:0];
    if (is_cpl(t.kind)) begin
      h[95:80] = t.completer;
      h[79:72] = {t.status, t.bcm, t.byte_count[11:8]};
      h[71:64] = t.byte_count[7:0];
      h[63:48] = t.requester;
      h[47:40] = t.tag[7:0];
      h[39:32] = {1'b0, t.lower_addr};
    end else begin
      h[95:80] = t.requester;
      h[79:72] = t.tag[7:0];
      h[71:64] = {t.last_be, t.first_be};
      if (is_mem(t.kind)) begin
        if (t.th) begin
          if (t.kind == KIND_MWR) h[79:72] = t.st;
          else h[71:64] = t.st;
        end
        lo = {t.addr[31:2], t.ph};
        if (fmt[0]) begin
          h[63:32] = t.addr[63:32];
          h[31:0] = lo;
        end else begin
          h[63:32] = lo;
        end
      end else if (is_cfg(t.kind)) begin
        h[63:48] = t.cfg_target;
        h[47:40] = {4'h0, t.cfg_reg[11:8]};
        h[39:32] = {t.cfg_reg[7:2], 2'b00};
      end else begin
        h[71:64] = t.msg_code;
        h[63:0] = t.msg_hdr;
      end
    end
    return h;
  endfunction

  // dxpu_tlp_read_byte_count(): the bytes a memory read asks for (last_be[0] never decides).
  function automatic logic [12:0] read_byte_count(input logic [10:0] length_dw,
                                                  input logic [3:0] first_be,
                                                  input logic [3:1] last_be);
    logic [1:0] lo, hi;
    lo = first_be[0] ? 2'd0 : first_be[1] ? 2'd1 : first_be[2] ? 2'd2 : 2'd3;
    if (length_dw == 11'd1) begin
      if (first_be == 4'h0) return 13'd1;
      hi = first_be[3] ? 2'd3 : first_be[2] ? 2'd2 : first_be[1] ? 2'd1 : 2'd0;
      return 13'(hi) - 13'(lo) + 13'd1;
    end
    hi = last_be[3] ? 2'd3 : last_be[2] ? 2'd2 : last_be[1] ? 2'd1 : 2'd0;
    return {length_dw, 2'b00} - 13'(lo) - (13'd3 - 13'(hi));
  endfunction

  // dxpu_tlp_read_lower_addr(): Address[6:2] and the first enabled byte.
  function automatic logic [6:0] read_lower_addr(input logic [6:2] addr,
                                                 input logic [3:0] first_be);
    logic [1:0] lo;
    lo = first_be[0] ? 2'd0 : first_be[1] ? 2'd1 : first_be[2] ? 2'd2 : first_be[3] ? 2'd3
       : 2'd0;
    return {addr[6:2], lo};
  endfunction

  // verilator lint_on UNUSEDPARAM
endpackage

`resetall
