;; A "touch" entry point that tells the host it started (ready), then writes over its 1 MiB
;; of memory until its time limit stops it: a call that touches its memory for as long as
;; it runs.
(module
  (import "wasmkube" "ready" (func $ready))
  (memory (export "memory") 16)
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func (export "wasmkube_touch") (result i32)
    (call $ready)
    (loop $forever
      (memory.fill (i32.const 0) (i32.const 1) (i32.const 1048576))
      (br $forever))
    (i32.const 0)))
