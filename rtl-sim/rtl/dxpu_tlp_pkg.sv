// dxpu_tlp_pkg - the TLP kinds, classes and decode errors of lib/core's tlp_codec.h, with the
// same numbers: the RTL's decisions are compared with the C decoder's bit for bit.
package dxpu_tlp_pkg;

  // enum dxpu_tlp_kind
  typedef enum logic [3:0] {
    KIND_INVALID = 4'd0,
    KIND_MRD     = 4'd1,
    KIND_MWR     = 4'd2,
    KIND_CFGRD0  = 4'd3,
    KIND_CFGWR0  = 4'd4,
    KIND_CFGRD1  = 4'd5,
    KIND_CFGWR1  = 4'd6,
    KIND_CPL     = 4'd7,
    KIND_CPLD    = 4'd8,
    KIND_MSG     = 4'd9,
    KIND_MSGD    = 4'd10
  } kind_t;

  // enum dxpu_tlp_class
  typedef enum logic [1:0] {
    CLASS_POSTED     = 2'd0,
    CLASS_NON_POSTED = 2'd1,
    CLASS_COMPLETION = 2'd2
  } class_t;

  // enum dxpu_tlp_err (the decoder's rules; the encoder-only codes never come out of the RTL)
  typedef enum logic [4:0] {
    ERR_OK               = 5'd0,
    ERR_SHORT_HEADER     = 5'd1,
    ERR_SHORT_PAYLOAD    = 5'd2,
    ERR_LENGTH_MISMATCH  = 5'd3,
    ERR_RESERVED_FMT     = 5'd4,
    ERR_RESERVED_TYPE    = 5'd5,
    ERR_UNSUPPORTED      = 5'd6,
    ERR_RESERVED_AT      = 5'd7,
    ERR_ADDR64_BELOW_4G  = 5'd8,
    ERR_LAST_BE_1DW      = 5'd9,
    ERR_FIRST_BE_ZERO    = 5'd10,
    ERR_LAST_BE_ZERO     = 5'd11,
    ERR_BE_NONCONTIG     = 5'd12,
    ERR_CROSSES_4K       = 5'd13,
    ERR_CFG_LENGTH       = 5'd14,
    ERR_CFG_ATTR         = 5'd15,
    ERR_RESERVED_STATUS  = 5'd16,
    ERR_CPLD_STATUS      = 5'd17,
    ERR_CPL_BYTE_COUNT   = 5'd18,
    ERR_CPL_SPLIT_ALIGN  = 5'd19,
    ERR_RESERVED_ROUTING = 5'd20,
    ERR_MSG_FORM         = 5'd21
  } err_t;

  // Fmt[2:0], Type[4:0] (docs/protocol.md 5.1)
  localparam logic [2:0] FMT_PREFIX = 3'b100;
  localparam logic [4:0] TYPE_MEM = 5'h00, TYPE_MEM_LK = 5'h01, TYPE_IO = 5'h02,
                         TYPE_CFG0 = 5'h04, TYPE_CFG1 = 5'h05, TYPE_CPL = 5'h0a,
                         TYPE_CPL_LK = 5'h0b, TYPE_FETCHADD = 5'h0c, TYPE_SWAP = 5'h0d,
                         TYPE_CAS = 5'h0e, TYPE_TCFG = 5'h1b;

  // Bytes in a TLP record: up to 4 DW header + 1024 DW payload + digest = 4116.
  localparam int TLP_LEN_WIDTH = 13;

endpackage
