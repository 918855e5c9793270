// dxpu_dxfp_encap - DxFP DATA frame encapsulation (docs/protocol.md 4.2-4.5, docs/rtl.md): TLP
// records in, whole DxFP DATA frames out, byte for byte what lib/core's session builds
// (dxfp_writer_init, dxfp_writer_add_credits, dxfp_writer_add_tlp per TLP, dxfp_writer_finish;
// lib/core/dxfp_session.c build_data): the 32-byte header, one CREDIT record, the TLP records
// (4-byte record header, the TLP, zero padding to 4), the CRC32C trailer.
//
// In: TLPs header beside payload (docs/rtl.md: header and record length with sop, payload in
// DATA_WIDTH-bit beats after). The TLP's bytes are its header (3 or 4 DW, by Fmt[0]) and then
// the payload beats, s_tlp_len bytes in all; s_tlp_keep is not needed (s_tlp_len says where the
// record ends) and not looked at. The TLPs are trusted: they come from the bridge's own data
// path, already checked (dxpu_tlp_classify); s_tlp_eop must come on the beat that reaches
// s_tlp_len. A TLP whose record does not fit even an empty frame of cfg_max_frame bytes is
// taken and dropped, counted in m_cnt_oversize (lib/core's writer refuses it: DXFP_ERR_NO_SPACE).
//
// Framing buffer: store and forward, two frame buffers (ping-pong) of MAX_FRAME bytes. Length
// and Record count lead the frame, so a frame is built whole in one buffer while the other is
// sent. The record bytes are written a DW at a time at their frame offset (up to 5 + DATA_WIDTH/32
// DWs on a sop beat: record header, TLP header, first payload beat); in hardware the buffer is
// DATA_WIDTH/32 banks of one DW, the beat rotated onto them by the offset mod DATA_WIDTH/32. The
// frame header and the CREDIT record (15 DWs) are registers written when the frame closes, from
// the cfg_* inputs of that cycle (so the Acknowledgement is the freshest one); the CRC32C is
// computed as the frame goes out (dxpu_crc32c) and put in the trailer of its last beat. The frame
// layout and its numbers: dxpu_dxfp_pkg (include/dxpu/dxfp.h).
//
// Frame-close policy: a frame closes (when no TLP is half-way in and the other buffer is free)
//   - when the next TLP's record does not fit it (greedy, as lib/core: every TLP that fits goes
//     into the frame in order; the check is lib/core's writer's: header + records + this
//     record + CRC <= cfg_max_frame & ~3);
//   - on flush, when it holds at least one TLP (the user's idle or end-of-burst condition);
//   - on send_empty, even with no TLP: a standalone acknowledgement / keepalive (DATA with only
//     the CREDIT record);
//   - on seq_load, when it holds a TLP: the load takes effect when the open frame is empty
//     (seq_load_ready); s_tlp_ready is low while seq_load is high.
// Sequence: the next-sequence register m_next_seq is loaded by seq_load; each TLP record gets
// the next number; a frame's Sequence is its first TLP record's (m_next_seq when it has none).
//
// Out: DATA_WIDTH-bit beats, byte 0 in the top bits, m_frm_bytes bytes in each (DATA_WIDTH/8
// except maybe the last; always a multiple of 4), m_frm_last on a frame's last beat.
// Timing: a TLP beat is taken every cycle (a sop beat writes the header and the first payload
// beat together); a close costs one cycle; the frame goes out one beat per cycle from two cycles
// after its close, while the next frame fills. Measured in tb/dxfp_encap_tb.cc.
`resetall
`default_nettype none

module dxpu_dxfp_encap
  import dxpu_tlp_pkg::*;
  import dxpu_dxfp_pkg::*;
