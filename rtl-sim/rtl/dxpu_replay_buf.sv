// dxpu_replay_buf - the DxFP replay buffer (docs/protocol.md 4.4-4.5, docs/rtl.md): the
// transmit half of lib/core's session (lib/core/dxfp_session.c: dxfp_session_send's replay
// buffer, take_ack, take_nak, the RTO replay in the timer check, the sending loop of
// build_data) in hardware. TLPs to send go in, each is stored and numbered; they come out in
// order to the encapsulator (dxpu_dxfp_encap), first transmissions and replays; the peer's
// cumulative acknowledgements free them, its NAKs and the retransmission timer replay them.
//
// Sequence numbers, as lib/core's (32-bit serial arithmetic, dxfp_seq_before):
//   [una, send_ptr)        sent, not acknowledged
//   [send_ptr, sent_end)   sent before, to be sent again (a replay is in progress)
//   [sent_end, next_seq)   stored, never sent
// sent_end is lib/core's replay_end while a replay runs and send_ptr otherwise: a TLP sent at
// send_ptr is a retransmission (m_cnt_tlps_retx) when send_ptr is before sent_end, else a first
// transmission (m_cnt_tlps_tx) and sent_end advances with it.
//
// In: TLPs header beside payload (docs/rtl.md), as dxpu_dxfp_encap's input; trusted (the
// bridge's own path): s_tlp_len is the TLP's bytes and s_tlp_eop comes on the beat that reaches
// them (a TLP without payload is one beat). Storage: a ring of RING_BYTES / (DATA_WIDTH/8)
// beats, each beat stored whole with its DW enables and eop (so a replay is bit for bit what
// came in), and a descriptor table of WINDOW entries indexed by sequence number mod WINDOW:
// the header, s_tlp_len and where the TLP's first beat is in the ring. A TLP's sop beat is
// taken only when it can be stored whole: fewer than WINDOW TLPs held (next_seq - una, lib/core's
// replay_window check) and room in the ring for all its beats (lib/core's replay_bytes check,
// counted in beats); else s_tlp_ready stays low (m_cnt_full_cycles counts those cycles) and
// nothing is lost. A TLP joins next_seq when its eop beat is stored (store and forward per TLP).
//
// Out: m_tlp_* as the input plus m_tlp_seq (the TLP's sequence number, with every beat).
// One output register; the beats of a TLP are read from the ring, the header from the table.
//
// Acknowledgements (ack_valid/ack_seq: the peer's next expected sequence number): cumulative,
// lib/core's take_ack: an ack after una frees every TLP before it (una advances; send_ptr too
// when a replay had not reached it yet); an old one (not after una) does nothing; one after
// sent_end names a TLP never sent: ignored and counted (m_cnt_bad_ack). lib/core's frame check
// is against next_seq (dxpu_dxfp_decap's cfg_tx_next_seq); this one is stricter.
// NAK (nak_valid/nak_seq): lib/core's take_ack then take_nak with the same number: a bad one
// (after sent_end) is counted in m_cnt_bad_ack only; else it acknowledges what is before it,
// is counted (m_cnt_naks), and acts when nak_seq is una afterwards, a TLP is in flight (una !=
// send_ptr) and it does not repeat the last NAK acted on within cfg_rto time units
// (now < last_nak_time + cfg_rto, lib/core's rule; 64-bit, wrapping as lib/core's): then
// send_ptr = una (replay). A NAK not acted on is counted in m_cnt_naks_ignored.
// rto_expire (a pulse from the firmware's retransmission timer): send_ptr = una, counted
// (m_cnt_rto); with nothing sent and unacknowledged it changes nothing.
// Both ack_valid and nak_valid may be high in one cycle: the ack is taken first.
// `now` and cfg_rto are in any one time unit (lib/core's: ns); a cycle counter works as well.
//
// Order within a cycle: the output takes its next beat from the registers of the cycle (send
// first), then acks, NAKs, rto_expire and seq_init apply to the result.
//
// Sequence numbers in the encapsulator: it numbers TLPs itself (dxpu_dxfp_encap's m_next_seq),
// so this module keeps the number it will give the next TLP (enc_seq) and, whenever that is not
// send_ptr (a replay, an ack that skipped part of one, after reset or seq_init), waits for the
// output register to drain, then holds m_seq_load with m_seq_load_value = send_ptr until
// m_seq_load_ready (dxpu_dxfp_encap's seq_load handshake) before the next TLP's sop. The two
// chain directly: m_tlp_* into s_tlp_*, m_seq_load* into seq_load*.
//
// seq_init (with seq_init_value) starts a session: everything is forgotten (not the counters),
// una = send_ptr = sent_end = next_seq = seq_init_value, and the next TLP out is preceded by a
// sequence load. Only while no TLP is half-way in or out (m_tlp_valid low).
//
// Timing: a beat in per cycle and a beat out per cycle, both while unstalled; one header per
// cycle for single-beat TLPs; a TLP can leave from the cycle after its eop beat came in. A
// sequence load costs the output two cycles without a beat (the register drains, the load is
// taken). Measured in tb/replay_buf_tb.cc.
//
// Memories: the ring and the table are written once per cycle (the input's beat); the ring is
// read at one address (the output's beat), the table at send_ptr (the output's header) and at
// the acknowledged number (where the ring's oldest held beat now is).
`resetall
`default_nettype none

