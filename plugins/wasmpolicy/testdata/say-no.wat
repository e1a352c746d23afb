;; say-no: a kubelet probe for the API tier's tests: every probe fails with the reason
;; "say-no".
(module
  (import "wasmkube" "status_reason" (func $reason (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "say-no")
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func (export "wasmkube_probe") (result i32)
    (call $reason (i32.const 0) (i32.const 6))
    (i32.const 2)))
