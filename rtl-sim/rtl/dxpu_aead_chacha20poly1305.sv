// dxpu_aead_chacha20poly1305 - the frame AEAD of DxFP's protected session (issue 32 item 2,
// docs/rtl.md): ChaCha20-Poly1305 as RFC 8439 section 2.8 and Noise's ChaChaPoly (the 96-bit
// nonce is 32 zero bits then the 64-bit counter n, little-endian), AAD = the frame's clear
// header then the counter n as it travels (8 bytes, big-endian: docs/protocol.md 4.12, the sealed
// frame's `header | counter`), a 16-byte tag. What libsodium's
// crypto_aead_chacha20poly1305_ietf_*() compute with that AAD.
//
// Frames in, header beside payload (docs/rtl.md): the header (HDR_BYTES bytes, byte 0 at the
// top), the key, the counter n, the direction and, for decryption, the payload's length come
// with the first beat (s_sop); the payload in DATA_WIDTH-bit beats (64 or 256), every beat full
// but the s_eop one (s_bytes bytes, 0..DATA_WIDTH/8; an empty payload is one beat with s_sop,
// s_eop and s_bytes 0; s_bytes of other beats is not looked at).
//   - encrypt (s_decrypt low): the payload is the plaintext; out comes the header (and the
//     counter beside it, m_nonce, for the frame's clear counter field), the
//     ciphertext and the 16-byte tag after it, in the same beat layout (the tag starts where the
//     ciphertext ends). s_len is not used.
//   - decrypt: the payload is the ciphertext then the tag, s_len bytes in all (the frame's
//     Length, checked by the parser before; untrusted here all the same). Out comes the header
//     and the plaintext (s_len - 16 bytes); the last beat (s_eop, possibly with 0 bytes) carries
//     the verdict, m_tag_ok or m_tag_bad, decided in constant time (the XOR of the two tags
//     OR-reduced, all 128 bits every time). A payload of more or fewer bytes than s_len, or
//     s_len < 16, is tag_bad. The plaintext is out before its verdict: the consumer holds a
//     frame until its last beat says tag_ok (the DxFP decapsulator stores whole frames anyway).
// A beat without s_sop outside a frame is dropped and counted (m_cnt_stray).
//
// Inside: dxpu_chacha20 (restarted per frame at block 0: its first 32 bytes are the Poly1305 key,
// the rest of block 0 is thrown away, the payload uses blocks 1..) and dxpu_poly1305 in AEAD mode
// (the header and the counter as the AAD segment, the ciphertext as the text segment). The input side and the
// output side's finish (waiting for the tag, the last beats) are separate, so a frame's key and
// header start while the previous frame's tag is still computed. Timing: one payload beat per
// cycle within a frame; a frame costs about 16 cycles before its first payload beat (block 0,
// the key, the AAD's three blocks, block 1; about 7 at 256 bits) and its last beat leaves 3
// cycles after its last beat in, on the cycle the tag comes (the last group, the length block,
// the tag). Both widths
// measured in tb/aead_chacha20poly1305_tb.cc. At 256 bits the keystream needs
// DOUBLE_ROUNDS_PER_CYCLE 5 or 10 (a block every two cycles) and Poly1305 takes two blocks a
// cycle (dxpu_poly1305).
`resetall
`default_nettype none

module dxpu_aead_chacha20poly1305
  import dxpu_aead_pkg::*;
