package wasmoci_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
)

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func itoa(n int) string { return strconv.Itoa(n) }

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
