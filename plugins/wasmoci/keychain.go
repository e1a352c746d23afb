package wasmoci

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
)

// KeychainFromDockerConfig returns the credentials of a docker config: the content of a
// kubernetes.io/dockerconfigjson Secret's .dockerconfigjson ({"auths": {...}}) or of a
// kubernetes.io/dockercfg Secret's .dockercfg (the auths map alone). Only the credentials
// written in it are used: no credential helper is run. A registry it does not name is
// reached anonymously.
func KeychainFromDockerConfig(data []byte) (authn.Keychain, error) {
	var cfg struct {
		Auths map[string]authn.AuthConfig `json:"auths"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("docker config: %w", err)
	}
	if cfg.Auths == nil {
		if err := json.Unmarshal(data, &cfg.Auths); err != nil {
			return nil, fmt.Errorf("docker config: %w", err)
		}
	}
	k := configKeychain{}
	for key, a := range cfg.Auths {
		k[registryOf(key)] = a
	}
	return k, nil
}

type configKeychain map[string]authn.AuthConfig

// Resolve implements authn.Keychain.
func (k configKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	reg := r.RegistryStr()
	a, ok := k[reg]
	if !ok && reg == "index.docker.io" {
		a, ok = k["docker.io"]
	}
	if !ok {
		return authn.Anonymous, nil
	}
	return authn.FromConfig(a), nil
}

// registryOf reduces a docker config key ("https://host:port/v1/", "host") to host[:port].
func registryOf(key string) string {
	key = strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	if i := strings.IndexByte(key, '/'); i >= 0 {
		key = key[:i]
	}
	if key == "index.docker.io" {
		return "docker.io"
	}
	return key
}
