;; A user's admission policy that denies every request it matches (the test matches it to
;; UPDATE of pods): the scheduler's own records must not depend on it.
(module
  (import "wasmkube" "status_reason" (func $status_reason (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "pod updates are denied")
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func (export "wasmkube_validate") (result i32)
    (call $status_reason (i32.const 0) (i32.const 22))
    (i32.const 2)))
