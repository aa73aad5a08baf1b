package stepca

import (
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// LoadFiles sets c's Root and Key from PEM files: the root certificate and
// the provisioner's key. Errors name which file (root_file or
// provisioner_key_file, as the config calls them), never the key.
func (c *Client) LoadFiles(rootFile, keyFile string) error {
	b, err := os.ReadFile(rootFile)
	if err == nil {
		c.Root, err = ParseRootPEM(b)
	}
	if err != nil {
		return fmt.Errorf("root_file: %w", err)
	}
	if b, err = os.ReadFile(keyFile); err == nil {
		c.Key, err = ParseKeyPEM(b)
	}
	if err != nil {
		return fmt.Errorf("provisioner_key_file: %w", err)
	}
	return nil
}

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
