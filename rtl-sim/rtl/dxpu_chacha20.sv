// dxpu_chacha20 - the ChaCha20 keystream of RFC 8439 (section 2.3 block function, 2.4 the
// keystream: 256-bit key, 96-bit nonce, 32-bit block counter) as a stream of DATA_WIDTH-bit beats
// (64 or 256), one beat per cycle when unstalled: what libsodium's
// crypto_stream_chacha20_ietf_xor_ic() XORs.
//
// `start` (a pulse, taken on any cycle) loads the key, the nonce and the first block's counter
// (the AEAD: 0 for the Poly1305 key, 1 for the payload) and throws away whatever keystream was
// in flight. The keystream then comes out on m_ks_* in wire order, byte 0 of the stream in the
// top bits of the first beat (docs/rtl.md, byte order in a beat): a block is 512 / DATA_WIDTH
// beats (8 or 2), its words little-endian. After block counter 0xffffffff comes block 0 again
// (RFC 8439 leaves a longer stream undefined; 256 GiB with one nonce, far beyond any frame).
// After reset nothing comes out until the first `start`.
//
// Structure: one round unit of DOUBLE_ROUNDS_PER_CYCLE double rounds (8 quarter-round units
// each), iterated 10 / DOUBLE_ROUNDS_PER_CYCLE cycles per block (the last iteration adds the
// input state), and an output buffer of one block sent a beat per cycle. The block finished on
// the last iteration goes straight into the buffer when the buffer's last beat leaves on that
// cycle (else it waits in the round unit's register), so a block is ready every
// 10 / DOUBLE_ROUNDS_PER_CYCLE cycles: a beat every cycle when that is at most the block's
// beats (checked at elaboration: 2, 5 or 10 at 64 bits; 5 or 10 at 256, a 64-byte block every
// two cycles). Latency from `start`: 10 / DOUBLE_ROUNDS_PER_CYCLE + 1 cycles to the first beat.
`resetall
`default_nettype none

module dxpu_chacha20
  import dxpu_aead_pkg::*;
