;; Mutate that must run after add-annotation: it sees the annotation mutated-by and adds
;; the label seen-by-second; without the annotation it denies ("first mutation not seen").
(module
  (import "wasmkube" "object_annotation" (func $object_annotation (param i32 i32 i32 i32) (result i32)))
  (import "wasmkube" "status_reason" (func $status_reason (param i32 i32)))
  (import "wasmkube" "set_patch" (func $set_patch (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "mutated-by")
  (data (i32.const 32) "first mutation not seen")
  (data (i32.const 64) "[{\"op\":\"add\",\"path\":\"/metadata/annotations/seen-by-second\",\"value\":\"yes\"}]")
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func (export "wasmkube_mutate") (result i32)
    (if (i32.eq (call $object_annotation (i32.const 0) (i32.const 10) (i32.const 0) (i32.const 0)) (i32.const -1))
      (then
        (call $status_reason (i32.const 32) (i32.const 23))
        (return (i32.const 2))))
    (call $set_patch (i32.const 64) (i32.const 74))
    (i32.const 0)))
