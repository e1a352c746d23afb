package wasmpolicy

import (
	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/wasmkube/wasmkube/plugins/wasmoci"
)

// keychainOf is the keychains of several docker configs, the first that has credentials
// for a registry winning (authn.NewMultiKeychain skips the anonymous answers).
func keychainOf(configs [][]byte) (authn.Keychain, error) {
	var kcs []authn.Keychain
	for _, c := range configs {
		kc, err := wasmoci.KeychainFromDockerConfig(c)
		if err != nil {
			return nil, err
		}
		kcs = append(kcs, kc)
	}
	return authn.NewMultiKeychain(kcs...), nil
}
