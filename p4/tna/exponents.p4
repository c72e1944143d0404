// exponents.p4 (TNA): register `exp` per slot version, the maximum biased exponent.
// Rust twin: p4/model/src/exponents.rs (Exponents). Tofino's SALU has a max operation.
#ifndef _SWITCHML_EXPONENTS_P4_
#define _SWITCHML_EXPONENTS_P4_

control Exponents(inout metadata_t meta, in bit<8> p_exp) {
    Register<bit<8>, bit<32>>(POOL_VERSIONS) exp;

    RegisterAction<bit<8>, bit<32>, bit<8>>(exp) load = {
        void apply(inout bit<8> value, out bit<8> held) {
            value = p_exp;
            held = value;
        }
    };

    RegisterAction<bit<8>, bit<32>, bit<8>>(exp) take_max = {
        void apply(inout bit<8> value, out bit<8> held) {
            value = max(value, p_exp);
            held = value;
        }
    };

    RegisterAction<bit<8>, bit<32>, bit<8>>(exp) read_exp = {
        void apply(inout bit<8> value, out bit<8> held) {
            held = value;
        }
    };

    apply {
        if (meta.update == UPDATE_LOAD) {
            meta.exp = load.execute(meta.version_index);
        } else if (meta.update == UPDATE_ADD) {
            meta.exp = take_max.execute(meta.version_index);
        } else {
            meta.exp = read_exp.execute(meta.version_index);
        }
    }
}

#endif
