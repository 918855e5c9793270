// dxpu_dxfp_seal - the sealing side of a sealed DxFP session (docs/protocol.md 4.12, docs/rtl.md
// "The sealed port"): the encapsulator's frames in (header, records, CRC32C trailer; built into
// cfg_max_frame - DXFP_SEAL_GROWTH bytes), each out sealed as lib/core's dxfp_frame_seal() seals
// it:
//
//   header (32, clear: Flags | SEALED, Length + 20) | counter (8, big-endian) | records
//   (ChaCha20-Poly1305 ciphertext) | tag (16)
//
// The AAD is the changed header and the counter; the nonce is the counter (dxpu_aead_chacha20
// poly1305 does both). The counter counts frames from cfg_counter (loaded by start, with the key)
// and is never used twice: a retransmission is a new frame from the encapsulator, sealed under the
// next counter. The CRC32C the encapsulator appended is dropped (the tag takes its place). The
// frames are trusted (this end's own encapsulator): a frame is its header's Length bytes.
//
// The AEAD runs at the port's width (DATA_WIDTH 64 or 256, checked at elaboration): the records
// go into it beat-aligned as they come after the header; on the way out the counter's 8 bytes
// sit between the header and the ciphertext, so the AEAD's beats are shifted by 8 bytes (the
// last 8 bytes of each carried into the next beat; one more beat at the end when the shift
// spills over). Timing: one beat per cycle within a frame at both widths; per frame the
// header's beats in (4 or 1), the AEAD's start (about 17 or 8 cycles) and its tag (a few).
`resetall
`default_nettype none

module dxpu_dxfp_seal
  import dxpu_dxfp_pkg::*;
