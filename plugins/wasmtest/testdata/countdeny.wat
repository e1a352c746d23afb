;; Wrong on purpose: a Validate that keeps a request count in a global and denies every
;; third request (a "rate limit" inside one instance), so its verdict depends on how often
;; and after what it was called (conformance: "a validate's verdict does not depend on
;; call count or earlier requests").
(module
  (import "wasmkube" "status_reason" (func $status_reason (param i32 i32)))
  (memory (export "memory") 1)
  (global $calls (mut i32) (i32.const 0))
  (data (i32.const 0) "rate limit: too many requests")
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func (export "wasmkube_validate") (result i32)
    (global.set $calls (i32.add (global.get $calls) (i32.const 1)))
    (if (i32.eqz (i32.rem_u (global.get $calls) (i32.const 3)))
      (then
        (call $status_reason (i32.const 0) (i32.const 29))
        (return (i32.const 2))))
    (i32.const 0)))
