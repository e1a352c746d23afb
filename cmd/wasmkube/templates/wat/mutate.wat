;; {{.Name}}: a wasmkube mutating admission policy in WebAssembly text (docs/abi.md
;; section 4.6): pods created get spec.enableServiceLinks: false (no environment variables
;; for every Service of the namespace). Which resources it sees is the admission: config's rules.
(module
  (import "wasmkube" "request_operation" (func $request_operation (param i32 i32) (result i32)))
  (import "wasmkube" "request_kind" (func $request_kind (param i32 i32) (result i32)))
  ;; set_patch(ptr, len): an RFC 6902 JSON Patch the host applies to the new object
  (import "wasmkube" "set_patch" (func $set_patch (param i32 i32)))

  (memory (export "memory") 1)
  (data (i32.const 0) "CREATE")  ;; 6 bytes
  (data (i32.const 8) "Pod")     ;; 3 bytes
  ;; "add" on a member that exists replaces it
  (data (i32.const 32) "[{\"op\":\"add\",\"path\":\"/spec/enableServiceLinks\",\"value\":false}]")  ;; 62 bytes
  ;; 128: a 16-byte buffer for the operation and the kind

  (func (export "wasmkube_abi_version") (result i32) (i32.const 1))

  ;; eq: whether the n bytes at a and b are equal
  (func $eq (param $a i32) (param $b i32) (param $n i32) (result i32)
    (local $i i32)
    (loop $next
      (if (i32.ge_u (local.get $i) (local.get $n))
        (then (return (i32.const 1))))
      (if (i32.ne (i32.load8_u (i32.add (local.get $a) (local.get $i)))
                  (i32.load8_u (i32.add (local.get $b) (local.get $i))))
        (then (return (i32.const 0))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $next))
    (i32.const 0))

  (func (export "wasmkube_mutate") (result i32)
    ;; a value longer than the buffer returns its length and writes nothing: not a match
    (if (i32.ne (call $request_operation (i32.const 128) (i32.const 16)) (i32.const 6))
      (then (return (i32.const 0))))
    (if (i32.eqz (call $eq (i32.const 128) (i32.const 0) (i32.const 6)))
      (then (return (i32.const 0))))
    (if (i32.ne (call $request_kind (i32.const 128) (i32.const 16)) (i32.const 3))
      (then (return (i32.const 0))))
    (if (i32.eqz (call $eq (i32.const 128) (i32.const 8) (i32.const 3)))
      (then (return (i32.const 0))))
    (call $set_patch (i32.const 32) (i32.const 62))
    (i32.const 0)))  ;; Allowed, with the patch
