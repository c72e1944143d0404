// exponents.p4 (v1model): register `exp` per slot version, the maximum biased exponent.
// Rust twin: p4/model/src/exponents.rs (Exponents).
#ifndef _SWITCHML_EXPONENTS_P4_
#define _SWITCHML_EXPONENTS_P4_

control Exponents(inout metadata_t meta, in bit<8> p_exp) {
    register<bit<8>>(POOL_VERSIONS) exp;

    apply {
        bit<8> held;
        exp.read(held, meta.version_index);
        if (meta.update == UPDATE_LOAD) {
            held = p_exp;
        } else if (meta.update == UPDATE_ADD && p_exp > held) {
            held = p_exp;
        }
        if (meta.update == UPDATE_LOAD || meta.update == UPDATE_ADD) {
            exp.write(meta.version_index, held);
        }
        meta.exp = held;
    }
}

#endif
