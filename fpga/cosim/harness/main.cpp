// The Verilator side of the co-simulation: reads a script that the Rust side wrote
// (fpga/cosim/src/script.rs), drives it into sml_aggregator and writes what came out.
//
// Script lines:   seed S | cfg ADDR DATA | clear LO COUNT | pkt HEX | mark | end
// Output lines:   v KIND REASON RANK | o MCAST RANK HEX | h HEX | mark CYCLES | c IDX VALUE
//                 | j JOB COUNTER VALUE
// (an `o` line a copy: a multicast answer comes once for every rank of the job)
//
// `seed 0` drives the input back to back and keeps every ready high (for timing);
// any other seed stalls the input and both outputs at random, and the output in bursts
// (back-pressure everywhere).
// Before `cfg`, `clear`, `mark` and at the end the harness drains the pipeline: every
// packet fed has come out as a verdict or on the host port, and every answer is out.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "Vsml_aggregator.h"
#include "verilated.h"

static const int W = 4 * LANES;  // bytes a beat

struct Sim {
    Vsml_aggregator* top;
    uint64_t cycle = 0;
    uint64_t rng = 0;
    std::ostream& out;
    // Input packets not yet fully fed, and the beat reached in the first.
    std::deque<std::vector<uint8_t>> pending;
    size_t beat = 0;
    uint64_t fed = 0, verdicts = 0, host_pkts = 0, answers_due = 0, answers = 0;
    std::vector<uint8_t> out_pkt, host_pkt;

    explicit Sim(std::ostream& o) : out(o) {}

    bool chance() {  // true about 3 times in 4; always true without a seed
        if (rng == 0) return true;
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        return (rng & 3) != 0;
    }

    static std::string hex(const std::vector<uint8_t>& b) {
        static const char* d = "0123456789abcdef";
        std::string s;
        for (uint8_t x : b) {
            s += d[x >> 4];
            s += d[x & 15];
        }
        return s;
    }

    void tick() {
        // Inputs for this cycle.
        bool offer = !pending.empty() && chance();
        if (offer) {
            const auto& p = pending.front();
            uint64_t keep = 0;
            for (int i = 0; i < W; i++) {
                size_t at = beat * W + i;
                uint8_t byte = at < p.size() ? p[at] : 0;
                if (at < p.size()) keep |= uint64_t(1) << i;
                uint32_t& word = top->s_axis_tdata[i / 4];
                word = (word & ~(0xffu << (8 * (i % 4)))) | (uint32_t(byte) << (8 * (i % 4)));
            }
            top->s_axis_tkeep = keep;
            top->s_axis_tlast = (beat + 1) * W >= p.size();
        }
        top->s_axis_tvalid = offer;
        // With a seed, the output also stops for 100 cycles in every 400, so that every
        // queue behind it fills.
        bool burst = rng != 0 && cycle % 400 < 100;
        top->m_axis_tready = chance() && !burst;
        top->host_axis_tready = chance();
        top->clk = 0;
        top->eval();
        bool in_fire = top->s_axis_tvalid && top->s_axis_tready;
        bool out_fire = top->m_axis_tvalid && top->m_axis_tready;
        bool host_fire = top->host_axis_tvalid && top->host_axis_tready;
        if (top->v_valid) {
            verdicts++;
            if (top->v_kind >= 2) answers_due++;
            out << "v " << int(top->v_kind) << ' ' << int(top->v_reason) << ' '
                << int(top->v_rank) << '\n';
        }
        if (out_fire) {
            uint64_t keep = top->m_axis_tkeep;
            for (int i = 0; i < W; i++)
                if (keep >> i & 1) out_pkt.push_back(top->m_axis_tdata[i / 4] >> (8 * (i % 4)));
            if (top->m_axis_tlast) {
                // tuser: {last copy, multicast, rank}; a multicast comes once a rank.
                out << "o " << (top->m_axis_tuser >> 16 & 1) << ' '
                    << (top->m_axis_tuser & 0xffff) << ' ' << hex(out_pkt) << '\n';
                out_pkt.clear();
                if (top->m_axis_tuser >> 17 & 1) answers++;
            }
        }
        if (host_fire) {
            uint64_t keep = top->host_axis_tkeep;
            for (int i = 0; i < W; i++)
                if (keep >> i & 1)
                    host_pkt.push_back(top->host_axis_tdata[i / 4] >> (8 * (i % 4)));
            if (top->host_axis_tlast) {
                out << "h " << hex(host_pkt) << '\n';
                host_pkt.clear();
                host_pkts++;
            }
        }
        top->clk = 1;
        top->eval();
        cycle++;
        if (in_fire) {
            if (top->s_axis_tlast) {
                pending.pop_front();
                beat = 0;
            } else {
                beat++;
            }
        }
        top->cfg_wr_en = 0;
    }

