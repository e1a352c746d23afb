//! fewest-pods-score: a wasmkube scheduler Score plugin in Rust, written against
//! docs/abi.md (ABI v1) with no crates and no allocation.
//!
//! A node scores 100 when it runs no pods and 0 when it is full: the score is the
//! share of its pod capacity (allocatable pods) still free. Nodes whose names start
//! with the args' `avoidPrefix` ({"avoidPrefix": "spot-"}) get a quarter of that.
#![no_std]

#[link(wasm_import_module = "wasmkube")]
extern "C" {
    fn args(buf: *mut u8, cap: i32) -> i32;
    fn node_resources(i: i32, out: *mut i64) -> i32;
    fn node_name(i: i32, buf: *mut u8, cap: i32) -> i32;
    fn node_score(i: i32, score: i64);
    fn status_reason(p: *const u8, l: i32);
}

const SUCCESS: i32 = 0;
const ERROR: i32 = 1;

// Parsed once per instance in wasmkube_init; args never change for an instance's life.
static mut PREFIX: [u8; 64] = [0; 64];
static mut PREFIX_LEN: usize = 0;

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    core::arch::wasm32::unreachable()
}

fn reason(msg: &str) {
    unsafe { status_reason(msg.as_ptr(), msg.len() as i32) }
}

/// Finds the string value of `"key"` in a flat JSON object.
fn json_string<'a>(json: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let mut i = 0;
    while i + key.len() + 2 <= json.len() {
        if json[i] == b'"' && json[i + 1..].starts_with(key) && json.get(i + 1 + key.len()) == Some(&b'"') {
            let mut p = i + key.len() + 2;
            while p < json.len() && (json[p] == b' ' || json[p] == b':') {
                p += 1;
            }
            if json.get(p) != Some(&b'"') {
                return None;
            }
            let start = p + 1;
            let end = start + json[start..].iter().position(|&c| c == b'"')?;
            return Some(&json[start..end]);
        }
        i += 1;
    }
    None
}

#[export_name = "wasmkube_abi_version"]
pub extern "C" fn abi_version() -> i32 {
    1
}

#[export_name = "wasmkube_init"]
pub extern "C" fn init() -> i32 {
    let mut buf = [0u8; 1024];
    let n = unsafe { args(buf.as_mut_ptr(), buf.len() as i32) };
    if n > buf.len() as i32 {
        reason("args: longer than 1 KiB");
        return ERROR;
    }
    if n <= 0 {
        return SUCCESS;
    }
    let json = &buf[..n as usize];
    if let Some(p) = json_string(json, b"avoidPrefix") {
        if p.len() > 64 {
            reason("args.avoidPrefix: longer than 64 bytes");
            return ERROR;
        }
        unsafe {
            PREFIX[..p.len()].copy_from_slice(p);
            PREFIX_LEN = p.len();
        }
    } else if json.windows(13).any(|w| w == b"\"avoidPrefix\"") {
        reason("args.avoidPrefix: must be a string");
        return ERROR;
    }
    SUCCESS
}

#[export_name = "wasmkube_score"]
pub extern "C" fn score(count: i32) -> i32 {
    let mut res = [0i64; 10];
    let mut name = [0u8; 256];
    let prefix = unsafe { &PREFIX[..PREFIX_LEN] };
    for i in 0..count {
        if unsafe { node_resources(i, res.as_mut_ptr()) } != 80 {
            continue; // unset nodes score 0
        }
        let (max_pods, pods) = (res[3], res[7]);
        let mut s = if max_pods <= 0 || pods >= max_pods { 0 } else { (max_pods - pods) * 100 / max_pods };
        if !prefix.is_empty() {
            // Node names are DNS subdomains (at most 253 bytes): the buffer always fits.
            let n = unsafe { node_name(i, name.as_mut_ptr(), name.len() as i32) };
            let got = if n >= 0 && n <= name.len() as i32 { &name[..n as usize] } else { &name[..0] };
            if got.starts_with(prefix) {
                s /= 4;
            }
        }
        unsafe { node_score(i, s) };
    }
    SUCCESS
}
