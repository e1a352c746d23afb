;; A module whose wasmkube_init rejects empty args with a reason.
(module
  (import "wasmkube" "args" (func $args (param i32 i32) (result i32)))
  (import "wasmkube" "status_reason" (func $status_reason (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "args: a non-empty object is required")
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func (export "wasmkube_init") (result i32)
    ;; args of 2 bytes or less ("", "{}") are rejected
    (if (result i32) (i32.le_s (call $args (i32.const 0) (i32.const 0)) (i32.const 2))
      (then (call $status_reason (i32.const 0) (i32.const 36)) (i32.const 1))
      (else (i32.const 0))))
  (func (export "wasmkube_filter") (param i32) (result i32) i32.const 0))
