;; overrun.wat with a start section: the host cannot instrument such a module and interrupts
;; it through its context instead. For a pod labelled "bad" it spends a long time without
;; looping (1024 memory.fill of 16 MiB each, 16 GiB).
(module
  (import "wasmkube" "pod_label" (func $pod_label (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 256)
  (data (i32.const 0) "bad")
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func $bad (result i32)
    (i32.ne (call $pod_label (i32.const 0) (i32.const 3) (i32.const 0) (i32.const 0)) (i32.const -1)))
  (func $noop)
  (start $noop)
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
