;; Mutate: adds the annotation mutated-by=add-annotation (the object must have no
;; annotations: the patch adds the whole map).
(module
  (import "wasmkube" "set_patch" (func $set_patch (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "[{\"op\":\"add\",\"path\":\"/metadata/annotations\",\"value\":{\"mutated-by\":\"add-annotation\"}}]")
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func (export "wasmkube_mutate") (result i32)
    (call $set_patch (i32.const 0) (i32.const 85))
    (i32.const 0)))