#(
    parameter int DATA_WIDTH = 64,
    parameter int DOUBLE_ROUNDS_PER_CYCLE = DATA_WIDTH == 256 ? 5 : 2
) (
    input wire logic clk,
    input wire logic rst,

    input wire logic         start,
    input wire logic [255:0] start_key,    // key byte 0 in bits 255:248
    input wire logic [ 95:0] start_nonce,  // nonce byte 0 in bits 95:88
    input wire logic [ 31:0] start_ctr,    // the first block's counter

    output wire logic [DATA_WIDTH-1:0] m_ks_data,
    output wire logic                  m_ks_valid,
    input  wire logic                  m_ks_ready
);

  localparam int STEPS = 10 / DOUBLE_ROUNDS_PER_CYCLE;  // cycles of rounds per block
  localparam int BEATS = 512 / DATA_WIDTH;  // beats per block

  // Parameters checked at elaboration.
  if (DATA_WIDTH != 64 && DATA_WIDTH != 256) begin : g_bad_width
    $error("dxpu_chacha20: DATA_WIDTH %0d must be 64 or 256", DATA_WIDTH);
  end
  if ((DOUBLE_ROUNDS_PER_CYCLE != 2 && DOUBLE_ROUNDS_PER_CYCLE != 5 &&
       DOUBLE_ROUNDS_PER_CYCLE != 10) || STEPS > BEATS) begin : g_bad_rounds
    $error("dxpu_chacha20: DOUBLE_ROUNDS_PER_CYCLE %0d must be 2, 5 or 10 with a block in %0d cycles",
           DOUBLE_ROUNDS_PER_CYCLE, BEATS);
  end

  // A state of 16 32-bit words, word i in bits 32i+31:32i.
  typedef logic [511:0] state_t;

  function automatic logic [31:0] rotl(input logic [31:0] x, input int n);
    return (x << n) | (x >> (32 - n));
  endfunction

  // The quarter round on words a, b, c, d of s (RFC 8439 2.1, 2.2).
  function automatic state_t quarter(input state_t s, input int a, input int b, input int c,
                                     input int d);
    logic [31:0] wa = s[32*a+:32], wb = s[32*b+:32], wc = s[32*c+:32], wd = s[32*d+:32];
    state_t r = s;
    wa = wa + wb;
    wd = rotl(wd ^ wa, 16);
    wc = wc + wd;
    wb = rotl(wb ^ wc, 12);
    wa = wa + wb;
    wd = rotl(wd ^ wa, 8);
    wc = wc + wd;
    wb = rotl(wb ^ wc, 7);
    r[32*a+:32] = wa;
    r[32*b+:32] = wb;
    r[32*c+:32] = wc;
    r[32*d+:32] = wd;
    return r;
  endfunction

  // A column round then a diagonal round.
  function automatic state_t double_round(input state_t s);
    state_t r = s;
    r = quarter(r, 0, 4, 8, 12);
    r = quarter(r, 1, 5, 9, 13);
    r = quarter(r, 2, 6, 10, 14);
    r = quarter(r, 3, 7, 11, 15);
    r = quarter(r, 0, 5, 10, 15);
    r = quarter(r, 1, 6, 11, 12);
    r = quarter(r, 2, 7, 8, 13);
    r = quarter(r, 3, 4, 9, 14);
    return r;
  endfunction

  function automatic state_t round_unit(input state_t s);
    state_t r = s;
    for (int i = 0; i < DOUBLE_ROUNDS_PER_CYCLE; i++) r = double_round(r);
    return r;
  endfunction

  // Word-wise sum: the block function's final addition.
  function automatic state_t add_words(input state_t a, input state_t b);
    state_t r;
    for (int i = 0; i < 16; i++) r[32*i+:32] = a[32*i+:32] + b[32*i+:32];
    return r;
  endfunction

  // ---- key, nonce and counter as state words ----
  logic [255:0] key_words_reg = '0, key_words_next;  // word i (little-endian) in bits 32i+31:32i
  logic [95:0] nonce_words_reg = '0, nonce_words_next;
  logic [31:0] ctr_reg = '0, ctr_next;  // the block in the round unit

  function automatic state_t init_state(input logic [255:0] kw, input logic [95:0] nw,
                                        input logic [31:0] ctr);
    return {nw, ctr, kw, 32'h6b206574, 32'h79622d32, 32'h3320646e, 32'h61707865};
  endfunction

  // ---- round unit ----
  state_t work_reg = '0, work_next;
  localparam int SW = $clog2(STEPS + 1);
  localparam logic [SW-1:0] LAST_STEP = SW'(STEPS - 1);
  logic [SW-1:0] step_reg = '0, step_next;  // steps done on the block
  logic busy_reg = 1'b0, busy_next;  // the round unit holds a block (in rounds or done)

  // ---- output buffer ----
  state_t buf_reg = '0, buf_next;
  localparam int BW = $clog2(BEATS);
  localparam logic [BW-1:0] LAST_BEAT = BW'(BEATS - 1);
  logic [BW-1:0] beat_reg = '0, beat_next;  // the next beat of the buffer's block
  logic buf_valid_reg = 1'b0, buf_valid_next;

  logic [DATA_WIDTH-1:0] m_ks_data_w;
  wire logic block_done = busy_reg && step_reg == SW'(STEPS);
  wire logic buf_taken_last = buf_valid_reg && m_ks_ready && beat_reg == LAST_BEAT;
  wire logic buf_free = !buf_valid_reg || buf_taken_last;

  always_comb begin
    key_words_next = key_words_reg;
    nonce_words_next = nonce_words_reg;
    ctr_next = ctr_reg;
    work_next = work_reg;
    step_next = step_reg;
    busy_next = busy_reg;
    buf_next = buf_reg;
    beat_next = beat_reg;
    buf_valid_next = buf_valid_reg;

    // Output side: a beat a cycle.
    if (buf_valid_reg && m_ks_ready) begin
      beat_next = beat_reg + 1'b1;
      if (buf_taken_last) buf_valid_next = 1'b0;
    end

    // Round unit: the last step adds the input state; the block goes into the buffer at once
    // when it is free, else waits in the round unit.
    if (busy_reg && !block_done) begin
      work_next = round_unit(work_reg);
      if (step_reg == LAST_STEP)
        work_next = add_words(work_next, init_state(key_words_reg, nonce_words_reg, ctr_reg));
      step_next = step_reg + 1'b1;
    end
    if ((busy_reg && !block_done && step_reg == LAST_STEP) || block_done) begin
      if (buf_free) begin
        buf_next = work_next;
        buf_valid_next = 1'b1;
        beat_next = '0;
        ctr_next = ctr_reg + 1'b1;
        work_next = init_state(key_words_reg, nonce_words_reg, ctr_reg + 1'b1);
        step_next = '0;
      end
    end

    if (start) begin
      for (int i = 0; i < 8; i++) key_words_next[32*i+:32] = bswap32(start_key[255-32*i-:32]);
      for (int i = 0; i < 3; i++) nonce_words_next[32*i+:32] = bswap32(start_nonce[95-32*i-:32]);
      ctr_next = start_ctr;
      work_next = init_state(key_words_next, nonce_words_next, start_ctr);
      step_next = '0;
      busy_next = 1'b1;
      buf_valid_next = 1'b0;
      beat_next = '0;
    end
  end

  always_ff @(posedge clk) begin
    key_words_reg <= key_words_next;
    nonce_words_reg <= nonce_words_next;
    ctr_reg <= ctr_next;
    work_reg <= work_next;
    step_reg <= step_next;
    busy_reg <= busy_next;
    buf_reg <= buf_next;
    beat_reg <= beat_next;
    buf_valid_reg <= buf_valid_next;
    if (rst) begin
      busy_reg <= 1'b0;
      buf_valid_reg <= 1'b0;
      step_reg <= '0;
      beat_reg <= '0;
    end
  end

  // Beat b of the block: its bytes DATA_WIDTH/8 * b on, the words little-endian, byte 0 at the
  // top.
  wire logic [DATA_WIDTH-1:0] beat_words = buf_reg[DATA_WIDTH*beat_reg+:DATA_WIDTH];
  always_comb
    for (int i = 0; i < DATA_WIDTH / 8; i++)
      m_ks_data_w[DATA_WIDTH-1-8*i-:8] = beat_words[8*i+:8];
  assign m_ks_data = m_ks_data_w;
  assign m_ks_valid = buf_valid_reg;

endmodule

`resetall
