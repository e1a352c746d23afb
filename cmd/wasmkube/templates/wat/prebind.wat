;; {{.Name}}: a wasmkube scheduler PreBind plugin in WebAssembly text (docs/abi.md section
;; 1.4), from wasm-examples/wat/license-prebind: "bind only once the license is granted".
;; A pod that asks for a license (annotation example.com/license, any value) is bound only when it also carries
;; example.com/license-granted=true (set by a license controller); until then PreBind
;; answers 2 (not now): the pod is unreserved and waits in the queue as unschedulable,
;; and an update of the pod brings it back. Other pods pass.
(module
  (import "wasmkube" "pod_annotation" (func $pod_annotation (param i32 i32 i32 i32) (result i32)))
  (import "wasmkube" "status_reason" (func $status_reason (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "example.com/license")          ;; 19 bytes
  (data (i32.const 32) "example.com/license-granted") ;; 27 bytes
  (data (i32.const 64) "waiting for example.com/license-granted=true") ;; 44 bytes
  ;; 128: annotation value (16 bytes)
  (func (export "wasmkube_abi_version") (result i32) (i32.const 1))
  (func (export "wasmkube_prebind") (result i32)
    (if (i32.lt_s (call $pod_annotation (i32.const 0) (i32.const 19) (i32.const 0) (i32.const 0)) (i32.const 0))
      (then (return (i32.const 0)))) ;; asks for no license
    (if (i32.eq (call $pod_annotation (i32.const 32) (i32.const 27) (i32.const 128) (i32.const 16)) (i32.const 4))
      (then
        ;; "true" is 0x65757274 little-endian
        (if (i32.eq (i32.load (i32.const 128)) (i32.const 0x65757274)) (then (return (i32.const 0))))))
    (call $status_reason (i32.const 64) (i32.const 44))
    (i32.const 2)))
