package schedwasm

// WasmModule implements the scheduler runtime's WasmModule: the decision explorer shows
// the module's path beside the plugin's name. The digest is not kept by the module, so it
// is empty here; a WasmPolicy's status carries it.
func (c *core) WasmModule() (path, digest string) { return c.pool.Module().Path(), "" }