#(
    parameter int DATA_WIDTH = 64,
    parameter int BYTES_WIDTH = $clog2(DATA_WIDTH / 8) + 1,
    parameter int DOUBLE_ROUNDS_PER_CYCLE = DATA_WIDTH == 256 ? 5 : 2
) (
    input wire logic clk,
    input wire logic rst,

    // The session's sending key and first counter, loaded by start
    input wire logic         start,
    input wire logic [255:0] cfg_key,      // byte 0 in bits 255:248
    input wire logic [ 63:0] cfg_counter,

    // Frames from the encapsulator
    input  wire logic [ DATA_WIDTH-1:0] s_frm_data,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire logic [BYTES_WIDTH-1:0] s_frm_bytes,  // the Length field says where records end
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire logic                   s_frm_last,
    input  wire logic                   s_frm_valid,
    output wire logic                   s_frm_ready,

    // Sealed frames
    output wire logic [ DATA_WIDTH-1:0] m_frm_data,
    output wire logic [BYTES_WIDTH-1:0] m_frm_bytes,
    output wire logic                   m_frm_last,
    output wire logic                   m_frm_valid,
    input  wire logic                   m_frm_ready,

    output wire logic [63:0] m_next_counter,  // the counter the next frame is sealed with
    output wire logic [31:0] m_cnt_frames     // frames sealed (out whole)
);

  // Parameters checked at elaboration.
  if (DATA_WIDTH != 64 && DATA_WIDTH != 256) begin : g_bad_width
    $error("dxpu_dxfp_seal: DATA_WIDTH %0d must be 64 or 256 (the AEAD's widths)", DATA_WIDTH);
  end
  if (BYTES_WIDTH != $clog2(DATA_WIDTH / 8) + 1) begin : g_bad_bytes
    $error("dxpu_dxfp_seal: BYTES_WIDTH must be $clog2(DATA_WIDTH/8)+1");
  end

  localparam int BB = DATA_WIDTH / 8;  // bytes per beat
  localparam int HB = DXFP_HDR_SIZE / BB;  // the header's beats
  localparam int BW = BYTES_WIDTH;

  // ---- the AEAD ----
  logic [255:0] key_reg = '0;
  logic [255:0] hdr_reg = '0, hdr_next;  // the frame's header, as sealed (the AAD's first part)
  logic [63:0] ctr_reg = '0, ctr_next;  // the next counter
  logic [63:0] fctr_reg = '0, fctr_next;  // this frame's
  logic a_s_sop, a_s_eop, a_s_valid, a_s_ready;
  logic [BW-1:0] a_s_bytes;
  logic [255:0] a_m_hdr;
  logic [63:0] a_m_nonce;
  logic [DATA_WIDTH-1:0] a_m_data;
  logic [BW-1:0] a_m_bytes;
  logic a_m_eop, a_m_valid, a_m_ready;
  /* verilator lint_off UNUSEDSIGNAL */
  logic a_m_sop, a_m_decrypt, a_m_tag_ok, a_m_tag_bad;  // encrypting: no verdict
  logic [31:0] a_cnt_frames, a_cnt_tag_bad, a_cnt_stray;
  /* verilator lint_on UNUSEDSIGNAL */
  dxpu_aead_chacha20poly1305 #(
      .DATA_WIDTH(DATA_WIDTH),
      .HDR_BYTES(DXFP_HDR_SIZE),
      .DOUBLE_ROUNDS_PER_CYCLE(DOUBLE_ROUNDS_PER_CYCLE)
  ) u_aead (
      .clk,
      .rst,
      .s_hdr(hdr_reg),
      .s_key(key_reg),
      .s_nonce(fctr_reg),
      .s_decrypt(1'b0),
      .s_len('0),
      .s_data(s_frm_data),
      .s_bytes(a_s_bytes),
      .s_sop(a_s_sop),
      .s_eop(a_s_eop),
      .s_valid(a_s_valid),
      .s_ready(a_s_ready),
      .m_hdr(a_m_hdr),
      .m_nonce(a_m_nonce),
      .m_data(a_m_data),
      .m_bytes(a_m_bytes),
      .m_sop(a_m_sop),
      .m_eop(a_m_eop),
      .m_decrypt(a_m_decrypt),
      .m_tag_ok(a_m_tag_ok),
      .m_tag_bad(a_m_tag_bad),
      .m_valid(a_m_valid),
      .m_ready(a_m_ready),
      .m_cnt_frames(a_cnt_frames),
      .m_cnt_tag_bad(a_cnt_tag_bad),
      .m_cnt_stray(a_cnt_stray)
  );

  // ---- input: the header, then the records into the AEAD, the CRC dropped ----
  typedef enum logic [1:0] {
    I_HDR,  // the header's beats
    I_REC,  // the records: the AEAD's payload
    I_CRC   // what is left (the CRC32C): dropped
  } in_state_t;
  in_state_t in_state_reg = I_HDR, in_state_next;
  logic [1:0] hidx_reg = '0, hidx_next;
  logic [15:0] left_reg = '0, left_next;  // record bytes still to go in
  logic first_reg = 1'b0, first_next;
  logic s_ready_w;

  assign a_s_sop = first_reg;
  assign a_s_bytes = left_reg < 16'(BB) ? BW'(left_reg) : BW'(BB);
  assign a_s_eop = left_reg <= 16'(BB);
  always_comb begin
    logic [255:0] h;
    logic [15:0] flen;
    in_state_next = in_state_reg;
    hidx_next = hidx_reg;
    left_next = left_reg;
    first_next = first_reg;
    hdr_next = hdr_reg;
    ctr_next = ctr_reg;
    fctr_next = fctr_reg;
    h = 256'({hdr_reg, s_frm_data});
    flen = h[223:208];
    a_s_valid = 1'b0;
    s_ready_w = 1'b1;
    unique case (in_state_reg)
      I_HDR:
      if (s_frm_valid) begin
        hdr_next = h;
        hidx_next = hidx_reg + 2'd1;
        if (hidx_reg == 2'(HB - 1)) begin
          hidx_next = '0;
          // Sealed: SEALED set, Length counts the counter and the tag instead of the CRC.
          hdr_next[239:232] = h[239:232] | F_SEALED;
          hdr_next[223:208] = flen + 16'(DXFP_SEAL_GROWTH);
          left_next = flen >= 16'(DXFP_MIN_FRAME) ? flen - 16'(DXFP_MIN_FRAME) : '0;
          fctr_next = ctr_reg;
          ctr_next = ctr_reg + 64'd1;
          first_next = 1'b1;
          in_state_next = s_frm_last ? I_HDR : I_REC;
        end
      end
      I_REC: begin
        a_s_valid = s_frm_valid;
        s_ready_w = a_s_ready;
        if (s_frm_valid && a_s_ready) begin
          first_next = 1'b0;
          left_next = left_reg - 16'(a_s_bytes);
          if (a_s_eop) in_state_next = s_frm_last ? I_HDR : I_CRC;
        end
      end
      I_CRC: if (s_frm_valid && s_frm_last) in_state_next = I_HDR;
      default: ;
    endcase
  end

  // ---- output: header, then the counter and the AEAD's ciphertext and tag, 8 bytes later ----
  typedef enum logic [1:0] {
    O_HDR,   // the header's beats, from the AEAD's first beat out (which waits)
    O_BODY,  // each AEAD beat after the 8 bytes carried from the one before (first: the counter)
    O_TAIL   // the last bytes carried, when they did not fit the last AEAD beat's
  } out_state_t;
  out_state_t out_state_reg = O_HDR, out_state_next;
  logic [1:0] oidx_reg = '0, oidx_next;
  logic [63:0] carry_reg = '0, carry_next;  // bytes still to go before the AEAD's beat
  logic [BW-1:0] tail_n_reg = '0, tail_n_next;
  logic [DATA_WIDTH-1:0] u_data;
  logic [BW-1:0] u_bytes;
  logic u_last, u_valid;
  logic [31:0] cnt_frames_reg = '0, cnt_frames_next;
  always_comb begin
    logic [6:0] total;  // the carried bytes and the AEAD beat's
    out_state_next = out_state_reg;
    oidx_next = oidx_reg;
    carry_next = carry_reg;
    tail_n_next = tail_n_reg;
    cnt_frames_next = cnt_frames_reg;
    total = 7'd8 + 7'(a_m_bytes);
    u_valid = 1'b0;
    u_data = (DATA_WIDTH'(carry_reg) << (DATA_WIDTH - 64)) | (a_m_data >> 64);
    u_bytes = BW'(BB);
    u_last = 1'b0;
    a_m_ready = 1'b0;
    unique case (out_state_reg)
      O_HDR: begin
        u_valid = a_m_valid;
        u_data = a_m_hdr[255-DATA_WIDTH*oidx_reg-:DATA_WIDTH];
        if (a_m_valid && m_frm_ready) begin
          oidx_next = oidx_reg + 2'd1;
          if (oidx_reg == 2'(HB - 1)) begin
            oidx_next = '0;
            carry_next = a_m_nonce;
            out_state_next = O_BODY;
          end
        end
      end
      O_BODY: begin
        u_valid = a_m_valid;
        a_m_ready = m_frm_ready;
        if (a_m_eop && total <= 7'(BB)) begin
          u_bytes = BW'(total);
          u_last = 1'b1;
        end
        if (a_m_valid && m_frm_ready) begin
          carry_next = a_m_data[63:0];
          if (a_m_eop) begin
            tail_n_next = BW'(total - 7'(BB));
            out_state_next = total <= 7'(BB) ? O_HDR : O_TAIL;
            if (total <= 7'(BB)) cnt_frames_next = cnt_frames_reg + 32'd1;
          end
        end
      end
      O_TAIL: begin
        u_valid = 1'b1;
        u_data = DATA_WIDTH'(carry_reg) << (DATA_WIDTH - 64);
        u_bytes = tail_n_reg;
        u_last = 1'b1;
        if (m_frm_ready) begin
          out_state_next = O_HDR;
          cnt_frames_next = cnt_frames_reg + 32'd1;
        end
      end
      default: ;
    endcase
  end

  assign s_frm_ready = s_ready_w;
  assign m_frm_data = u_data;
  assign m_frm_bytes = u_bytes;
  assign m_frm_last = u_last;
  assign m_frm_valid = u_valid;

  always_ff @(posedge clk) begin
    in_state_reg <= in_state_next;
    hidx_reg <= hidx_next;
    left_reg <= left_next;
    first_reg <= first_next;
    hdr_reg <= hdr_next;
    ctr_reg <= ctr_next;
    fctr_reg <= fctr_next;
    out_state_reg <= out_state_next;
    oidx_reg <= oidx_next;
    carry_reg <= carry_next;
    tail_n_reg <= tail_n_next;
    cnt_frames_reg <= cnt_frames_next;
    if (start) begin
      key_reg <= cfg_key;
      ctr_reg <= cfg_counter;
    end
    if (rst) begin
      in_state_reg <= I_HDR;
      hidx_reg <= '0;
      out_state_reg <= O_HDR;
      oidx_reg <= '0;
      key_reg <= '0;
      cnt_frames_reg <= '0;
    end
  end

  assign m_next_counter = ctr_reg;
  assign m_cnt_frames = cnt_frames_reg;

endmodule

`resetall
