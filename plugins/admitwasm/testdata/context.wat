;; Context-aware Validate: a request is allowed only when the configmap "allow" exists in
;; its namespace (get_object); FORBIDDEN (-3: configmaps not granted) denies with
;; "configmaps not granted". It also lists the namespace's configmaps (list_objects) and
;; warns "listed" when the list call answers.
(module
  (import "wasmkube" "get_object" (func $get_object (param i32 i32 i32 i32 i32 i32) (result i32)))
  (import "wasmkube" "list_objects" (func $list_objects (param i32 i32 i32 i32) (result i32)))
  (import "wasmkube" "status_reason" (func $status_reason (param i32 i32)))
  (import "wasmkube" "warning" (func $warning (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "configmaps")
  (data (i32.const 16) "allow")
  (data (i32.const 32) "configmap allow is missing in the namespace")
  (data (i32.const 96) "configmaps not granted")
  (data (i32.const 128) "listed")
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func (export "wasmkube_validate") (result i32)
    (local $n i32)
    (if (i32.ge_s (call $list_objects (i32.const 0) (i32.const 10) (i32.const 0) (i32.const 0)) (i32.const 0))
      (then (call $warning (i32.const 128) (i32.const 6))))
    (local.set $n (call $get_object (i32.const 0) (i32.const 10) (i32.const 16) (i32.const 5) (i32.const 0) (i32.const 0)))
    (if (i32.eq (local.get $n) (i32.const -3))
      (then
        (call $status_reason (i32.const 96) (i32.const 22))
        (return (i32.const 2))))
    (if (i32.eq (local.get $n) (i32.const -1))
      (then
        (call $status_reason (i32.const 32) (i32.const 43))
        (return (i32.const 2))))
    (i32.const 0)))
