;; {{.Name}}: a wasmkube validating admission policy in WebAssembly text (docs/abi.md
;; section 4.6): objects created or updated must carry the label app. Which resources it
;; sees is the admission: config's rules.
(module
  ;; object_label(key_ptr, key_len, buf, cap) -> value length, -1 absent, -2 no object (DELETE)
  (import "wasmkube" "object_label" (func $object_label (param i32 i32 i32 i32) (result i32)))
  (import "wasmkube" "status_reason" (func $status_reason (param i32 i32)))

  (memory (export "memory") 1)
  (data (i32.const 0) "app")                                          ;; 3 bytes
  ;; a reason starting with a field path and a colon becomes a 422 naming that field
  (data (i32.const 16) "metadata.labels: the label app is required")  ;; 42 bytes

  (func (export "wasmkube_abi_version") (result i32) (i32.const 1))

  (func (export "wasmkube_validate") (result i32)
    (if (i32.eq (call $object_label (i32.const 0) (i32.const 3) (i32.const 0) (i32.const 0)) (i32.const -1))
      (then
        (call $status_reason (i32.const 16) (i32.const 42))
        (return (i32.const 2))))  ;; Denied
    (i32.const 0)))               ;; Allowed
