;; A probe that loops forever in every call, the smoke call too: it must not load.
(module
  (memory (export "memory") 1)
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func (export "wasmkube_probe") (result i32) (loop $l (br $l)) (i32.const 0)))
