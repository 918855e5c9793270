// dxpu_tag_remap - tag remapping with the pending-request table (docs/rtl.md). A host's
// non-posted request goes to a device under a tag of the bridge's (a box tag), so that
// requests of many hosts never collide; the entry the box tag indexes remembers whose it was
// (host, device, the host's requester ID and tag) and what its completions still owe (Byte
// Count and Lower Address of the next one), until its deadline.
//
//   alloc    takes the free tag on top of the free stack (lowest tags first, a freed tag is
//            the next one taken, as the golden model's free list): alloc_ok says whether one
//            may be taken now: a tag is free and the host is below its quota. The data path
//            answers a request that cannot have one with a retry, which stops that host's
//            queue (back-pressure per host, so one host cannot stall the others).
//   free     the last completion came: the tag is free at once.
//   partial  a completion came and more will: the entry owes less.
//   abandon  the request ended without its last completion (timeout, release): the tag rests
//            in quarantine until `until`, so that a late completion finds it idle.
//   qrel     the oldest quarantined tag goes back to the free stack.
//
// At most one of alloc, free, partial, abandon and qrel per cycle (the data path issues one
// operation per header or per sweep step). Lookups and the quota check are combinational; the
// earliest deadline is kept in a register, updated by each allocation and recomputed over the
// table only when the entry that held it ends.
//
// The tables are RAMs with one write port, as an FPGA or a standard-cell memory holds them:
// nothing is written per entry per cycle, and INIT clears flag vectors, not the tables.
`resetall
`default_nettype none

