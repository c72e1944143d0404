// relay.p4 (TNA): register `relay` per slot version, {relayed, resends} as one 32-bit word
// (bit 31, bits 15..0): what a child switch (protocol.md §7) knows of a use it sent up, as
// p4/v1model/relay.p4. Rust twin: p4/model/src/relay.rs (Relay). No divider: the resends
// count modulo the child's world by a compare with meta.world, which a stateful ALU makes.
// The action returns the word before the packet; the ingress derives relayed and ask.
#ifndef _SWITCHML_RELAY_P4_
#define _SWITCHML_RELAY_P4_

const bit<32> RELAYED = 0x80000000;

control Relay(inout metadata_t meta, in bit<1> store) {
    Register<bit<32>, bit<32>>(POOL_VERSIONS) relay;

    RegisterAction<bit<32>, bit<32>, bit<32>>(relay) begin_use = {
        void apply(inout bit<32> value, out bit<32> before) {
            before = 0;
            value = 0;
        }
    };

    // A resend to a use complete here: count it, modulo the child's world, until relayed.
    RegisterAction<bit<32>, bit<32>, bit<32>>(relay) count_resend = {
        void apply(inout bit<32> value, out bit<32> before) {
            before = value;
            if (value < RELAYED) {
                if (value + 1 >= (bit<32>)meta.world) {
                    value = 0;
                } else {
                    value = value + 1;
                }
            }
        }
    };

    RegisterAction<bit<32>, bit<32>, bit<32>>(relay) set_relayed = {
        void apply(inout bit<32> value, out bit<32> before) {
            before = value;
            value = RELAYED;
        }
    };

    RegisterAction<bit<32>, bit<32>, bit<32>>(relay) read_relay = {
        void apply(inout bit<32> value, out bit<32> before) {
            before = value;
        }
    };

    apply {
        bit<32> before;
        bit<1> resend = (meta.complete == 1 && meta.count_ok == 1) ? 1w1 : 1w0;
        if (meta.begin == 1) {
            before = begin_use.execute(meta.version_index);
        } else if (store == 1) {
            before = set_relayed.execute(meta.version_index);
        } else if (resend == 1) {
            before = count_resend.execute(meta.version_index);
        } else {
            before = read_relay.execute(meta.version_index);
        }
        meta.relayed = before[31:31];
        meta.ask = (resend == 1 && before == 0) ? 1w1 : 1w0;
    }
}

#endif
