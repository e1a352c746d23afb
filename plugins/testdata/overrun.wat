;; Filter that, for a pod labelled "bad", spends a long time without ever looping: 1024
;; straight-line memory.fill instructions over 16 MiB each (16 GiB written, some hundreds of ms). No loop means
;; no deadline check, so only the host's look at the clock after the call can catch it.
(module
  (import "wasmkube" "pod_label" (func $pod_label (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 256)
  (data (i32.const 0) "bad")
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func $bad (result i32)
    (i32.ne (call $pod_label (i32.const 0) (i32.const 3) (i32.const 0) (i32.const 0)) (i32.const -1)))
  (func $fill16 (memory.fill (i32.const 16) (i32.const 7) (i32.const 16777200)))
  (func $fill64
    call $fill16 call $fill16 call $fill16 call $fill16 call $fill16 call $fill16 call $fill16 call $fill16
    call $fill16 call $fill16 call $fill16 call $fill16 call $fill16 call $fill16 call $fill16 call $fill16
    call $fill16 call $fill16 call $fill16 call $fill16 call $fill16 call $fill16 call $fill16 call $fill16
    call $fill16 call $fill16 call $fill16 call $fill16 call $fill16 call $fill16 call $fill16 call $fill16
    call $fill16 call $fill16 call $fill16 call $fill16 call $fill16 call $fill16 call $fill16 call $fill16
    call $fill16 call $fill16 call $fill16 call $fill16 call $fill16 call $fill16 call $fill16 call $fill16
    call $fill16 call $fill16 call $fill16 call $fill16 call $fill16 call $fill16 call $fill16 call $fill16
    call $fill16 call $fill16 call $fill16 call $fill16 call $fill16 call $fill16 call $fill16 call $fill16)
  (func $fill1024
    call $fill64 call $fill64 call $fill64 call $fill64 call $fill64 call $fill64 call $fill64 call $fill64
    call $fill64 call $fill64 call $fill64 call $fill64 call $fill64 call $fill64 call $fill64 call $fill64)
  (func (export "wasmkube_filter") (param $n i32) (result i32)
    (if (call $bad) (then (call $fill1024)))
    (i32.const 0)))
