// dxpu_dxfp_decap - DxFP frame decapsulation (docs/protocol.md 4.2-4.5, 4.8, docs/rtl.md): a
// received frame in (untrusted: any bytes, any length), a verdict out equal to lib/core's
// dxfp_frame_parse() (enum dxfp_err), and for a good DATA frame the sequence-number rules of
// lib/core's session (dxfp_session.c on_data, deliver_tlps): TLP records delivered in order,
// duplicates counted and dropped, a gap drops the frame's TLPs, counts them and asks for a NAK.
//
// Store and forward, one frame buffer: the frame is stored whole (DW-wide buffer of MAX_FRAME
// bytes; bytes past MAX_FRAME are counted, not stored) while its CRC32C is computed over the
// bytes before the trailer (dxpu_crc32c); then checked in parse order: fewer than 36 bytes
// (truncated), Length (below 36, above cfg_max_frame or 9216, not a multiple of 4), Length
// beyond the bytes received (truncated), CRC, Version, Type, reserved byte and flags, then the
// records one per cycle: bounds, reserved byte, zero padding, record type against frame type,
// CREDIT/HELLO/CLOSE body lengths, record count, and every TLP record through a
// dxpu_tlp_classify instance (lib/core's decoder rules, given the TLP's first 16 bytes and its
// length). Only then is anything delivered, so a bad frame delivers nothing. Bytes after Length
// (Ethernet padding) are ignored. The input is stalled (s_frm_ready low) from a frame's last
// beat until its records are checked and delivered.
//
// Session checks done here, for DATA frames that parse: bad-ack (Acknowledgement after
// cfg_tx_next_seq, the next sequence number this end will send: the frame is dropped); the peer's
// Acknowledgement and flags out (m_peer_ack_*, for the replay buffer); window-violation (a gap
// of cfg_peer_window or more, or TLPs reaching more than cfg_peer_window past the expected
// number: dropped); gap (first TLP after the expected number: the frame's TLPs dropped and
// counted; a NAK request for the expected number, once per gap: again only after nak_rearm, the
// retransmission timer's business); duplicates (before the expected number: counted, dropped);
// the rest delivered in order, the expected number (m_ack, the cumulative acknowledgement)
// advancing by one per TLP. Not done here (the firmware's part): session IDs and epochs
// (unknown-session, stale-epoch), session state (unexpected, rx-down), credits
// (credit-violation; the CREDIT record is checked, not read), HELLO/WELCOME/CLOSE contents,
// ACK_REQ and the acknowledgement timers. Non-DATA frames get a verdict only.
//
// Input beats: s_frm_bytes bytes from the top of s_frm_data (byte 0 in the top bits); every beat
// but the last (s_frm_last) is full. Output TLPs: header beside payload, as dxpu_tlp_classify's
// input (header with sop, a 3 DW header leaves [31:0] zero; s_tlp_len = the record's body
// length; payload in DATA_WIDTH-bit beats with DW enables), with the record's sequence number.
module dxpu_dxfp_decap
  import dxpu_tlp_pkg::*;
