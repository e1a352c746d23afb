;; Validate and Mutate that misbehave as the object's label "misbehave" says (its first
;; letter), and allow everything else, so that a smoke call passes and a test picks the
;; failure. Validate: loop (forever), trap, grow (memory bomb that aborts when a grow is
;; refused), memorybomb (grows 1 MiB at a time and ignores refusals), badptr, warn10mb (a 10 MB
;; warning, then allowed), code (status 7), error (Error with a reason), deny with a field
;; path. Mutate: patch (renames the object), notpatch (a JSON object), apply (removes a
;; path that does not exist), invalid (empties the first image, which the API server's own
;; validation, run after the mutation, refuses).
(module
  (import "wasmkube" "object_label" (func $object_label (param i32 i32 i32 i32) (result i32)))
  (import "wasmkube" "warning" (func $warning (param i32 i32)))
  (import "wasmkube" "status_reason" (func $status_reason (param i32 i32)))
  (import "wasmkube" "set_patch" (func $set_patch (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "misbehave")
  (data (i32.const 32) "policy error")
  (data (i32.const 64) "spec.containers[0].image: must carry a digest")
  (data (i32.const 128) "[{\"op\":\"replace\",\"path\":\"/metadata/name\",\"value\":\"renamed\"}]")
  (data (i32.const 256) "{\"op\":\"add\"}")
  (data (i32.const 288) "[{\"op\":\"remove\",\"path\":\"/spec/nothing\"}]")
  (data (i32.const 352) "[{\"op\":\"replace\",\"path\":\"/spec/containers/0/image\",\"value\":\"\"}]")
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  ;; $how is the first letter of the label's value at 16, or 0 without the label.
  (func $how (result i32)
    (if (i32.eq (call $object_label (i32.const 0) (i32.const 9) (i32.const 16) (i32.const 16)) (i32.const -1))
      (then (return (i32.const 0))))
    (i32.load8_u (i32.const 16)))
  (func (export "wasmkube_validate") (result i32)
    (local $h i32)
    (local.set $h (call $how))
    (if (i32.eq (local.get $h) (i32.const 108)) ;; l
      (then (loop $forever (br $forever))))
    (if (i32.eq (local.get $h) (i32.const 116)) ;; t
      (then unreachable))
    (if (i32.eq (local.get $h) (i32.const 103)) ;; g
      (then
        (loop $more
          (br_if $more (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))
        unreachable))
    (if (i32.eq (local.get $h) (i32.const 109)) ;; m
      (then (loop $bomb (drop (memory.grow (i32.const 16))) (br $bomb))))
    (if (i32.eq (local.get $h) (i32.const 98)) ;; b
      (then (call $warning (i32.const 0xfffffff0) (i32.const 100))))
    (if (i32.eq (local.get $h) (i32.const 119)) ;; w
      (then
        (drop (memory.grow (i32.const 161)))
        (memory.fill (i32.const 65536) (i32.const 87) (i32.const 10485760))
        (call $warning (i32.const 65536) (i32.const 10485760))))
    (if (i32.eq (local.get $h) (i32.const 99)) ;; c
      (then (return (i32.const 7))))
    (if (i32.eq (local.get $h) (i32.const 101)) ;; e
      (then
        (call $status_reason (i32.const 32) (i32.const 12))
        (return (i32.const 1))))
    (if (i32.eq (local.get $h) (i32.const 100)) ;; d
      (then
        (call $status_reason (i32.const 64) (i32.const 45))
        (return (i32.const 2))))
    (i32.const 0))
  (func (export "wasmkube_mutate") (result i32)
    (local $h i32)
    (local.set $h (call $how))
    (if (i32.eq (local.get $h) (i32.const 112)) ;; p
      (then (call $set_patch (i32.const 128) (i32.const 60))))
    (if (i32.eq (local.get $h) (i32.const 110)) ;; n
      (then (call $set_patch (i32.const 256) (i32.const 12))))
    (if (i32.eq (local.get $h) (i32.const 97)) ;; a
      (then (call $set_patch (i32.const 288) (i32.const 40))))
    (if (i32.eq (local.get $h) (i32.const 105)) ;; i
      (then (call $set_patch (i32.const 352) (i32.const 63))))
    (i32.const 0)))
