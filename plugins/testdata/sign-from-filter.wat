;; A Filter that calls sign_fragment, which only wasmkube_sign may call: its smoke call
;; must fail as a garbage result (plugins/schedwasm TestSignFragmentOnlyFromSign).
(module
  (import "wasmkube" "sign_fragment" (func $sign_fragment (param i32 i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "k")
  (func (export "wasmkube_abi_version") (result i32) (i32.const 1))
  (func (export "wasmkube_filter") (param $count i32) (result i32)
    (call $sign_fragment (i32.const 0) (i32.const 1) (i32.const 0) (i32.const 1))
    (i32.const 0)))