    void drain() {
        uint64_t limit = cycle + 1000000;
        while (!pending.empty() || verdicts + host_pkts < fed || answers < answers_due) {
            tick();
            if (cycle > limit) {
                std::cerr << "cosim: the pipeline hangs: fed " << fed << ", verdicts " << verdicts
                          << ", host " << host_pkts << ", answers " << answers << "/"
                          << answers_due << '\n';
                exit(3);
            }
        }
    }

    void cfg(uint32_t addr, uint32_t data) {
        top->cfg_wr_en = 1;
        top->cfg_wr_addr = addr;
        top->cfg_wr_data = data;
        tick();
    }

    uint32_t read(uint32_t addr) {
        top->cfg_rd_addr = addr;
        tick();
        return top->cfg_rd_data;
    }
};

static std::vector<uint8_t> unhex(const std::string& s) {
    std::vector<uint8_t> b;
    for (size_t i = 0; i + 1 < s.size(); i += 2) b.push_back(std::stoul(s.substr(i, 2), nullptr, 16));
    return b;
}

int main(int argc, char** argv) {
    Verilated::commandArgs(argc, argv);
    if (argc < 3) {
        std::cerr << "usage: " << argv[0] << " SCRIPT OUTPUT\n";
        return 2;
    }
    std::ifstream in(argv[1]);
    std::ofstream out(argv[2]);
    Sim sim(out);
    sim.top = new Vsml_aggregator;
    sim.top->rst = 1;
    for (int i = 0; i < 4; i++) sim.tick();
    sim.top->rst = 0;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::string cmd;
        ls >> cmd;
        if (cmd == "seed") {
            ls >> sim.rng;
        } else if (cmd == "cfg") {
            uint32_t a, d;
            ls >> std::hex >> a >> d;
            sim.drain();
            sim.cfg(a, d);
        } else if (cmd == "clear") {
            uint32_t lo, n;
            ls >> lo >> n;
            sim.drain();
            sim.cfg(2, lo);
            sim.cfg(3, n);
            while (sim.read(4) & 1) {
            }
        } else if (cmd == "pkt") {
            std::string h;
            ls >> h;
            std::vector<uint8_t> p = unhex(h);
            if (p.empty()) {
                std::cerr << "cosim: an empty packet cannot be sent on AXI-Stream\n";
                return 2;
            }
            sim.pending.push_back(p);
            sim.fed++;
            // Keep the feed a few packets ahead of the pipeline, not the whole script.
            while (sim.pending.size() > 4) sim.tick();
        } else if (cmd == "mark") {
            sim.drain();
            out << "mark " << sim.cycle << '\n';
        } else if (cmd == "end") {
            break;
        }
    }
    sim.drain();
    for (uint32_t r = 0; r < 20; r++) out << "c " << r << ' ' << sim.read(0x80 + r) << '\n';
    for (uint32_t j = 0; j < JOBS; j++)
        for (uint32_t c = 0; c < 9; c++)
            out << "j " << j << ' ' << c << ' ' << sim.read(0x100 + 16 * j + c) << '\n';
    sim.top->final();
    delete sim.top;
    return 0;
}
