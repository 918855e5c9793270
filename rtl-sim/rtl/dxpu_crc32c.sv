// dxpu_crc32c - CRC32C (Castagnoli) over a stream of DATA_WIDTH-bit beats, one beat per cycle:
// the CRC of lib/core/crc32c.c and docs/protocol.md section 12 (polynomial 0x1EDC6F41, 0x82F63B78
// reflected; input and output reflected; initial value 0xFFFFFFFF; final XOR 0xFFFFFFFF).
//
// A beat carries s_bytes bytes (0..DATA_WIDTH/8) from its top: wire byte 0 in
// [DATA_WIDTH-1:DATA_WIDTH-8], as every stream of rtl/ lays bytes out (docs/rtl.md). s_sop starts
// a new CRC with that beat. The module never stalls: a beat is taken on every cycle s_valid is
// high. m_crc is the CRC (final XOR applied) of every byte taken since the last s_sop, up to the
// previous cycle: dxpu_crc32c(0, bytes, n). m_crc_next is the same with this cycle's beat
// included, combinationally, for a user that must place the CRC in the beat after its last data
// (the DxFP trailer). After reset m_crc is the CRC of no bytes, 0.
//
// The bytes of a beat are folded in one after another (a chain of DATA_WIDTH/8 byte steps, each
// enabled by s_bytes), each step a lookup in a 256-entry table of constants (the CRC of one byte,
// computed at elaboration) and an XOR; synthesis flattens the chain into XOR trees, one per byte
// count. (The table, not eight shift-and-XOR steps per byte, is what simulates fast.)
`resetall
`default_nettype none

module dxpu_crc32c #(
    parameter int DATA_WIDTH  = 64,
    parameter int BYTES_WIDTH = $clog2(DATA_WIDTH / 8) + 1
) (
    input wire logic clk,
    input wire logic rst,

    input wire logic [ DATA_WIDTH-1:0] s_data,
    input wire logic [BYTES_WIDTH-1:0] s_bytes,  // bytes of the beat, from its top
    input wire logic                   s_sop,    // this beat starts a new CRC
    input wire logic                   s_valid,

    output wire logic [31:0] m_crc,       // CRC up to the previous cycle
    output wire logic [31:0] m_crc_next   // ...and with this cycle's beat
);

  localparam int BEAT_BYTES = DATA_WIDTH / 8;

  // Parameters checked at elaboration.
  if (DATA_WIDTH < 64 || DATA_WIDTH > 512 || (DATA_WIDTH & (DATA_WIDTH - 1)) != 0) begin : g_bad_width
    $error("dxpu_crc32c: DATA_WIDTH %0d must be a power of two, 64..512", DATA_WIDTH);
  end
  if (BYTES_WIDTH != $clog2(BEAT_BYTES) + 1) begin : g_bad_bytes
    $error("dxpu_crc32c: BYTES_WIDTH must be $clog2(DATA_WIDTH/8)+1");
  end

  localparam logic [31:0] POLY_REFLECTED = 32'h82f63b78;

  // The CRC register's update for one byte value x, bit by bit: the table's entries.
  function automatic logic [31:0] table_entry(input logic [7:0] x);
    logic [31:0] c = {24'd0, x};
    for (int i = 0; i < 8; i++) c = (c >> 1) ^ (c[0] ? POLY_REFLECTED : 32'd0);
    return c;
  endfunction

  logic [31:0] crc_table[256];
  for (genvar g = 0; g < 256; g++) begin : g_table
    assign crc_table[g] = table_entry(8'(g));
  end

  // One byte into the CRC register (the register is the CRC without the final XOR).
  function automatic logic [31:0] crc_byte(input logic [31:0] c_in, input logic [7:0] b);
    return (c_in >> 8) ^ crc_table[c_in[7:0] ^ b];
  endfunction

  function automatic logic [31:0] crc_beat(input logic [31:0] c_in,
                                           input logic [DATA_WIDTH-1:0] data,
                                           input logic [BYTES_WIDTH-1:0] nbytes);
    logic [31:0] c = c_in;
    for (int i = 0; i < BEAT_BYTES; i++)
      if (BYTES_WIDTH'(i) < nbytes) c = crc_byte(c, data[DATA_WIDTH-1-8*i-:8]);
    return c;
  endfunction

  logic [31:0] crc_reg = 32'hffffffff, crc_next;

  always_comb begin
    crc_next = crc_reg;
    if (s_valid) crc_next = crc_beat(s_sop ? 32'hffffffff : crc_reg, s_data, s_bytes);
  end

  always_ff @(posedge clk) begin
    crc_reg <= crc_next;
    if (rst) crc_reg <= 32'hffffffff;
  end

  assign m_crc = ~crc_reg;
  assign m_crc_next = ~crc_next;

endmodule

`resetall
