// dxpu_dxfp_pkg - the DxFP frame layout of include/dxpu/dxfp.h (docs/protocol.md section 4), the
// parse verdicts of lib/core's enum dxfp_err (lib/core/dxfp_frame.h) and the serial-number order
// of lib/core/dxfp_seq.h, with the same numbers, for the framing modules (dxpu_dxfp_encap,
// dxpu_dxfp_decap); and the checks of their parameters, shared so that both refuse the same.
package dxpu_dxfp_pkg;
  // Each module that imports the package uses some of its constants, none uses all.
  // verilator lint_off UNUSEDPARAM

  // Sizes in bytes (include/dxpu/dxfp.h: DXFP_HDR_SIZE, DXFP_CRC_SIZE, DXFP_MIN_FRAME,
  // DXFP_MAX_FRAME, DXFP_REC_HDR_SIZE).
  localparam int DXFP_HDR_SIZE = 32;
  localparam int DXFP_CRC_SIZE = 4;
  localparam int DXFP_MIN_FRAME = DXFP_HDR_SIZE + DXFP_CRC_SIZE;  // 36
  localparam int DXFP_MAX_FRAME = 9216;
  localparam int DXFP_REC_HDR_SIZE = 4;
  // Record bodies of a fixed size (DXFP_CREDIT_BODY_SIZE, DXFP_HELLO_BODY_SIZE,
  // DXFP_CLOSE_BODY_SIZE).
  localparam int DXFP_CREDIT_BODY_SIZE = 24;
  localparam int DXFP_HELLO_BODY_SIZE = 24;
  localparam int DXFP_CLOSE_BODY_SIZE = 8;

  // The header (DXFP_VERSION; byte offsets DXFP_OFF_*) as 32-bit words, byte 0 in [31:24]: DW0
  // Version, Type, Flags, reserved; DW1 Length, Record count; DW2..DW5 sessions and epochs; DW6
  // Sequence; DW7 Acknowledgement. The records start at DW 8.
  localparam logic [7:0] DXFP_VERSION = 8'd1;
  localparam int DW_SEQ = 6;  // DXFP_OFF_SEQ / 4
  localparam int DW_ACK = 7;  // DXFP_OFF_ACK / 4
  localparam int DW_RECORDS = DXFP_HDR_SIZE / 4;

  // enum dxfp_frame_type
  localparam logic [7:0] T_HELLO = 8'd1, T_WELCOME = 8'd2, T_DATA = 8'd3, T_CLOSE = 8'd4;
  // enum dxfp_record_type
  localparam logic [7:0] REC_TLP = 8'd1, REC_CREDIT = 8'd2, REC_HELLO = 8'd3, REC_CLOSE = 8'd4;
  // DXFP_F_ACK_REQ, DXFP_F_NAK, DXFP_F_ALL
  localparam logic [7:0] F_ACK_REQ = 8'h01, F_NAK = 8'h02, F_ALL = 8'h03;

  // enum dxfp_err (lib/core/dxfp_frame.h), the verdicts a received frame gets.
  localparam logic [2:0] E_OK = 3'd0, E_TRUNCATED = 3'd1, E_BAD_LENGTH = 3'd2, E_BAD_CRC = 3'd3,
                         E_BAD_VERSION = 3'd4, E_BAD_TYPE = 3'd5, E_MALFORMED = 3'd6;

  // dxpu_dxfp_port's counters (m_counters: counter i in bits 32i+31:32i).
  localparam int PORT_FRAMES_TX = 0;  // frames sent (with TLPs or standalone)
  localparam int PORT_TLPS_FRAMED = 1;  // TLP records put in frames (first and again)
  localparam int PORT_TLPS_TX = 2;  // first transmissions
  localparam int PORT_TLPS_RETX = 3;  // retransmissions
  localparam int PORT_NAKS_RX = 4;  // NAKs taken
  localparam int PORT_NAKS_IGNORED = 5;  // ... of which not acted on
  localparam int PORT_RTO = 6;  // retransmission timer expiries
  localparam int PORT_BAD_ACK_RX = 7;  // peer acks naming a TLP never sent (replay buffer)
  localparam int PORT_FRAMES_OK = 8;  // frames received that parse
  localparam int PORT_BAD_CRC = 9;
  localparam int PORT_DUPLICATE = 10;  // TLP records received before the expected number
  localparam int PORT_GAP = 11;  // TLP records dropped behind a gap
  localparam int PORT_WINDOW = 12;  // frames dropped: window-violation
  localparam int PORT_BAD_ACK = 13;  // frames dropped: bad-ack
  localparam int PORT_DELIVERED = 14;  // TLPs delivered
  localparam int PORT_NAKS_TX = 15;  // NAKs sent
  localparam int PORT_STANDALONE_TX = 16;  // frames sent without a TLP (ack, NAK, keepalive)
  localparam int PORT_KEEPALIVES_TX = 17;  // frames sent with ACK_REQ
  localparam int PORT_TRUNCATED = 18;
  localparam int PORT_BAD_LENGTH = 19;
  localparam int PORT_BAD_VERSION = 20;
  localparam int PORT_BAD_TYPE = 21;
  localparam int PORT_MALFORMED = 22;
  localparam int PORT_OVERSIZE = 23;  // TLPs to send dropped: larger than an empty frame
  localparam int PORT_PROBES_TX = 24;  // credit probes sent (refused for credit, nothing in flight)
  localparam int PORT_CREDIT_VIOLATION = 25;  // frames dropped: their TLPs passed our credit
  localparam int PORT_COUNTERS = 26;

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
  // ... and frame buffers of MAX_FRAME bytes: a multiple of 4, 128..DXFP_MAX_FRAME (128: the
  // smallest frame a session uses, DXFP_MIN_SESSION_FRAME).
  function automatic bit max_frame_ok(input int max_frame);
    return max_frame >= 128 && max_frame <= DXFP_MAX_FRAME && max_frame % 4 == 0;
  endfunction

endpackage
