;; deny-all-newer: a validate policy that denies every request it sees ("deny-all-newer"),
;; built against a newer host: it imports pod_requests, which a host without the scheduler's
;; host functions does not define, so such a host refuses to load it (the rollout tests'
;; stand-in for components of two versions).
(module
  (import "wasmkube" "status_reason" (func $reason (param i32 i32)))
  (import "wasmkube" "pod_requests" (func $pod_requests (param i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "deny-all-newer")
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func (export "wasmkube_validate") (result i32)
    (call $reason (i32.const 0) (i32.const 14))
    (i32.const 2)))
