//! `switchml doctor`: placeholder until the Status merge; replaced below.
pub fn doctor(_switch: &str, _job: u16, _probes: u32, _json: bool) -> i32 {
    0
}