#(
    parameter int DATA_WIDTH  = 64,
    parameter int KEEP_WIDTH  = DATA_WIDTH / 32,
    parameter int BYTES_WIDTH = $clog2(DATA_WIDTH / 8) + 1,
    parameter int MAX_FRAME   = DXFP_MAX_FRAME  // bytes, the buffers' size
) (
    input wire logic clk,
    input wire logic rst,

    // TLPs, header beside payload
    input  wire logic [             127:0] s_tlp_hdr,
    input  wire logic [TLP_LEN_WIDTH-1:0]  s_tlp_len,
    input  wire logic [  DATA_WIDTH-1:0]   s_tlp_data,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire logic [  KEEP_WIDTH-1:0]   s_tlp_keep,  // not needed: s_tlp_len
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire logic                      s_tlp_sop,
    input  wire logic                      s_tlp_eop,
    input  wire logic                      s_tlp_valid,
    output wire logic                      s_tlp_ready,

    // Frame fields, taken when a frame closes
    input wire logic [ 31:0] cfg_dst_session,
    input wire logic [ 31:0] cfg_src_session,
    input wire logic [ 31:0] cfg_dst_epoch,
    input wire logic [ 31:0] cfg_src_epoch,
    input wire logic [ 31:0] cfg_ack,
    input wire logic [  7:0] cfg_flags,
    // CREDIT record body as on the wire: P hdr, P data, NP hdr, NP data, Cpl hdr, Cpl data
    // (u32 each), the first in [191:160]
    input wire logic [191:0] cfg_credits,
    input wire logic [ 13:0] cfg_max_frame,  // the session's max_frame, 128..MAX_FRAME

    // Control
    input  wire logic        flush,       // close the open frame if it holds a TLP
    input  wire logic        send_empty,  // close the open frame even without a TLP
    input  wire logic        seq_load,    // load m_next_seq (closes a frame holding TLPs)
    input  wire logic [31:0] seq_load_value,
    output wire logic        seq_load_ready,  // taken on a cycle with seq_load high

    // Frames
    output wire logic [ DATA_WIDTH-1:0] m_frm_data,
    output wire logic [BYTES_WIDTH-1:0] m_frm_bytes,
    output wire logic                   m_frm_last,
    output wire logic                   m_frm_valid,
    input  wire logic                   m_frm_ready,

    // Status and counters
    output wire logic [31:0] m_next_seq,     // the next TLP's sequence number
    output wire logic [15:0] m_open_tlps,    // TLP records in the frame being filled
    output wire logic [31:0] m_cnt_frames,   // frames closed
    output wire logic [31:0] m_cnt_tlps,     // TLP records framed
    output wire logic [31:0] m_cnt_oversize  // TLPs dropped: larger than an empty frame
);

  localparam int DEPTH_DW = MAX_FRAME / 4;
  localparam int PTR_W = $clog2(DEPTH_DW + 1);
  // The frame header (8 DW) and the CREDIT record (7 DW): 15 DWs.
  localparam int HDR_DWS = (DXFP_HDR_SIZE + DXFP_REC_HDR_SIZE + DXFP_CREDIT_BODY_SIZE) / 4;
  localparam int REC_START = 4 * HDR_DWS;  // 60: the first TLP record's offset

  // Parameters checked at elaboration (dxpu_dxfp_pkg).
  if (!width_ok(DATA_WIDTH)) begin : g_bad_width
    $error("dxpu_dxfp_encap: DATA_WIDTH %0d must be a power of two, 64..512", DATA_WIDTH);
  end
  if (!widths_follow(DATA_WIDTH, KEEP_WIDTH, BYTES_WIDTH)) begin : g_bad_keep
    $error("dxpu_dxfp_encap: KEEP_WIDTH and BYTES_WIDTH follow DATA_WIDTH");
  end
  if (!max_frame_ok(MAX_FRAME)) begin : g_bad_max
    $error("dxpu_dxfp_encap: MAX_FRAME %0d must be a multiple of 4, 128..9216", MAX_FRAME);
  end

  // A DW with only its first `n` bytes (n >= 4: all of it).
  function automatic logic [31:0] dw_prefix(input logic [31:0] dw, input int n);
    logic [31:0] r = dw;
    for (int b = 0; b < 4; b++) if (b >= n) r[31-8*b-:8] = 8'h00;
    return r;
  endfunction

  // ---- storage: two frames ----
  localparam int AW = $clog2(2 * DEPTH_DW);
  logic [31:0] mem[2*DEPTH_DW];
  // DW i of buffer b.
  function automatic logic [AW-1:0] addr(input logic b, input logic [PTR_W-1:0] i);
    return (b ? AW'(DEPTH_DW) : AW'(0)) + AW'(i);
  endfunction
  logic [31:0] hdr_mem[2][HDR_DWS];
  logic [PTR_W-1:0] len_dw_reg[2];  // frame length in DWs, CRC included
  logic [1:0] full_reg = 2'b00, full_next;

  // ---- fill side ----
  logic fb_reg = 1'b0, fb_next;  // buffer being filled
  logic [13:0] open_len_reg = 14'(REC_START), open_len_next;  // bytes so far, CRC excluded
  logic [15:0] open_tlps_reg = '0, open_tlps_next;
  logic [31:0] open_seq_reg = '0, open_seq_next;
  logic [31:0] next_seq_reg = '0, next_seq_next;
  logic in_tlp_reg = 1'b0, in_tlp_next;  // a TLP's payload beats are coming
  logic drop_reg = 1'b0, drop_next;  // ...and it is being dropped
  logic [PTR_W-1:0] wr_dw_reg = '0, wr_dw_next;  // where its next payload DW goes
  logic [TLP_LEN_WIDTH-1:0] left_reg = '0, left_next;  // its bytes still to come
  logic [31:0] cnt_frames_reg = '0, cnt_frames_next;
  logic [31:0] cnt_tlps_reg = '0, cnt_tlps_next;
  logic [31:0] cnt_oversize_reg = '0, cnt_oversize_next;

  // The TLP offered now (meaningful with s_tlp_sop).
  logic [13:0] rec_bytes, cap;
  logic [2:0] hdr_dws;
  logic fits_open, fits_empty, can_close, close, take, tlp_ready;
  always_comb begin
    cap = cfg_max_frame & ~14'd3;
    rec_bytes = 14'(DXFP_REC_HDR_SIZE) + ((14'(s_tlp_len) + 14'd3) & ~14'd3);
    hdr_dws = s_tlp_hdr[125] ? 3'd4 : 3'd3;
    fits_open = 15'(open_len_reg) + 15'(rec_bytes) + 15'(DXFP_CRC_SIZE) <= 15'(cap);
    fits_empty = 15'(REC_START) + 15'(rec_bytes) + 15'(DXFP_CRC_SIZE) <= 15'(cap);
    can_close = !in_tlp_reg && !full_reg[!fb_reg];
    // Why close now: a TLP that does not fit, flush, send_empty, seq_load.
    close = can_close && (send_empty || (open_tlps_reg != 16'd0 && (flush || seq_load ||
        (s_tlp_valid && s_tlp_sop && !fits_open && fits_empty))));
    // A sop beat goes in when it fits (or is dropped when it never will); payload beats always.
    tlp_ready = in_tlp_reg || (!close && !seq_load && (fits_open || !fits_empty));
    take = s_tlp_valid && tlp_ready;
  end
  assign s_tlp_ready = tlp_ready;
  assign seq_load_ready = !in_tlp_reg && open_tlps_reg == 16'd0;

  always_comb begin
    fb_next = fb_reg;
    open_len_next = open_len_reg;
    open_tlps_next = open_tlps_reg;
    open_seq_next = open_seq_reg;
    next_seq_next = next_seq_reg;
    in_tlp_next = in_tlp_reg;
    drop_next = drop_reg;
    wr_dw_next = wr_dw_reg;
    left_next = left_reg;
    cnt_frames_next = cnt_frames_reg;
    cnt_tlps_next = cnt_tlps_reg;
    cnt_oversize_next = cnt_oversize_reg;
    if (seq_load && seq_load_ready) next_seq_next = seq_load_value;
    if (close) begin
      fb_next = !fb_reg;
      open_len_next = 14'(REC_START);
      open_tlps_next = '0;
      cnt_frames_next = cnt_frames_reg + 32'd1;
    end
    if (take && !in_tlp_reg) begin  // sop beat
      in_tlp_next = !s_tlp_eop;
      if (!fits_empty) begin
        drop_next = 1'b1;
        cnt_oversize_next = cnt_oversize_reg + 32'd1;
      end else begin
        drop_next = 1'b0;
        if (open_tlps_reg == 16'd0) open_seq_next = next_seq_reg;
        next_seq_next = next_seq_reg + 32'd1;
        open_len_next = open_len_reg + rec_bytes;
        open_tlps_next = open_tlps_reg + 16'd1;
        cnt_tlps_next = cnt_tlps_reg + 32'd1;
        // The first payload DW follows the record header and the TLP header.
        wr_dw_next = PTR_W'(open_len_reg >> 2) + PTR_W'(1) + PTR_W'(hdr_dws) + PTR_W'(KEEP_WIDTH);
        left_next = s_tlp_len - TLP_LEN_WIDTH'(4 * 32'(hdr_dws)) - TLP_LEN_WIDTH'(DATA_WIDTH / 8);
      end
    end else if (take) begin  // payload beat
      in_tlp_next = !s_tlp_eop;
      wr_dw_next = wr_dw_reg + PTR_W'(KEEP_WIDTH);
      left_next = left_reg - TLP_LEN_WIDTH'(DATA_WIDTH / 8);
    end
  end

  // ---- drain side ----
  logic ob_reg = 1'b0, ob_next;  // buffer being sent
  logic [PTR_W-1:0] rd_dw_reg = '0, rd_dw_next;
  logic [DATA_WIDTH-1:0] out_data_reg = '0, beat, beat_out;
  logic [BYTES_WIDTH-1:0] out_bytes_reg = '0, beat_bytes, crc_bytes;
  logic out_last_reg = 1'b0, out_valid_reg = 1'b0, out_valid_next, beat_last, advance;
  logic [PTR_W-1:0] len_dw, idx;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [31:0] crc_now, crc_next;  // crc_now: not needed
  /* verilator lint_on UNUSEDSIGNAL */

  always_comb begin
    len_dw = len_dw_reg[ob_reg];
    advance = full_reg[ob_reg] && (!out_valid_reg || m_frm_ready);
    beat = '0;
    for (int k = 0; k < KEEP_WIDTH; k++) begin
      idx = rd_dw_reg + PTR_W'(k);
      if (idx < PTR_W'(HDR_DWS)) beat[DATA_WIDTH-1-32*k-:32] = hdr_mem[ob_reg][idx[3:0]];
      else if (idx < len_dw) beat[DATA_WIDTH-1-32*k-:32] = mem[addr(ob_reg, idx)];
    end
    beat_last = 32'(rd_dw_reg) + KEEP_WIDTH >= 32'(len_dw);
    beat_bytes = beat_last ? BYTES_WIDTH'({len_dw - rd_dw_reg, 2'b00}) : BYTES_WIDTH'(DATA_WIDTH / 8);
    // The CRC covers everything before the trailer, the frame's last DW.
    crc_bytes = beat_last ? beat_bytes - BYTES_WIDTH'(4) : beat_bytes;
    out_valid_next = out_valid_reg && !m_frm_ready;
    ob_next = ob_reg;
    rd_dw_next = rd_dw_reg;
    if (advance) begin
      out_valid_next = 1'b1;
      rd_dw_next = rd_dw_reg + PTR_W'(KEEP_WIDTH);
      if (beat_last) begin
        ob_next = !ob_reg;
        rd_dw_next = '0;
      end
    end
    full_next = full_reg;
    if (advance && beat_last) full_next[ob_reg] = 1'b0;
    if (close) full_next[fb_reg] = 1'b1;
  end

  // The trailer: the last beat's DW at crc_bytes.
  always_comb begin
    beat_out = beat;
    if (beat_last)
      for (int k = 0; k < KEEP_WIDTH; k++)
        if (BYTES_WIDTH'(4 * k) == crc_bytes) beat_out[DATA_WIDTH-1-32*k-:32] = crc_next;
  end

  dxpu_crc32c #(
      .DATA_WIDTH(DATA_WIDTH)
  ) crc (
      .clk,
      .rst,
      .s_data(beat),
      .s_bytes(crc_bytes),
      .s_sop(rd_dw_reg == '0),
      .s_valid(advance),
      .m_crc(crc_now),
      .m_crc_next(crc_next)
  );

  // ---- registers and buffer writes ----
  logic [PTR_W-1:0] rec_dw;  // where the offered TLP's record starts (sop beat)
  assign rec_dw = PTR_W'(open_len_reg >> 2);

  always_ff @(posedge clk) begin
    fb_reg <= fb_next;
    open_len_reg <= open_len_next;
    open_tlps_reg <= open_tlps_next;
    open_seq_reg <= open_seq_next;
    next_seq_reg <= next_seq_next;
    in_tlp_reg <= in_tlp_next;
    drop_reg <= drop_next;
    wr_dw_reg <= wr_dw_next;
    left_reg <= left_next;
    cnt_frames_reg <= cnt_frames_next;
    cnt_tlps_reg <= cnt_tlps_next;
    cnt_oversize_reg <= cnt_oversize_next;
    full_reg <= full_next;
    ob_reg <= ob_next;
    rd_dw_reg <= rd_dw_next;
    out_valid_reg <= out_valid_next;
    if (advance) begin
      out_data_reg <= beat_out;
      out_bytes_reg <= beat_bytes;
      out_last_reg <= beat_last;
    end

    // A sop beat: record header, TLP header, first payload beat (bytes past the record: 0).
    if (take && !in_tlp_reg && fits_empty) begin
      mem[addr(fb_reg, rec_dw)] <= {REC_TLP, 8'd0, 3'd0, s_tlp_len};
      for (int j = 0; j < 4; j++)
        if (j < 32'(hdr_dws))
          mem[addr(fb_reg, rec_dw + PTR_W'(1 + j))] <=
              dw_prefix(s_tlp_hdr[127-32*j-:32], 32'(s_tlp_len) - 4 * j);
      for (int k = 0; k < KEEP_WIDTH; k++)
        if (4 * (32'(hdr_dws) + k) < 32'(s_tlp_len))
          mem[addr(fb_reg, rec_dw + PTR_W'(1 + k) + PTR_W'(hdr_dws))] <=
              dw_prefix(s_tlp_data[DATA_WIDTH-1-32*k-:32],
                        32'(s_tlp_len) - 4 * (32'(hdr_dws) + k));
    end
    // A payload beat.
    if (take && in_tlp_reg && !drop_reg) begin
      for (int k = 0; k < KEEP_WIDTH; k++)
        if (4 * k < 32'(left_reg))
          mem[addr(fb_reg, wr_dw_reg + PTR_W'(k))] <=
              dw_prefix(s_tlp_data[DATA_WIDTH-1-32*k-:32], 32'(left_reg) - 4 * k);
    end
    // Close: the header and the CREDIT record.
    if (close) begin
      hdr_mem[fb_reg][0] <= {DXFP_VERSION, T_DATA, cfg_flags, 8'd0};
      hdr_mem[fb_reg][1] <= {2'b00, open_len_reg + 14'(DXFP_CRC_SIZE), open_tlps_reg + 16'd1};
      hdr_mem[fb_reg][2] <= cfg_dst_session;
      hdr_mem[fb_reg][3] <= cfg_src_session;
      hdr_mem[fb_reg][4] <= cfg_dst_epoch;
      hdr_mem[fb_reg][5] <= cfg_src_epoch;
      hdr_mem[fb_reg][DW_SEQ] <= open_tlps_reg != 16'd0 ? open_seq_reg : next_seq_reg;
      hdr_mem[fb_reg][DW_ACK] <= cfg_ack;
      hdr_mem[fb_reg][8] <= {REC_CREDIT, 8'd0, 16'(DXFP_CREDIT_BODY_SIZE)};
      for (int c = 0; c < 6; c++) hdr_mem[fb_reg][9+c] <= cfg_credits[191-32*c-:32];
      len_dw_reg[fb_reg] <= PTR_W'((open_len_reg + 14'(DXFP_CRC_SIZE)) >> 2);
    end

    if (rst) begin
      fb_reg <= 1'b0;
      open_len_reg <= 14'(REC_START);
      open_tlps_reg <= '0;
      next_seq_reg <= '0;
      in_tlp_reg <= 1'b0;
      drop_reg <= 1'b0;
      cnt_frames_reg <= '0;
      cnt_tlps_reg <= '0;
      cnt_oversize_reg <= '0;
      full_reg <= 2'b00;
      ob_reg <= 1'b0;
      rd_dw_reg <= '0;
      out_valid_reg <= 1'b0;
    end
  end

  assign m_frm_data = out_data_reg;
  assign m_frm_bytes = out_bytes_reg;
  assign m_frm_last = out_last_reg;
  assign m_frm_valid = out_valid_reg;
  assign m_next_seq = next_seq_reg;
  assign m_open_tlps = open_tlps_reg;
  assign m_cnt_frames = cnt_frames_reg;
  assign m_cnt_tlps = cnt_tlps_reg;
  assign m_cnt_oversize = cnt_oversize_reg;

endmodule

`resetall
