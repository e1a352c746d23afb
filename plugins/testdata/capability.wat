;; A module of the test kind "echo" (plugins/wasmhost/extension_test.go) that imports a
;; host function needing the capability "secret".
(module
  (import "wasmkube" "secret" (func $secret (result i32)))
  (memory (export "memory") 1)
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func (export "wasmkube_echo") (result i32) (call $secret)))
