package dashboard

import (
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
)

// Bounds of the passwords NewPasswordHash hashes.
const (
	MinPasswordLen = 8
	// maxBcryptPassword is what bcrypt reads of a password: the rest would be ignored.
	maxBcryptPassword = 72
	bcryptCost        = 12
)

// ErrBcryptTooLong refuses a password that bcrypt would cut.
var ErrBcryptTooLong = fmt.Errorf("bcrypt reads at most %d bytes of a password; use argon2id", maxBcryptPassword)

// NewPasswordHash checks a new dashboard password and returns its hash for the
// config (`sluice user hash`): argon2id, or bcrypt when useBcrypt. Its errors say what
// to change and never hold the password.
func NewPasswordHash(password string, useBcrypt bool) (string, error) {
	switch {
	case password == "":
		return "", errors.New("no password")
	case len(password) < MinPasswordLen:
		return "", fmt.Errorf("the password is shorter than %d characters", MinPasswordLen)
	case useBcrypt && len(password) > maxBcryptPassword:
		return "", ErrBcryptTooLong
	case useBcrypt:
		b, err := bcrypt.GenerateFromPassword([]byte(password), bcryptCost)
		return string(b), err
	}
	return HashPassword(password)
}

// ErrBadHash is returned for a password hash in neither supported format.
var ErrBadHash = errors.New("dashboard: password hash is neither bcrypt nor argon2id")

// CheckHash reports whether h is a password hash that CheckPassword reads.
func CheckHash(h string) error {
	if strings.HasPrefix(h, "$argon2id$") {
		_, err := parseArgon2id(h)
		return err
	}
	if _, err := bcrypt.Cost([]byte(h)); err != nil {
		return fmt.Errorf("%w: %v", ErrBadHash, err)
	}
	return nil
}

// CheckPassword reports whether password matches the hash h, in time that
// does not depend on where they differ.
func CheckPassword(h, password string) bool {
	if strings.HasPrefix(h, "$argon2id$") {
		a, err := parseArgon2id(h)
		if err != nil {
			return false
		}
		got := argon2.IDKey([]byte(password), a.salt, a.time, a.memory, a.threads, uint32(len(a.key)))
		return subtle.ConstantTimeCompare(got, a.key) == 1
	}
	return bcrypt.CompareHashAndPassword([]byte(h), []byte(password)) == nil
}

// Argon2id parameters of HashPassword (RFC 9106's second recommendation,
// with 64 MiB of memory).
const (
	argonTime    = 3
	argonMemory  = 64 * 1024 // KiB
	argonThreads = 4
	argonKeyLen  = 32
	argonSaltLen = 16
	// Limits on parameters read from a hash, so that a typo in the config
	// cannot make each login allocate gigabytes.
	argonMaxMemory  = 1 << 20 // KiB: 1 GiB
	argonMaxTime    = 16
	argonMaxThreads = 64
)

type argonHash struct {
	memory, time uint32
	threads      uint8
	salt, key    []byte
}

func parseArgon2id(h string) (argonHash, error) {
	var a argonHash
	parts := strings.Split(h, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return a, fmt.Errorf("%w: argon2id: want $argon2id$v=19$m=…,t=…,p=…$salt$hash", ErrBadHash)
	}
	if parts[2] != "v=19" {
		return a, fmt.Errorf("%w: argon2id: version %q (want v=19)", ErrBadHash, parts[2])
	}
	var m, t, p uint64
	for _, kv := range strings.Split(parts[3], ",") {
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return a, fmt.Errorf("%w: argon2id: parameter %q", ErrBadHash, kv)
		}
		switch k {
		case "m":
			m = n
		case "t":
			t = n
		case "p":
			p = n
		default:
			return a, fmt.Errorf("%w: argon2id: parameter %q", ErrBadHash, kv)
		}
	}
	if m < 8 || m > argonMaxMemory || t < 1 || t > argonMaxTime || p < 1 || p > argonMaxThreads {
		return a, fmt.Errorf("%w: argon2id: parameters m=%d,t=%d,p=%d out of range", ErrBadHash, m, t, p)
	}
	var err error
	if a.salt, err = base64.RawStdEncoding.DecodeString(parts[4]); err != nil || len(a.salt) < 8 {
		return a, fmt.Errorf("%w: argon2id: salt", ErrBadHash)
	}
	if a.key, err = base64.RawStdEncoding.DecodeString(parts[5]); err != nil || len(a.key) < 16 {
		return a, fmt.Errorf("%w: argon2id: hash", ErrBadHash)
	}
	a.memory, a.time, a.threads = uint32(m), uint32(t), uint8(p)
	return a, nil
}

// HashPassword returns an argon2id PHC string for password, with a fresh
// random salt.
func HashPassword(password string) (string, error) {
	salt, err := randomBytes(argonSaltLen)
	if err != nil {
		return "", err
	}
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=19$m=%d,t=%d,p=%d$%s$%s", argonMemory, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key)), nil
}
