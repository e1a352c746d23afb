;; Wrong on purpose: a Mutate that injects a sidecar container into every pod without
;; looking whether it is already there, so a second call (reinvocation, or a pod sent back
;; as it was stored) adds a second one (conformance: "a mutate re-invoked on its own
;; output changes nothing").
(module
  (import "wasmkube" "request_kind" (func $request_kind (param i32 i32) (result i32)))
  (import "wasmkube" "set_patch" (func $set_patch (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 64) "[{\"op\":\"add\",\"path\":\"/spec/containers/-\",\"value\":{\"name\":\"proxy\",\"image\":\"busybox:1.36\"}}]")
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func (export "wasmkube_mutate") (result i32)
    ;; "Pod": three bytes, starting with 'P'.
    (if (i32.and
          (i32.eq (call $request_kind (i32.const 0) (i32.const 32)) (i32.const 3))
          (i32.eq (i32.load8_u (i32.const 0)) (i32.const 80)))
      (then (call $set_patch (i32.const 64) (i32.const 90))))
    (i32.const 0)))