#(
    parameter int DATA_WIDTH  = 64,
    parameter int KEEP_WIDTH  = DATA_WIDTH / 32,
    parameter int BYTES_WIDTH = $clog2(DATA_WIDTH / 8) + 1,
    parameter int MAX_FRAME   = 9216
) (
    input wire logic clk,
    input wire logic rst,

    // Frames in
    input  wire logic [ DATA_WIDTH-1:0] s_frm_data,
    input  wire logic [BYTES_WIDTH-1:0] s_frm_bytes,
    input  wire logic                   s_frm_last,
    input  wire logic                   s_frm_valid,
    output wire logic                   s_frm_ready,

    // Session values
    input wire logic [13:0] cfg_max_frame,    // 36..MAX_FRAME
    input wire logic [31:0] cfg_peer_window,  // the peer's replay window (TLPs)
    input wire logic [31:0] cfg_tx_next_seq,  // the next sequence number this end sends
    input wire logic        exp_load,         // load the expected sequence number
    input wire logic [31:0] exp_load_value,
    input wire logic        nak_rearm,        // a NAK may be asked again for the same gap

    // Verdict per frame (a one-cycle pulse)
    output wire logic       m_verdict_valid,
    output wire logic [2:0] m_verdict,       // enum dxfp_err
    output wire logic [7:0] m_verdict_type,  // the frame's Type (when the CRC was good)

    // The peer's acknowledgement from a good DATA frame (a pulse)
    output wire logic        m_peer_ack_valid,
    output wire logic [31:0] m_peer_ack,
    output wire logic [ 7:0] m_peer_flags,  // NAK, ACK_REQ

    // NAK request (a pulse): ask the peer to replay from m_nak_seq
    output wire logic        m_nak_valid,
    output wire logic [31:0] m_nak_seq,
    output wire logic [31:0] m_ack,  // cumulative acknowledgement: the next expected number

    // Delivered TLPs
    output wire logic [             127:0] m_tlp_hdr,
    output wire logic [TLP_LEN_WIDTH-1:0]  m_tlp_len,
    output wire logic [  DATA_WIDTH-1:0]   m_tlp_data,
    output wire logic [  KEEP_WIDTH-1:0]   m_tlp_keep,
    output wire logic [              31:0] m_tlp_seq,
    output wire logic                      m_tlp_sop,
    output wire logic                      m_tlp_eop,
    output wire logic                      m_tlp_valid,
    input  wire logic                      m_tlp_ready,

    // Counters
    output wire logic [31:0] m_cnt_ok,  // frames that parse
    output wire logic [31:0] m_cnt_truncated,
    output wire logic [31:0] m_cnt_bad_length,
    output wire logic [31:0] m_cnt_bad_crc,
    output wire logic [31:0] m_cnt_bad_version,
    output wire logic [31:0] m_cnt_bad_type,
    output wire logic [31:0] m_cnt_malformed,
    output wire logic [31:0] m_cnt_bad_ack,
    output wire logic [31:0] m_cnt_window,
    output wire logic [31:0] m_cnt_duplicate,
    output wire logic [31:0] m_cnt_gap,
    output wire logic [31:0] m_cnt_delivered
);

  localparam int DEPTH_DW = MAX_FRAME / 4;
  localparam int PTR_W = $clog2(DEPTH_DW + 1) + 1;  // room for a record running past the end
  localparam int BEAT_BYTES = DATA_WIDTH / 8;

  if (DATA_WIDTH < 64 || DATA_WIDTH > 512 || (DATA_WIDTH & (DATA_WIDTH - 1)) != 0) begin : g_bad_width
    $error("dxpu_dxfp_decap: DATA_WIDTH %0d must be a power of two, 64..512", DATA_WIDTH);
  end
  if (KEEP_WIDTH * 32 != DATA_WIDTH || BYTES_WIDTH != $clog2(DATA_WIDTH / 8) + 1) begin : g_bad_keep
    $error("dxpu_dxfp_decap: KEEP_WIDTH and BYTES_WIDTH follow DATA_WIDTH");
  end
  if (MAX_FRAME < 128 || MAX_FRAME > 9216 || MAX_FRAME % 4 != 0) begin : g_bad_max
    $error("dxpu_dxfp_decap: MAX_FRAME %0d must be a multiple of 4, 128..9216", MAX_FRAME);
  end

  // enum dxfp_err
  localparam logic [2:0] E_OK = 3'd0, E_TRUNCATED = 3'd1, E_BAD_LENGTH = 3'd2, E_BAD_CRC = 3'd3,
                         E_BAD_VERSION = 3'd4, E_BAD_TYPE = 3'd5, E_MALFORMED = 3'd6;
  localparam logic [7:0] T_HELLO = 8'd1, T_WELCOME = 8'd2, T_DATA = 8'd3, T_CLOSE = 8'd4;

  // RFC 1982, as dxfp_seq.h: a before b.
  function automatic logic seq_before(input logic [31:0] a, input logic [31:0] b);
    logic [31:0] d = b - a;
    return d != 32'd0 && !d[31];
  endfunction

  typedef enum logic [2:0] {
    S_RX,       // storing a frame
    S_CHECK,    // header checks
    S_WALK,     // one record per cycle
    S_WAIT,     // the last TLP record's verdict
    S_SEQ,      // sequence-number decision
    S_DELIVER   // TLP records out
  } state_t;

  logic [31:0] mem[DEPTH_DW];
  function automatic logic [31:0] rd(input logic [PTR_W-1:0] i);
    return i < PTR_W'(DEPTH_DW) ? mem[i[PTR_W-2:0]] : 32'd0;
  endfunction

  state_t state_reg = S_RX, state_next;
  logic [PTR_W-1:0] rx_dw_reg = '0, rx_dw_next;  // DWs received
  logic [16:0] rx_len_reg = '0, rx_len_next;  // bytes received (saturating)
  logic [15:0] flen_reg = '0, flen_next;  // the frame's Length field
  logic [PTR_W-1:0] p_reg = '0, p_next;  // record pointer (DW)
  logic [15:0] n_reg = '0, n_next;  // records walked
  logic [15:0] ntlp_reg = '0, ntlp_next;  // TLP records
  logic tlp_bad_reg = 1'b0, tlp_bad_next;
  logic [2:0] verdict_reg = '0, verdict_next;
  logic verdict_valid_reg = 1'b0, verdict_valid_next;
  logic [7:0] verdict_type_reg = '0, verdict_type_next;
  logic [31:0] expected_reg = '0, expected_next;
  logic nak_out_reg = 1'b0, nak_out_next;
  logic [31:0] nak_seq_reg = '0, nak_seq_next;
  logic nak_valid_reg = 1'b0, nak_valid_next;
  logic peer_ack_valid_reg = 1'b0, peer_ack_valid_next;
  logic [31:0] dseq_reg = '0, dseq_next;  // sequence number of the record at p_reg
  logic [10:0] dbeat_reg = '0, dbeat_next;  // beat of that record
  logic [31:0] cnt_reg[12];
  logic [31:0] cnt_next[12];
  localparam int C_OK = 0, C_TRUNC = 1, C_LEN = 2, C_CRC = 3, C_VER = 4, C_TYPE = 5, C_MAL = 6,
                 C_ACK = 7, C_WIN = 8, C_DUP = 9, C_GAP = 10, C_DLV = 11;

  // Output register stage (TLPs).
  logic [127:0] o_hdr_reg = '0, o_hdr;
  logic [TLP_LEN_WIDTH-1:0] o_len_reg = '0, o_len;
  logic [DATA_WIDTH-1:0] o_data_reg = '0, o_data;
  logic [KEEP_WIDTH-1:0] o_keep_reg = '0, o_keep;
  logic [31:0] o_seq_reg = '0;
  logic o_sop_reg = 1'b0, o_eop_reg = 1'b0, o_sop, o_eop, o_valid_reg = 1'b0, o_valid_next, emit;

  // ---- receive: CRC over the bytes before the trailer ----
  logic rx_take, rx_first;
  logic [15:0] flen_now;
  logic [BYTES_WIDTH-1:0] crc_bytes;
  logic [31:0] crc_val;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [31:0] crc_next_unused;
  /* verilator lint_on UNUSEDSIGNAL */
  assign s_frm_ready = state_reg == S_RX;
  assign rx_take = s_frm_valid && s_frm_ready;
  assign rx_first = rx_len_reg == '0;
  always_comb begin
    logic [16:0] covered;
    flen_now = rx_first ? s_frm_data[DATA_WIDTH-33-:16] : flen_reg;
    // Bytes of this beat before flen - 4 (0 when Length is too short to mean anything).
    covered = flen_now >= 16'd4 ? 17'(flen_now) - 17'd4 : 17'd0;
    if (covered <= rx_len_reg) crc_bytes = '0;
    else if (covered - rx_len_reg >= 17'(s_frm_bytes)) crc_bytes = s_frm_bytes;
    else crc_bytes = BYTES_WIDTH'(covered - rx_len_reg);
  end

  dxpu_crc32c #(
      .DATA_WIDTH(DATA_WIDTH)
  ) crc (
      .clk,
      .rst,
      .s_data(s_frm_data),
      .s_bytes(crc_bytes),
      .s_sop(rx_first),
      .s_valid(rx_take),
      .m_crc(crc_val),
      .m_crc_next(crc_next_unused)
  );

  // ---- the record at p_reg ----
  logic [PTR_W-1:0] end_dw;  // the trailer's DW: records end here
  logic [31:0] rh;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [31:0] pad_dw, h1;  // pad_dw[31:24]: body; h1[31:16]: Length
  /* verilator lint_on UNUSEDSIGNAL */
  logic [7:0] rtype;
  logic [15:0] blen;
  logic [16:0] padded;
  logic rec_bad, rec_tlp;
  logic [127:0] thdr;
  logic [2:0] hdr_dws;
  logic [PTR_W-1:0] rec_next;
  logic [7:0] ftype;
  logic [31:0] fseq, fack, h0;
  always_comb begin
    logic [16:0] avail;
    h0 = rd(0);
    h1 = rd(1);
    end_dw = PTR_W'(flen_reg >> 2) - PTR_W'(1);
    ftype = h0[23:16];
    fseq = rd(6);
    fack = rd(7);
    rh = rd(p_reg);
    rtype = rh[31:24];
    blen = rh[15:0];
    padded = (17'(blen) + 17'd3) & ~17'd3;
    avail = 17'({end_dw - p_reg - PTR_W'(1), 2'b00});
    pad_dw = rd(p_reg + PTR_W'(1) + PTR_W'(blen >> 2));
    rec_tlp = rtype == 8'd1;
    rec_bad = rh[23:16] != 8'd0 || padded > avail;
    case (blen[1:0])  // padding bytes after the body
      2'd1: if (pad_dw[23:0] != 24'd0) rec_bad = 1'b1;
      2'd2: if (pad_dw[15:0] != 16'd0) rec_bad = 1'b1;
      2'd3: if (pad_dw[7:0] != 8'd0) rec_bad = 1'b1;
      default: ;
    endcase
    case (rtype)
      8'd1: if (ftype != T_DATA) rec_bad = 1'b1;
      8'd2: if ((ftype != T_HELLO && ftype != T_WELCOME && ftype != T_DATA) || blen != 16'd24)
          rec_bad = 1'b1;
      8'd3: if ((ftype != T_HELLO && ftype != T_WELCOME) || blen != 16'd24) rec_bad = 1'b1;
      8'd4: if (ftype != T_CLOSE || blen != 16'd8) rec_bad = 1'b1;
      default: ;
    endcase
    rec_next = p_reg + PTR_W'(1) + PTR_W'(padded >> 2);
    thdr = {rd(p_reg + PTR_W'(1)), rd(p_reg + PTR_W'(2)), rd(p_reg + PTR_W'(3)),
            rd(p_reg + PTR_W'(4))};
    hdr_dws = thdr[125] ? 3'd4 : 3'd3;
    if (!thdr[125]) thdr[31:0] = 32'd0;
  end

  // The TLP decoder's rules: a dxpu_tlp_classify stage, given each TLP record's first 16 bytes
  // and length (clamped: a body longer than 8191 bytes is wrong for the decoder either way).
  logic cls_valid;
  err_t cls_err;
  /* verilator lint_off UNUSEDSIGNAL */
  logic cls_ready, cls_sop, cls_eop, cls_hdr4;
  logic [127:0] cls_hdr;
  logic [TLP_LEN_WIDTH-1:0] cls_len;
  logic [63:0] cls_data;
  logic [1:0] cls_keep;
  logic cls_user;
  kind_t cls_kind;
  class_t cls_class;
  /* verilator lint_on UNUSEDSIGNAL */
  dxpu_tlp_classify #(
      .DATA_WIDTH(64)
  ) classify (
      .clk,
      .rst,
      .s_tlp_hdr(thdr),
      .s_tlp_len(blen > 16'd8191 ? 13'd8191 : blen[12:0]),
      .s_tlp_data(64'd0),
      .s_tlp_keep(2'd0),
      .s_tlp_user(1'b0),
      .s_tlp_sop(1'b1),
      .s_tlp_eop(1'b1),
      .s_tlp_valid(state_reg == S_WALK && p_reg != end_dw && rec_tlp),
      .s_tlp_ready(cls_ready),
      .m_tlp_hdr(cls_hdr),
      .m_tlp_len(cls_len),
      .m_tlp_data(cls_data),
      .m_tlp_keep(cls_keep),
      .m_tlp_user(cls_user),
      .m_tlp_sop(cls_sop),
      .m_tlp_eop(cls_eop),
      .m_tlp_valid(cls_valid),
      .m_tlp_ready(1'b1),
      .m_tlp_kind(cls_kind),
      .m_tlp_class(cls_class),
      .m_tlp_err(cls_err),
      .m_tlp_hdr4(cls_hdr4)
  );

  // ---- delivery: beat dbeat_reg of the TLP record at p_reg ----
  logic [10:0] pay_dws;
  logic dup;
  always_comb begin
    logic [PTR_W-1:0] base;
    pay_dws = 11'((blen >> 2) - 16'(hdr_dws));
    base = p_reg + PTR_W'(1) + PTR_W'(hdr_dws) + PTR_W'(32'(dbeat_reg) * KEEP_WIDTH);
    o_hdr = thdr;
    o_len = blen[12:0];
    o_data = '0;
    o_keep = '0;
    for (int k = 0; k < KEEP_WIDTH; k++)
      if (32'(dbeat_reg) * KEEP_WIDTH + k < 32'(pay_dws)) begin
        o_data[DATA_WIDTH-1-32*k-:32] = rd(base + PTR_W'(k));
        o_keep[k] = 1'b1;
      end
    o_sop = dbeat_reg == '0;
    o_eop = (32'(dbeat_reg) + 32'd1) * KEEP_WIDTH >= 32'(pay_dws);
    dup = dbeat_reg == '0 && seq_before(dseq_reg, expected_reg);
  end

  always_comb begin
    state_next = state_reg;
    rx_dw_next = rx_dw_reg;
    rx_len_next = rx_len_reg;
    flen_next = flen_reg;
    p_next = p_reg;
    n_next = n_reg;
    ntlp_next = ntlp_reg;
    tlp_bad_next = tlp_bad_reg || (cls_valid && cls_err != ERR_OK);
    verdict_next = verdict_reg;
    verdict_valid_next = 1'b0;
    verdict_type_next = verdict_type_reg;
    expected_next = expected_reg;
    nak_out_next = nak_out_reg && !nak_rearm;
    nak_seq_next = nak_seq_reg;
    nak_valid_next = 1'b0;
    peer_ack_valid_next = 1'b0;
    dseq_next = dseq_reg;
    dbeat_next = dbeat_reg;
    cnt_next = cnt_reg;
    o_valid_next = o_valid_reg && !m_tlp_ready;
    emit = 1'b0;
    case (state_reg)
      S_RX:
      if (rx_take) begin
        rx_dw_next = rx_dw_reg + PTR_W'(KEEP_WIDTH);
        rx_len_next = rx_len_reg + 17'(s_frm_bytes) > 17'h1ffff - 17'(BEAT_BYTES) ?
            17'h1ffff - 17'(BEAT_BYTES) : rx_len_reg + 17'(s_frm_bytes);
        if (rx_first) flen_next = flen_now;
        if (s_frm_last) state_next = S_CHECK;
      end
      S_CHECK: begin
        // dxfp_frame_parse(), in its order.
        state_next = S_RX;
        verdict_valid_next = 1'b1;
        verdict_type_next = ftype;
        if (rx_len_reg < 17'd36) verdict_next = E_TRUNCATED;
        else if (flen_reg < 16'd36 || flen_reg > 16'(cfg_max_frame) ||
                 flen_reg > 16'(MAX_FRAME) || flen_reg[1:0] != 2'd0)
          verdict_next = E_BAD_LENGTH;
        else if (17'(flen_reg) > rx_len_reg) verdict_next = E_TRUNCATED;
        else if (crc_val != rd(end_dw)) verdict_next = E_BAD_CRC;
        else if (h0[31:24] != 8'd1) verdict_next = E_BAD_VERSION;
        else if (ftype < T_HELLO || ftype > T_CLOSE) verdict_next = E_BAD_TYPE;
        else if (h0[7:0] != 8'd0 || h0[15:10] != 6'd0) verdict_next = E_MALFORMED;
        else begin
          verdict_valid_next = 1'b0;
          state_next = S_WALK;
          p_next = PTR_W'(8);
          n_next = '0;
          ntlp_next = '0;
          tlp_bad_next = 1'b0;
        end
      end
      S_WALK:
      if (p_reg == end_dw) begin
        state_next = S_WAIT;
      end else if (rec_bad) begin
        verdict_next = E_MALFORMED;
        verdict_valid_next = 1'b1;
        state_next = S_RX;
      end else begin
        p_next = rec_next;
        n_next = n_reg + 16'd1;
        if (rec_tlp) ntlp_next = ntlp_reg + 16'd1;
      end
      S_WAIT: begin  // the classifier's verdict on the last TLP record is in tlp_bad_next
        verdict_valid_next = 1'b1;
        state_next = S_RX;
        if (tlp_bad_next || n_reg != h1[15:0]) verdict_next = E_MALFORMED;
        else begin
          verdict_next = E_OK;
          if (ftype == T_DATA) state_next = S_SEQ;
        end
      end
      S_SEQ: begin
        state_next = S_RX;
        if (seq_before(cfg_tx_next_seq, fack)) begin
          cnt_next[C_ACK] = cnt_reg[C_ACK] + 32'd1;
        end else begin
          peer_ack_valid_next = 1'b1;
          if (ntlp_reg == 16'd0) begin
          end else if (seq_before(expected_reg, fseq)) begin  // a gap
            if (fseq - expected_reg >= cfg_peer_window) cnt_next[C_WIN] = cnt_reg[C_WIN] + 32'd1;
            else begin
              cnt_next[C_GAP] = cnt_reg[C_GAP] + 32'(ntlp_reg);
              if (!nak_out_reg || nak_rearm || nak_seq_reg != expected_reg) begin
                nak_valid_next = 1'b1;
                nak_out_next = 1'b1;
                nak_seq_next = expected_reg;
              end
            end
          end else if (fseq + 32'(ntlp_reg) - expected_reg > cfg_peer_window &&
                       seq_before(expected_reg, fseq + 32'(ntlp_reg))) begin
            cnt_next[C_WIN] = cnt_reg[C_WIN] + 32'd1;
          end else begin
            state_next = S_DELIVER;
            p_next = PTR_W'(8);
            dseq_next = fseq;
            dbeat_next = '0;
          end
        end
      end
      S_DELIVER:
      if (p_reg == end_dw) state_next = S_RX;
      else if (!rec_tlp) p_next = rec_next;
      else if (dup) begin
        cnt_next[C_DUP] = cnt_reg[C_DUP] + 32'd1;
        dseq_next = dseq_reg + 32'd1;
        p_next = rec_next;
      end else if (!o_valid_reg || m_tlp_ready) begin
        emit = 1'b1;
        o_valid_next = 1'b1;
        dbeat_next = dbeat_reg + 11'd1;
        if (o_sop) begin
          expected_next = expected_reg + 32'd1;
          nak_out_next = 1'b0;
          cnt_next[C_DLV] = cnt_reg[C_DLV] + 32'd1;
        end
        if (o_eop) begin
          dbeat_next = '0;
          dseq_next = dseq_reg + 32'd1;
          p_next = rec_next;
        end
      end
      default: state_next = S_RX;
    endcase
    if (state_reg != S_RX && state_next == S_RX) begin  // the next frame
      rx_dw_next = '0;
      rx_len_next = '0;
    end
    if (verdict_valid_next) begin
      case (verdict_next)
        E_OK: cnt_next[C_OK] = cnt_reg[C_OK] + 32'd1;
        E_TRUNCATED: cnt_next[C_TRUNC] = cnt_reg[C_TRUNC] + 32'd1;
        E_BAD_LENGTH: cnt_next[C_LEN] = cnt_reg[C_LEN] + 32'd1;
        E_BAD_CRC: cnt_next[C_CRC] = cnt_reg[C_CRC] + 32'd1;
        E_BAD_VERSION: cnt_next[C_VER] = cnt_reg[C_VER] + 32'd1;
        E_BAD_TYPE: cnt_next[C_TYPE] = cnt_reg[C_TYPE] + 32'd1;
        default: cnt_next[C_MAL] = cnt_reg[C_MAL] + 32'd1;
      endcase
    end
    if (exp_load) expected_next = exp_load_value;
  end

  always_ff @(posedge clk) begin
    state_reg <= state_next;
    rx_dw_reg <= rx_dw_next;
    rx_len_reg <= rx_len_next;
    flen_reg <= flen_next;
    p_reg <= p_next;
    n_reg <= n_next;
    ntlp_reg <= ntlp_next;
    tlp_bad_reg <= tlp_bad_next;
    verdict_reg <= verdict_next;
    verdict_valid_reg <= verdict_valid_next;
    verdict_type_reg <= verdict_type_next;
    expected_reg <= expected_next;
    nak_out_reg <= nak_out_next;
    nak_seq_reg <= nak_seq_next;
    nak_valid_reg <= nak_valid_next;
    peer_ack_valid_reg <= peer_ack_valid_next;
    dseq_reg <= dseq_next;
    dbeat_reg <= dbeat_next;
    cnt_reg <= cnt_next;
    o_valid_reg <= o_valid_next;
    if (emit) begin
      o_hdr_reg <= o_sop ? o_hdr : '0;
      o_len_reg <= o_len;
      o_data_reg <= o_data;
      o_keep_reg <= o_keep;
      o_seq_reg <= dseq_reg;
      o_sop_reg <= o_sop;
      o_eop_reg <= o_eop;
    end
    if (rx_take)
      for (int k = 0; k < KEEP_WIDTH; k++)
        if (32'(rx_dw_reg) + k < DEPTH_DW)
          mem[(PTR_W-1)'(32'(rx_dw_reg) + k)] <= s_frm_data[DATA_WIDTH-1-32*k-:32];
    if (rst) begin
      state_reg <= S_RX;
      rx_dw_reg <= '0;
      rx_len_reg <= '0;
      verdict_valid_reg <= 1'b0;
      expected_reg <= '0;
      nak_out_reg <= 1'b0;
      nak_valid_reg <= 1'b0;
      peer_ack_valid_reg <= 1'b0;
      o_valid_reg <= 1'b0;
      for (int c = 0; c < 12; c++) cnt_reg[c] <= '0;
    end
  end

  assign m_verdict_valid = verdict_valid_reg;
  assign m_verdict = verdict_reg;
  assign m_verdict_type = verdict_type_reg;
  assign m_peer_ack_valid = peer_ack_valid_reg;
  assign m_peer_ack = rd(7);
  assign m_peer_flags = h0[15:8];
  assign m_nak_valid = nak_valid_reg;
  assign m_nak_seq = nak_seq_reg;
  assign m_ack = expected_reg;
  assign m_tlp_hdr = o_hdr_reg;
  assign m_tlp_len = o_len_reg;
  assign m_tlp_data = o_data_reg;
  assign m_tlp_keep = o_keep_reg;
  assign m_tlp_seq = o_seq_reg;
  assign m_tlp_sop = o_sop_reg;
  assign m_tlp_eop = o_eop_reg;
  assign m_tlp_valid = o_valid_reg;
  assign m_cnt_ok = cnt_reg[C_OK];
  assign m_cnt_truncated = cnt_reg[C_TRUNC];
  assign m_cnt_bad_length = cnt_reg[C_LEN];
  assign m_cnt_bad_crc = cnt_reg[C_CRC];
  assign m_cnt_bad_version = cnt_reg[C_VER];
  assign m_cnt_bad_type = cnt_reg[C_TYPE];
  assign m_cnt_malformed = cnt_reg[C_MAL];
  assign m_cnt_bad_ack = cnt_reg[C_ACK];
  assign m_cnt_window = cnt_reg[C_WIN];
  assign m_cnt_duplicate = cnt_reg[C_DUP];
  assign m_cnt_gap = cnt_reg[C_GAP];
  assign m_cnt_delivered = cnt_reg[C_DLV];

endmodule
