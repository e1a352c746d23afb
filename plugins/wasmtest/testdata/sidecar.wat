;; Wrong on purpose: a Mutate that injects a sidecar container into every pod without
;; looking whether it is already there, so a second call (reinvocation, or a pod sent back
;; as it was stored) adds a second one (conformance: "a mutate re-invoked on its own
;; output changes nothing"). Otherwise careful: only objects that have spec.containers.
(module
  (import "wasmkube" "object_get" (func $object_get (param i32 i32 i32 i32) (result i32)))
  (import "wasmkube" "set_patch" (func $set_patch (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 32) "spec.containers")
  (data (i32.const 64) "[{\"op\":\"add\",\"path\":\"/spec/containers/-\",\"value\":{\"name\":\"proxy\",\"image\":\"busybox:1.36\"}}]")
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func (export "wasmkube_mutate") (result i32)
    ;; The value's first byte (read at 1024) must be '[' (-1 absent, -2 no object on DELETE, null on
    ;; an empty pod).
    (i32.store8 (i32.const 1024) (i32.const 0))
    (drop (call $object_get (i32.const 32) (i32.const 15) (i32.const 1024) (i32.const 60000)))
    (if (i32.eq (i32.load8_u (i32.const 1024)) (i32.const 91))
      (then (call $set_patch (i32.const 64) (i32.const 90))))
    (i32.const 0)))