#(
    parameter int DATA_WIDTH = 64,
    parameter int BYTES_WIDTH = $clog2(DATA_WIDTH / 8) + 1,
    parameter int HDR_BYTES = 32,  // DxFP's clear header: the AAD with the counter after it
    parameter int LEN_WIDTH = 14,  // s_len: a payload's bytes (DxFP frames are at most 9216)
    parameter int DOUBLE_ROUNDS_PER_CYCLE = DATA_WIDTH == 256 ? 5 : 2  // dxpu_chacha20
) (
    input wire logic clk,
    input wire logic rst,

    // Frames in: header and frame values beside the first beat
    input  wire logic [HDR_BYTES*8-1:0] s_hdr,
    input  wire logic [          255:0] s_key,      // byte 0 in bits 255:248
    input  wire logic [           63:0] s_nonce,    // Noise's counter n (a number)
    input  wire logic                   s_decrypt,
    input  wire logic [  LEN_WIDTH-1:0] s_len,      // decrypt: payload bytes, tag included
    input  wire logic [ DATA_WIDTH-1:0] s_data,
    input  wire logic [BYTES_WIDTH-1:0] s_bytes,
    input  wire logic                   s_sop,
    input  wire logic                   s_eop,
    input  wire logic                   s_valid,
    output wire logic                   s_ready,

    // Frames out: header beside the first beat, the verdict beside the last
    output wire logic [HDR_BYTES*8-1:0] m_hdr,
    output wire logic [           63:0] m_nonce,    // the frame's counter n, with m_sop
    output wire logic [ DATA_WIDTH-1:0] m_data,
    output wire logic [BYTES_WIDTH-1:0] m_bytes,
    output wire logic                   m_sop,
    output wire logic                   m_eop,
    output wire logic                   m_decrypt,
    output wire logic                   m_tag_ok,   // decrypt, with m_eop
    output wire logic                   m_tag_bad,  // decrypt, with m_eop
    output wire logic                   m_valid,
    input  wire logic                   m_ready,

    output wire logic [31:0] m_cnt_frames,   // frames in (their last beat taken)
    output wire logic [31:0] m_cnt_tag_bad,  // decrypted frames that failed
    output wire logic [31:0] m_cnt_stray     // beats outside a frame, dropped
);

  localparam int BB = DATA_WIDTH / 8;  // bytes per beat
  localparam int KEY_BEATS = 32 / BB;  // keystream beats of the Poly1305 key
  localparam int BLK_BEATS = 64 / BB;  // keystream beats of a block
  localparam int AAD_BYTES = HDR_BYTES + 8;  // the header, then the counter
  localparam int AAD_BEATS = (AAD_BYTES + BB - 1) / BB;
  localparam int AAD_LAST = AAD_BYTES - (AAD_BEATS - 1) * BB;  // bytes of its last beat
  localparam int AW = AAD_BEATS * DATA_WIDTH;
  localparam int HW = HDR_BYTES * 8;
  localparam int FW = DATA_WIDTH + 128;  // the finish side's bytes: the last beat and the tag
  localparam int BW = BYTES_WIDTH;

  // Parameters checked at elaboration.
  if (DATA_WIDTH != 64 && DATA_WIDTH != 256) begin : g_bad_width
    $error("dxpu_aead_chacha20poly1305: DATA_WIDTH %0d must be 64 or 256", DATA_WIDTH);
  end
  if (BYTES_WIDTH != $clog2(DATA_WIDTH / 8) + 1) begin : g_bad_bytes
    $error("dxpu_aead_chacha20poly1305: BYTES_WIDTH must be $clog2(DATA_WIDTH/8)+1");
  end
  if (HDR_BYTES < 8 || HDR_BYTES > 64 || HDR_BYTES % 8 != 0) begin : g_bad_hdr
    $error("dxpu_aead_chacha20poly1305: HDR_BYTES %0d must be a multiple of 8, 8..64", HDR_BYTES);
  end
  if (LEN_WIDTH < 5 || LEN_WIDTH > 31) begin : g_bad_len
    $error("dxpu_aead_chacha20poly1305: LEN_WIDTH %0d must be 5..31", LEN_WIDTH);
  end

  // ---- the keystream and the authenticator ----
  // A beat's first n bytes (from the top), the rest zero.
  function automatic logic [DATA_WIDTH-1:0] first_n(input logic [DATA_WIDTH-1:0] beat,
                                                    input logic [BW-1:0] n);
    logic [DATA_WIDTH-1:0] r = beat;
    for (int i = 0; i < BB; i++) if (BW'(i) >= n) r[DATA_WIDTH-1-8*i-:8] = 8'h00;
    return r;
  endfunction

  logic ks_start;
  logic [DATA_WIDTH-1:0] ks_data;
  logic ks_valid, ks_ready;
  dxpu_chacha20 #(
      .DATA_WIDTH(DATA_WIDTH),
      .DOUBLE_ROUNDS_PER_CYCLE(DOUBLE_ROUNDS_PER_CYCLE)
  ) u_chacha (
      .clk,
      .rst,
      .start(ks_start),
      .start_key(s_key),
      .start_nonce({32'd0, bswap64(s_nonce)}),
      .start_ctr(32'd0),
      .m_ks_data(ks_data),
      .m_ks_valid(ks_valid),
      .m_ks_ready(ks_ready)
  );

  logic pk_valid, pk_ready;
  logic [255:0] pk_key;
  logic [DATA_WIDTH-1:0] p_data;
  logic [BW-1:0] p_bytes;
  logic p_aad, p_last, p_valid, p_ready;
  logic [127:0] p_tag;
  logic p_tag_valid, p_tag_ready;
  dxpu_poly1305 #(
      .DATA_WIDTH(DATA_WIDTH)
  ) u_poly (
      .clk,
      .rst,
      .key_valid(pk_valid),
      .key_ready(pk_ready),
      .key(pk_key),
      .key_aead(1'b1),
      .s_data(p_data),
      .s_bytes(p_bytes),
      .s_aad(p_aad),
      .s_last(p_last),
      .s_valid(p_valid),
      .s_ready(p_ready),
      .m_tag(p_tag),
      .m_tag_valid(p_tag_valid),
      .m_tag_ready(p_tag_ready)
  );

  // ---- input side ----
  typedef enum logic [1:0] {
    IN_IDLE,  // waiting for a frame's first beat
    IN_KEY,   // keystream block 0's first 32 bytes: the Poly1305 key
    IN_AAD,   // the header into Poly1305; the rest of block 0 thrown away
    IN_DATA   // the payload
  } in_state_t;
  in_state_t in_state_reg = IN_IDLE, in_state_next;
  logic [HW-1:0] hdr_reg = '0, hdr_next;
  logic [63:0] nonce_reg = '0, nonce_next;
  logic dec_reg = 1'b0, dec_next;
  logic [LEN_WIDTH-1:0] len_reg = '0, len_next;
  logic [LEN_WIDTH-1:0] ct_len_reg = '0, ct_len_next;  // decrypt: bytes before the tag
  logic [LEN_WIDTH:0] off_reg = '0, off_next;  // payload bytes taken
  logic over_reg = 1'b0, over_next;  // decrypt: more bytes than s_len
  logic [2:0] kidx_reg = '0, kidx_next;  // block 0's beats taken in IN_KEY and IN_AAD
  logic [$clog2(AAD_BEATS+1)-1:0] aidx_reg = '0, aidx_next;  // AAD beats into Poly1305
  logic [255:0] pk_reg = '0, pk_next;  // the key's beats before its last
  logic text_done_reg = 1'b0, text_done_next;  // the ciphertext's last beat went to Poly1305
  logic first_reg = 1'b0, first_next;  // no beat of the frame out yet
  logic [DATA_WIDTH-1:0] tail_reg = '0, tail_next;  // the ciphertext's (plaintext's) last bytes
  logic [BW-1:0] tail_n_reg = '0, tail_n_next;
  logic [127:0] rx_tag_reg = '0, rx_tag_next;  // decrypt: the tag received

  // ---- finish side: one frame's tag and last beats ----
  logic fin_busy_reg = 1'b0, fin_busy_next;
  logic fin_emit_reg = 1'b0, fin_emit_next;  // the tag is in: the last beats go out
  logic [HW-1:0] fin_hdr_reg = '0, fin_hdr_next;
  logic [63:0] fin_nonce_reg = '0, fin_nonce_next;
  logic fin_dec_reg = 1'b0, fin_dec_next;
  logic fin_first_reg = 1'b0, fin_first_next;
  logic fin_len_ok_reg = 1'b0, fin_len_ok_next;
  logic [127:0] fin_rx_tag_reg = '0, fin_rx_tag_next;
  logic [FW-1:0] fin_buf_reg = '0, fin_buf_next;  // bytes still to send, from the top
  logic [6:0] fin_left_reg = '0, fin_left_next;
  logic fin_ok_reg = 1'b0, fin_ok_next;

  // ---- output register ----
  logic [HW-1:0] m_hdr_reg = '0, m_hdr_next;
  logic [63:0] m_nonce_reg = '0, m_nonce_next;
  logic [DATA_WIDTH-1:0] m_data_reg = '0, m_data_next;
  logic [BW-1:0] m_bytes_reg = '0, m_bytes_next;
  logic m_sop_reg = 1'b0, m_sop_next;
  logic m_eop_reg = 1'b0, m_eop_next;
  logic m_dec_reg = 1'b0, m_dec_next;
  logic m_ok_reg = 1'b0, m_ok_next;
  logic m_bad_reg = 1'b0, m_bad_next;
  logic m_valid_reg = 1'b0, m_valid_next;

  logic [31:0] cnt_frames_reg = '0, cnt_frames_next;
  logic [31:0] cnt_bad_reg = '0, cnt_bad_next;
  logic [31:0] cnt_stray_reg = '0, cnt_stray_next;

  wire logic out_free = !m_valid_reg || m_ready;

  // A payload beat moves when the keystream, Poly1305 and the output can all take their part
  // (none of them once the ciphertext is over: the tag's beats only), and the finish side is free
  // (the previous frame's last beats are out).
  wire logic data_ok = !fin_busy_reg && (text_done_reg || (ks_valid && p_ready && out_free));
  assign s_ready = (in_state_reg == IN_IDLE && !s_sop) || (in_state_reg == IN_DATA && data_ok);
  wire logic data_fire = in_state_reg == IN_DATA && s_valid && data_ok;

  always_comb begin
    logic [BW-1:0] n, cn;
    logic [LEN_WIDTH:0] end_off;
    logic seg_end;
    logic [DATA_WIDTH-1:0] x;
    logic [AW-1:0] aad;
    logic [LEN_WIDTH:0] pos;
    logic [LEN_WIDTH:0] ti;
    logic [127:0] tag;
    logic [FW-1:0] fb;  // the finish side's bytes and their count, the tag in once it comes
    logic [6:0] fl;
    logic ok, tag_in;

    in_state_next = in_state_reg;
    hdr_next = hdr_reg;
    nonce_next = nonce_reg;
    dec_next = dec_reg;
    len_next = len_reg;
    ct_len_next = ct_len_reg;
    off_next = off_reg;
    over_next = over_reg;
    kidx_next = kidx_reg;
    aidx_next = aidx_reg;
    pk_next = pk_reg;
    text_done_next = text_done_reg;
    first_next = first_reg;
    tail_next = tail_reg;
    tail_n_next = tail_n_reg;
    rx_tag_next = rx_tag_reg;
    fin_busy_next = fin_busy_reg;
    fin_emit_next = fin_emit_reg;
    fin_hdr_next = fin_hdr_reg;
    fin_nonce_next = fin_nonce_reg;
    fin_dec_next = fin_dec_reg;
    fin_first_next = fin_first_reg;
    fin_len_ok_next = fin_len_ok_reg;
    fin_rx_tag_next = fin_rx_tag_reg;
    fin_buf_next = fin_buf_reg;
    fin_left_next = fin_left_reg;
    fin_ok_next = fin_ok_reg;
    m_hdr_next = m_hdr_reg;
    m_nonce_next = m_nonce_reg;
    m_data_next = m_data_reg;
    m_bytes_next = m_bytes_reg;
    m_sop_next = m_sop_reg;
    m_eop_next = m_eop_reg;
    m_dec_next = m_dec_reg;
    m_ok_next = m_ok_reg;
    m_bad_next = m_bad_reg;
    m_valid_next = m_valid_reg && !m_ready;
    cnt_frames_next = cnt_frames_reg;
    cnt_bad_next = cnt_bad_reg;
    cnt_stray_next = cnt_stray_reg;

    pos = '0;
    ti = '0;
    tag = p_tag;
    ks_start = 1'b0;
    ks_ready = 1'b0;
    pk_valid = 1'b0;
    pk_key = 256'({pk_reg, ks_data});
    p_valid = 1'b0;
    p_data = '0;
    p_bytes = BW'(BB);
    p_aad = 1'b0;
    p_last = 1'b0;
    p_tag_ready = fin_busy_reg && !fin_emit_reg;

    // This beat's bytes, its ciphertext bytes and whether it ends the ciphertext.
    n = (s_eop && s_bytes < BW'(BB)) ? s_bytes : BW'(BB);
    end_off = off_reg + (LEN_WIDTH + 1)'(n);
    cn = n;
    if (dec_reg) begin
      if (off_reg >= (LEN_WIDTH + 1)'(ct_len_reg)) cn = '0;
      else if (end_off > (LEN_WIDTH + 1)'(ct_len_reg)) cn = BW'(ct_len_reg - off_reg[LEN_WIDTH-1:0]);
    end
    seg_end = s_eop || (dec_reg && end_off >= (LEN_WIDTH + 1)'(ct_len_reg));
    x = first_n(s_data ^ ks_data, cn);
    aad = AW'({hdr_reg, nonce_reg}) << (AW - 8 * AAD_BYTES);

    unique case (in_state_reg)
      IN_IDLE:
      if (s_valid && !s_sop) begin
        cnt_stray_next = cnt_stray_reg + 1'b1;
      end else if (s_valid) begin
        ks_start = 1'b1;
        hdr_next = s_hdr;
        nonce_next = s_nonce;
        dec_next = s_decrypt;
        len_next = s_len;
        ct_len_next = s_len >= LEN_WIDTH'(16) ? s_len - LEN_WIDTH'(16) : '0;
        off_next = '0;
        over_next = 1'b0;
        kidx_next = '0;
        aidx_next = '0;
        text_done_next = 1'b0;
        first_next = 1'b1;
        rx_tag_next = '0;
        in_state_next = IN_KEY;
      end
      IN_KEY: begin
        pk_valid = ks_valid && kidx_reg == 3'(KEY_BEATS - 1);
        ks_ready = kidx_reg != 3'(KEY_BEATS - 1) || pk_ready;
        if (ks_valid && ks_ready) begin
          pk_next = 256'({pk_reg, ks_data});
          kidx_next = kidx_reg + 1'b1;
          if (kidx_reg == 3'(KEY_BEATS - 1)) in_state_next = IN_AAD;
        end
      end
      IN_AAD: begin
        // Block 0's other beats dropped; the AAD's beats into Poly1305, side by side: the
        // header's, then the counter as the frame carries it (big-endian).
        ks_ready = kidx_reg != 3'd0;
        if (ks_valid && ks_ready) kidx_next = kidx_reg == 3'(BLK_BEATS - 1) ? 3'd0 : kidx_reg + 1'b1;
        p_valid = aidx_reg != ($bits(aidx_reg))'(AAD_BEATS);
        p_data = aad[AW-1-DATA_WIDTH*aidx_reg-:DATA_WIDTH];
        p_aad = 1'b1;
        p_last = aidx_reg == ($bits(aidx_reg))'(AAD_BEATS - 1);
        if (p_last) p_bytes = BW'(AAD_LAST);
        if (p_valid && p_ready) aidx_next = aidx_reg + 1'b1;
        if (kidx_next == 3'd0 && aidx_next == ($bits(aidx_reg))'(AAD_BEATS))
          in_state_next = IN_DATA;
      end
      IN_DATA:
      if (data_fire) begin
        if (!text_done_reg) begin
          ks_ready = 1'b1;
          p_valid = 1'b1;
          p_data = dec_reg ? first_n(s_data, cn) : x;
          p_bytes = cn;
          p_last = seg_end;
          if (seg_end) begin
            tail_next = x;
            tail_n_next = cn;
            text_done_next = 1'b1;
          end else begin
            m_hdr_next = hdr_reg;
            m_nonce_next = nonce_reg;
            m_data_next = x;
            m_bytes_next = BW'(BB);
            m_sop_next = first_reg;
            m_eop_next = 1'b0;
            m_dec_next = dec_reg;
            m_ok_next = 1'b0;
            m_bad_next = 1'b0;
            m_valid_next = 1'b1;
            first_next = 1'b0;
          end
        end
        // Decrypt: the tag's bytes, wherever they fall.
        for (int j = 0; j < BB; j++) begin
          pos = off_reg + (LEN_WIDTH + 1)'(j);
          ti = pos - (LEN_WIDTH + 1)'(ct_len_reg);
          if (dec_reg && BW'(j) < n && pos >= (LEN_WIDTH + 1)'(ct_len_reg) &&
              ti < (LEN_WIDTH + 1)'(16))
            rx_tag_next[127-8*ti[3:0]-:8] = s_data[DATA_WIDTH-1-8*j-:8];
        end
        if (end_off > (LEN_WIDTH + 1)'(len_reg)) over_next = 1'b1;
        else off_next = end_off;
        if (s_eop) begin
          // The frame is in: its finish goes to the finish side (free: data_ok).
          fin_busy_next = 1'b1;
          fin_emit_next = 1'b0;
          fin_hdr_next = hdr_reg;
          fin_nonce_next = nonce_reg;
          fin_dec_next = dec_reg;
          fin_first_next = first_next;
          fin_len_ok_next = !over_next && end_off == (LEN_WIDTH + 1)'(len_reg) &&
              len_reg >= LEN_WIDTH'(16);
          fin_rx_tag_next = rx_tag_next;
          fin_buf_next = {text_done_reg ? tail_reg : x, 128'd0};
          fin_left_next = text_done_reg ? 7'(tail_n_reg) : 7'(cn);
          cnt_frames_next = cnt_frames_reg + 1'b1;
          in_state_next = IN_IDLE;
        end
      end
      default: ;
    endcase

    // Finish side: the tag, then the last beats, the first of them on the tag's cycle.
    fb = fin_buf_reg;
    fl = fin_left_reg;
    ok = fin_ok_reg;
    tag_in = p_tag_valid && p_tag_ready;
    if (tag_in) begin
      if (fin_dec_reg) begin
        ok = fin_len_ok_reg && !(|(tag ^ fin_rx_tag_reg));
      end else begin
        fb = fin_buf_reg | ({tag, DATA_WIDTH'(0)} >> (8 * fin_left_reg));
        fl = fin_left_reg + 7'd16;
      end
      fin_emit_next = 1'b1;
      fin_buf_next = fb;
      fin_left_next = fl;
      fin_ok_next = ok;
    end
    if ((fin_emit_reg || tag_in) && out_free) begin
      m_hdr_next = fin_hdr_reg;
      m_nonce_next = fin_nonce_reg;
      m_data_next = fb[FW-1-:DATA_WIDTH];
      m_bytes_next = fl > 7'(BB) ? BW'(BB) : BW'(fl);
      m_sop_next = fin_first_reg;
      m_eop_next = fl <= 7'(BB);
      m_dec_next = fin_dec_reg;
      m_ok_next = fin_dec_reg && fl <= 7'(BB) && ok;
      m_bad_next = fin_dec_reg && fl <= 7'(BB) && !ok;
      m_valid_next = 1'b1;
      fin_first_next = 1'b0;
      fin_buf_next = fb << DATA_WIDTH;
      fin_left_next = fl > 7'(BB) ? fl - 7'(BB) : 7'd0;
      if (fl <= 7'(BB)) begin
        fin_busy_next = 1'b0;
        fin_emit_next = 1'b0;
        if (fin_dec_reg && !ok) cnt_bad_next = cnt_bad_reg + 1'b1;
      end
    end
  end

  always_ff @(posedge clk) begin
    in_state_reg <= in_state_next;
    hdr_reg <= hdr_next;
    nonce_reg <= nonce_next;
    dec_reg <= dec_next;
    len_reg <= len_next;
    ct_len_reg <= ct_len_next;
    off_reg <= off_next;
    over_reg <= over_next;
    kidx_reg <= kidx_next;
    aidx_reg <= aidx_next;
    pk_reg <= pk_next;
    text_done_reg <= text_done_next;
    first_reg <= first_next;
    tail_reg <= tail_next;
    tail_n_reg <= tail_n_next;
    rx_tag_reg <= rx_tag_next;
    fin_busy_reg <= fin_busy_next;
    fin_emit_reg <= fin_emit_next;
    fin_hdr_reg <= fin_hdr_next;
    fin_nonce_reg <= fin_nonce_next;
    fin_dec_reg <= fin_dec_next;
    fin_first_reg <= fin_first_next;
    fin_len_ok_reg <= fin_len_ok_next;
    fin_rx_tag_reg <= fin_rx_tag_next;
    fin_buf_reg <= fin_buf_next;
    fin_left_reg <= fin_left_next;
    fin_ok_reg <= fin_ok_next;
    m_hdr_reg <= m_hdr_next;
    m_nonce_reg <= m_nonce_next;
    m_data_reg <= m_data_next;
    m_bytes_reg <= m_bytes_next;
    m_sop_reg <= m_sop_next;
    m_eop_reg <= m_eop_next;
    m_dec_reg <= m_dec_next;
    m_ok_reg <= m_ok_next;
    m_bad_reg <= m_bad_next;
    m_valid_reg <= m_valid_next;
    cnt_frames_reg <= cnt_frames_next;
    cnt_bad_reg <= cnt_bad_next;
    cnt_stray_reg <= cnt_stray_next;
    if (rst) begin
      in_state_reg <= IN_IDLE;
      fin_busy_reg <= 1'b0;
      fin_emit_reg <= 1'b0;
      m_valid_reg <= 1'b0;
      cnt_frames_reg <= '0;
      cnt_bad_reg <= '0;
      cnt_stray_reg <= '0;
    end
  end

  assign m_hdr = m_hdr_reg;
  assign m_nonce = m_nonce_reg;
  assign m_data = m_data_reg;
  assign m_bytes = m_bytes_reg;
  assign m_sop = m_sop_reg;
  assign m_eop = m_eop_reg;
  assign m_decrypt = m_dec_reg;
  assign m_tag_ok = m_ok_reg;
  assign m_tag_bad = m_bad_reg;
  assign m_valid = m_valid_reg;
  assign m_cnt_frames = cnt_frames_reg;
  assign m_cnt_tag_bad = cnt_bad_reg;
  assign m_cnt_stray = cnt_stray_reg;

endmodule

`resetall
