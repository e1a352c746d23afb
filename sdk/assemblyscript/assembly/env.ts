// Replacements for the three functions AssemblyScript's standard library imports from
// "env" (abort, trace, seed). asconfig.json points the compiler at them with
// `--use abort=... --use trace=... --use seed=...`, so a module imports only from wasmkube:
// a host that finds env.abort refuses to load the module (docs/abi.md section 9).

import { log } from "./sys";

let aborting = false;

function logLine(level: i32, s: string): void {
  let b = String.UTF8.encode(s);
  log(level, changetype<usize>(b), b.byteLength);
}

// abort ends the call with a trap (a plugin failure the host contains) after logging
// where it happened: a failed assertion, an out-of-bounds array access, a thrown error.
export function wasmkubeAbort(message: string | null, fileName: string | null, line: u32, column: u32): void {
  if (!aborting) {
    // An abort while formatting (out of memory) must not recurse.
    aborting = true;
    let m = message != null ? message : "abort";
    let f = fileName != null ? fileName : "?";
    logLine(3, "abort: " + m + " at " + f + ":" + line.toString() + ":" + column.toString());
  }
  unreachable();
}

// trace logs at debug level, as the standard library's trace(message, n, a0..a4) prints.
export function wasmkubeTrace(message: string, n: i32 = 0, a0: f64 = 0, a1: f64 = 0, a2: f64 = 0, a3: f64 = 0, a4: f64 = 0): void {
  let s = "trace: " + message;
  if (n > 0) s += " " + a0.toString();
  if (n > 1) s += " " + a1.toString();
  if (n > 2) s += " " + a2.toString();
  if (n > 3) s += " " + a3.toString();
  if (n > 4) s += " " + a4.toString();
  logLine(0, s);
}

// seed seeds Math.random. It is constant: a plugin's verdicts must not depend on
// randomness (any instance must give the same answer), and the host's WASI random source
// is deterministic too.
export function wasmkubeSeed(): f64 {
  return 0x5eed;
}
