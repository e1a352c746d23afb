package storage

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// continueToken is the state of a paged list, in the same shape as upstream's so that
// tokens look familiar: the revision the first page was read at (every page reads at
// it, so the pages form one consistent snapshot) and the key to start from, relative to
// the list's prefix.
type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion int64  `json:"rv"`
	StartKey        string `json:"start"`
}

const continueAPIVersion = "meta.k8s.io/v1"

// encodeContinue returns the token for a list under prefix that resumes at nextKey.
func encodeContinue(nextKey, prefix string, rev int64) (string, error) {
	if !strings.HasPrefix(nextKey, prefix) {
		return "", fmt.Errorf("storage: continue key %q is outside prefix %q", nextKey, prefix)
	}
	data, err := json.Marshal(continueToken{APIVersion: continueAPIVersion, ResourceVersion: rev, StartKey: strings.TrimPrefix(nextKey, prefix)})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(data), nil
}

// decodeContinue returns the full start key and revision of token for a list under
// prefix.
func decodeContinue(token, prefix string) (startKey string, rev int64, err error) {
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", 0, fmt.Errorf("%w: continue token is not valid base64: %v", ErrInvalid, err)
	}
	var t continueToken
	if err := json.Unmarshal(data, &t); err != nil {
		return "", 0, fmt.Errorf("%w: continue token is not valid JSON: %v", ErrInvalid, err)
	}
	if t.APIVersion != continueAPIVersion {
		return "", 0, fmt.Errorf("%w: continue token version %q is not %q", ErrInvalid, t.APIVersion, continueAPIVersion)
	}
	if t.ResourceVersion <= 0 {
		return "", 0, fmt.Errorf("%w: continue token has no resourceVersion", ErrInvalid)
	}
	if t.StartKey == "" {
		return "", 0, fmt.Errorf("%w: continue token has no start key", ErrInvalid)
	}
	return prefix + t.StartKey, t.ResourceVersion, nil
}
