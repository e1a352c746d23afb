package schedwasm

import (
	"crypto/sha256"
	"encoding/hex"
)

// WasmModule implements the scheduler runtime's WasmModule: the decision explorer shows
// the module's path and sha256 beside the plugin's name (the digest is empty for a plugin
// built by New outside a Loader).
func (c *core) WasmModule() (path, digest string) { return c.pool.Module().Path(), c.digest }

func moduleDigest(bin []byte) string {
	sum := sha256.Sum256(bin)
	return "sha256:" + hex.EncodeToString(sum[:])
}
