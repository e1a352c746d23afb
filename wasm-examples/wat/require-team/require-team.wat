;; require-team: a validating admission policy written by hand in WebAssembly text, from
;; docs/abi.md alone (section 4.6): an object the policy's rules match must carry the label
;; "team", or the request is denied with "metadata.labels.team: the label team is required"
;; (a field path and a colon make it a 422 Invalid naming the field). DELETE and CONNECT
;; carry no new object: object_label answers -2 and the request is allowed. No args.
(module
  ;; object_label(key_p, key_l, buf, cap) -> the value's length, -1 absent, -2 no object
  (import "wasmkube" "object_label" (func $object_label (param i32 i32 i32 i32) (result i32)))
  ;; status_reason(ptr, len)
  (import "wasmkube" "status_reason" (func $status_reason (param i32 i32)))

  (memory (export "memory") 1)
  (data (i32.const 0) "team")                                               ;; 4 bytes
  (data (i32.const 16) "metadata.labels.team: the label team is required")  ;; 48 bytes

  (func (export "wasmkube_abi_version") (result i32) (i32.const 1))

  ;; wasmkube_validate: 0 allowed, 2 denied. cap 0 asks for the length only (section 2):
  ;; whether the label is there is all this policy needs.
  (func (export "wasmkube_validate") (result i32)
    (if (i32.eq (call $object_label (i32.const 0) (i32.const 4) (i32.const 0) (i32.const 0)) (i32.const -1))
      (then
        (call $status_reason (i32.const 16) (i32.const 48))
        (return (i32.const 2))))
    (i32.const 0)))