module dxpu_tag_remap #(
    parameter int TAGS = 256,
    parameter int HOSTS = 64,
    parameter int DEVICES = 8,
    parameter int TAG_W = $clog2(TAGS),
    parameter int HOST_W = $clog2(HOSTS),
    parameter int DEV_W = $clog2(DEVICES)
) (
    input wire logic clk,
    input wire logic rst,

    // Start over with box_tags tags free (1..TAGS), nothing pending or quarantined.
    input wire logic         init,
    input wire logic [TAG_W:0] box_tags,
    input wire logic [  15:0] max_per_host,

    input  wire logic [HOST_W-1:0] alloc_host,  // the host the quota check is for
    output logic                   alloc_ok,
    output logic      [ TAG_W-1:0] alloc_tag,
    input  wire logic              alloc_en,
    input  wire logic [ DEV_W-1:0] alloc_dev,
    input  wire logic [      15:0] alloc_requester,
    input  wire logic [       9:0] alloc_host_tag,
    input  wire logic [      12:0] alloc_remaining,
    input  wire logic [       6:0] alloc_lower_addr,
    input  wire logic [      63:0] alloc_deadline,

    input  wire logic [ TAG_W-1:0] lk_tag,
    output logic                   lk_in_use,
    output logic      [HOST_W-1:0] lk_host,
    output logic      [ DEV_W-1:0] lk_dev,
    output logic      [      15:0] lk_requester,
    output logic      [       9:0] lk_host_tag,
    output logic      [      12:0] lk_remaining,
    output logic      [       6:0] lk_lower_addr,
    output logic      [      63:0] lk_deadline,

    input wire logic             free_en,
    input wire logic [TAG_W-1:0] free_tag,

    input wire logic             partial_en,
    input wire logic [TAG_W-1:0] partial_tag,
    input wire logic [     12:0] partial_remaining,
    input wire logic [      6:0] partial_lower_addr,

    input wire logic             abandon_en,
    input wire logic [TAG_W-1:0] abandon_tag,
    input wire logic [     63:0] abandon_until,

    input  wire logic        qrel_en,
    output logic             q_nonempty,
    output logic      [63:0] q_front_until,

    output logic [TAG_W:0] tags_free,
    output logic [TAG_W:0] pending,
    output logic [   63:0] next_deadline  // earliest deadline or quarantine end; all ones: none
);

  if (TAGS < 2 || TAGS > 1024) begin : g_bad_tags
    $error("dxpu_tag_remap: TAGS %0d must be 2..1024 (10-bit tags)", TAGS);
  end
  if (HOSTS < 2 || DEVICES < 2) begin : g_bad_sizes
    $error("dxpu_tag_remap: HOSTS and DEVICES must be at least 2");
  end
  if (TAG_W != $clog2(TAGS) || HOST_W != $clog2(HOSTS) || DEV_W != $clog2(DEVICES)) begin : g_bad_w
    $error("dxpu_tag_remap: TAG_W, HOST_W, DEV_W must be the $clog2 of their counts");
  end

  // Who a request was for, written once by its allocation.
  typedef struct packed {
    logic [HOST_W-1:0] host;
    logic [DEV_W-1:0]  dev;
    logic [15:0]       requester;
    logic [9:0]        host_tag;
  } owner_t;
  // What its completions still owe, written by the allocation and by each partial completion.
  typedef struct packed {
    logic [12:0] remaining;
    logic [6:0]  lower_addr;
  } owed_t;

  // The pending table: RAMs with one write port each (the operations are exclusive) and read
  // ports at lk_tag and at the entry an operation ends. Nothing in them is reset: in_use_reg
  // says which entries hold a request, live_reg which were written since INIT (one that was not
  // reads as zero, as after a reset of every entry).
  owner_t owner_mem[TAGS];
  owed_t owed_mem[TAGS];
  logic [63:0] deadline_mem[TAGS];
  logic [TAGS-1:0] in_use_reg, live_reg;

  // The free stack: a RAM of tags with its top at free_count_reg - 1. INIT does not write it:
  // the slots below fresh_reg still hold what INIT would have put there (box_tags-1 at the
  // bottom ... 0 on top, lowest tags first); a pop moves fresh_reg down to the slot it empties,
  // and a push only writes at or above it.
  logic [TAG_W-1:0] stack_mem[TAGS];
  logic [TAG_W:0] free_count_reg, fresh_reg, init_tags_reg;

  // Quarantine, a ring in order of until (q_count_reg says which slots hold one).
  logic [TAG_W-1:0] q_tag_mem[TAGS];
  logic [63:0] q_until_mem[TAGS];
  logic [TAG_W-1:0] q_head_reg, q_tail_reg;
  logic [TAG_W:0] q_count_reg;

  // Requests each host has pending (held_live_reg: written since INIT, else zero).
  logic [TAG_W:0] held_mem[HOSTS];
  logic [HOSTS-1:0] held_live_reg;
  logic [TAG_W:0] pending_reg;
  logic [63:0] earliest_reg;  // earliest deadline of an entry in use; all ones: none

  // Index arithmetic on rings of TAGS entries (TAGS need not be a power of two).
  function automatic logic [TAG_W-1:0] ring_next(input logic [TAG_W-1:0] i);
    return i == TAG_W'(TAGS - 1) ? '0 : i + 1'b1;
  endfunction

  function automatic logic [TAG_W:0] held(input logic [HOST_W-1:0] h);
    return held_live_reg[h] ? held_mem[h] : '0;
  endfunction

  wire [TAG_W:0] top = free_count_reg - 1'b1;
  assign alloc_ok = free_count_reg != '0 && 16'(held(alloc_host)) < max_per_host;
  assign alloc_tag = free_count_reg == '0 ? '0
                   : top < fresh_reg ? TAG_W'(init_tags_reg - 1'b1 - top)
                   : stack_mem[TAG_W'(top)];

  wire lk_ok = 32'(lk_tag) < TAGS;
  wire lk_live = lk_ok && live_reg[lk_tag];
  always_comb begin
    owner_t o;
    owed_t w;
    o = lk_live ? owner_mem[lk_tag] : '0;
    w = lk_live ? owed_mem[lk_tag] : '0;
    lk_in_use     = lk_ok && in_use_reg[lk_tag];
    lk_host       = o.host;
    lk_dev        = o.dev;
    lk_requester  = o.requester;
    lk_host_tag   = o.host_tag;
    lk_remaining  = w.remaining;
    lk_lower_addr = w.lower_addr;
    lk_deadline   = lk_live ? deadline_mem[lk_tag] : '0;
  end

  assign q_nonempty    = q_count_reg != '0;
  assign q_front_until = q_until_mem[q_head_reg];
  assign tags_free     = free_count_reg;
  assign pending       = pending_reg;
  assign next_deadline = q_nonempty && q_front_until < earliest_reg ? q_front_until : earliest_reg;

  // The entry a free or an abandon ends, and its host.
  wire [TAG_W-1:0] end_tag = free_en ? free_tag : abandon_tag;
  wire end_ok = 32'(end_tag) < TAGS;
  wire end_in_use = end_ok && in_use_reg[end_tag];
  wire [HOST_W-1:0] end_host = end_ok && live_reg[end_tag] ? owner_mem[end_tag].host : '0;
  wire do_alloc = alloc_en && alloc_ok;
  wire do_end = free_en || abandon_en;
  wire do_qrel = qrel_en && q_nonempty;
  // A tag goes onto the free stack (freed, or out of quarantine).
  wire push = free_en || do_qrel;
  wire [TAG_W-1:0] push_tag = free_en ? free_tag : q_tag_mem[q_head_reg];

  // The earliest deadline of the entries in use but `skip`: what earliest_reg becomes when the
  // entry holding it ends (a TAGS-way minimum, needed only then).
  function automatic logic [63:0] earliest_but(input logic [TAG_W-1:0] skip);
    logic [63:0] e;
    e = '1;
    for (int t = 0; t < TAGS; t++)
      if (in_use_reg[t] && TAG_W'(t) != skip && deadline_mem[t] < e) e = deadline_mem[t];
    return e;
  endfunction

  // The table RAMs' write ports.
  always_ff @(posedge clk) begin
    if (do_alloc) begin
      owner_mem[alloc_tag] <= '{
          host: alloc_host,
          dev: alloc_dev,
          requester: alloc_requester,
          host_tag: alloc_host_tag
      };
      owed_mem[alloc_tag] <= '{remaining: alloc_remaining, lower_addr: alloc_lower_addr};
      deadline_mem[alloc_tag] <= alloc_deadline;
    end else if (partial_en && 32'(partial_tag) < TAGS) begin
      owed_mem[partial_tag] <= '{remaining: partial_remaining, lower_addr: partial_lower_addr};
    end
    if (push && 32'(free_count_reg) < TAGS) stack_mem[TAG_W'(free_count_reg)] <= push_tag;
    if (abandon_en) begin
      q_tag_mem[q_tail_reg]   <= abandon_tag;
      q_until_mem[q_tail_reg] <= abandon_until;
    end
    if (do_alloc) held_mem[alloc_host] <= held(alloc_host) + 1'b1;
    else if (do_end) held_mem[end_host] <= held(end_host) - 1'b1;
  end

  always_ff @(posedge clk) begin
    if (rst || init) begin
      in_use_reg <= '0;
      live_reg <= '0;
      held_live_reg <= '0;
      earliest_reg <= '1;
      free_count_reg <= rst ? '0 : box_tags;
      fresh_reg <= rst ? '0 : box_tags;
      init_tags_reg <= box_tags;
      q_head_reg <= '0;
      q_tail_reg <= '0;
      q_count_reg <= '0;
      pending_reg <= '0;
    end else begin
      if (do_alloc) begin
        in_use_reg[alloc_tag] <= 1'b1;
        live_reg[alloc_tag] <= 1'b1;
        held_live_reg[alloc_host] <= 1'b1;
        if (alloc_deadline < earliest_reg) earliest_reg <= alloc_deadline;
        free_count_reg <= free_count_reg - 1'b1;
        if (fresh_reg > top) fresh_reg <= top;
        pending_reg <= pending_reg + 1'b1;
      end
      if (do_end) begin
        if (end_ok) in_use_reg[end_tag] <= 1'b0;
        held_live_reg[end_host] <= 1'b1;
        if (end_in_use && deadline_mem[end_tag] == earliest_reg)
          earliest_reg <= earliest_but(end_tag);
        pending_reg <= pending_reg - 1'b1;
      end
      if (push) free_count_reg <= free_count_reg + 1'b1;
      if (abandon_en) q_tail_reg <= ring_next(q_tail_reg);
      if (do_qrel) q_head_reg <= ring_next(q_head_reg);
      if (abandon_en && !do_qrel) q_count_reg <= q_count_reg + 1'b1;
      else if (do_qrel && !abandon_en) q_count_reg <= q_count_reg - 1'b1;
    end
  end

endmodule

`resetall
