//! The top module of every design: the ports, one front end per port, the execute stage
//! (write-through for an ALU that only writes, read-modify-write otherwise: `rmw`), the one
//! management port and clear, the bank write port, the banks and the answer FIFOs.

use std::fmt::Write as _;

use crate::cell::CellAlu;
use crate::geo::{bank_module_name, part, range, Geo};
use crate::pins::{bank_pins, connect, core_pins, declare};
use crate::pipeline::PipelineConfig;
use crate::rmw::code::CellCode;
use crate::{bank_file_name, op, rmw};

/// The declaration of operation code 2 for `alu` (a max ALU ignores it).
fn second_op(alu: CellAlu) -> &'static str {
    match alu {
        CellAlu::SetBit => ", OP_CLEAR = 2'd2",
        CellAlu::Counter => ", OP_DELETE = 2'd2",
        CellAlu::Max | CellAlu::Fixed => "",
    }
}

pub(crate) fn top_module(v: &mut String, cfg: &PipelineConfig, g: &Geo) {
    let t = &g.top;
    let (aw, l) = (g.aw, g.lanes);
    ports(v, g);
    let _ = writeln!(
        v,
        "    localparam [1:0] OP_LOOKUP = 2'd{}{}{};\n    localparam [{}:0] LAST_ADDR = {aw}'d{};\n",
        op::LOOKUP,
        // Only the read-modify-write compares ops here: a static design's front decodes its
        // inserts itself (`f0_insert`), and a retrieval table has none.
        if !cfg.cells.reads_cells() {
            String::new()
        } else {
            format!(", OP_INSERT = 2'd{}", op::INSERT)
        },
        second_op(cfg.cells.alu),
        aw - 1,
        g.depth - 1
    );
    for p in 0..g.ports {
        front(v, g, p, cfg.op_clears());
    }
    let read_b = cfg.cells.reads_cells();
    let update = if read_b {
        rmw::execute(v, cfg, g)
    } else {
        for p in 0..g.ports {
            lookup_stage(v, cfg, g, p);
        }
        let we = if cfg.cells.alu == CellAlu::Fixed {
            "1'b0"
        } else {
            "f0_insert"
        };
        rmw::Update {
            we: we.into(),
            addr: "f0_addr".into(),
            data: None,
        }
    };
    management(v, cfg, g);
    let c = g.cell_bits;
    // Management writes take the banks' form of a cell (see `rmw::code`).
    let code = CellCode::of_config(cfg);
    let _ = writeln!(
        v,
        "    // ---- bank write port (port A of every bank): updates, management writes, the clear"
    );
    let copies = lane_copies(cfg, g);
    if copies {
        lane_copy_registers(v, l, aw, c);
    } else {
        let _ = writeln!(v, "    wire a_we = clearing | mg_write | ({});", update.we);
    }
    for lane in 0..l {
        let data = match &update.data {
            Some(d) => part(d, lane, c),
            None => format!("{c}'d{}", cfg.cells.max()),
        };
        // The lane's copies of the management and clear registers, or the shared ones.
        let (clearing, access, clr_addr, mg_addr, mg_wdata) = if copies {
            // The update's write enable: the lane's copy of it (`rmw` writes no shared one).
            let _ = writeln!(
                v,
                "    wire a_we{lane} = clearing_cp{lane} | mg_write_cp{lane} | ({}_cp{lane});",
                update.we
            );
            (
                format!("clearing_cp{lane}"),
                format!("mg_access_cp{lane}"),
                format!("clr_addr_cp{lane}"),
                format!("mg_addr_cp{lane}"),
                format!("mg_wdata_cp{lane}"),
            )
        } else {
            (
                "clearing".into(),
                "mg_access".into(),
                "clr_addr".into(),
                "mg_addr".into(),
                part("mg_wdata", lane, c),
            )
        };
        let _ = writeln!(
            v,
            "    wire {r}a_din{lane} = {clearing} ? {c}'d0 : {access} ? {mw} : {data};\n    wire [{a1}:0] a_addr{lane} = {clearing} ? {clr_addr} : {access} ? {mg_addr} : {ua};",
            r = range(c),
            mw = code.bank_from_binary(&mg_wdata, c),
            a1 = aw - 1,
            ua = part(&update.addr, lane, aw),
        );
        if read_b {
            let _ = writeln!(
                v,
                "    wire [{}:0] b_addr{lane} = {access} ? {mg_addr} : {};",
                aw - 1,
                part("f0_addr", lane, aw)
            );
        }
    }
    // Write-through: port 0 reads replica 0's port A, port 1 its port B, ports 2.. one replica's
    // port B each. Read-modify-write: port 0 reads port B (its writes come later, on port A).
    for r in 0..g.replicas {
        let b_port = Geo::b_port(r);
        let (read_a, has_b) = g.bank_roles(r);
        let module = bank_module_name(t, read_a, has_b);
        let pins = bank_pins(read_a, has_b, c, aw);
        for lane in 0..l {
            let conns = connect(&pins, |p| match p.role {
                "a_din" | "a_addr" => format!("{}{lane}", p.name),
                "a_we" if copies => format!("a_we{lane}"),
                "a_dout" => part("rd0", lane, c),
                "b_addr" if read_b => format!("b_addr{lane}"),
                "b_addr" => part(&format!("f{b_port}_addr"), lane, aw),
                "b_dout" if read_b => part("rd0", lane, c),
                "b_dout" => part(&format!("rd{b_port}"), lane, c),
                _ => p.name.clone(),
            });
            let _ = writeln!(
                v,
                "    {module} #(.LOAD(LOAD_BANKS), .INIT_FILE(\"{}\")) u_bank_r{r}_l{lane} (\n        {conns}\n    );",
                bank_file_name(t, lane),
            );
        }
    }
    for p in 0..g.ports {
        let _ = writeln!(
            v,
            "    {t}_port u_port{p} (\n        .clk(clk), .rst(rst), .hold(hold), .s_fire(s{p}_fire), .s_ready(s{p}_ready),\n        .w_valid(w{p}_valid), .w_data(w{p}_ans), .w_tag(w{p}_tag),\n        .m_valid(m{p}_valid), .m_ready(m{p}_ready), .m_data(m{p}_{a}), .m_tag(m{p}_tag)\n    );",
            a = g.ans_name
        );
    }
    v.push_str("endmodule\n\n");
}

