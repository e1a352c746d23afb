package wasmoci

import "fmt"

// FetchError is every error of a pull or a push: it names the reference.
type FetchError struct {
	Ref string
	Err error
}

func (e *FetchError) Error() string { return fmt.Sprintf("wasm module %s: %v", e.Ref, e.Err) }
func (e *FetchError) Unwrap() error { return e.Err }

// LayoutError: the manifest holds no module in a layout wasmkube reads.
type LayoutError struct{ Reason string }

func (e *LayoutError) Error() string { return "not a wasm module: " + e.Reason }

// TooLargeError: a manifest or a module is larger than its limit.
type TooLargeError struct {
	What        string
	Size, Limit int64
}

func (e *TooLargeError) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("%s is larger than the limit of %d bytes", e.What, e.Limit)
	}
	return fmt.Sprintf("%s is %d bytes, over the limit of %d", e.What, e.Size, e.Limit)
}

// DigestError: content did not hash to the digest it was asked for by.
type DigestError struct {
	What      string
	Want, Got string
}

func (e *DigestError) Error() string {
	return fmt.Sprintf("%s: sha256 is %s, want %s", e.What, e.Got, e.Want)
}

// PlainHTTPError: a request would have gone over plain HTTP to a registry that is neither
// on loopback nor listed as insecure.
type PlainHTTPError struct{ Registry string }

func (e *PlainHTTPError) Error() string {
	return fmt.Sprintf("registry %s: plain HTTP refused (not a loopback address and not listed as insecure)", e.Registry)
}

// NotCachedError: PullNever asked for a module the cache does not hold.
type NotCachedError struct{}

func (NotCachedError) Error() string { return "not in the module cache and pullPolicy is Never" }
