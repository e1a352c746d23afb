;; Validate: an object without the label "team" is denied with
;; `<resource> "<name>" must carry label team`; every call warns "require-team saw <name>"
;; when the object has the label "warn-me".
(module
  (import "wasmkube" "object_label" (func $object_label (param i32 i32 i32 i32) (result i32)))
  (import "wasmkube" "request_name" (func $request_name (param i32 i32) (result i32)))
  (import "wasmkube" "request_resource" (func $request_resource (param i32 i32) (result i32)))
  (import "wasmkube" "status_reason" (func $status_reason (param i32 i32)))
  (import "wasmkube" "warning" (func $warning (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "team")
  (data (i32.const 8) "warn-me")
  (data (i32.const 16) "require-team saw")
  (data (i32.const 64) "\" must carry label team")
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  ;; $copy appends the l bytes at src to the message at $end and returns the new end.
  (func $copy (param $end i32) (param $src i32) (param $l i32) (result i32)
    (memory.copy (local.get $end) (local.get $src) (local.get $l))
    (i32.add (local.get $end) (local.get $l)))
  (func $validate_warn
    (local $n i32)
    (if (i32.eq (call $object_label (i32.const 8) (i32.const 7) (i32.const 0) (i32.const 0)) (i32.const -1))
      (then (return)))
    ;; "require-team saw " + name at 2048
    (drop (call $copy (i32.const 2048) (i32.const 16) (i32.const 16)))
    (i32.store8 (i32.const 2064) (i32.const 32))
    (local.set $n (call $request_name (i32.const 2065) (i32.const 512)))
    (if (i32.gt_u (local.get $n) (i32.const 512)) (then (local.set $n (i32.const 0))))
    (call $warning (i32.const 2048) (i32.add (i32.const 17) (local.get $n))))
  (func (export "wasmkube_validate") (result i32)
    (local $end i32) (local $n i32)
    (call $validate_warn)
    (if (i32.ne (call $object_label (i32.const 0) (i32.const 4) (i32.const 0) (i32.const 0)) (i32.const -1))
      (then (return (i32.const 0))))
    ;; message at 1024: resource, ` "`, name, `" must carry label team`
    (local.set $n (call $request_resource (i32.const 1024) (i32.const 256)))
    (if (i32.gt_u (local.get $n) (i32.const 256)) (then (local.set $n (i32.const 0))))
    (local.set $end (i32.add (i32.const 1024) (local.get $n)))
    (i32.store16 (local.get $end) (i32.const 0x2220)) ;; ` "`
    (local.set $end (i32.add (local.get $end) (i32.const 2)))
    (local.set $n (call $request_name (local.get $end) (i32.const 512)))
    (if (i32.gt_u (local.get $n) (i32.const 512)) (then (local.set $n (i32.const 0))))
    (local.set $end (call $copy (i32.add (local.get $end) (local.get $n)) (i32.const 64) (i32.const 23)))
    (call $status_reason (i32.const 1024) (i32.sub (local.get $end) (i32.const 1024)))
    (i32.const 2)))
