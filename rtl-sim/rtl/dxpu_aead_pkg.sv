// dxpu_aead_pkg - byte order for the frame AEAD (dxpu_chacha20, dxpu_poly1305,
// dxpu_aead_chacha20poly1305): the streams carry bytes in wire order from the top (docs/rtl.md),
// ChaCha20 and Poly1305 compute on little-endian words.
`resetall
`default_nettype none

package dxpu_aead_pkg;
  // The bytes of x in reverse order: wire order from the top <-> a little-endian number.
  function automatic logic [31:0] bswap32(input logic [31:0] x);
    return {x[7:0], x[15:8], x[23:16], x[31:24]};
  endfunction
  function automatic logic [63:0] bswap64(input logic [63:0] x);
    return {bswap32(x[31:0]), bswap32(x[63:32])};
  endfunction
  function automatic logic [127:0] bswap128(input logic [127:0] x);
    return {bswap64(x[63:0]), bswap64(x[127:64])};
  endfunction

  // A beat's first n bytes (from the top), the rest zero.
  function automatic logic [63:0] first_bytes(input logic [63:0] beat, input logic [3:0] n);
    logic [63:0] r = beat;
    for (int i = 0; i < 8; i++) if (4'(i) >= n) r[63-8*i-:8] = 8'h00;
    return r;
  endfunction
endpackage

`resetall
