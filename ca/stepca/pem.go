package stepca

import (
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
)

// ParseRootPEM reads the step-ca root certificate (the first PEM block).
func ParseRootPEM(b []byte) (*x509.Certificate, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(blk.Bytes)
}

// ParseKeyPEM reads the provisioner's P-256 private key (SEC 1 or PKCS #8).
// Errors never show the key.
func ParseKeyPEM(b []byte) (*ecdsa.PrivateKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, errors.New("no PEM key")
	}
	if k, err := x509.ParseECPrivateKey(blk.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if ec, ok := k.(*ecdsa.PrivateKey); err == nil && ok {
		return ec, nil
	}
	return nil, errors.New("not an EC private key (SEC 1 or PKCS #8 PEM; an encrypted one must be decrypted into a Secret)")
}