module dxpu_replay_buf
  import dxpu_tlp_pkg::*;
#(
    parameter int DATA_WIDTH = 64,
    parameter int KEEP_WIDTH = DATA_WIDTH / 32,
    parameter int WINDOW     = 256,   // TLPs held: power of two, 2..65536 (replay_window)
    parameter int RING_BYTES = 65536  // beat ring: power of two, 8192..16 MiB (replay_bytes)
) (
    input wire logic clk,
    input wire logic rst,

    input wire logic [63:0] now,      // time, for the repeated-NAK rule
    input wire logic [63:0] cfg_rto,  // the retransmission timeout, in now's unit

    // Start a session from sequence number seq_init_value
    input wire logic        seq_init,
    input wire logic [31:0] seq_init_value,

    // TLPs to send, header beside payload
    input  wire logic [              127:0] s_tlp_hdr,
    input  wire logic [TLP_LEN_WIDTH-1:0] s_tlp_len,
    input  wire logic [   DATA_WIDTH-1:0] s_tlp_data,
    input  wire logic [   KEEP_WIDTH-1:0] s_tlp_keep,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire logic                     s_tlp_sop,   // implied: the beat after an eop
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire logic                     s_tlp_eop,
    input  wire logic                     s_tlp_valid,
    output wire logic                     s_tlp_ready,

    // TLPs to the encapsulator, first transmissions and replays
    output wire logic [              127:0] m_tlp_hdr,
    output wire logic [TLP_LEN_WIDTH-1:0] m_tlp_len,
    output wire logic [   DATA_WIDTH-1:0] m_tlp_data,
    output wire logic [   KEEP_WIDTH-1:0] m_tlp_keep,
    output wire logic                     m_tlp_sop,
    output wire logic                     m_tlp_eop,
    output wire logic [             31:0] m_tlp_seq,
    output wire logic                     m_tlp_valid,
    input  wire logic                     m_tlp_ready,

    // The encapsulator's next sequence number
    output wire logic        m_seq_load,
    output wire logic [31:0] m_seq_load_value,
    input  wire logic        m_seq_load_ready,

    // From the peer (dxpu_dxfp_decap's m_peer_ack_*) and the retransmission timer
    input wire logic        ack_valid,
    input wire logic [31:0] ack_seq,
    input wire logic        nak_valid,
    input wire logic [31:0] nak_seq,
    input wire logic        rto_expire,

    // State and counters
    output wire logic [31:0] m_una,       // oldest TLP not acknowledged
    output wire logic [31:0] m_send_ptr,  // the next TLP to send
    output wire logic [31:0] m_sent_end,  // the first TLP never sent
    output wire logic [31:0] m_next_seq,  // the number the next TLP in gets
    output wire logic [31:0] m_in_flight, // TLPs held: next_seq - una
    output wire logic [31:0] m_cnt_tlps_tx,       // first transmissions
    output wire logic [31:0] m_cnt_tlps_retx,     // retransmissions
    output wire logic [31:0] m_cnt_naks,          // NAKs taken (not bad)
    output wire logic [31:0] m_cnt_naks_ignored,  // ...of which not acted on
    output wire logic [31:0] m_cnt_rto,           // rto_expire pulses
    output wire logic [31:0] m_cnt_bad_ack,       // acks and NAKs after sent_end
    output wire logic [31:0] m_cnt_full_cycles    // cycles a sop beat waited for room
);

  localparam int BEAT_BYTES = DATA_WIDTH / 8;
  localparam int DEPTH = RING_BYTES / BEAT_BYTES;  // ring beats
  localparam int AW = $clog2(DEPTH);
  localparam int WW = $clog2(WINDOW);
  localparam int BEAT_SHIFT = $clog2(BEAT_BYTES);
  localparam int WORD_W = DATA_WIDTH + KEEP_WIDTH + 1;  // {eop, keep, data}

  // Parameters checked at elaboration.
  if (DATA_WIDTH < 64 || DATA_WIDTH > 512 || (DATA_WIDTH & (DATA_WIDTH - 1)) != 0) begin : g_bad_width
    $error("dxpu_replay_buf: DATA_WIDTH %0d must be a power of two, 64..512", DATA_WIDTH);
  end
  if (KEEP_WIDTH * 32 != DATA_WIDTH) begin : g_bad_keep
    $error("dxpu_replay_buf: KEEP_WIDTH follows DATA_WIDTH");
  end
  if (WINDOW < 2 || WINDOW > 65536 || (WINDOW & (WINDOW - 1)) != 0) begin : g_bad_window
    $error("dxpu_replay_buf: WINDOW %0d must be a power of two, 2..65536", WINDOW);
  end
  // 8192 bytes hold the largest TLP s_tlp_len can describe (8191 bytes) at every width, so a
  // TLP always fits an empty ring.
  if (RING_BYTES < 8192 || RING_BYTES > (1 << 24) || (RING_BYTES & (RING_BYTES - 1)) != 0)
  begin : g_bad_ring
    $error("dxpu_replay_buf: RING_BYTES %0d must be a power of two, 8192..16777216", RING_BYTES);
  end

  // lib/core's dxfp_seq_before: a is before b.
  function automatic logic seq_before(input logic [31:0] a, input logic [31:0] b);
    logic [31:0] d = b - a;
    return d != 32'd0 && !d[31];
  endfunction

  // ---- storage ----
  logic [WORD_W-1:0] ring_mem[DEPTH];
  logic [127:0] hdr_mem[WINDOW];
  logic [TLP_LEN_WIDTH-1:0] len_mem[WINDOW];
  logic [AW:0] off_mem[WINDOW];  // ring pointer (one bit more than the address) of beat 0

  // ---- state ----
  logic [31:0] una_reg = '0, una_next;
  logic [31:0] send_ptr_reg = '0, send_ptr_next;
  logic [31:0] sent_end_reg = '0, sent_end_next;
  logic [31:0] next_seq_reg = '0, next_seq_next;
  logic [31:0] enc_seq_reg = '0, enc_seq_next;  // the encapsulator's next number...
  logic enc_valid_reg = 1'b0, enc_valid_next;  // ...known (loaded since reset / seq_init)
  // Ring pointers, AW+1 bits: wr - head in 0..DEPTH.
  logic [AW:0] wr_ptr_reg = '0, wr_ptr_next;  // the next beat in goes there
  logic [AW:0] head_reg = '0, head_next;  // the oldest held beat (una's first)
  logic [AW:0] cur_off_reg = '0, cur_off_next;  // the first beat of the TLP coming in
  logic in_tlp_reg = 1'b0, in_tlp_next;  // a TLP's payload beats are coming in
  // Output
  logic mid_reg = 1'b0, mid_next;  // the beats after a TLP's sop are being sent...
  logic [AW:0] rd_ptr_reg = '0, rd_ptr_next;  // ...the next one from there
  logic out_valid_reg = 1'b0, out_valid_next;
  logic [127:0] out_hdr_reg = '0;
  logic [TLP_LEN_WIDTH-1:0] out_len_reg = '0;
  logic [DATA_WIDTH-1:0] out_data_reg = '0;
  logic [KEEP_WIDTH-1:0] out_keep_reg = '0;
  logic out_sop_reg = 1'b0, out_eop_reg = 1'b0;
  logic [31:0] out_seq_reg = '0;
  // The repeated-NAK rule
  logic nak_acted_reg = 1'b0, nak_acted_next;
  logic [31:0] last_nak_seq_reg = '0, last_nak_seq_next;
  logic [63:0] last_nak_time_reg = '0, last_nak_time_next;
  // Counters
  logic [31:0] cnt_tx_reg = '0, cnt_tx_next;
  logic [31:0] cnt_retx_reg = '0, cnt_retx_next;
  logic [31:0] cnt_naks_reg = '0, cnt_naks_next;
  logic [31:0] cnt_naks_ign_reg = '0, cnt_naks_ign_next;
  logic [31:0] cnt_rto_reg = '0, cnt_rto_next;
  logic [31:0] cnt_bad_ack_reg = '0, cnt_bad_ack_next;
  logic [31:0] cnt_full_reg = '0, cnt_full_next;

  // ---- input: room for the TLP offered ----
  logic [AW:0] used_h, used_r, used;
  logic [13:0] hdr_bytes, pay_bytes, need;
  logic [31:0] held;
  logic room, tlp_ready, take, take_sop;
  always_comb begin
    used_h = wr_ptr_reg - head_reg;
    // The beats a TLP being sent still needs stay held even when an ack freed them (an ack
    // during a replay may name a TLP half-way out).
    used_r = wr_ptr_reg - rd_ptr_reg;
    used = mid_reg && used_r > used_h ? used_r : used_h;
    hdr_bytes = s_tlp_hdr[125] ? 14'd16 : 14'd12;
    pay_bytes = 14'(s_tlp_len) > hdr_bytes ? 14'(s_tlp_len) - hdr_bytes : 14'd0;
    need = (pay_bytes + 14'(BEAT_BYTES - 1)) >> BEAT_SHIFT;
    if (need == 14'd0) need = 14'd1;
    held = next_seq_reg - una_reg;
    room = held < 32'(WINDOW) && 32'(need) <= 32'(DEPTH) - 32'(used);
    // A payload beat always has its room (reserved at the sop); the check guards the ring
    // against a TLP longer than its s_tlp_len.
    tlp_ready = !seq_init && (in_tlp_reg ? 32'(used) < 32'(DEPTH) : room);
    take = s_tlp_valid && tlp_ready;
    take_sop = take && !in_tlp_reg;
  end
  assign s_tlp_ready = tlp_ready;

  // ---- output: the next beat ----
  logic [WW-1:0] sp_idx;
  logic [AW:0] rd_addr;
  logic [WORD_W-1:0] word;
  logic advance, issue_sop, issue_mid;
  // From registers only (kept apart from the block below, whose inputs include m_tlp_ready:
  // the encapsulator's s_tlp_ready depends on its seq_load, which is load_go).
  wire have = send_ptr_reg != next_seq_reg;
  wire need_load = !enc_valid_reg || enc_seq_reg != send_ptr_reg;
  // The load waits for the output register to drain: the encapsulator has taken every beat
  // numbered the old way.
  wire load_go = need_load && have && !mid_reg && !out_valid_reg && !seq_init;
  always_comb begin
    sp_idx = send_ptr_reg[WW-1:0];
    rd_addr = mid_reg ? rd_ptr_reg : off_mem[sp_idx];
    word = ring_mem[rd_addr[AW-1:0]];
    advance = !out_valid_reg || m_tlp_ready;
    issue_mid = advance && mid_reg;
    issue_sop = advance && !mid_reg && have && !need_load && !seq_init;
  end
  assign m_seq_load = load_go;
  assign m_seq_load_value = send_ptr_reg;

  // ---- acknowledgements, NAKs, the timer ----
  logic ack_bad, nak_bad, nak_ok, nak_act, nak_repeat;
  logic [31:0] una1, sp1, sp2;
  logic [WW-1:0] una1_idx;
  always_comb begin
    // This cycle's send first.
    sp1 = issue_sop ? send_ptr_reg + 32'd1 : send_ptr_reg;
    ack_bad = ack_valid && seq_before(sent_end_reg, ack_seq);
    nak_bad = nak_valid && seq_before(sent_end_reg, nak_seq);
    nak_ok = nak_valid && !nak_bad;
    // The cumulative acknowledgement: the ack, then the NAK's number.
    una1 = una_reg;
    if (ack_valid && !ack_bad && seq_before(una1, ack_seq)) una1 = ack_seq;
    if (nak_ok && seq_before(una1, nak_seq)) una1 = nak_seq;
    una1_idx = una1[WW-1:0];
    sp2 = seq_before(sp1, una1) ? una1 : sp1;  // acked while queued for replay
    nak_repeat = nak_acted_reg && last_nak_seq_reg == nak_seq &&
        now < last_nak_time_reg + cfg_rto;
    nak_act = nak_ok && nak_seq == una1 && una1 != sp2 && !nak_repeat;
  end

  always_comb begin
    una_next = una1;
    head_next = head_reg;
    if (una1 != una_reg) begin
      // The oldest held beat is the first of una's TLP; of the TLP coming in, or the next
      // one, when una reaches next_seq.
      if (una1 == next_seq_reg) head_next = in_tlp_reg ? cur_off_reg : wr_ptr_reg;
      else head_next = off_mem[una1_idx];
    end
    send_ptr_next = (nak_act || rto_expire) ? una1 : sp2;
    sent_end_next = sent_end_reg;
    cnt_tx_next = cnt_tx_reg;
    cnt_retx_next = cnt_retx_reg;
    if (issue_sop) begin
      if (send_ptr_reg == sent_end_reg) begin
        sent_end_next = sent_end_reg + 32'd1;
        cnt_tx_next = cnt_tx_reg + 32'd1;
      end else begin
        cnt_retx_next = cnt_retx_reg + 32'd1;
      end
    end
    enc_seq_next = enc_seq_reg;
    enc_valid_next = enc_valid_reg;
    if (load_go && m_seq_load_ready) begin
      enc_seq_next = send_ptr_reg;
      enc_valid_next = 1'b1;
    end
    if (issue_sop) enc_seq_next = enc_seq_reg + 32'd1;

    nak_acted_next = nak_acted_reg;
    last_nak_seq_next = last_nak_seq_reg;
    last_nak_time_next = last_nak_time_reg;
    if (nak_act) begin
      nak_acted_next = 1'b1;
      last_nak_seq_next = nak_seq;
      last_nak_time_next = now;
    end
    cnt_naks_next = cnt_naks_reg + (nak_ok ? 32'd1 : 32'd0);
    cnt_naks_ign_next = cnt_naks_ign_reg + (nak_ok && !nak_act ? 32'd1 : 32'd0);
    cnt_rto_next = cnt_rto_reg + (rto_expire ? 32'd1 : 32'd0);
    cnt_bad_ack_next = cnt_bad_ack_reg + 32'(ack_bad) + 32'(nak_bad);
    cnt_full_next = cnt_full_reg + (s_tlp_valid && !in_tlp_reg && !tlp_ready && !seq_init ?
        32'd1 : 32'd0);

    // Input
    wr_ptr_next = take ? wr_ptr_reg + 1'b1 : wr_ptr_reg;
    cur_off_next = take_sop ? wr_ptr_reg : cur_off_reg;
    in_tlp_next = take ? !s_tlp_eop : in_tlp_reg;
    next_seq_next = take && s_tlp_eop ? next_seq_reg + 32'd1 : next_seq_reg;

    // Output
    mid_next = mid_reg;
    rd_ptr_next = rd_ptr_reg;
    out_valid_next = out_valid_reg && !m_tlp_ready;
    if (issue_sop || issue_mid) begin
      out_valid_next = 1'b1;
      mid_next = !word[WORD_W-1];
      rd_ptr_next = rd_addr + 1'b1;
    end

    if (seq_init) begin
      una_next = seq_init_value;
      send_ptr_next = seq_init_value;
      sent_end_next = seq_init_value;
      next_seq_next = seq_init_value;
      enc_valid_next = 1'b0;
      wr_ptr_next = '0;
      head_next = '0;
      in_tlp_next = 1'b0;
      mid_next = 1'b0;
      out_valid_next = 1'b0;
      nak_acted_next = 1'b0;
    end
  end

  always_ff @(posedge clk) begin
    una_reg <= una_next;
    send_ptr_reg <= send_ptr_next;
    sent_end_reg <= sent_end_next;
    next_seq_reg <= next_seq_next;
    enc_seq_reg <= enc_seq_next;
    enc_valid_reg <= enc_valid_next;
    wr_ptr_reg <= wr_ptr_next;
    head_reg <= head_next;
    cur_off_reg <= cur_off_next;
    in_tlp_reg <= in_tlp_next;
    mid_reg <= mid_next;
    rd_ptr_reg <= rd_ptr_next;
    out_valid_reg <= out_valid_next;
    nak_acted_reg <= nak_acted_next;
    last_nak_seq_reg <= last_nak_seq_next;
    last_nak_time_reg <= last_nak_time_next;
    cnt_tx_reg <= cnt_tx_next;
    cnt_retx_reg <= cnt_retx_next;
    cnt_naks_reg <= cnt_naks_next;
    cnt_naks_ign_reg <= cnt_naks_ign_next;
    cnt_rto_reg <= cnt_rto_next;
    cnt_bad_ack_reg <= cnt_bad_ack_next;
    cnt_full_reg <= cnt_full_next;
    if (issue_sop) begin
      out_hdr_reg <= hdr_mem[sp_idx];
      out_len_reg <= len_mem[sp_idx];
      out_seq_reg <= send_ptr_reg;
    end
    if (issue_sop || issue_mid) begin
      out_data_reg <= word[DATA_WIDTH-1:0];
      out_keep_reg <= word[DATA_WIDTH+:KEEP_WIDTH];
      out_eop_reg <= word[WORD_W-1];
      out_sop_reg <= issue_sop;
    end

    if (rst) begin
      una_reg <= '0;
      send_ptr_reg <= '0;
      sent_end_reg <= '0;
      next_seq_reg <= '0;
      enc_seq_reg <= '0;
      enc_valid_reg <= 1'b0;
      wr_ptr_reg <= '0;
      head_reg <= '0;
      cur_off_reg <= '0;
      in_tlp_reg <= 1'b0;
      mid_reg <= 1'b0;
      rd_ptr_reg <= '0;
      out_valid_reg <= 1'b0;
      nak_acted_reg <= 1'b0;
      last_nak_seq_reg <= '0;
      last_nak_time_reg <= '0;
      cnt_tx_reg <= '0;
      cnt_retx_reg <= '0;
      cnt_naks_reg <= '0;
      cnt_naks_ign_reg <= '0;
      cnt_rto_reg <= '0;
      cnt_bad_ack_reg <= '0;
      cnt_full_reg <= '0;
    end
  end

  // The memories: one write per cycle each, the input's beat (and, with its sop, its entry).
  always_ff @(posedge clk) begin
    if (take && !rst) ring_mem[wr_ptr_reg[AW-1:0]] <= {s_tlp_eop, s_tlp_keep, s_tlp_data};
  end
  always_ff @(posedge clk) begin
    if (take_sop && !rst) begin
      hdr_mem[next_seq_reg[WW-1:0]] <= s_tlp_hdr;
      len_mem[next_seq_reg[WW-1:0]] <= s_tlp_len;
      off_mem[next_seq_reg[WW-1:0]] <= wr_ptr_reg;
    end
  end

  assign m_tlp_hdr = out_hdr_reg;
  assign m_tlp_len = out_len_reg;
  assign m_tlp_data = out_data_reg;
  assign m_tlp_keep = out_keep_reg;
  assign m_tlp_sop = out_sop_reg;
  assign m_tlp_eop = out_eop_reg;
  assign m_tlp_seq = out_seq_reg;
  assign m_tlp_valid = out_valid_reg;
  assign m_una = una_reg;
  assign m_send_ptr = send_ptr_reg;
  assign m_sent_end = sent_end_reg;
  assign m_next_seq = next_seq_reg;
  assign m_in_flight = next_seq_reg - una_reg;
  assign m_cnt_tlps_tx = cnt_tx_reg;
  assign m_cnt_tlps_retx = cnt_retx_reg;
  assign m_cnt_naks = cnt_naks_reg;
  assign m_cnt_naks_ignored = cnt_naks_ign_reg;
  assign m_cnt_rto = cnt_rto_reg;
  assign m_cnt_bad_ack = cnt_bad_ack_reg;
  assign m_cnt_full_cycles = cnt_full_reg;

endmodule

`resetall