/// The module line and port list.
fn ports(v: &mut String, g: &Geo) {
    let _ = writeln!(
        v,
        "module {} #(\n    parameter LOAD_BANKS = 0\n) (\n{}\n);",
        g.top,
        declare(&core_pins(g))
    );
}

/// Port `p`'s front end (the insert's value travels beside the tag); `decodes`: the front's
/// `o_insert` and `o_clear` outputs (static designs), which only port 0 uses.
fn front(v: &mut String, g: &Geo, p: usize, decodes: bool) {
    let ftw = g.tw + if p == 0 { g.value_bits } else { 0 };
    let _ = writeln!(
        v,
        "    // ---- port {p}\n    wire s{p}_fire = s{p}_valid & s{p}_ready;\n    wire f{p}_valid;\n    wire [1:0] f{p}_op;\n    wire [{}:0] f{p}_tag;\n    wire [{}:0] f{p}_addr;",
        ftw + g.check_bits - 1,
        g.lanes as u32 * g.aw - 1
    );
    let op_in = if p == 0 { "s0_op" } else { "OP_LOOKUP" };
    let tag_in = if p == 0 && g.value_bits > 0 {
        "{s0_value, s0_tag}".to_string()
    } else {
        format!("s{p}_tag")
    };
    let len_conn = if g.var_len {
        format!(", .i_len(s{p}_len)")
    } else {
        String::new()
    };
    let dec_conn = if decodes {
        let lint = |on: &str| {
            if p == 0 {
                String::new()
            } else {
                format!("    /* verilator lint_{on} UNUSEDSIGNAL */\n")
            }
        };
        let _ = write!(
            v,
            "{}    wire f{p}_insert, f{p}_clear;  // valid and of that operation\n{}",
            lint("off"),
            lint("on")
        );
        format!(", .o_insert(f{p}_insert), .o_clear(f{p}_clear)")
    } else {
        String::new()
    };
    let _ = writeln!(
        v,
        "    {t}_front u_front{p} (\n        .clk(clk), .rst(rst), .i_valid(s{p}_fire), .i_op({op_in}), .i_tag({tag_in}), .i_key(s{p}_key){len_conn},\n        .o_valid(f{p}_valid), .o_op(f{p}_op){dec_conn}, .o_tag(f{p}_tag), .o_addr(f{p}_addr)\n    );",
        t = g.top
    );
}

