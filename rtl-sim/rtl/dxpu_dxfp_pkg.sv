// dxpu_dxfp_pkg - the DxFP frame layout of include/dxpu/dxfp.h (docs/protocol.md section 4), the
// parse verdicts of lib/core's enum dxfp_err (lib/core/dxfp_frame.h) and the serial-number order
// of lib/core/dxfp_seq.h, with the same numbers (generated from them), for the framing modules
// (dxpu_dxfp_encap, dxpu_dxfp_decap); and the checks of their parameters, shared so that both
// refuse the same.
`resetall
`default_nettype none

package dxpu_dxfp_pkg;
  // Each module that imports the package uses some of its constants, none uses all.
  // verilator lint_off UNUSEDPARAM

  // The constants, from include/dxpu/dxfp.h, lib/core and datapath/port_counters.h: generated
  // at configure time into the build tree by gen_pkg_consts.cc (docs/rtl.md, "Constants").
  `include "dxpu_dxfp_consts.svh"

  // What dxpu_dxfp_open says of a frame it passes to the decapsulator (beside its last beat):
  // in the clear as it came (its CRC checked there), opened (its tag passed: no CRC, the
  // decapsulator checks the rest), or to be dropped unseen (the open stage counted why).
  localparam logic [1:0] MARK_PLAIN = 2'd0;
  localparam logic [1:0] MARK_OPENED = 2'd1;
  localparam logic [1:0] MARK_DROP = 2'd2;

  // verilator lint_on UNUSEDPARAM

  // RFC 1982, as dxfp_seq_before(): a before b.
  function automatic logic seq_before(input logic [31:0] a, input logic [31:0] b);
    logic [31:0] d = b - a;
    return d != 32'd0 && !d[31];
  endfunction

  // Parameter checks (a module stops elaboration with $error when one fails):
  // a stream of DATA_WIDTH-bit beats, a power of two, 64..512 ...
  function automatic bit width_ok(input int data_width);
    return data_width >= 64 && data_width <= 512 && (data_width & (data_width - 1)) == 0;
  endfunction
  // ... whose DW-enable and byte-count widths follow it ...
  function automatic bit widths_follow(input int data_width, input int keep_width,
                                       input int bytes_width);
    return keep_width * 32 == data_width && bytes_width == $clog2(data_width / 8) + 1;
  endfunction
  // ... and frame buffers of MAX_FRAME bytes: a multiple of 4, DXFP_MIN_SESSION_FRAME (the
  // smallest frame a session uses, 128)..DXFP_MAX_FRAME.
  function automatic bit max_frame_ok(input int max_frame);
    return max_frame >= DXFP_MIN_SESSION_FRAME && max_frame <= DXFP_MAX_FRAME &&
           max_frame % 4 == 0;
  endfunction

endpackage

`resetall
