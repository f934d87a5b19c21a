package oauth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"github.com/golang-jwt/jwt/v5"
)

// parseSigningKey reads a PEM private key and the JWT algorithm to sign
// with: alg when given (checked against the key), else the key's usual one.
func parseSigningKey(data []byte, alg string) (any, jwt.SigningMethod, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, nil, errors.New("not a PEM block; give the key in PEM form, starting with -----BEGIN PRIVATE KEY-----")
	}
	var key any
	var err error
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("cannot parse the %s: %v", block.Type, err)
	}
	var method jwt.SigningMethod
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		def := map[elliptic.Curve]string{elliptic.P256(): "ES256", elliptic.P384(): "ES384", elliptic.P521(): "ES512"}[k.Curve]
		if alg == "" {
			alg = def
		}
		if alg != def {
			return nil, nil, fmt.Errorf("signing algorithm %q does not fit this EC key (use %s)", alg, def)
		}
	case *rsa.PrivateKey:
		if alg == "" {
			alg = "RS256"
		}
		if !strings.HasPrefix(alg, "RS") && !strings.HasPrefix(alg, "PS") {
			return nil, nil, fmt.Errorf("signing algorithm %q does not fit an RSA key (use RS256)", alg)
		}
	case ed25519.PrivateKey:
		if alg == "" {
			alg = "EdDSA"
		}
		if alg != "EdDSA" {
			return nil, nil, fmt.Errorf("signing algorithm %q does not fit an Ed25519 key (use EdDSA)", alg)
		}
	default:
		return nil, nil, fmt.Errorf("unsupported key type %T", key)
	}
	method = jwt.GetSigningMethod(alg)
	if method == nil {
		return nil, nil, fmt.Errorf("unknown signing algorithm %q", alg)
	}
	return key, method, nil
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

func splitFields(s string) []string { return strings.Fields(s) }