/// Write-through lookups of port `p`: the bank read stages (r1: read register, r2: output
/// register, r3 with registered banks: fabric register), then the reduction of the lanes
/// registered (w): the AND of the bits, or a retrieval's XOR of the cells, registered a stage
/// before (`r<p>_*<n+1>`, `x<p>_cells`), and check (the check bits travel above the tag).
fn lookup_stage(v: &mut String, cfg: &PipelineConfig, g: &Geo, p: usize) {
    let n = g.bank_read;
    // The last stage before the answer register.
    let k = n + cfg.cells.reduction.stages_before_answer();
    let each = |name: &str| {
        (1..=k)
            .map(|i| format!("r{p}_{name}{i}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(
        v,
        "    reg {valids}, w{p}_valid;
    reg {lookups};
    reg {ar}w{p}_ans;
    reg [{ctw1}:0] {tags};
    reg [{tw1}:0] w{p}_tag;
    wire [{l1}:0] rd{p};",
        valids = each("valid"),
        lookups = each("lookup"),
        tags = each("tag"),
        ar = range(g.ans_bits),
        ctw1 = g.tw + g.check_bits - 1,
        tw1 = g.tw - 1,
        l1 = g.lanes as u32 * g.cell_bits - 1
    );
    let ans = match cfg.cells.reduction {
        crate::Reduction::Retrieve { value_bits } => {
            crate::retrieval::answer_expr(v, g, value_bits, p)
        }
        _ => format!("r{p}_lookup{n} & (&rd{p})"),
    };
    // Each stage's valid, lookup flag and tag from the one before (r<p>_*1 from the front end).
    let (mut resets, mut valids, mut lookups, mut tags) =
        (String::new(), String::new(), String::new(), String::new());
    for i in 1..=k {
        let (valid, lookup, tag) = if i == 1 {
            (
                format!("f{p}_valid"),
                format!("(f{p}_op == OP_LOOKUP)"),
                format!("f{p}_tag"),
            )
        } else {
            let j = i - 1;
            (
                format!("r{p}_valid{j}"),
                format!("r{p}_lookup{j}"),
                format!("r{p}_tag{j}"),
            )
        };
        let _ = writeln!(resets, "            r{p}_valid{i} <= 1'b0;");
        let _ = writeln!(valids, "            r{p}_valid{i} <= {valid};");
        let _ = writeln!(lookups, "        r{p}_lookup{i} <= {lookup};");
        let _ = writeln!(tags, "        r{p}_tag{i} <= {tag};");
    }
    let _ = writeln!(
        v,
        "    always @(posedge clk) begin
        if (rst) begin
{resets}            w{p}_valid <= 1'b0;
        end else begin
{valids}            w{p}_valid <= r{p}_valid{k};
        end
{lookups}        w{p}_ans <= {ans};
{tags}        w{p}_tag <= r{p}_tag{k}[{tw1}:0];
    end",
        tw1 = g.tw - 1,
    );
}

/// The management port (`mg_*`) and the clear: a request (mg_req held until mg_ack) stops every
/// port, waits until the operations in flight have passed the banks, then clears every cell
/// (one entry per cycle), writes `mg_wdata` (every replica) or reads entry `mg_addr` of every
/// lane into `mg_rdata` (port 0's read data); mg_ack pulses when done. A static design's clear
/// operation (op 2) starts the same clear when it reaches the banks.
fn management(v: &mut String, cfg: &PipelineConfig, g: &Geo) {
    let aw = g.aw;
    // Bank entries read back as binary cells (a thermometer design's banks hold Gray codes).
    let rd_entry = CellCode::of_config(cfg).binary_from_banks("rd0", g.lanes, g.cell_bits);
    let drain = g.front_stages + g.bank_stages;
    // With lane copies the banks see a management access a cycle later: its read data too.
    let read_wait = g.bank_read - 1 + u32::from(lane_copies(cfg, g));
    let cnt_bits = crate::geo::ceil_log2(u64::from(drain.max(read_wait)) + 1).max(2);
    let op_clear = cfg.op_clears();
    let (clear_op_start, clear_fire, start_guard, hold_busy) = if op_clear {
        (
            "f0_clear | ",
            "s0_fire & (s0_op == OP_CLEAR)",
            " & ~busy_next",
            "busy_next | ",
        )
    } else {
        // The clear starts in the access state and the FSM waits for its end, so busy is low
        // in the idle state: neither the start nor hold needs the clear's end compare.
        ("", "1'b0", "", "")
    };
    let _ = writeln!(
        v,
        "    // ---- management (mg_*) and clear: idle, drain the pipelines, access, wait for the data
    reg busy_q;
    reg clearing;
    reg [{a1}:0] clr_addr;
    reg clr_last;  // clr_addr == LAST_ADDR, kept in a register (no wide compare before busy)
    reg [1:0] mg_state;
    reg [{cb1}:0] mg_cnt;  // counts the drain down: as wide as its start, a short carry chain
    reg mg_zero;  // mg_cnt == 0, kept in a register (no wide compare before the FSM)
    // The access state (2) and a write in it, kept in registers set on the way in: the banks'
    // write enables and address multiplexers read one flip-flop, not a state decode
    // (mg_we and mg_clear are held with mg_req).
    reg mg_access;
    reg mg_write;
    wire mg_idle = (mg_state == 2'd0);
    wire clear_fire = {clear_fire};
    wire clear_start = {clear_op_start}(mg_access & mg_clear);
    wire clear_done = clearing & clr_last;
    wire busy_next = clear_fire | (mg_access & mg_clear) | (busy_q & ~clear_done);
    wire mg_start = mg_idle & mg_req & ~mg_ack{start_guard};
    wire hold = {hold_busy}mg_start | ~mg_idle;
    assign busy = busy_q;
    always @(posedge clk) begin
        if (rst) begin
            mg_state <= 2'd0;
            mg_cnt <= {cb}'d0;
            mg_zero <= 1'b1;
            mg_access <= 1'b0;
            mg_write <= 1'b0;
            mg_ack <= 1'b0;
            busy_q <= 1'b0;
            clearing <= 1'b0;
            clr_addr <= {aw}'d0;
            clr_last <= 1'b0;
        end else begin
            mg_ack <= 1'b0;
            mg_access <= (mg_state == 2'd1) & mg_zero;
            mg_write <= (mg_state == 2'd1) & mg_zero & mg_we & ~mg_clear;
            case (mg_state)
                // The counter loads in every idle cycle, so that its enable does not wait for
                // mg_start (and the clear's busy logic behind it).
                2'd0: begin
                    if (mg_start) mg_state <= 2'd1;
                    mg_cnt <= {cb}'d{drain};
                    mg_zero <= 1'b0;
                end
                2'd1: if (mg_zero) mg_state <= 2'd2; else begin
                    mg_cnt <= mg_cnt - {cb}'d1;
                    mg_zero <= (mg_cnt == {cb}'d1);
                end
                2'd2: begin
                    mg_state <= 2'd3;
                    mg_cnt <= {cb}'d{read_wait};
                    mg_zero <= 1'b0;
                end
                default: if (mg_zero) begin
                    if (~mg_clear | ~busy_q) begin
                        mg_state <= 2'd0;
                        mg_ack <= 1'b1;
                    end
                end else begin
                    mg_cnt <= mg_cnt - {cb}'d1;
                    mg_zero <= (mg_cnt == {cb}'d1);
                end
            endcase
            busy_q <= busy_next;
            if (clear_start) begin
                clearing <= 1'b1;
                clr_addr <= {aw}'d0;
                clr_last <= 1'b0;
            end else if (clearing) begin
                if (clear_done) clearing <= 1'b0;
                else clr_addr <= clr_addr + {aw}'d1;
                clr_last <= (clr_addr == LAST_ADDR - {aw}'d1);
            end
        end
        if (mg_state == 2'd3 && mg_zero) mg_rdata <= {rd_entry};
    end",
        a1 = aw - 1,
        rd_entry = rd_entry,
        drain = drain,
        read_wait = read_wait,
        cb = cnt_bits,
        cb1 = cnt_bits - 1,
    );
}

/// Whether each lane's bank multiplexers read their own registered copies of the management
/// and clear registers (`*_cp<lane>`, [`lane_copy_registers`]): where the ECP5 floorplan
/// spreads the lanes' tiles over the die ([`crate::ecp5_floorplan`], which keeps the copies
/// apart). One `mg_access` drove every lane's multiplexers there, and the management state
/// machine, whose logic it shares, was pulled across the die with it.
fn lane_copies(cfg: &PipelineConfig, g: &Geo) -> bool {
    crate::ecp5_floorplan::applies(g, cfg.cells.alu)
}

/// Each lane's copies of `mg_access`, `mg_write`, `clearing`, `clr_addr`, `mg_addr` and its
/// part of `mg_wdata`, a cycle behind them: a register each with no logic before it (no reset
/// either: each is its register's value a cycle later), so the one long route from a shared
/// register or input to a lane ends in a flip-flop beside the lane's tiles. The banks then see a
/// management access or a clear a cycle later, which the management state machine's read
/// wait allows for; the ports are held until the access is over and an operation takes the
/// front's stages to reach the banks, so none meets the late copies.
fn lane_copy_registers(v: &mut String, lanes: usize, aw: u32, c: u32) {
    let _ = writeln!(
        v,
        "    // Each lane's copies of the management and clear registers, a cycle behind them (the
    // ECP5 floorplan keeps them apart; another flow may merge them back)."
    );
    for l in 0..lanes {
        let _ = writeln!(
            v,
            "    reg mg_access_cp{l}, mg_write_cp{l}, clearing_cp{l};
    reg [{a1}:0] clr_addr_cp{l}, mg_addr_cp{l};
    reg {r}mg_wdata_cp{l};
    always @(posedge clk) begin
        mg_access_cp{l} <= mg_access;
        mg_write_cp{l} <= mg_write;
        clearing_cp{l} <= clearing;
        clr_addr_cp{l} <= clr_addr;
        mg_addr_cp{l} <= mg_addr;
        mg_wdata_cp{l} <= {wd};
    end",
            a1 = aw - 1,
            r = range(c),
            wd = part("mg_wdata", l, c),
        );
    }
}
