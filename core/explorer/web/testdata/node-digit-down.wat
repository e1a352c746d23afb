;; node-digit (down): a Filter and Score for the decision explorer's browser tests. Filter
;; rejects a node whose name ends in 3 ("closed for maintenance"); Score: the order is reversed: hollow-N scores 30*(3-N), so hollow-0 scores highest.
;; The two files differ only in Score, so replacing one by the other is a policy swap.
(module
  (import "wasmkube" "node_name" (func $node_name (param i32 i32 i32) (result i32)))
  (import "wasmkube" "node_status" (func $node_status (param i32 i32 i32 i32)))
  (import "wasmkube" "node_score" (func $node_score (param i32 i64)))
  (memory (export "memory") 1)
  (data (i32.const 256) "closed for maintenance")
  (func (export "wasmkube_abi_version") (result i32) (i32.const 1))
  ;; $digit: the last character of node i's name as a number when it is 0-3, else 0
  ;; (the host's smoke call uses a node named otherwise).
  (func $digit (param $i i32) (result i32)
    (local $n i32)
    (local $d i32)
    (local.set $n (call $node_name (local.get $i) (i32.const 0) (i32.const 128)))
    (local.set $d (i32.sub (i32.load8_u (i32.sub (local.get $n) (i32.const 1))) (i32.const 48)))
    (select (local.get $d) (i32.const 0) (i32.le_u (local.get $d) (i32.const 3))))
  (func (export "wasmkube_filter") (param $count i32) (result i32)
    (local $i i32)
    (block $done (loop $next
      (br_if $done (i32.ge_u (local.get $i) (local.get $count)))
      (if (i32.eq (call $digit (local.get $i)) (i32.const 3))
        (then (call $node_status (local.get $i) (i32.const 2) (i32.const 256) (i32.const 22))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $next)))
    (i32.const 0))
  (func (export "wasmkube_score") (param $count i32) (result i32)
    (local $i i32)
    (block $done (loop $next
      (br_if $done (i32.ge_u (local.get $i) (local.get $count)))
      (call $node_score (local.get $i) (i64.extend_i32_u (i32.mul (i32.sub (i32.const 3) (call $digit (local.get $i))) (i32.const 30))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $next)))
    (i32.const 0)))
