// Package serviceaccount issues and verifies service account tokens: JWTs in upstream's
// form (issuer, subject system:serviceaccount:NS:NAME, audiences, expiry and the
// kubernetes.io claim naming the namespace, the service account and the object the token
// is bound to), signed with ES256 by a key in the API server's data dir. JOSE is
// github.com/go-jose/go-jose/v4, the library upstream uses. Whether the named objects
// still exist is the caller's check (the API server reads its storage).
package serviceaccount

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/uuid"
)

// DefaultIssuer is the iss claim and the API server's audience, as upstream's default
// (--service-account-issuer, --api-audiences).
const DefaultIssuer = "https://kubernetes.default.svc.cluster.local"

// leeway for clock skew on exp and nbf, as upstream.
const leeway = 60 * time.Second

// Ref names an object a token belongs to or is bound to.
type Ref struct {
	Name string `json:"name"`
	UID  string `json:"uid"`
}

// Claims is what a token says.
type Claims struct {
	Namespace      string
	ServiceAccount Ref
	// Pod, Secret or Node the token is bound to (at most one); the token is valid only
	// while that object exists with that uid.
	Pod, Secret, Node *Ref
	Audiences         []string
	IssuedAt, Expiry  time.Time
	// ID is the jti claim (upstream's credential id).
	ID string
}

// Username is system:serviceaccount:NS:NAME.
func Username(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// Groups are the groups of a service account of namespace, as upstream.
func Groups(namespace string) []string {
	return []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
}

// private is the kubernetes.io claim.
type private struct {
	K8s struct {
		Namespace      string `json:"namespace"`
		ServiceAccount Ref    `json:"serviceaccount"`
		Pod            *Ref   `json:"pod,omitempty"`
		Secret         *Ref   `json:"secret,omitempty"`
		Node           *Ref   `json:"node,omitempty"`
	} `json:"kubernetes.io"`
}

// Issuer signs and verifies tokens with one key.
type Issuer struct {
	issuer string
	key    *ecdsa.PrivateKey
	kid    string
	signer jose.Signer
}

// LoadOrCreate reads the PEM EC private key at path, or generates a P-256 key there.
func LoadOrCreate(path, issuer string) (*Issuer, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		der, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return nil, err
		}
		b = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, err
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			return nil, fmt.Errorf("service account key: %w", err)
		}
		if err := os.Rename(tmp, path); err != nil {
			return nil, fmt.Errorf("service account key: %w", err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("service account key: %w", err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, fmt.Errorf("service account key %s: no PEM block", path)
	}
	key, err := x509.ParseECPrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("service account key %s: %w", path, err)
	}
	return New(key, issuer)
}

// New returns an Issuer for key.
func New(key *ecdsa.PrivateKey, issuer string) (*Issuer, error) {
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	// The key id as upstream computes it: base64url of the SHA-256 of the public key.
	sum := sha256.Sum256(pub)
	kid := base64.RawURLEncoding.EncodeToString(sum[:])
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		return nil, err
	}
	return &Issuer{issuer: issuer, key: key, kid: kid, signer: signer}, nil
}

// Issuer is the iss claim of the tokens.
func (i *Issuer) Issuer() string { return i.issuer }

// Sign returns a signed token for c (ID is filled in when empty).
func (i *Issuer) Sign(c Claims) (string, error) {
	if c.ID == "" {
		c.ID = uuid.NewString()
	}
	pub := jwt.Claims{
		Issuer:    i.issuer,
		Subject:   Username(c.Namespace, c.ServiceAccount.Name),
		Audience:  jwt.Audience(c.Audiences),
		Expiry:    jwt.NewNumericDate(c.Expiry),
		IssuedAt:  jwt.NewNumericDate(c.IssuedAt),
		NotBefore: jwt.NewNumericDate(c.IssuedAt),
		ID:        c.ID,
	}
	var priv private
	priv.K8s.Namespace, priv.K8s.ServiceAccount = c.Namespace, c.ServiceAccount
	priv.K8s.Pod, priv.K8s.Secret, priv.K8s.Node = c.Pod, c.Secret, c.Node
	return jwt.Signed(i.signer).Claims(pub).Claims(priv).Serialize()
}

// ErrNotOurs is returned for a string that is not a JWT of this issuer (another kind of
// bearer token): the caller tries its other authenticators.
var ErrNotOurs = errors.New("not a service account token of this issuer")

// Verify checks the signature, issuer, expiry and not-before of token at now and returns
// its claims.
func (i *Issuer) Verify(token string, now time.Time) (*Claims, error) {
	if strings.Count(token, ".") != 2 {
		return nil, ErrNotOurs
	}
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return nil, ErrNotOurs
	}
	var pub jwt.Claims
	var priv private
	if err := tok.Claims(&i.key.PublicKey, &pub, &priv); err != nil {
		return nil, fmt.Errorf("service account token: %w", err)
	}
	if pub.Issuer != i.issuer {
		return nil, ErrNotOurs
	}
	if pub.Expiry == nil {
		return nil, errors.New("service account token: no expiry")
	}
	if err := pub.ValidateWithLeeway(jwt.Expected{Issuer: i.issuer, Time: now}, leeway); err != nil {
		return nil, fmt.Errorf("service account token: %w", err)
	}
	k := priv.K8s
	if k.Namespace == "" || k.ServiceAccount.Name == "" || pub.Subject != Username(k.Namespace, k.ServiceAccount.Name) {
		return nil, errors.New("service account token: the subject does not match the kubernetes.io claim")
	}
	c := &Claims{Namespace: k.Namespace, ServiceAccount: k.ServiceAccount, Pod: k.Pod, Secret: k.Secret, Node: k.Node,
		Audiences: pub.Audience, ID: pub.ID}
	if pub.IssuedAt != nil {
		c.IssuedAt = pub.IssuedAt.Time()
	}
	if pub.Expiry != nil {
		c.Expiry = pub.Expiry.Time()
	}
	return c, nil
}

// Intersect returns the audiences of a token that are among want.
func Intersect(have, want []string) []string {
	var out []string
	for _, h := range have {
		for _, w := range want {
			if h == w {
				out = append(out, h)
				break
			}
		}
	}
	return out
}
